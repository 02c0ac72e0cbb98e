/**
 * "Compare with…": pick the other side of a comparison from every profiled run's traces
 * and the profiles open in this page, or type the path of a trace file. The older run is
 * before and the newer after (a swap turns it round); Compare opens the diff panel.
 *
 * The list is asked for again whenever it may be stale: when the pointer comes to the
 * picker (before a click opens the list), when it takes the focus, when it scrolls into
 * view and when its profile panel is shown again; a run that ended meanwhile is listed.
 */

import { h } from '../dom';
import { traceIdFromInput } from './commands';
import { beforeAfter } from './compareOrder';

/** A trace the picker offers, with the words it is listed by and when its run started (s). */
export interface TraceChoice {
  id: string;
  label: string;
  /** The start of the trace's run, seconds since the epoch; null for a trace file. */
  createdAt?: number | null;
}

export interface ComparePickerOptions {
  /** This view's trace. */
  trace: string;
  /** The traces to offer (this trace among them gives its run's time; it is not listed). */
  candidates: () => Promise<TraceChoice[]>;
  /** Open the diff of a (before) against b (after). */
  compare: (a: string, b: string) => void;
}

/** The value of the select's "a path…" entry. */
const TYPE_A_PATH = '';

export class ComparePicker {
  constructor(options: ComparePickerOptions) {
    this._options = options;
    this._select = h('select', {
      className: 'jp-mod-styled gpudojo-profile-compare-select',
      attrs: { 'aria-label': 'Trace to compare with' }
    });
    this._path = h('input', {
      className: 'jp-mod-styled gpudojo-profile-compare-path',
      attrs: { type: 'text', placeholder: 'or a trace file, e.g. runs/after.pt.trace.json', 'aria-label': 'Trace file to compare with' }
    });
    this._button = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-profile-compare',
      text: 'Compare',
      title: 'Open the comparison: the older run before, the newer after',
      attrs: { type: 'button' }
    });
    this._swap = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-profile-compare-swap',
      text: '⇄ Swap',
      title: 'Swap before and after',
      attrs: { type: 'button' }
    });
    this._order = h('span', { className: 'gpudojo-profile-compare-order-text', attrs: { 'aria-live': 'polite' } });
    this._orderRow = h('div', { className: 'gpudojo-profile-compare-order' }, this._order, this._swap);
    const stale = () => void this.refresh();
    this._select.addEventListener('focus', stale);
    this._select.addEventListener('change', () => {
      this._swapped = false;
      this._sync();
    });
    this._path.addEventListener('input', () => {
      this._swapped = false;
      this._sync();
    });
    this._swap.addEventListener('click', () => {
      this._swapped = !this._swapped;
      this._sync();
    });
    this._button.addEventListener('click', () => {
      const pair = this.pair();
      if (pair) {
        options.compare(pair[0], pair[1]);
      }
    });
    const row = h(
      'div',
      { className: 'gpudojo-profile-compare-row' },
      h('span', { className: 'gpudojo-profile-compare-label', text: 'Compare with…' }),
      this._select,
      this._path,
      this._button
    );
    row.addEventListener('pointerenter', stale);
    this.node = h('div', { className: 'gpudojo-profile-compare-picker' }, row, this._orderRow);
    if (typeof IntersectionObserver !== 'undefined') {
      this._observer = new IntersectionObserver(entries => {
        if (entries.some(e => e.isIntersecting)) {
          stale();
        }
      });
      this._observer.observe(this.node);
    }
    this._sync();
    void this.refresh();
  }

  readonly node: HTMLElement;

  /** The trace id to compare with: the typed path when there is one, else the selected trace; null when neither. */
  chosen(): string | null {
    const typed = traceIdFromInput(this._path.value);
    if (typed) {
      return typed;
    }
    return this._select.value && this._select.value !== this._options.trace ? this._select.value : null;
  }

  /** [before, after] as Compare would open them (the older run first unless swapped), or null when nothing is chosen. */
  pair(): [string, string] | null {
    const other = this.chosen();
    if (!other) {
      return null;
    }
    const time = (id: string) => this._choices.get(id)?.createdAt ?? null;
    return beforeAfter(
      { id: this._options.trace, createdAt: time(this._options.trace) },
      { id: other, createdAt: time(other) },
      this._swapped
    );
  }

  /** List the candidates again (keeping the choice); a list that has not changed is left as it is. */
  refresh(): Promise<void> {
    // The pointer's arrival and the focus come together: one question answers both.
    this._pending ??= this._refresh().finally(() => {
      this._pending = null;
    });
    return this._pending;
  }

  private async _refresh(): Promise<void> {
    let all: TraceChoice[];
    try {
      all = await this._options.candidates();
    } catch {
      all = [];
    }
    this._choices = new Map(all.map(c => [c.id, c]));
    const choices = all.filter(c => c.id !== this._options.trace);
    const signature = JSON.stringify(choices.map(c => [c.id, c.label]));
    if (signature !== this._signature) {
      this._signature = signature;
      const kept = this._select.value;
      this._select.textContent = '';
      this._select.appendChild(
        h('option', {
          text: choices.length ? 'Choose a trace (or type a path)' : 'No other trace yet: type a path',
          attrs: { value: TYPE_A_PATH }
        })
      );
      for (const choice of choices) {
        this._select.appendChild(h('option', { text: choice.label, attrs: { value: choice.id } }));
      }
      if (choices.some(c => c.id === kept)) {
        this._select.value = kept;
      }
    }
    this.node.setAttribute('data-candidates', String(choices.length));
    this._sync();
  }

  dispose(): void {
    this._observer?.disconnect();
    this._observer = null;
  }

  private _sync(): void {
    const pair = this.pair();
    this._button.disabled = pair === null;
    this._orderRow.hidden = pair === null;
    if (!pair) {
      this.node.removeAttribute('data-before');
      this.node.removeAttribute('data-after');
      return;
    }
    const [a, b] = pair;
    this.node.setAttribute('data-before', a);
    this.node.setAttribute('data-after', b);
    const time = (id: string) => this._choices.get(id)?.createdAt ?? null;
    const [ta, tb] = [time(a), time(b)];
    const backwards = ta !== null && tb !== null && ta > tb ? ' (the newer run first)' : '';
    this._order.textContent = `Before: ${this._name(a)} → after: ${this._name(b)}${backwards}`;
  }

  /** A side in words: "this trace", or the chosen trace's label (a typed path as typed). */
  private _name(id: string): string {
    if (id === this._options.trace) {
      return 'this trace';
    }
    return this._choices.get(id)?.label ?? id.replace(/^file:/, '');
  }

  private _options: ComparePickerOptions;
  private _select: HTMLSelectElement;
  private _path: HTMLInputElement;
  private _button: HTMLButtonElement;
  private _swap: HTMLButtonElement;
  private _order: HTMLElement;
  private _orderRow: HTMLElement;
  private _observer: IntersectionObserver | null = null;
  private _choices = new Map<string, TraceChoice>();
  private _signature = '';
  private _swapped = false;
  private _pending: Promise<void> | null = null;
}
