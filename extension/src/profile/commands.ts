/** Command ids of the profile viewer, the arguments they take, and the ids of its panels. */

import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import type { Run, RunList, Trace, TraceList } from '../api/types';

export namespace ProfileCommandIds {
  /**
   * Open (or reveal) a trace's profile view; args `{trace?}`: 'run:<run>:<file>',
   * 'run:<run>:*' (all ranks) or 'file:<path>'; without it, the newest trace of the user's runs.
   */
  export const openProfile = 'gpudojo:open-profile';
  /** Analyse a trace file and open its view; args `{path}` (relative to the server root), else the file browser's selection. */
  export const openProfileFile = 'gpudojo:open-profile-file';
  /** Compare two traces in the "Profile diff" panel; args `{a, b}` (trace ids: before, after). */
  export const openProfileDiff = 'gpudojo:open-profile-diff';
}

/** Trace ids as the server names them; bounded so a crafted argument cannot become a huge query. */
const TRACE_ID = /^(run|file):.{1,1024}$/;

/** The trace id in `args[name]`, or null when there is none or it is not a trace id. */
export function readTraceId(args: ReadonlyPartialJSONObject, name = 'trace'): string | null {
  const value = args[name];
  return typeof value === 'string' && TRACE_ID.test(value) ? value : null;
}

/** Whether a file is a trace the viewer opens: a Chrome/Kineto trace (.json, .json.gz, *.pt.trace.json). */
export function isTraceFile(path: string): boolean {
  return /\.json(\.gz)?$/i.test(path);
}

/** A trace id for what a learner typed in the picker: an id as it is, a path as 'file:<path>'; null when empty. */
export function traceIdFromInput(text: string): string | null {
  const value = text.trim().replace(/^\/+/, '');
  if (!value) {
    return null;
  }
  const id = TRACE_ID.test(value) ? value : `file:${value}`;
  return TRACE_ID.test(id) ? id : null;
}

/** Whether a run asked to record a profile (a run from before profiles has no such field). */
export function recordsProfile(run: Run): boolean {
  return run.record_profile;
}

/** Whether `trace` stands for all of a run's ranks at once. */
export function isAllRanks(trace: Pick<Trace, 'id'>): boolean {
  return trace.id.endsWith(':*');
}

/** The calls the run look-ups make (GpudojoClient satisfies it). */
export interface TraceSource {
  listRuns(filters: { lab?: string; limit?: number }): Promise<RunList>;
  listTraces(run: string): Promise<TraceList>;
}

/** The trace a run's view opens first: all ranks when there are several, else the lowest rank's. */
export function mainTrace(traces: readonly Trace[]): Trace | null {
  return traces.find(isAllRanks) ?? [...traces].sort((a, b) => (a.rank ?? 0) - (b.rank ?? 0))[0] ?? null;
}

/**
 * The newest trace among the user's recent runs that recorded a profile (all ranks
 * when a run has several), or null when none has one. Looks at the newest `runs` of them.
 */
export async function newestTrace(source: TraceSource, runs = 5): Promise<Trace | null> {
  const recorded = (await source.listRuns({ limit: 100 })).runs
    .filter(recordsProfile)
    .sort((a, b) => b.created_at - a.created_at)
    .slice(0, runs);
  for (const run of recorded) {
    const trace = mainTrace((await source.listTraces(run.id)).traces);
    if (trace) {
      return trace;
    }
  }
  return null;
}

/** The run before `run` of the same lab that recorded a profile (newest first), or null; scripts have none. */
export function previousRunOf(run: Run, runs: readonly Run[]): Run | null {
  if (run.kind !== 'lab' || !run.lab) {
    return null;
  }
  return (
    runs
      .filter(r => r.id !== run.id && r.lab === run.lab && r.created_at < run.created_at && recordsProfile(r))
      .sort((a, b) => b.created_at - a.created_at)[0] ?? null
  );
}

/**
 * The pair of traces to compare between an earlier run and this one: all ranks
 * with all ranks, else the same rank, else each run's main trace; null when either has none.
 */
export function comparablePair(before: readonly Trace[], after: readonly Trace[]): [Trace, Trace] | null {
  const a = mainTrace(before);
  const b = mainTrace(after);
  if (!a || !b) {
    return null;
  }
  if (isAllRanks(a) !== isAllRanks(b)) {
    const rank = (list: readonly Trace[], r: number | null | undefined) => list.find(t => !isAllRanks(t) && t.rank === r);
    const single = isAllRanks(a) ? b : a;
    const other = rank(isAllRanks(a) ? before : after, single.rank);
    if (other) {
      return isAllRanks(a) ? [other, b] : [a, other];
    }
  }
  return [a, b];
}

/** A DOM id for a panel of `key` (ids may not hold every character a path can). */
function panelId(prefix: string, key: string): string {
  let hash = 0;
  for (let i = 0; i < key.length; i++) {
    hash = (Math.imul(hash, 31) + key.charCodeAt(i)) | 0;
  }
  const readable = key.replace(/[^A-Za-z0-9_-]+/g, '-').slice(-60);
  return `${prefix}-${readable}-${(hash >>> 0).toString(16)}`;
}

/** The DOM id of a trace's profile panel. */
export function profileViewId(trace: string): string {
  return panelId('gpudojo-profile', trace);
}

/** The DOM id of the diff panel of a (before) and b (after). */
export function profileDiffId(a: string, b: string): string {
  return panelId('gpudojo-profile-diff', `${a}\n${b}`);
}
