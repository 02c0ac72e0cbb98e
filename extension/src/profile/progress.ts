/**
 * What the profile view says while a trace's first analysis runs (it polls GET
 * profile/progress): the phase in words, and how much of the file is read.
 */

import type { ProfileProgress } from '../api/types';

/** Milliseconds between two progress questions while an analysis runs. */
export const PROGRESS_POLL_MS = 250;

/** The status line for a progress answer, e.g. "Reading the trace: 43% (2.1 s)". */
export function progressText(p: ProfileProgress): string {
  const seconds = p.elapsed_ms >= 1000 ? ` (${(p.elapsed_ms / 1000).toFixed(1)} s)` : '';
  switch (p.phase) {
    case 'queued':
      // The worker is starting, or analysing another trace: one analysis at a time.
      return `Waiting for the analysis worker${seconds}`;
    case 'reading':
      return p.fraction === null || p.fraction === undefined
        ? `Reading the trace${seconds}`
        : `Reading the trace: ${Math.round(p.fraction * 100)}%${seconds}`;
    case 'analysing':
      return `Finding the steps, their breakdown and the top operators${seconds}`;
    case 'indexing':
      return `Indexing the timeline${seconds}`;
    case 'done':
      return 'Analysed; drawing the profile';
    default:
      return 'Analysing the trace…';
  }
}

/** The progress bar's value (0-1), or null for an indeterminate bar. */
export function progressValue(p: ProfileProgress): number | null {
  if (p.phase === 'reading' && p.fraction !== null && p.fraction !== undefined) {
    // Parsing the JSON is most of a cold analysis; the analysis and the index share the rest.
    return Math.min(0.8, p.fraction * 0.8);
  }
  switch (p.phase) {
    case 'analysing':
      return 0.85;
    case 'indexing':
      return 0.95;
    case 'done':
      return 1;
    default:
      return null;
  }
}
