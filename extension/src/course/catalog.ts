/** Pure presentation rules of the catalog: groups, progress marks, what an item needs. */

import type {
  Catalog,
  CatalogItem,
  CourseKind,
  CourseNeeds,
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
