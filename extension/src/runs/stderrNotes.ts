/**
 * Known harmless stderr banners: printed on stderr by torchrun and the profiler on every
 * run, they are not errors, so the log shows them as notes (muted, with why) instead of
 * painting them red. One list, in one place; add a pattern here, with its reason.
 */

export interface HarmlessStderr {
  /** Matches the whole line as the log shows it (rank prefix removed). */
  pattern: RegExp;
  /** Why the line is harmless, shown on hover. */
  why: string;
}

/** torchrun's glog-style prefix: "W1205 14:02:11.123000 4242 torch/distributed/run.py:793] ". */
const TORCHRUN = String.raw`(?:[WI]\d{4} [\d:.]+ \d+ \S*torch/distributed/run\.py:\d+\]\s*)?`;

export const HARMLESS_STDERR: ReadonlyArray<HarmlessStderr> = [
  {
    pattern: new RegExp(`^${TORCHRUN}(?:WARNING:torch\\.distributed\\.run:\\s*)?Setting OMP_NUM_THREADS environment variable for each process`),
    why: 'torchrun says it set OMP_NUM_THREADS=1 per process (its default), so ranks do not oversubscribe the cores. Not an error.'
  },
  {
    pattern: new RegExp(`^${TORCHRUN}(?:WARNING:torch\\.distributed\\.run:\\s*)?\\*{5,}\\s*$`),
    why: 'The frame torchrun draws around its OMP_NUM_THREADS notice. Not an error.'
  },
  {
    pattern: /^(?:USDT|STAGE):\d{4}-\d\d-\d\d [\d:.]+ \d+:\d+ \S+\.cpp:\d+\]/,
    why: "The PyTorch profiler's (Kineto's) trace of its own stages, e.g. profiler_start and profiler_stop. Not an error."
  }
];

/** Why `line` (a stderr line) is a known harmless banner, or null when it may matter. */
export function harmlessStderr(line: string): string | null {
  const text = line.trimEnd();
  for (const { pattern, why } of HARMLESS_STDERR) {
    if (pattern.test(text)) {
      return why;
    }
  }
  return null;
}
