/**
 * What the memory view says while a capture's first analysis runs (it polls
 * GET memory/progress); the wording of the shared analysis progress.
 */

import type { AnalysisProgress } from '../api/types';
import { ProgressWords, progressText as text, progressValue as value } from '../analysed/progress';

export const MEMORY_PROGRESS: ProgressWords = {
  file: 'snapshot',
  subject: 'capture',
  // Reading is most of a cold analysis; pairing and indexing share the last tenth.
  readShare: 0.9,
  later: [
    ['pairing', 'Pairing each allocation with its free'],
    ['indexing', 'Finding the peak and indexing the timeline']
  ],
  done: 'Analysed; loading the timeline'
};

/** The status line for a progress answer, e.g. "Reading the snapshot: 43% (2.1 s)". */
export const progressText = (p: AnalysisProgress): string => text(MEMORY_PROGRESS, p);

/** The progress bar's value (0-1), or null for an indeterminate bar. */
export const progressValue = (p: AnalysisProgress): number | null => value(MEMORY_PROGRESS, p);
