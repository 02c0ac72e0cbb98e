/** Command ids of the memory viewer and the arguments they take. */

import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

export namespace MemoryCommandIds {
  /** Open (or reveal) a capture's memory view; args `{capture}` ('run:<run>:<file>' or 'file:<path>'). */
  export const openMemory = 'gpudojo:open-memory';
  /** Analyse a snapshot file and open its view; args `{path}` (relative to the server root), else the file browser's selection. */
  export const openMemoryFile = 'gpudojo:open-memory-file';
}

/** Capture ids as the server names them; bounded so a crafted argument cannot become a huge query. */
const CAPTURE_ID = /^(run|file):.{1,1024}$/;

export function readCaptureId(args: ReadonlyPartialJSONObject): string | null {
  return typeof args.capture === 'string' && CAPTURE_ID.test(args.capture) ? args.capture : null;
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
