/** RunsList: the sidebar's Runs section: run history with lab and status filters; a row opens its run. */

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import type { Run, RunStatus } from '../api/types';
import { h } from '../dom';
import { whereShort } from './engineStatus';
import { emptyRunsState, formatDuration, runDuration, statusLabel } from './format';
import type { LabCatalog } from './labCatalog';
import { paramSummary } from './params';
import { RunsListModel } from './runsListModel';

const STATUSES: RunStatus[] = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

/** "14:05" today, "3 Dec 14:05" before (local time) for a Unix time in seconds. */
export function startedText(seconds: number, now: Date = new Date()): string {
  const d = new Date(seconds * 1000);
  const time = `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
  if (d.toDateString() === now.toDateString()) {
    return time;
  }
  return `${d.getDate()} ${d.toLocaleString(undefined, { month: 'short' })} ${time}`;
}

export class RunsList extends Widget {
  constructor(options: {
    model: RunsListModel;
    labs: LabCatalog;
    openRun: (id: string) => void;
    /** Open lab `id`'s run form (the empty list's action). */
    runLab: (id: string) => void;
  }) {
    super();
    this.id = 'gpudojo-runs-list';
    this.addClass('gpudojo-runs-list');
    this.title.label = 'Runs';
    this.title.caption = 'Lab and script runs, newest first';
    this._model = options.model;
    this._labs = options.labs;
    this._openRun = options.openRun;
    this._runLab = options.runLab;

    this._labFilter = h('select', {
      className: 'jp-mod-styled gpudojo-runs-filter-lab',
      attrs: { 'aria-label': 'Show runs of lab' }
    });
    this._statusFilter = h('select', {
      className: 'jp-mod-styled gpudojo-runs-filter-status',
      attrs: { 'aria-label': 'Show runs with status' }
    });
    this._statusFilter.appendChild(h('option', { text: 'Any status', attrs: { value: '' } }));
    for (const status of STATUSES) {
      this._statusFilter.appendChild(h('option', { text: statusLabel(status), attrs: { value: status } }));
    }
    this._labFilter.addEventListener('change', () => this._model.setFilter({ lab: this._labFilter.value }));
    this._statusFilter.addEventListener('change', () =>
      this._model.setFilter({ status: this._statusFilter.value as RunStatus | '' })
    );
    const refresh = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-runs-refresh',
      text: 'Refresh',
      attrs: { type: 'button' }
    });
    refresh.addEventListener('click', () => void this._model.refresh());
    this._body = h('div', { className: 'gpudojo-runs-body' });
    this.node.append(
      h('div', { className: 'gpudojo-runs-filters' }, this._labFilter, this._statusFilter, refresh),
      this._body
    );
    this._model.changed.connect(this._render, this);
    this._labs.changed.connect(this._onLabsChanged, this);
    this._renderLabFilter();
    this._render();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._model.start();
  }

  private _onLabsChanged(): void {
    this._renderLabFilter();
    // The empty list offers the first lab, and a filtered one names its lab: both need the labs.
    this._render();
  }

  private _renderLabFilter(): void {
    const current = this._model.filter.lab;
    this._labFilter.textContent = '';
    this._labFilter.appendChild(h('option', { text: 'All labs and scripts', attrs: { value: '' } }));
    for (const lab of this._labs.labs) {
      this._labFilter.appendChild(h('option', { text: lab.title, attrs: { value: lab.id } }));
    }
    this._labFilter.value = current;
  }

  private _render(): void {
    const body = this._body;
    body.textContent = '';
    const { runs, error } = this._model;
    if (error) {
      body.appendChild(h('div', { className: 'gpudojo-error', attrs: { role: 'alert' }, text: `Runs could not be listed: ${error}` }));
    }
    if (!runs.length) {
      if (this._model.loaded && !error) {
        body.appendChild(this._empty());
      }
      return;
    }
    const list = h('ul', { className: 'gpudojo-runs-rows', attrs: { role: 'list' } });
    const now = Date.now() / 1000;
    for (const run of runs) {
      list.appendChild(this._row(run, now));
    }
    body.appendChild(list);
  }

  /** No runs at all: one line and the first lab's Run; none under the filters: say so, keep the filters, offer all. */
  private _empty(): HTMLElement {
    const state = emptyRunsState(this._model.filter, this._labs.labs);
    const node = h('div', {
      className: state.filtered ? 'gpudojo-runs-none-match' : 'gpudojo-runs-empty',
      title: state.action?.title ?? state.text,
      attrs: { 'data-filtered': String(state.filtered) }
    }, state.text);
    const action = state.action;
    if (action) {
      const button = h('button', {
        className: 'gpudojo-runs-empty-action',
        text: action.label,
        title: action.title,
        attrs: { type: 'button', 'data-action': action.kind }
      });
      button.addEventListener('click', () => {
        if (action.kind === 'run-lab') {
          this._runLab(action.lab);
        } else {
          this._labFilter.value = '';
          this._statusFilter.value = '';
          this._model.setFilter({ lab: '', status: '' });
        }
      });
      node.append(' ', button);
    }
    return node;
  }

  private _row(run: Run, now: number): HTMLElement {
    const seconds = runDuration(run, now);
    const lab = this._labs.get(run.lab);
    const params = run.kind === 'lab' ? paramSummary(run.params, lab) : `${run.nproc} process${run.nproc === 1 ? '' : 'es'}`;
    const row = h(
      'li',
      {
        className: 'gpudojo-run-row gpudojo-mod-clickable',
        title: `Open run ${run.id}`,
        attrs: { 'data-run': run.id, 'data-status': run.status, role: 'button', tabindex: '0' }
      },
      h('span', { className: 'gpudojo-run-status', text: statusLabel(run.status), attrs: { 'data-status': run.status } }),
      h('span', { className: 'gpudojo-run-row-title', text: run.title, title: run.title }),
      h(
        'span',
        { className: 'gpudojo-run-row-meta' },
        [
          startedText(run.created_at),
          seconds === null ? '' : formatDuration(seconds),
          params,
          whereShort(run) ?? '',
          run.group ? `sweep of ${run.group_param}` : ''
        ]
          .filter(Boolean)
          .join(' · ')
      )
    );
    const open = () => this._openRun(run.id);
    row.addEventListener('click', open);
    row.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        open();
      }
    });
    return row;
  }

  private _model: RunsListModel;
  private _labs: LabCatalog;
  private _openRun: (id: string) => void;
  private _runLab: (id: string) => void;
  private _labFilter: HTMLSelectElement;
  private _statusFilter: HTMLSelectElement;
  private _body: HTMLElement;
}
