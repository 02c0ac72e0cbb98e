/**
 * Diff mode: compare this capture's peak with another's (the run's other
 * ranks, or any capture open in this page), by category and by frame.
 */

import type { Capture, DiffRow, MemoryDiff } from '../api/types';
import { h } from '../dom';
import { formatBytes, formatDelta } from './format';

export interface DiffViewOptions {
  /** This capture (the diff's a). */
  capture: Capture;
  /** The captures to compare with, asked again each time the picker opens. */
  candidates: () => Promise<Capture[]>;
  diff: (a: string, b: string) => Promise<MemoryDiff>;
}

export class DiffView {
  constructor(options: DiffViewOptions) {
    this._options = options;
    this._select = h('select', { className: 'jp-mod-styled', attrs: { 'aria-label': 'Capture to compare with' } });
    this._compare = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-memory-diff-run',
      text: 'Compare',
      attrs: { type: 'button' }
    });
    this._compare.addEventListener('click', () => void this.compare(this._select.value));
    this._select.addEventListener('focus', () => void this.refreshCandidates());
    this._result = h('div', { className: 'gpudojo-memory-diff', attrs: { 'aria-live': 'polite' } });
    this.node = h(
      'section',
      { className: 'gpudojo-memory-panel gpudojo-memory-diff-panel' },
      h('h3', { text: 'Compare with another capture' }),
      h('div', { className: 'gpudojo-memory-diff-pick' }, this._select, this._compare),
      this._result
    );
    void this.refreshCandidates();
  }

  readonly node: HTMLElement;

  /** List the other captures in the picker (keeping the choice). */
  async refreshCandidates(): Promise<void> {
    let captures: Capture[];
    try {
      captures = (await this._options.candidates()).filter(c => c.id !== this._options.capture.id);
    } catch {
      captures = [];
    }
    const chosen = this._select.value;
    this._select.textContent = '';
    for (const capture of captures) {
      this._select.appendChild(h('option', { text: capture.label, attrs: { value: capture.id } }));
    }
    if (!captures.length) {
      this._select.appendChild(h('option', { text: 'No other capture open or in this run', attrs: { value: '' } }));
    }
    if (captures.some(c => c.id === chosen)) {
      this._select.value = chosen;
    }
    this._compare.disabled = !captures.length;
  }

  /** GET diff against capture `b` and show the table. */
  async compare(b: string): Promise<void> {
    if (!b) {
      return;
    }
    this._result.textContent = 'Comparing…';
    try {
      const diff = await this._options.diff(this._options.capture.id, b);
      this._result.textContent = '';
      this._result.setAttribute('data-b', b);
      this._result.append(...renderDiff(diff));
    } catch (error) {
      this._result.textContent = `The captures could not be compared: ${(error as Error).message}`;
    }
  }

  private _options: DiffViewOptions;
  private _select: HTMLSelectElement;
  private _compare: HTMLButtonElement;
  private _result: HTMLElement;
}

/** The headline (peak delta) and the tables by category and by frame. */
export function renderDiff(diff: MemoryDiff): HTMLElement[] {
  const pct = diff.peak_a_bytes > 0 ? ` (${formatPercentChange(diff.delta_bytes / diff.peak_a_bytes)})` : '';
  const headline = h('p', {
    className: 'gpudojo-memory-diff-headline',
    text: `Peak ${formatBytes(diff.peak_a_bytes)} → ${formatBytes(diff.peak_b_bytes)}: ${formatDelta(diff.delta_bytes)}${pct}`
  });
  headline.setAttribute('data-delta', String(diff.delta_bytes));
  return [headline, diffTable('Category', diff.by_category), diffTable('Allocated at', diff.by_frame)];
}

function formatPercentChange(ratio: number): string {
  const value = Math.round(ratio * 1000) / 10;
  return `${value > 0 ? '+' : ''}${value}%`;
}

function diffTable(title: string, rows: DiffRow[]): HTMLElement {
  const body = h('tbody');
  for (const row of rows) {
    const delta = h('td', { className: 'gpudojo-memory-delta', text: formatDelta(row.delta_bytes) });
    delta.setAttribute('data-sign', row.delta_bytes > 0 ? '+' : row.delta_bytes < 0 ? '-' : '0');
    body.appendChild(
      h(
        'tr',
        { attrs: { 'data-key': row.key } },
        h('td', { text: row.key }),
        h('td', { text: formatBytes(row.a_bytes) }),
        h('td', { text: formatBytes(row.b_bytes) }),
        delta
      )
    );
  }
  return h(
    'table',
    { className: 'gpudojo-memory-diff-table' },
    h('thead', {}, h('tr', {}, ...[title, 'This capture', 'Other', 'Change'].map(t => h('th', { text: t })))),
    body
  );
}
