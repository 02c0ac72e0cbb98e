/**
 * The rows of a profile comparison as the diff view lists them: the step-time
 * headline, the breakdown side by side in chart order, the operators by the
 * size of their change.
 */

import type { BreakdownDiffRow, OpDiffRow, ProfileCategory, ProfileDiff, RunDifference } from '../api/types';
import { PROFILE_CATEGORIES, categoryLabel, formatSpeedup, formatUs, modeTag } from './format';

/** "Step time 120 ms → 80.0 ms: after is 1.50× faster" (after against before, whichever run is older). */
export function stepHeadline(diff: Pick<ProfileDiff, 'step_a_us' | 'step_b_us' | 'speedup'>): string {
  const words = formatSpeedup(diff.speedup);
  const verdict = words === '—' || words === 'no change' ? words : `after is ${words}`;
  return `Step time ${formatUs(diff.step_a_us)} → ${formatUs(diff.step_b_us)}: ${verdict}`;
}

/** One way the runs differ: "max_batch: 4 → 8". */
export function differenceLine(d: Pick<RunDifference, 'label' | 'a' | 'b'>): string {
  return `${d.label}: ${d.a} → ${d.b}`;
}

/**
 * What the diff can say about its runs, in one sentence: what differs ("max_batch 4 → 8,
 * mode CPU fallback → GPU"), that nothing does, or that a side is a trace file.
 */
export function differencesSummary(diff: Pick<ProfileDiff, 'a_run' | 'b_run' | 'changes'>): string {
  if (!diff.a_run || !diff.b_run) {
    return 'A trace file is no run: there are no parameters to compare, only the traces.';
  }
  if (diff.a_run.id === diff.b_run.id) {
    return 'Both traces are of the same run.';
  }
  if (!diff.changes?.length) {
    return 'The runs had the same lab, parameters, mode and machine: the difference is the code or the machine’s load.';
  }
  return `What changed: ${diff.changes.map(d => `${d.label} ${d.a} → ${d.b}`).join(', ')}.`;
}

/** A warning when the two traces are of different kinds (their breakdowns measure different things), else null. */
export function modeWarning(diff: Pick<ProfileDiff, 'a_mode' | 'b_mode'>): string | null {
  if (diff.a_mode === diff.b_mode) {
    return null;
  }
  return (
    `Before is a ${modeTag(diff.a_mode)}, after a ${modeTag(diff.b_mode)}: a GPU trace counts device time, ` +
    'a CPU-only one host time, so compare the step times with care.'
  );
}

export interface BreakdownRow extends BreakdownDiffRow {
  label: string;
}

/** The breakdown rows in the step chart's order (categories first, anything else after), with their labels. */
export function breakdownRows(rows: readonly BreakdownDiffRow[]): BreakdownRow[] {
  const order = (key: string) => {
    const i = PROFILE_CATEGORIES.indexOf(key as ProfileCategory);
    return i < 0 ? PROFILE_CATEGORIES.length : i;
  };
  return [...rows]
    .sort((a, b) => order(a.key) - order(b.key))
    .map(row => ({
      ...row,
      label: order(row.key) < PROFILE_CATEGORIES.length ? categoryLabel(row.key as ProfileCategory) : row.key
    }));
}

/** The operators by |delta|, largest first (the server's order, kept whatever it sent), at most `limit`. */
export function opRowsByChange(rows: readonly OpDiffRow[], limit = 30): OpDiffRow[] {
  return [...rows]
    .sort((a, b) => Math.abs(b.delta_us) - Math.abs(a.delta_us) || a.name.localeCompare(b.name))
    .slice(0, limit);
}
