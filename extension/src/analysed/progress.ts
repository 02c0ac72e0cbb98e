/**
 * What a view says while the server's first analysis of a file runs (memory
 * snapshots and profile traces alike: GET memory/progress, GET profile/progress):
 * the phase in words, the time so far, and how far the bar is.
 */

/** Milliseconds between two progress questions while an analysis runs. */
export const PROGRESS_POLL_MS = 250;

/** A progress answer: the phase, the share of the file read while reading, the time so far. */
export interface Progress {
  phase: string;
  fraction?: number | null;
  elapsed_ms: number;
}

/** How one kind of analysis names its work. */
export interface ProgressWords {
  /** What is read: "snapshot", "trace". */
  file: string;
  /** What is analysed, for the line before any answer: "capture", "trace". */
  subject: string;
  /** The bar's share for reading the file (most of a cold analysis); the later phases share the rest. */
  readShare: number;
  /** The phases after reading, in order, with their words (the bar steps through what is left). */
  later: ReadonlyArray<readonly [phase: string, text: string]>;
  /** The line once the analysis is done, while its result loads. */
  done: string;
}

/** The status line for a progress answer, e.g. "Reading the snapshot: 43% (2.1 s)". */
export function progressText(words: ProgressWords, p: Progress): string {
  const seconds = p.elapsed_ms >= 1000 ? ` (${(p.elapsed_ms / 1000).toFixed(1)} s)` : '';
  if (p.phase === 'queued') {
    // The worker is starting, or analysing another file: one analysis at a time.
    return `Waiting for the analysis worker${seconds}`;
  }
  if (p.phase === 'reading') {
    return p.fraction === null || p.fraction === undefined
      ? `Reading the ${words.file}${seconds}`
      : `Reading the ${words.file}: ${Math.round(p.fraction * 100)}%${seconds}`;
  }
  if (p.phase === 'done') {
    return words.done;
  }
  const later = words.later.find(([phase]) => phase === p.phase);
  return later ? `${later[1]}${seconds}` : `Analysing the ${words.subject}…`;
}

/** The progress bar's value (0-1), only ever forward; null for an indeterminate bar. */
export function progressValue(words: ProgressWords, p: Progress): number | null {
  if (p.phase === 'reading') {
    return p.fraction === null || p.fraction === undefined ? null : Math.min(words.readShare, p.fraction * words.readShare);
  }
  if (p.phase === 'done') {
    return 1;
  }
  const index = words.later.findIndex(([phase]) => phase === p.phase);
  if (index < 0) {
    return null;
  }
  // Each later phase starts a step further into what reading left.
  const step = (1 - words.readShare) / (words.later.length + 1);
  return words.readShare + step * (index + 0.5);
}
