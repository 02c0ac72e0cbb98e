/**
 * The course as one path (pure rules, no DOM): what is done, the order a learner takes the
 * lessons, labs and exercises in, and the next step in words.
 */

import type { Catalog, CatalogItem, CourseKind } from '../api/types';

export interface KindCount {
  done: number;
  total: number;
}

/** How far a learner is: per kind, all items together, and the module test. */
export interface CourseProgress {
  lesson: KindCount;
  lab: KindCount;
  exercise: KindCount;
  /** Lessons, labs and exercises together (the module test is counted on its own). */
  all: KindCount;
  moduleTest: { available: boolean; passed: boolean; attempts: number };
}

function count(items: CatalogItem[]): KindCount {
  return { done: items.filter(i => i.progress?.status === 'completed').length, total: items.length };
}

export function courseProgress(catalog: Catalog): CourseProgress {
  const lesson = count(catalog.lessons);
  const lab = count(catalog.labs);
  const exercise = count(catalog.exercises);
  const test = catalog.module_test ?? null;
  return {
    lesson,
    lab,
    exercise,
    all: { done: lesson.done + lab.done + exercise.done, total: lesson.total + lab.total + exercise.total },
    moduleTest: { available: test !== null, passed: !!test?.passed, attempts: test?.attempts ?? 0 }
  };
}

/** "3 of 25 done". */
export function doneText(c: KindCount): string {
  return `${c.done} of ${c.total} done`;
}

/** One part of the path: a lesson with the labs and exercises that follow it. */
export interface CourseStage {
  /** The lesson; null for the items no lesson names (taken after the last lesson). */
  lesson: CatalogItem | null;
  items: CatalogItem[];
}

function byOrder(a: CatalogItem, b: CatalogItem): number {
  return a.order - b.order || a.title.localeCompare(b.title);
}

/**
 * The path through the course: each lesson, then the labs and exercises it is the first to
 * name (labs before exercises, each by order); items no lesson names come last.
 */
export function coursePath(catalog: Catalog): CourseStage[] {
  const lessons = [...catalog.lessons].sort(byOrder);
  const known = new Set(lessons.map(l => l.id));
  const stages: CourseStage[] = lessons.map(lesson => ({ lesson, items: [] }));
  const rest: CatalogItem[] = [];
  for (const item of [...[...catalog.labs].sort(byOrder), ...[...catalog.exercises].sort(byOrder)]) {
    const place = item.lesson && known.has(item.lesson) ? stages.find(s => s.lesson?.id === item.lesson) : null;
    (place ? place.items : rest).push(item);
  }
  if (rest.length) {
    stages.push({ lesson: null, items: rest });
  }
  return stages;
}

/** The path as one list, in the order a learner takes it. */
export function pathItems(catalog: Catalog): CatalogItem[] {
  return coursePath(catalog).flatMap(stage => (stage.lesson ? [stage.lesson, ...stage.items] : stage.items));
}

/** What to do next, and the one button that does it. */
export interface NextStep {
  kind: CourseKind | 'module-test' | 'done';
  /** The item's id (empty for the module test and the end). */
  id: string;
  /** The item's title ('' at the end). */
  title: string;
  /** The step in words: "Lesson 2: CUDA programming fundamentals". */
  text: string;
  /** Why this one: "continue where you left off" or "next in the course". */
  why: string;
  /** The button's label: "Open the lesson", "Start the lab", "Start the exercise", ... */
  action: string;
}

const KIND_WORD: Record<CourseKind, string> = { lesson: 'Lesson', lab: 'Lab', exercise: 'Exercise' };
const ACTION: Record<CourseKind, [string, string]> = {
  lesson: ['Open the lesson', 'Continue the lesson'],
  lab: ['Open the lab', 'Continue the lab'],
  exercise: ['Start the exercise', 'Continue the exercise']
};

/**
 * The next step: the first item of the path not completed (an item in progress ahead of it
 * does not jump the queue: the path is the course's order); once all are done, the module
 * test until it is passed; then nothing.
 */
export function nextStep(catalog: Catalog): NextStep {
  const items = pathItems(catalog);
  const next = items.find(i => i.progress?.status !== 'completed');
  if (next) {
    const started = next.progress?.status === 'in_progress';
    const position = items.filter(i => i.kind === next.kind).indexOf(next) + 1;
    return {
      kind: next.kind,
      id: next.id,
      title: next.title,
      text: `${KIND_WORD[next.kind]} ${position}: ${next.title}`,
      why: started ? 'continue where you left off' : items.indexOf(next) === 0 ? 'where the course starts' : 'next in the course',
      action: ACTION[next.kind][started ? 1 : 0]
    };
  }
  const test = catalog.module_test ?? null;
  if (test && !test.passed) {
    return {
      kind: 'module-test',
      id: '',
      title: test.title,
      text: test.title,
      why: test.attempts ? `pass with ${test.pass_score} of ${test.questions}` : 'every lesson, lab and exercise is done',
      action: test.attempts ? 'Retake the test' : 'Take the test'
    };
  }
  return { kind: 'done', id: '', title: '', text: 'You finished the course', why: 'every item and the module test', action: '' };
}

/** The share of a lesson quiz's questions answered right that passes it (and offers Mark complete at the end). */
export const QUIZ_PASS_SHARE = 0.8;

/** Whether a graded quiz passes: at least QUIZ_PASS_SHARE of its questions right. */
export function quizPassed(result: { score: number; total: number } | null | undefined): boolean {
  return !!result && result.total > 0 && result.score >= Math.ceil(QUIZ_PASS_SHARE * result.total);
}
