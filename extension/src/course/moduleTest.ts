/**
 * ModuleTestView: the module test in the main area: its scores (last, best,
 * pass mark) and the questions in the lessons' quiz widget. Grading and the
 * record of attempts are the server's; a retake is a new attempt, in a new
 * order, from empty answers.
 */

import { Panel, Widget } from '@lumino/widgets';
import type { ModuleTestDoc, ModuleTestGraded, ModuleTestScores, QuizResult } from '../api/types';
import { h } from '../dom';
import { scoresText } from './catalog';
import { QuizView } from './quiz';

/** The calls the view makes (GpudojoClient satisfies it). */
export interface ModuleTestSource {
  getModuleTest(): Promise<ModuleTestDoc>;
  submitModuleTest(answers: Record<string, string[]>): Promise<ModuleTestGraded>;
}

export interface ModuleTestViewOptions {
  source: ModuleTestSource;
  /** Called after an attempt was graded (the Course section shows the new scores). */
  graded?: (scores: ModuleTestScores) => void;
  /** A widget showing markdown (the questions' prompts). */
  createMarkdown?: (source: string) => Widget;
}

export class ModuleTestView extends Panel {
  constructor(options: ModuleTestViewOptions) {
    super();
    this._options = options;
    this.id = 'gpudojo-module-test-view';
    this.addClass('gpudojo-module-test');
    this.addClass('gpudojo-lesson-view');
    this.title.label = 'Module test';
    void this.load();
  }

  async load(): Promise<void> {
    this._clear();
    this._add(h('div', { className: 'gpudojo-loading', text: 'Loading the module test…' }));
    let doc: ModuleTestDoc;
    try {
      doc = await this._options.source.getModuleTest();
    } catch (error) {
      if (this.isDisposed) {
        return;
      }
      this._clear();
      const retry = h('button', { className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-retry', text: 'Retry' });
      retry.addEventListener('click', () => void this.load());
      this._add(
        h(
          'div',
          { className: 'gpudojo-error', attrs: { role: 'alert' } },
          `The module test could not be loaded: ${(error as Error).message ?? error} `,
          retry
        )
      );
      return;
    }
    if (this.isDisposed) {
      return;
    }
    this._clear();
    this.title.label = doc.title;
    this._scores = h('p', { className: 'gpudojo-module-test-scores', attrs: { role: 'status' } });
    this._showScores(doc.scores);
    this._add(
      h(
        'header',
        { className: 'gpudojo-lesson-header' },
        h('div', { className: 'gpudojo-lesson-kicker', text: 'End of the module' }),
        h('h1', { className: 'gpudojo-lesson-title', text: doc.title }),
        this._scores
      )
    );
    this.addWidget(
      new QuizView({
        lessonId: 'module-test',
        heading: 'Questions',
        questions: doc.questions,
        lastResult: doc.last_result ?? null,
        createMarkdown: this._options.createMarkdown,
        submit: answers => this._submit(answers),
        // A retake is a new attempt, reshuffled by the server and answered from scratch: keeping
        // the right answers would let trial and error pass the test.
        nextAttempt: async () => (await this._options.source.getModuleTest()).questions,
        keepRightOnRetry: false
      })
    );
  }

  private async _submit(answers: Record<string, string[]>): Promise<QuizResult> {
    const graded = await this._options.source.submitModuleTest(answers);
    this._showScores(graded.scores);
    this._options.graded?.(graded.scores);
    return graded.result;
  }

  private _showScores(scores: ModuleTestScores): void {
    if (this._scores) {
      this._scores.textContent = scoresText(scores);
      this._scores.dataset.passed = String(scores.passed);
    }
  }

  private _add(node: HTMLElement): void {
    this.addWidget(new Widget({ node }));
  }

  private _clear(): void {
    for (const widget of [...this.widgets]) {
      widget.dispose();
    }
    this._scores = null;
  }

  private _options: ModuleTestViewOptions;
  private _scores: HTMLElement | null = null;
}
