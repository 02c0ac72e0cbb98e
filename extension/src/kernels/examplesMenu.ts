/**
 * ExamplesMenu: the toolbar's "Examples from <lab>…" select of a lab's
 * playground. It fetches the lab's kernel examples once, and choosing one
 * loads it into the playground model (asking first when that would replace
 * code the learner wrote).
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { KernelExample, KernelExamples } from '../api/types';
import { h } from '../dom';
import { examplesMenuLabel, exampleState, examplesOf, problemsText, wouldLoseEdits } from './examples';
import type { PlaygroundModel } from './model';

/** The part of the API client the menu uses (GpudojoClient satisfies it). */
export interface ExampleSource {
  getKernelExamples(lab?: string): Promise<KernelExamples>;
}

export interface ExamplesMenuOptions {
  lab: string;
  labTitle?: string;
  source: ExampleSource;
  model: PlaygroundModel;
  /** Asks whether to replace the learner's code; a JupyterLab dialog unless a test passes another. */
  confirmReplace?: (example: KernelExample) => Promise<boolean>;
}

const LANGUAGE_NAMES = { cuda: 'CUDA C++', numba: 'numba' } as const;

/** Ask, in a JupyterLab dialog, whether `example` may replace the learner's edited source. */
export async function confirmReplaceDialog(example: KernelExample): Promise<boolean> {
  const language = LANGUAGE_NAMES[example.language];
  const result = await showDialog({
    title: 'Replace your kernel?',
    body: `Loading “${example.title}” replaces the ${language} source you edited here; your edits are not kept. (Copy them first to keep them.)`,
    buttons: [Dialog.cancelButton({ label: 'Keep my code' }), Dialog.warnButton({ label: 'Replace' })]
  });
  return result.button.accept;
}

export class ExamplesMenu {
  constructor(options: ExamplesMenuOptions) {
    this._options = options;
    this.node = h('select', {
      className: 'jp-mod-styled gpudojo-examples',
      attrs: { 'aria-label': `Kernel examples of ${options.labTitle || options.lab}`, 'data-lab': options.lab }
    });
    this._showPlaceholder('Loading the lab’s examples…');
    this.node.disabled = true;
    this.node.addEventListener('change', () => void this._onChoose());
  }

  /** The select element, for the toolbar. */
  readonly node: HTMLSelectElement;

  /** The lab's examples, once fetched (empty before, or when the fetch failed). */
  get examples(): ReadonlyArray<KernelExample> {
    return this._examples;
  }

  /** Fetch the lab's examples and fill the menu; a failure is shown in the menu, never thrown. */
  async fetch(): Promise<void> {
    const { lab, labTitle, source } = this._options;
    let answer: KernelExamples;
    try {
      answer = await source.getKernelExamples(lab);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this._showPlaceholder(`Examples of ${labTitle || lab} could not be loaded`);
      this.node.title = `${message}\nClose this tab and open the lab from the course again to retry.`;
      return;
    }
    this._examples = examplesOf(answer, lab);
    const problems = problemsText(answer, lab);
    if (this._examples.length === 0) {
      this._showPlaceholder(`${labTitle || lab} has no kernel examples`);
      this.node.title = problems || 'This lab’s lab.toml lists no [[kernels]].';
      return;
    }
    this._showPlaceholder(examplesMenuLabel(lab, labTitle));
    for (const example of this._examples) {
      this.node.appendChild(
        h('option', {
          text: example.title,
          attrs: { value: String(example.index), 'data-index': String(example.index), 'data-language': example.language }
        })
      );
    }
    this.node.disabled = false;
    this.node.title = problems
      ? `Load one of the lab’s kernels with its launch. Some could not be offered:\n${problems}`
      : 'Load one of the lab’s kernels with its launch (grid, block, arguments and the expected output)';
  }

  /** Load the lab's first example, as a lab's playground opens with (no question asked: nothing is lost yet). */
  loadFirst(): void {
    const first = this._examples[0];
    if (first) {
      this._options.model.load(exampleState(first));
    }
  }

  /** The menu is a list of actions: it goes back to its first entry after each. */
  private async _onChoose(): Promise<void> {
    const index = Number(this.node.value);
    this.node.selectedIndex = 0;
    const example = this._examples.find(e => e.index === index);
    if (!example) {
      return;
    }
    const { model, confirmReplace = confirmReplaceDialog } = this._options;
    if (wouldLoseEdits(model.sourceOf(example.language), example.language, this._examples)) {
      // The tab may have been closed while the dialog was open.
      if (!(await confirmReplace(example)) || !this.node.isConnected) {
        return;
      }
    }
    model.load(exampleState(example));
  }

  private _showPlaceholder(text: string): void {
    this.node.textContent = '';
    this.node.appendChild(h('option', { text, attrs: { value: '' } }));
  }

  private _options: ExamplesMenuOptions;
  private _examples: KernelExample[] = [];
}
