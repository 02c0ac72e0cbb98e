/**
 * WhereChooser: the "Where" part of the run form and of the script dialog.
 * One radio per engine (this machine, torchrun across nodes, Slurm,
 * Kubernetes), an unavailable one disabled with the server's reason next to
 * it, and the chosen engine's options as typed fields with their bounds.
 * The checks and the request's `where` come from where.ts.
 */

import type { EngineInfo, EngineName, RunLauncher } from '../api/types';
import { h } from '../dom';
import {
  EngineChoice,
  WHERE_FIELDS,
  WhereField,
  WhereOutcome,
  SAME_MACHINE,
  WhereRaw,
  buildWhere,
  engineChoices,
  initialEngine,
  initialWhereRaw,
  parseWhereField,
  proposedHost,
  whereRangeText
} from './where';

/** What the chooser holds, to rebuild it (the script dialog makes a new body per try). */
export interface WhereState {
  engine: EngineName;
  /** Typed text per engine, so that switching back keeps it. */
  raw: Partial<Record<EngineName, WhereRaw>>;
}

export interface WhereChooserOptions {
  launcher: RunLauncher;
  /** The engine and options to start from (a run to repeat, an earlier try). */
  initial?: WhereState | null;
}

/** Radios of different forms must not share a group (a radio's name groups it page-wide outside a <form>). */
let chooserCount = 0;

export class WhereChooser {
  constructor(options: WhereChooserOptions) {
    this._launcher = options.launcher;
    this._wanted = options.initial?.engine ?? 'local';
    this._raw = { ...(options.initial?.raw ?? {}) };
    this._group = `gpudojo-where-${++chooserCount}`;
    this._choicesNode = h('div', {
      className: 'gpudojo-run-where-choices',
      attrs: { role: 'radiogroup', 'aria-label': 'Where' }
    });
    this._options = h('div', { className: 'gpudojo-run-where-options' });
    this._note = h('div', {
      className: 'gpudojo-run-form-help gpudojo-run-where-note',
      attrs: { 'aria-live': 'polite' }
    });
    this.node = h(
      'fieldset',
      { className: 'gpudojo-run-where', attrs: { 'data-engine': 'local' } },
      h('legend', { text: 'Where' }),
      this._choicesNode,
      this._options,
      this._note
    );
    this._setChoices(engineChoices(null, this._launcher));
    if (this._launcher === 'torchrun') {
      this._note.textContent = 'Asking the server where runs can go…';
    }
  }

  readonly node: HTMLElement;

  /** The engine chosen. */
  get engine(): EngineName {
    return this._engine;
  }

  /** What it holds now. */
  get state(): WhereState {
    this._raw[this._engine] = this._current();
    return { engine: this._engine, raw: { ...this._raw } };
  }

  /** Offer the server's engines (null with the error when GET runs/engines failed: this machine only). */
  setEngines(engines: ReadonlyArray<EngineInfo> | null, error = ''): void {
    this._note.textContent = error ? `Only this machine: the engines could not be listed (${error}).` : '';
    this._addresses = engines?.find(e => e.name === 'torchrun-nodes')?.addresses ?? [];
    // Propose an address the other nodes can reach, in place of loopback, unless one was typed.
    const proposal = proposedHost(engines);
    const nodes = this._raw['torchrun-nodes'] ?? initialWhereRaw('torchrun-nodes');
    if (proposal && (nodes.host ?? '127.0.0.1') === '127.0.0.1') {
      this._raw['torchrun-nodes'] = { ...nodes, host: proposal };
      const shown = this._engine === 'torchrun-nodes' ? this._inputs.get('host') : undefined;
      if (shown && shown.value === '127.0.0.1') {
        shown.value = proposal;
      }
    }
    this._setChoices(engineChoices(engines, this._launcher));
  }

  /** Check the chosen engine's fields, show what is wrong, and return the `where` (null when wrong). */
  build(): WhereOutcome {
    const outcome = buildWhere(this._engine, this._current());
    this.showErrors(outcome.errors);
    return outcome;
  }

  /** Show errors by field name (others stay in the caller's message). Returns those not placed. */
  showErrors(errors: Record<string, string>): Record<string, string> {
    const unplaced: Record<string, string> = {};
    for (const [name, message] of Object.entries(errors)) {
      if (!this._errors.has(name)) {
        unplaced[name] = message;
      }
    }
    for (const name of this._errors.keys()) {
      this._setError(name, errors[name] ?? '');
    }
    return unplaced;
  }

  private _setChoices(choices: EngineChoice[]): void {
    const engine = initialEngine(choices, this._wanted);
    this._choicesNode.textContent = '';
    for (const choice of choices) {
      const radio = h('input', {
        attrs: { type: 'radio', name: this._group, value: choice.name, 'data-engine': choice.name }
      });
      radio.disabled = !choice.available;
      radio.checked = choice.name === engine;
      radio.addEventListener('change', () => {
        if (radio.checked) {
          this._wanted = choice.name;
          this._choose(choice.name);
        }
      });
      const label = h(
        'label',
        {
          className: 'gpudojo-run-where-choice',
          attrs: { 'data-engine': choice.name, 'data-available': String(choice.available) }
        },
        radio,
        h('span', { className: 'gpudojo-run-where-title', text: choice.title }),
        choice.reason
          ? h('span', {
              className: 'gpudojo-run-form-help gpudojo-run-where-reason',
              text: choice.available ? choice.reason : `Unavailable: ${choice.reason}`
            })
          : null
      );
      // What lies behind the reason, under it but outside the label: opening it must not choose the engine.
      const detail = choice.detail
        ? h(
            'details',
            { className: 'gpudojo-run-where-detail', attrs: { 'data-engine': choice.name } },
            h('summary', { text: 'Details' }),
            h('pre', { text: choice.detail })
          )
        : null;
      this._choicesNode.appendChild(h('div', { className: 'gpudojo-run-where-slot' }, label, detail));
    }
    this._choose(engine, true);
  }

  /** Show `engine`'s fields, keeping what was typed in the other engine's. */
  private _choose(engine: EngineName, force = false): void {
    if (engine === this._engine && !force) {
      return;
    }
    if (this._inputs.size) {
      this._raw[this._engine] = this._current();
    }
    this._engine = engine;
    this.node.setAttribute('data-engine', engine);
    this._options.textContent = '';
    this._inputs.clear();
    this._errors.clear();
    const raw = this._raw[engine] ?? initialWhereRaw(engine);
    this._raw[engine] = raw;
    if (engine !== 'local') {
      this._options.appendChild(
        h('p', {
          className: 'gpudojo-run-form-help gpudojo-run-where-per-node',
          text: 'nproc is the processes on each node: the job has nodes × nproc ranks, numbered node by node.'
        })
      );
    }
    for (const field of WHERE_FIELDS[engine]) {
      this._options.appendChild(this._field(field, raw[field.name] ?? ''));
    }
    if (engine === 'torchrun-nodes') {
      this._options.appendChild(this._sameMachineToggle(raw[SAME_MACHINE] === 'true'));
    }
    this._options.hidden = !WHERE_FIELDS[engine].length;
  }

  private _field(field: WhereField, value: string): HTMLElement {
    let input: HTMLInputElement | HTMLSelectElement;
    const name = `where-${field.name}`;
    if (field.type === 'choice') {
      input = h('select', { className: 'jp-mod-styled', attrs: { name } });
      for (const choice of field.choices ?? []) {
        input.appendChild(h('option', { text: choice.label, attrs: { value: choice.value } }));
      }
    } else if (field.type === 'int') {
      const attrs: Record<string, string> = { name, type: 'number', step: '1' };
      if (field.min !== undefined) {
        attrs.min = String(field.min);
      }
      if (field.max !== undefined) {
        attrs.max = String(field.max);
      }
      input = h('input', { className: 'jp-mod-styled', attrs });
    } else {
      const attrs: Record<string, string> = { name, type: 'text', spellcheck: 'false' };
      if (field.maxLength !== undefined) {
        attrs.maxlength = String(field.maxLength);
      }
      if (field.optional) {
        attrs.placeholder = 'optional';
      }
      input = h('input', { className: 'jp-mod-styled', attrs });
    }
    input.value = value;
    const errorId = `${this._group}-${field.name}-error`;
    input.setAttribute('aria-describedby', errorId);
    input.addEventListener(field.type === 'choice' ? 'change' : 'input', () => {
      const checked = parseWhereField(field, input.value);
      this._setError(field.name, checked.ok ? '' : checked.error);
    });
    this._inputs.set(field.name, input);
    const error = h('span', {
      className: 'gpudojo-field-error',
      attrs: { 'data-for': `where.${field.name}`, id: errorId, role: 'alert' }
    });
    this._errors.set(field.name, error);
    const range = whereRangeText(field);
    return h(
      'label',
      { className: 'gpudojo-run-form-field', attrs: { 'data-where-field': field.name, 'data-type': field.type } },
      h('span', { className: 'gpudojo-run-form-name', text: field.label }),
      input,
      h('span', { className: 'gpudojo-run-form-help', text: range ? `${field.help} (${range})` : field.help }),
      error
    );
  }

  private _current(): WhereRaw {
    const raw: WhereRaw = {};
    for (const [name, input] of this._inputs) {
      raw[name] = input instanceof HTMLInputElement && input.type === 'checkbox' ? (input.checked ? 'true' : '') : input.value;
    }
    return raw;
  }

  /**
   * "Every node on this machine (practice)": the one case where loopback is a right address
   * (sent as `same_machine`; the server refuses loopback without it).
   * Also says which addresses of this machine the other nodes may use.
   */
  private _sameMachineToggle(checked: boolean): HTMLElement {
    const box = h('input', { attrs: { type: 'checkbox', name: `where-${SAME_MACHINE}` } });
    box.checked = checked;
    box.addEventListener('change', () => this._setError('host', ''));
    this._inputs.set(SAME_MACHINE, box);
    const addresses = this._addresses.length
      ? `This machine's addresses: ${this._addresses.join(', ')}.`
      : 'This machine lists no address besides loopback: other machines cannot reach it.';
    return h(
      'div',
      { className: 'gpudojo-run-where-same-machine' },
      h('label', {}, box, ' Every node on this machine (practice): 127.0.0.1 is then allowed'),
      h('span', { className: 'gpudojo-run-form-help gpudojo-run-where-addresses', text: addresses })
    );
  }

  private _setError(name: string, message: string): void {
    const node = this._errors.get(name);
    if (!node) {
      return;
    }
    node.textContent = message;
    node.closest('.gpudojo-run-form-field')?.classList.toggle('gpudojo-mod-invalid', !!message);
    this._inputs.get(name)?.setAttribute('aria-invalid', message ? 'true' : 'false');
  }

  private _launcher: RunLauncher;
  private _wanted: EngineName;
  private _engine: EngineName = 'local';
  private _raw: Partial<Record<EngineName, WhereRaw>>;
  private _group: string;
  private _choicesNode: HTMLElement;
  private _options: HTMLElement;
  private _note: HTMLElement;
  private _inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
  private _addresses: string[] = [];
  private _errors = new Map<string, HTMLElement>();
}
