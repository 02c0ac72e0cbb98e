/**
 * AcceptanceView: "What you can do at the end": the module's acceptance list,
 * each item with what completes it and a tick computed by the server from the
 * learner's own progress. Requirements the course does not have yet are shown
 * as not available and count neither way.
 */

import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';
import type { Acceptance, AcceptanceItem, AcceptanceRequirement } from '../api/types';
import { h } from '../dom';
import { RunCommandIds } from '../runs/commands';
import { acceptanceItemCount, acceptanceSummary, requirementState } from './catalog';
import { CourseCommandIds } from './commands';
import { CourseModel } from './model';
import { makeClickable } from './section';

export interface AcceptanceSource {
  getAcceptance(): Promise<Acceptance>;
}

export interface AcceptanceViewOptions {
  source: AcceptanceSource;
  model: CourseModel;
  commands: CommandRegistry;
}

const KIND_LABELS: Record<AcceptanceRequirement['kind'], string> = {
  lesson: 'lesson',
  lab: 'lab',
  exercise: 'exercise',
  'module-test': 'test'
};

export class AcceptanceView extends Widget {
  constructor(options: AcceptanceViewOptions) {
    super();
    this._options = options;
    this.id = 'gpudojo-acceptance-view';
    this.addClass('gpudojo-acceptance');
    this.title.label = 'What you can do at the end';
    // Progress changed elsewhere (a lesson completed, a lab passed, the test taken): tick again.
    options.model.changed.connect(this._onCatalogChanged, this);
    void this.load();
  }

  /** The list as last loaded. */
  get acceptance(): Acceptance | null {
    return this._data;
  }

  async load(): Promise<void> {
    const seq = ++this._seq;
    try {
      const data = await this._options.source.getAcceptance();
      if (this.isDisposed || seq !== this._seq) {
        return;
      }
      this._data = data;
      this._render(data);
    } catch (error) {
      if (this.isDisposed || seq !== this._seq) {
        return;
      }
      this.node.textContent = '';
      const retry = h('button', { className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-retry', text: 'Retry' });
      retry.addEventListener('click', () => void this.load());
      this.node.appendChild(
        h(
          'div',
          { className: 'gpudojo-error', attrs: { role: 'alert' } },
          `The acceptance list could not be loaded: ${(error as Error).message ?? error} `,
          retry
        )
      );
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._options.model.changed.disconnect(this._onCatalogChanged, this);
    super.dispose();
  }

  private _onCatalogChanged(): void {
    if (!this._options.model.loading) {
      void this.load();
    }
  }

  private _render(data: Acceptance): void {
    const node = this.node;
    node.textContent = '';
    const list = h('ol', { className: 'gpudojo-acceptance-list' });
    for (const item of data.items) {
      list.appendChild(this._renderItem(item));
    }
    node.append(
      h(
        'header',
        { className: 'gpudojo-lesson-header' },
        h('div', { className: 'gpudojo-lesson-kicker', text: 'The module’s acceptance list' }),
        h('h1', { className: 'gpudojo-lesson-title', text: 'What you can do at the end' }),
        h('p', {
          className: 'gpudojo-acceptance-summary',
          text: acceptanceSummary(data.items),
          attrs: { role: 'status' }
        }),
        h('p', {
          className: 'gpudojo-acceptance-note',
          text:
            'Each item is ticked from your own progress: lessons you marked complete, labs with a run that passed every check that applies on this machine, exercises whose checker passed, and the module test passed. ' +
            'Parts of the course that are not built yet are listed as “not available yet”: they count neither for nor against a tick.'
        })
      ),
      list
    );
  }

  private _renderItem(item: AcceptanceItem): HTMLElement {
    const reqs = h('ul', { className: 'gpudojo-acceptance-requires' });
    for (const req of item.requires) {
      reqs.appendChild(this._renderRequirement(req));
    }
    return h(
      'li',
      {
        className: 'gpudojo-acceptance-item',
        attrs: { 'data-id': item.id, 'data-done': String(item.done) }
      },
      h(
        'div',
        { className: 'gpudojo-acceptance-head' },
        h('span', {
          className: `gpudojo-progress-mark gpudojo-mod-${item.done ? 'check' : item.completed ? 'half' : 'empty'}`,
          attrs: { role: 'img', 'aria-label': item.done ? 'Done' : 'Not done yet' }
        }),
        h('span', { className: 'gpudojo-acceptance-text', text: item.text }),
        h('span', { className: 'gpudojo-acceptance-count', text: acceptanceItemCount(item) })
      ),
      reqs
    );
  }

  private _renderRequirement(req: AcceptanceRequirement): HTMLElement {
    const state = requirementState(req);
    const title = h('span', { className: 'gpudojo-acceptance-req-title', text: req.title });
    const row = h(
      'li',
      {
        className: 'gpudojo-acceptance-req',
        title: req.detail,
        attrs: { 'data-kind': req.kind, 'data-id': req.id ?? '', 'data-state': state.state }
      },
      h('span', { className: 'gpudojo-kind-tag', text: KIND_LABELS[req.kind] }),
      title,
      h('span', { className: `gpudojo-acceptance-state gpudojo-mod-${state.state}`, text: state.label }),
      state.state === 'unavailable' ? h('span', { className: 'gpudojo-acceptance-detail', text: req.detail }) : null
    );
    const open = this._opener(req);
    if (open) {
      makeClickable(row, open);
    }
    return row;
  }

  /** What clicking a requirement opens: its lesson, its lab's Run form, its exercise, the module test. */
  private _opener(req: AcceptanceRequirement): (() => void) | null {
    if (!req.available) {
      return null;
    }
    const { commands } = this._options;
    if (req.kind === 'lesson' && req.id) {
      return () => void commands.execute(CourseCommandIds.openLesson, { id: req.id as string });
    }
    if (req.kind === 'lab' && req.id && commands.hasCommand(RunCommandIds.runLab)) {
      return () => void commands.execute(RunCommandIds.runLab, { lab: req.id as string });
    }
    if (req.kind === 'exercise' && req.id) {
      return () => void commands.execute(CourseCommandIds.openExercise, { id: req.id as string });
    }
    if (req.kind === 'module-test') {
      return () => void commands.execute(CourseCommandIds.openModuleTest);
    }
    return null;
  }

  private _options: AcceptanceViewOptions;
  private _data: Acceptance | null = null;
  private _seq = 0;
}
