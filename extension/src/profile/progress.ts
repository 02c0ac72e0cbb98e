/**
 * What the profile view says while a trace's first analysis runs (it polls GET
 * profile/progress); the wording of the shared analysis progress.
 */

import type { ProfileProgress } from '../api/types';
import { ProgressWords, progressText as text, progressValue as value } from '../analysed/progress';

export const PROFILE_PROGRESS: ProgressWords = {
  file: 'trace',
  subject: 'trace',
  // Parsing the JSON is most of a cold analysis; the analysis and the index share the rest.
  readShare: 0.8,
  later: [
    ['analysing', 'Finding the steps, their breakdown and the top operators'],
    ['indexing', 'Indexing the timeline']
  ],
  done: 'Analysed; drawing the profile'
};

/** The status line for a progress answer, e.g. "Reading the trace: 43% (2.1 s)". */
export const progressText = (p: ProfileProgress): string => text(PROFILE_PROGRESS, p);

/** The progress bar's value (0-1), or null for an indeterminate bar. */
export const progressValue = (p: ProfileProgress): number | null => value(PROFILE_PROGRESS, p);
