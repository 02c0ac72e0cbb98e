/**
 * Words and numbers of the profile view: durations (the trace's microseconds),
 * shares, counts, the breakdown line, speed-ups, and the mode every figure is
 * labelled with.
 */

import type { CategoryTime, ProfileCategory, TraceMode } from '../api/types';

/** The step chart's categories, bottom to top (the order the server's breakdown adds them up in). */
export const PROFILE_CATEGORIES: readonly ProfileCategory[] = [
  'compute',
  'communication',
  'data_loading',
  'memcpy',
  'sync',
  'idle'
];

const CATEGORY_LABELS: Record<ProfileCategory, string> = {
  compute: 'compute',
  communication: 'communication',
  data_loading: 'data loading',
  memcpy: 'memcpy',
  sync: 'sync',
  idle: 'idle'
};

/** A category in words: "data loading". */
export function categoryLabel(category: ProfileCategory): string {
  return CATEGORY_LABELS[category] ?? category;
}

/** A duration given in µs: "0.8 µs", "850 µs", "12.5 ms", "3.20 s"; "—" when not a number. */
export function formatUs(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) {
    return '—';
  }
  const abs = Math.abs(us);
  if (abs < 1000) {
    return `${us.toFixed(abs < 10 && abs !== Math.round(abs) ? 1 : 0)} µs`;
  }
  if (abs < 1_000_000) {
    const ms = us / 1000;
    return `${ms.toFixed(Math.abs(ms) < 10 ? 2 : Math.abs(ms) < 100 ? 1 : 0)} ms`;
  }
  const s = us / 1_000_000;
  return `${s.toFixed(Math.abs(s) < 10 ? 2 : 1)} s`;
}

/** Time units of the axis, largest first, in µs. */
const AXIS_UNITS: ReadonlyArray<{ name: string; us: number }> = [
  { name: 's', us: 1_000_000 },
  { name: 'ms', us: 1000 },
  { name: 'µs', us: 1 },
  { name: 'ns', us: 0.001 }
];

/** The most decimals an axis label carries before it moves to the next smaller unit. */
const AXIS_MAX_DECIMALS = 3;

/**
 * Labels for time-axis ticks (µs from the trace's start) `stepUs` apart, at the zoom's
 * precision: the unit is the largest (s, ms, µs, ns) the visible values reach, the
 * decimals are those the step needs in it ("481.05 ms", "481.10 ms" for a 50 µs step),
 * and more than three decimals move to the next smaller unit ("481,000.2 µs"). Adjacent
 * labels never read the same.
 */
export function timeTickLabels(ticks: readonly number[], stepUs: number): string[] {
  if (!ticks.length) {
    return [];
  }
  const finite = ticks.filter(Number.isFinite);
  const step = Number.isFinite(stepUs) && stepUs > 0 ? stepUs : 1;
  const reach = Math.max(step, ...finite.map(Math.abs));
  let u = AXIS_UNITS.findIndex(unit => reach >= unit.us);
  if (u < 0) {
    u = AXIS_UNITS.length - 1;
  }
  // Decimals a step of 1, 2 or 5 × 10^k needs in this unit; rounding noise does not add one.
  let decimals = Math.max(0, Math.ceil(-Math.log10(step / AXIS_UNITS[u].us) - 1e-9));
  while (decimals > AXIS_MAX_DECIMALS && u < AXIS_UNITS.length - 1) {
    u += 1;
    decimals = Math.max(0, decimals - 3);
  }
  const unit = AXIS_UNITS[u];
  const write = (d: number) =>
    ticks.map(t =>
      Number.isFinite(t)
        ? `${(t / unit.us).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d })} ${unit.name}`
        : '—'
    );
  let labels = write(decimals);
  // A step that is no 1-2-5 multiple could still round two ticks alike: add decimals until they differ.
  while (labels.some((label, i) => i > 0 && label === labels[i - 1]) && decimals < 9) {
    decimals += 1;
    labels = write(decimals);
  }
  return labels;
}

/** A signed duration (µs): "+12.5 ms", "-850 µs", "0 µs". */
export function formatDeltaUs(us: number): string {
  return us > 0 ? `+${formatUs(us)}` : formatUs(us);
}

/** A share 0-1 as a whole percent: "41%"; under half a percent but not zero, "<1%". */
export function formatShare(share: number): string {
  if (!Number.isFinite(share)) {
    return '—';
  }
  if (share > 0 && share < 0.005) {
    return '<1%';
  }
  return `${Math.round(share * 100)}%`;
}

/** A count with thousands separators: "1,900". */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** A count that may be fractional (per step): "1,900", "2.5", "0.33". */
export function formatPerStep(n: number): string {
  if (!Number.isFinite(n)) {
    return '—';
  }
  if (Math.abs(n) >= 100 || n === Math.round(n)) {
    return formatCount(n);
  }
  return n.toFixed(Math.abs(n) < 1 ? 2 : 1);
}

export interface CategoryShare {
  category: ProfileCategory;
  us: number;
  /** Of the breakdown's total, 0-1. */
  share: number;
}

/** The breakdown's categories with their shares of its total, in chart order (zero ones kept). */
export function breakdownShares(breakdown: readonly CategoryTime[]): CategoryShare[] {
  const byCategory = new Map(breakdown.map(c => [c.category, c.us]));
  const total = breakdown.reduce((sum, c) => sum + Math.max(0, c.us), 0);
  return PROFILE_CATEGORIES.map(category => {
    const us = Math.max(0, byCategory.get(category) ?? 0);
    return { category, us, share: total > 0 ? us / total : 0 };
  });
}

/** The mean breakdown as one line, largest first, empty categories left out: "compute 52% · data loading 41% · idle 7%". */
export function breakdownLine(breakdown: readonly CategoryTime[]): string {
  return breakdownShares(breakdown)
    .filter(c => c.us > 0)
    .sort((a, b) => b.share - a.share)
    .map(c => `${categoryLabel(c.category)} ${formatShare(c.share)}`)
    .join(' · ');
}

/** The mode tag every figure carries: "GPU trace" or "CPU-only trace". */
export function modeTag(kind: TraceMode): string {
  return kind === 'gpu' ? 'GPU trace' : 'CPU-only trace';
}

/**
 * A speed-up (a's step time over b's) in words: "1.50× faster", "1.25× slower",
 * "no change" within half a percent; "—" when either time is missing.
 */
export function formatSpeedup(speedup: number): string {
  if (!Number.isFinite(speedup) || speedup <= 0) {
    return '—';
  }
  if (Math.abs(speedup - 1) < 0.005) {
    return 'no change';
  }
  return speedup > 1 ? `${speedup.toFixed(2)}× faster` : `${(1 / speedup).toFixed(2)}× slower`;
}

/** "+" for a positive delta, "-" for a negative one, "0" otherwise (a data-sign attribute's value). */
export function signOf(delta: number): '+' | '-' | '0' {
  return delta > 0 ? '+' : delta < 0 ? '-' : '0';
}

/** A file or path's last part: "rank0.trace.json". */
export function baseName(path: string): string {
  return path.split('/').filter(Boolean).pop() ?? path;
}
