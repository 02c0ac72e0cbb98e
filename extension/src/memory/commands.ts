/** Command ids of the memory viewer and the arguments they take. */

import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import type { Capture, CaptureList, RunList } from '../api/types';

export namespace MemoryCommandIds {
  /**
   * Open (or reveal) a capture's memory view; args `{capture?, estimator?}`: capture is
   * 'run:<run>:<file>' or 'file:<path>'; without it, the newest capture of the user's runs.
   * `estimator: true` brings the estimator into view (on its own when there is no capture);
   * `mode: 'transformer'` opens it in its transformer mode.
   */
  export const openMemory = 'gpudojo:open-memory';
  /** Analyse a snapshot file and open its view; args `{path}` (relative to the server root), else the file browser's selection. */
  export const openMemoryFile = 'gpudojo:open-memory-file';
}

/** Capture ids as the server names them; bounded so a crafted argument cannot become a huge query. */
const CAPTURE_ID = /^(run|file):.{1,1024}$/;

export function readCaptureId(args: ReadonlyPartialJSONObject): string | null {
  return typeof args.capture === 'string' && CAPTURE_ID.test(args.capture) ? args.capture : null;
}

/** Whether the command was asked to show the estimator (`estimator: true`, or '1' from a link). */
export function readEstimator(args: ReadonlyPartialJSONObject): boolean {
  return args.estimator === true || args.estimator === '1';
}

/** The estimator mode a command asks for: 'transformer' (`mode: 'transformer'`), else the plain one. */
export function readEstimatorMode(args: ReadonlyPartialJSONObject): 'model' | 'transformer' {
  return args.mode === 'transformer' ? 'transformer' : 'model';
}

/** The calls newestCapture makes (GpudojoClient satisfies it). */
export interface CaptureSource {
  listRuns(filters: { limit?: number }): Promise<RunList>;
  listCaptures(run: string): Promise<CaptureList>;
}

/**
 * The newest memory capture among the user's recent runs that recorded memory
 * (rank 0's when a run has several), or null when none has one. Looks at the
 * newest `runs` runs that asked to record memory.
 */
export async function newestCapture(source: CaptureSource, runs = 5): Promise<Capture | null> {
  const recorded = (await source.listRuns({ limit: 100 })).runs
    .filter(run => run.record_memory)
    .sort((a, b) => b.created_at - a.created_at)
    .slice(0, runs);
  for (const run of recorded) {
    const captures = (await source.listCaptures(run.id)).captures;
    if (captures.length) {
      return [...captures].sort((a, b) => (a.rank ?? 0) - (b.rank ?? 0))[0];
    }
  }
  return null;
}

/** The DOM id of a capture's panel (ids may not hold every character a path can). */
export function memoryViewId(capture: string): string {
  let hash = 0;
  for (let i = 0; i < capture.length; i++) {
    hash = (Math.imul(hash, 31) + capture.charCodeAt(i)) | 0;
  }
  const readable = capture.replace(/[^A-Za-z0-9_-]+/g, '-').slice(-60);
  return `gpudojo-memory-${readable}-${(hash >>> 0).toString(16)}`;
}

/** Whether a file name is a memory snapshot the viewer opens (torch writes .pickle; gpudojo's CPU captures .json). */
export function isSnapshotFile(path: string): boolean {
  return /\.(pickle|pkl)$/i.test(path);
}
