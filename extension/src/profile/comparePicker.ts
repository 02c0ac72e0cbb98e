/**
 * "Compare with…": pick the other side of a comparison from this run's other
 * traces, recent runs' traces and the profiles open in this page, or type the
 * path of a trace file; Compare opens the diff panel (this trace before, the
 * chosen one after).
 */

import { h } from '../dom';
import { traceIdFromInput } from './commands';

/** A trace the picker offers, with the words it is listed by. */
export interface TraceChoice {
  id: string;
  label: string;
}

export interface ComparePickerOptions {
  /** This view's trace (the comparison's before). */
  trace: string;
  /** The traces to offer, asked again each time the picker is focused. */
  candidates: () => Promise<TraceChoice[]>;
  /** Open the diff of this trace (before) against `b` (after). */
  compare: (b: string) => void;
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
      title: 'Open the comparison: this trace before, the chosen one after',
      attrs: { type: 'button' }
    });
    this._select.addEventListener('focus', () => void this.refresh());
    this._select.addEventListener('change', () => this._sync());
    this._path.addEventListener('input', () => this._sync());
    this._button.addEventListener('click', () => {
      const b = this.chosen();
      if (b) {
        options.compare(b);
      }
    });
    this.node = h(
      'div',
      { className: 'gpudojo-profile-compare-row' },
      h('span', { className: 'gpudojo-profile-compare-label', text: 'Compare with…' }),
      this._select,
      this._path,
      this._button
    );
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

  /** List the candidates again (keeping the choice). */
  async refresh(): Promise<void> {
    let choices: TraceChoice[];
    try {
      choices = (await this._options.candidates()).filter(c => c.id !== this._options.trace);
    } catch {
      choices = [];
    }
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
    this.node.setAttribute('data-candidates', String(choices.length));
    this._sync();
  }

  private _sync(): void {
    this._button.disabled = this.chosen() === null;
  }

  private _options: ComparePickerOptions;
  private _select: HTMLSelectElement;
  private _path: HTMLInputElement;
  private _button: HTMLButtonElement;
}
