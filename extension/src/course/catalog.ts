/** Pure presentation rules of the catalog: groups, progress marks, what an item needs. */

import type {
  Catalog,
  CatalogItem,
  CourseKind,
  CourseNeeds,
  ModuleTestScores,
  ProgressStatus
} from '../api/types';

export interface CatalogGroup {
  kind: CourseKind;
  /** The group's heading, e.g. 'Lessons'. */
  label: string;
  /** Items sorted by `order`, then title. */
  items: CatalogItem[];
}

const GROUP_LABELS: Record<CourseKind, string> = {
  lesson: 'Lessons',
  lab: 'Labs',
  exercise: 'Exercises'
};

function byOrder(a: CatalogItem, b: CatalogItem): number {
  return a.order - b.order || a.title.localeCompare(b.title);
}

/** The sidebar's groups: lessons always, then labs and exercises only when they have items. */
export function groupCatalog(catalog: Catalog): CatalogGroup[] {
  const groups: CatalogGroup[] = [
    { kind: 'lesson', label: GROUP_LABELS.lesson, items: [...catalog.lessons].sort(byOrder) }
  ];
  if (catalog.labs.length) {
    groups.push({ kind: 'lab', label: GROUP_LABELS.lab, items: [...catalog.labs].sort(byOrder) });
  }
  if (catalog.exercises.length) {
    groups.push({
      kind: 'exercise',
      label: GROUP_LABELS.exercise,
      items: [...catalog.exercises].sort(byOrder)
    });
  }
  return groups;
}

export interface ProgressMark {
  /** What a screen reader says, e.g. 'In progress'. */
  label: string;
  /** The CSS modifier drawing the mark: empty circle, half circle or check. */
  shape: 'empty' | 'half' | 'check';
}

const PROGRESS_MARKS: Record<ProgressStatus, ProgressMark> = {
  not_started: { label: 'Not started', shape: 'empty' },
  in_progress: { label: 'In progress', shape: 'half' },
  completed: { label: 'Completed', shape: 'check' }
};

/** How a progress status is drawn; an unknown status reads as not started. */
export function progressMark(status: ProgressStatus | string | null | undefined): ProgressMark {
  return PROGRESS_MARKS[status as ProgressStatus] ?? PROGRESS_MARKS.not_started;
}

export interface NeedsTag {
  /** The tag's text, 'GPU' or 'multi-GPU'. */
  text: string;
  /** The tooltip: what is needed and what to do without it. */
  tooltip: string;
}

/** The tag of an item that needs a GPU (or several), or null for a CPU item. */
export function needsTag(needs: CourseNeeds, cpuPath?: string | null): NeedsTag | null {
  if (needs === 'cpu') {
    return null;
  }
  const what = needs === 'multi-gpu' ? 'Needs several GPUs.' : 'Needs a GPU.';
  const without = needs === 'multi-gpu' ? 'Without them' : 'Without one';
  const path = cpuPath?.trim();
  return {
    text: needs === 'multi-gpu' ? 'multi-GPU' : 'GPU',
    tooltip: path ? `${what} ${without}: ${path}` : what
  };
}

/** The expected time of an item, e.g. 45 -> '45 min' (input in minutes; '' when unknown). */
export function formatMinutes(minutes: number): string {
  if (!Number.isFinite(minutes) || minutes <= 0) {
    return '';
  }
  return `${Math.round(minutes)} min`;
}

/** What runs an item on this machine, as the Course section says it. */
export interface RunsHere {
  /** e.g. 'runs here (CPU, gloo)', 'runs here (2 GPUs, NCCL)', 'GPU only'. */
  text: string;
  /** What the item needs, what this machine has, and the CPU path when it is taken. */
  tooltip: string;
  /** Where it runs here: on GPUs, on the CPU, or not at all. */
  where: 'gpu' | 'cpu' | 'none';
}

/**
 * What an item runs on here, from what it needs, its CPU path and launcher,
 * and `gpus`, the GPUs a run can use on this machine (the catalog's count: a
 * replayed recording has none). A lab with a CPU path never reads "GPU" on a
 * machine without one.
 */
export function runsHere(
  item: Pick<CatalogItem, 'needs' | 'cpu_path' | 'launcher'>,
  gpus: number
): RunsHere {
  const torchrun = item.launcher === 'torchrun';
  const cpuPath = item.cpu_path?.trim() ?? '';
  const have = gpus === 0 ? 'no GPU' : gpus === 1 ? 'one GPU' : `${gpus} GPUs`;
  if (item.needs === 'cpu') {
    return {
      text: torchrun ? 'runs here (CPU, gloo)' : 'runs here (CPU)',
      tooltip: torchrun ? 'Runs on the CPU: its processes talk through gloo.' : 'Runs on the CPU.',
      where: 'cpu'
    };
  }
  const made = item.needs === 'multi-gpu' ? 'Made for several GPUs' : 'Made for a GPU';
  if (gpus >= 2 || (gpus === 1 && item.needs === 'gpu')) {
    return {
      text: torchrun ? `runs here (${gpus === 1 ? 'GPU' : `${gpus} GPUs`}, NCCL)` : 'runs here (GPU)',
      tooltip: `${made}; this machine has ${have}, and runs use ${torchrun ? 'them, one process per GPU, through NCCL' : 'them'}.`,
      where: 'gpu'
    };
  }
  if (gpus === 1) {
    // Several GPUs wanted, one here: torchrun gives each rank a GPU of its own, so one rank runs.
    return {
      text: 'runs here (1 GPU)',
      tooltip: `${made}; this machine has one, so a run uses one process on it.${cpuPath ? ` On a machine without a GPU: ${cpuPath}` : ''}`,
      where: 'gpu'
    };
  }
  if (cpuPath) {
    return {
      text: torchrun ? 'runs here (CPU, gloo)' : 'runs here (CPU)',
      tooltip: `${made}; this machine has no GPU, so it takes its CPU path: ${cpuPath}`,
      where: 'cpu'
    };
  }
  return {
    text: 'GPU only',
    tooltip: `${made}, and it has no CPU path; this machine has no GPU.`,
    where: 'none'
  };
}

/** The module test's line in the Course section: last and best score, and whether it passed. */
export function moduleTestSummary(scores: {
  questions: number;
  pass_score: number;
  attempts: number;
  last?: { score: number; total: number } | null;
  best?: { score: number; total: number } | null;
  passed: boolean;
}): string {
  if (!scores.attempts || !scores.last || !scores.best) {
    return `${scores.questions} questions · pass with ${scores.pass_score}`;
  }
  const last = `last ${scores.last.score}/${scores.last.total}`;
  const best = `best ${scores.best.score}/${scores.best.total}`;
  return `${last} · ${best} · ${scores.passed ? 'passed' : `pass with ${scores.pass_score}`}`;
}

/** The acceptance list's summary: how many items are ticked, of how many. */
export function acceptanceSummary(items: Array<{ done: boolean }>): string {
  const done = items.filter(i => i.done).length;
  return `${done} of ${items.length} done`;
}

/** How one requirement of an acceptance item reads: done, to do, or not in the course yet. */
export function requirementState(req: { available: boolean; done: boolean }): {
  state: 'done' | 'todo' | 'unavailable';
  label: string;
} {
  if (!req.available) {
    return { state: 'unavailable', label: 'not available yet' };
  }
  return req.done ? { state: 'done', label: 'done' } : { state: 'todo', label: 'to do' };
}

/** An acceptance item's count, e.g. '2 of 3 done' (requirements not available yet are left out). */
export function acceptanceItemCount(item: { available: number; completed: number; requires: unknown[] }): string {
  const missing = item.requires.length - item.available;
  const base = item.available ? `${item.completed} of ${item.available} done` : 'nothing to do here yet';
  return missing ? `${base} · ${missing} not available yet` : base;
}

/** The scores line of the module test, e.g. "Last 18 / 25 · Best 21 / 25 · Passed (20 needed)". */
export function scoresText(scores: ModuleTestScores): string {
  if (!scores.attempts || !scores.last || !scores.best) {
    return `${scores.questions} questions across the eight lessons. Pass with ${scores.pass_score} right; you can retake it as often as you like.`;
  }
  const attempts = `${scores.attempts} attempt${scores.attempts === 1 ? '' : 's'}`;
  const verdict = scores.passed ? `Passed (${scores.pass_score} needed)` : `Not passed yet (${scores.pass_score} needed)`;
  return `Last ${scores.last.score} / ${scores.last.total} · Best ${scores.best.score} / ${scores.best.total} · ${verdict} · ${attempts}`;
}
