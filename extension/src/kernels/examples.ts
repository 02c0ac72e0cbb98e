/**
 * Kernel examples from labs, as the playground uses them: an example -> the
 * playground state it loads, the examples menu's wording, and whether loading
 * one would throw away the learner's own code.
 */

import type { KernelExample, KernelExamples, KernelLanguage } from '../api/types';
import type { RunPreset } from './runSpec';
import { starterSource } from './starters';

/** What loading an example puts in the playground: a language, its source and its run fields. */
export interface PlaygroundState {
  language: KernelLanguage;
  source: string;
  run: RunPreset;
}

/** The playground state of `example`: every run field is set, so nothing of the previous launch lingers. */
export function exampleState(example: KernelExample): PlaygroundState {
  return {
    language: example.language,
    source: example.source,
    run: {
      kernel: example.kernel,
      grid: [...example.grid],
      block: [...example.block],
      shared_bytes: example.shared_bytes,
      args: example.args.map(arg => ({ ...arg })),
      expected: { ...example.expected }
    }
  };
}

/** The examples menu's first entry, e.g. "Examples from CUDA hello world…". */
export function examplesMenuLabel(lab: string, labTitle?: string): string {
  return `Examples from ${labTitle || lab}…`;
}

/** The lab ids that have at least one kernel example, from GET kernels/examples (all labs). */
export function labsWithExamples(examples: KernelExamples): Set<string> {
  return new Set(examples.examples.map(example => example.lab));
}

/** The examples of `lab`, in lab.toml order. */
export function examplesOf(examples: KernelExamples, lab: string): KernelExample[] {
  return examples.examples.filter(example => example.lab === lab).sort((a, b) => a.index - b.index);
}

/** What the problems of `lab`'s examples say, one per line ('' when none): the menu's tooltip. */
export function problemsText(examples: KernelExamples, lab: string): string {
  return examples.problems
    .filter(problem => problem.lab === lab)
    .map(problem => (problem.index === null || problem.index === undefined ? problem.message : `kernels[${problem.index}]: ${problem.message}`))
    .join('\n');
}

/** Line endings and trailing blank space do not make a source the learner's own. */
function normalised(source: string): string {
  return source.replace(/\r\n?/g, '\n').trimEnd();
}

/**
 * Whether replacing `current` (the source of `language` in the playground)
 * would lose the learner's work: true unless it is the starter or the source
 * of one of `examples`. This also holds after a reload, when which example was
 * loaded last is no longer known.
 */
export function wouldLoseEdits(current: string, language: KernelLanguage, examples: ReadonlyArray<KernelExample>): boolean {
  const text = normalised(current);
  if (text === '' || text === normalised(starterSource(language))) {
    return false;
  }
  return !examples.some(example => example.language === language && normalised(example.source) === text);
}
