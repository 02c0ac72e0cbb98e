/**
 * What the memory view says while a capture's first analysis runs (it polls
 * GET memory/progress): the phase in words, and how much of the file is read.
 */

import type { AnalysisProgress } from '../api/types';

/** Milliseconds between two progress questions while an analysis runs. */
export const PROGRESS_POLL_MS = 250;

/** The status line for a progress answer, e.g. "Reading the snapshot: 43% (2.1 s)". */
export function progressText(p: AnalysisProgress): string {
  const seconds = p.elapsed_ms >= 1000 ? ` (${(p.elapsed_ms / 1000).toFixed(1)} s)` : '';
  switch (p.phase) {
    case 'queued':
      // The worker is starting, or analysing another capture: one analysis at a time.
      return `Waiting for the analysis worker${seconds}`;
    case 'reading':
      return p.fraction === null
        ? `Reading the snapshot${seconds}`
        : `Reading the snapshot: ${Math.round(p.fraction * 100)}%${seconds}`;
    case 'pairing':
      return `Pairing each allocation with its free${seconds}`;
    case 'indexing':
      return `Finding the peak and indexing the timeline${seconds}`;
    case 'done':
      return 'Analysed; loading the timeline';
    default:
      return 'Analysing the capture…';
  }
}

/** The progress bar's value (0-1), or null for an indeterminate bar. */
export function progressValue(p: AnalysisProgress): number | null {
  if (p.phase === 'reading' && p.fraction !== null) {
    // Reading is most of a cold analysis; pairing and indexing share the last tenth.
    return Math.min(0.9, p.fraction * 0.9);
  }
  if (p.phase === 'pairing') {
    return 0.92;
  }
  if (p.phase === 'indexing') {
    return 0.96;
  }
  if (p.phase === 'done') {
    return 1;
  }
  return null;
}
