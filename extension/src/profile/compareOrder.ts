/**
 * Which side of a comparison is before and which after: the older run is before, so a
 * speed-up reads forward in time ("after is 1.50× faster"); a swap turns it round.
 */

import type { RunFacts } from '../api/types';

/** A trace with the start of its run (s since the epoch), null for a trace file. */
export interface TimedTrace {
  id: string;
  createdAt?: number | null;
}

/**
 * [before, after] for this view's trace and the one chosen: the older run first; this
 * trace first when either time is unknown or they are equal. `swapped` turns it round.
 */
export function beforeAfter(self: TimedTrace, other: TimedTrace, swapped = false): [string, string] {
  const known = typeof self.createdAt === 'number' && typeof other.createdAt === 'number';
  const otherFirst = known && (other.createdAt as number) < (self.createdAt as number);
  const order: [string, string] = otherFirst ? [other.id, self.id] : [self.id, other.id];
  return swapped ? [order[1], order[0]] : order;
}

/** Whether the diff's before is the newer run (both runs known), so its wording reads backwards in time. */
export function beforeIsNewer(diff: { a_run?: RunFacts | null; b_run?: RunFacts | null }): boolean {
  return !!diff.a_run && !!diff.b_run && diff.a_run.created_at > diff.b_run.created_at;
}

/** A run's start as the picker and the diff name it: "14:05:09" today, "3 Dec 14:05" before. */
export function runTime(createdAt: number, now: Date = new Date()): string {
  const d = new Date(createdAt * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  if (d.toDateString() === now.toDateString()) {
    return `${clock}:${pad(d.getSeconds())}`;
  }
  return `${d.getDate()} ${d.toLocaleString('en-US', { month: 'short' })} ${clock}`;
}

/** A run as the diff names a side: "PyTorch on the GPU, started 14:05:09 (GPU)". */
export function runName(run: RunFacts, now?: Date): string {
  return `${run.title}, started ${runTime(run.created_at, now)} (${run.device_mode === 'gpu' ? 'GPU' : 'CPU fallback'})`;
}
