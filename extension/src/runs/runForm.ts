/**
 * RunForm: a lab's parameter form, built from its manifest: a number input
 * (with the bounds) per int and float, a select per choice, a checkbox per
 * bool, each with its help; the Sweep option; Start. Mistakes show next to
 * their field, from the same checks the server makes and from its 400s.
 */

import { Widget } from '@lumino/widgets';
import { GpudojoApiError } from '../api/errors';
import type { EngineInfo, LabRunRequest, LabSummary, ParamSpec, ParamValue, Run, RunRecording } from '../api/types';
import { h } from '../dom';
import type { SweepPreset } from './commands';
import {
  RawValues,
  SWEEP_FIELD,
  SweepDraft,
  buildLabRequest,
  errorsFromDetail,
  initialValues,
  parseField,
  parseSweepValues
} from './params';
import { MachineFacts, oversubscriptionWarning } from './machineFit';
import { labRecords, recordingFlags } from './requests';
import { whereErrorsFromDetail } from './where';
import { WhereChooser, WhereState } from './whereChooser';

export interface RunFormOptions {
  lab: LabSummary;
  /** Preset values (from the command's args or a run to repeat); defaults elsewhere. */
  params?: Record<string, ParamValue>;
  /** Tick Sweep at first, over this parameter and these values (a lesson's link). */
  sweep?: SweepPreset | null;
  /** Tick "Record memory" at first (e.g. when repeating a run that recorded). */
  recordMemory?: boolean;
  /** Tick "Record profile" at first (shown only for labs whose script records one). */
  recordProfile?: boolean;
  /** Send the request; resolves with the runs the server created. */
  start: (request: LabRunRequest) => Promise<Run[]>;
  /** GET runs/engines: where the run may go besides this machine (absent: this machine only). */
  engines?: () => Promise<EngineInfo[]>;
  /** The engine and its options to choose at first (e.g. a run to repeat). */
  where?: WhereState | null;
  /** This machine's cores and usable GPUs, to warn when nproc asks for more (absent: no warning). */
  machine?: () => Promise<MachineFacts>;
}

type FieldInput = HTMLInputElement | HTMLSelectElement;

/** The range text under a number field: "1 to 8", "at least 1". */
export function rangeText(spec: ParamSpec): string {
  const has = (v: number | null | undefined): v is number => v !== null && v !== undefined;
  if (has(spec.min) && has(spec.max)) {
    return `${spec.min} to ${spec.max}`;
  }
  if (has(spec.min)) {
    return `at least ${spec.min}`;
  }
  return has(spec.max) ? `at most ${spec.max}` : '';
}

export class RunForm extends Widget {
  constructor(options: RunFormOptions) {
    super();
    this.lab = options.lab;
    this._start = options.start;
    this._initialRecordMemory = options.recordMemory === true;
    this._initialRecordProfile = options.recordProfile === true;
    this.addClass('gpudojo-run-form');
    this.node.setAttribute('data-lab', this.lab.id);
    this._raw = initialValues(this.lab, options.params);
    const sweepable = this.lab.parameters;
    const preferred = sweepable.find(p => p.name === 'nproc') ?? sweepable[0] ?? null;
    const preset = options.sweep && sweepable.some(p => p.name === options.sweep?.param) ? options.sweep : null;
    this._sweep = preset
      ? { enabled: true, param: preset.param, text: preset.values.join(', ') }
      : { enabled: false, param: preferred?.name ?? '', text: '' };
    this._where = new WhereChooser({ launcher: this.lab.launcher, initial: options.where });
    this._build(sweepable);
    this._refreshSweep();
    // Another engine runs elsewhere: this machine's cores no longer matter.
    this._where.node.addEventListener('change', () => this._refreshFit());
    options.machine?.().then(
      machine => {
        this._machine = machine;
        this._refreshFit();
      },
      () => undefined // no facts, no warning: the server still checks what it must
    );
    if (options.engines && this.lab.launcher === 'torchrun') {
      options.engines().then(
        engines => this._where.setEngines(engines),
        error => this._where.setEngines(null, (error as Error).message ?? String(error))
      );
    }
  }

  readonly lab: LabSummary;

  /** Focus the first field. */
  focusFirst(): void {
    this.node.querySelector<HTMLElement>('input, select')?.focus();
  }

  /** Check the fields, send the request and show what the server said. */
  async submit(): Promise<Run[] | null> {
    const outcome = buildLabRequest(this.lab, this._raw, this._sweep);
    const where = this._where.build();
    this._showErrors(outcome.errors);
    if (!outcome.request || !where.where) {
      this._setMessage('Fix the fields marked above, then Start again.', 'error');
      return null;
    }
    const request: LabRunRequest & RunRecording = {
      ...outcome.request,
      // A run on this machine is sent as before engines existed.
      ...(where.where.engine !== 'local' ? { where: where.where } : {}),
      ...recordingFlags({ memory: this._recordMemory.checked, profile: this._recordProfile?.checked === true })
    };
    this._startButton.disabled = true;
    this._setMessage('Starting…', 'info');
    try {
      const runs = await this._start(request);
      this._setMessage(
        runs.length === 1 ? `Started run ${runs[0].id}.` : `Started a sweep of ${runs.length} runs.`,
        'info'
      );
      return runs;
    } catch (error) {
      const detail = error instanceof GpudojoApiError ? error.detail : undefined;
      const fieldErrors = errorsFromDetail(detail, this._sweep.enabled ? this._sweep.param : null);
      this._showErrors(fieldErrors);
      const whereErrors = this._where.showErrors(whereErrorsFromDetail(detail));
      const unplaced = Object.entries(whereErrors).map(([name, message]) => ` ${name}: ${message}`);
      this._setMessage(`${(error as Error).message ?? String(error)}${unplaced.join(';')}`, 'error');
      return null;
    } finally {
      this._startButton.disabled = false;
    }
  }

  private _build(sweepable: ParamSpec[]): void {
    const lab = this.lab;
    const fields = h('div', { className: 'gpudojo-run-form-fields' });
    for (const spec of lab.parameters) {
      fields.appendChild(this._field(spec));
    }
    const notes: HTMLElement[] = [];
    if (lab.needs !== 'cpu') {
      const needs = lab.needs === 'multi-gpu' ? 'several GPUs' : 'a GPU';
      notes.push(
        h('p', {
          className: 'gpudojo-run-form-needs',
          text: `This lab is made for ${needs}.${lab.cpu_path ? ` Without: ${lab.cpu_path}` : ''}`
        })
      );
    }
    if (lab.launcher === 'torchrun') {
      notes.push(
        h('p', {
          className: 'gpudojo-run-form-note',
          text: 'Started with torchrun: one process per rank, NCCL on GPUs, gloo over loopback on a CPU.'
        })
      );
    }
    this._startButton = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-run-start',
      text: 'Start',
      attrs: { type: 'button' }
    });
    this._startButton.addEventListener('click', () => void this.submit());
    this._message = h('span', { className: 'gpudojo-run-form-message', attrs: { 'aria-live': 'polite' } });
    this._fit = h('p', { className: 'gpudojo-run-oversubscribe', attrs: { role: 'status' } });
    this._fit.hidden = true;
    this._recordMemory = h('input', { attrs: { name: 'record_memory', type: 'checkbox' } });
    this._recordMemory.checked = this._initialRecordMemory;
    const recordMemory = h(
      'label',
      { className: 'gpudojo-run-record-memory-toggle' },
      this._recordMemory,
      ' Record memory',
      h('span', {
        className: 'gpudojo-run-form-help',
        text: 'A CUDA snapshot per rank on a GPU (the PyTorch profiler’s memory timeline on a CPU), shown in the run’s Memory section.'
      })
    );
    this.node.append(
      h('h2', { className: 'gpudojo-run-form-title', text: `Run: ${lab.title}` }),
      ...notes,
      fields,
      this._where.node,
      sweepable.length ? this._sweepFieldset(sweepable) : '',
      recordMemory,
      labRecords(lab, 'profile') ? this._recordProfileToggle() : '',
      this._fit,
      h('div', { className: 'gpudojo-run-form-actions' }, this._startButton, this._message)
    );
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Enter' && (event.target as HTMLElement).tagName === 'INPUT') {
        event.preventDefault();
        void this.submit();
      }
    });
  }

  /** "Record profile": torch.profiler with a schedule, one Chrome trace per rank, for labs whose script records one. */
  private _recordProfileToggle(): HTMLElement {
    this._recordProfile = h('input', { attrs: { name: 'record_profile', type: 'checkbox' } });
    this._recordProfile.checked = this._initialRecordProfile;
    return h(
      'label',
      { className: 'gpudojo-run-record-profile-toggle' },
      this._recordProfile,
      ' Record profile',
      h('span', {
        className: 'gpudojo-run-form-help',
        text: 'A torch.profiler trace per rank (CPU ops, and CUDA kernels on a GPU) over a few steps, analysed in the run’s Profile section.'
      })
    );
  }

  private _field(spec: ParamSpec): HTMLElement {
    let input: FieldInput;
    const raw = this._raw[spec.name];
    if (spec.type === 'choice') {
      const select = h('select', { className: 'jp-mod-styled', attrs: { name: spec.name } });
      (spec.choices ?? []).forEach((choice, i) => {
        select.appendChild(h('option', { text: String(choice), attrs: { value: String(i) } }));
      });
      select.value = String(raw);
      input = select;
    } else if (spec.type === 'bool') {
      const box = h('input', { attrs: { name: spec.name, type: 'checkbox' } });
      box.checked = raw === true;
      input = box;
    } else {
      const attrs: Record<string, string> = {
        name: spec.name,
        type: 'number',
        step: spec.type === 'int' ? '1' : 'any'
      };
      if (spec.min !== null && spec.min !== undefined) {
        attrs.min = String(spec.min);
      }
      if (spec.max !== null && spec.max !== undefined) {
        attrs.max = String(spec.max);
      }
      const number = h('input', { className: 'jp-mod-styled', attrs });
      number.value = String(raw);
      input = number;
    }
    const errorId = `${this.id || 'gpudojo-run-form'}-${this.lab.id}-${spec.name}-error`;
    input.setAttribute('aria-describedby', errorId);
    const read = () => (input instanceof HTMLInputElement && input.type === 'checkbox' ? input.checked : input.value);
    input.addEventListener(spec.type === 'int' || spec.type === 'float' ? 'input' : 'change', () => {
      this._raw[spec.name] = read();
      const checked = parseField(spec, this._raw[spec.name]);
      this._setError(spec.name, checked.ok ? '' : checked.error);
      this._refreshFit();
    });
    this._inputs.set(spec.name, input);
    const error = h('span', {
      className: 'gpudojo-field-error',
      attrs: { 'data-for': spec.name, id: errorId, role: 'alert' }
    });
    this._errors.set(spec.name, error);
    const range = spec.type === 'int' || spec.type === 'float' ? rangeText(spec) : '';
    const help = [spec.help, range ? `(${range})` : ''].filter(Boolean).join(' ');
    return h(
      'label',
      { className: 'gpudojo-run-form-field', attrs: { 'data-param': spec.name, 'data-type': spec.type } },
      h('span', { className: 'gpudojo-run-form-name', text: spec.name }),
      input,
      help ? h('span', { className: 'gpudojo-run-form-help', text: help }) : null,
      error
    );
  }

  private _sweepFieldset(sweepable: ParamSpec[]): HTMLElement {
    const enabled = h('input', { attrs: { name: 'sweep-enabled', type: 'checkbox' } });
    const param = h('select', { className: 'jp-mod-styled', attrs: { name: 'sweep-param' } });
    for (const spec of sweepable) {
      param.appendChild(h('option', { text: spec.name, attrs: { value: spec.name } }));
    }
    param.value = this._sweep.param;
    const values = h('input', {
      className: 'jp-mod-styled',
      attrs: { name: 'sweep-values', type: 'text', placeholder: 'e.g. 1, 2, 4', 'aria-label': 'Values to sweep' }
    });
    enabled.checked = this._sweep.enabled;
    values.value = this._sweep.text;
    enabled.addEventListener('change', () => {
      this._sweep.enabled = enabled.checked;
      this._refreshSweep();
    });
    param.addEventListener('change', () => {
      this._sweep.param = param.value;
      this._refreshSweep();
    });
    values.addEventListener('input', () => {
      this._sweep.text = values.value;
      this._refreshSweep();
    });
    this._sweepInputs = [param, values];
    const error = h('span', { className: 'gpudojo-field-error', attrs: { 'data-for': SWEEP_FIELD, role: 'alert' } });
    this._errors.set(SWEEP_FIELD, error);
    return h(
      'fieldset',
      { className: 'gpudojo-run-sweep' },
      h('legend', { text: 'Sweep' }),
      h('label', { className: 'gpudojo-run-sweep-toggle' }, enabled, ' Run once per value of '),
      param,
      values,
      h('span', {
        className: 'gpudojo-run-form-help',
        text: 'The runs go one after another, so their timings compare; the sweep view charts the scaling.'
      }),
      error
    );
  }

  /** Enable the sweep's fields, disable the swept parameter's own field, label Start with the run count. */
  private _refreshSweep(): void {
    const { enabled, param, text } = this._sweep;
    for (const input of this._sweepInputs) {
      input.disabled = !enabled;
    }
    for (const [name, input] of this._inputs) {
      input.disabled = enabled && name === param;
    }
    const spec = this.lab.parameters.find(p => p.name === param);
    let count = 1;
    if (enabled && spec && text.trim()) {
      const parsed = parseSweepValues(spec, text);
      this._setError(SWEEP_FIELD, parsed.ok ? '' : parsed.error);
      count = parsed.ok ? parsed.values.length : 1;
    } else {
      this._setError(SWEEP_FIELD, '');
    }
    this._startButton.textContent = count > 1 ? `Start ${count} runs` : 'Start';
    this._refreshFit();
  }

  /** The process counts this form would start, one per run (empty when nproc is not a parameter). */
  private _nprocs(): number[] {
    const spec = this.lab.parameters.find(p => p.name === 'nproc');
    if (!spec) {
      return [];
    }
    const { enabled, param, text } = this._sweep;
    if (enabled && param === 'nproc' && text.trim()) {
      const parsed = parseSweepValues(spec, text);
      return parsed.ok ? parsed.values.map(Number) : [];
    }
    const parsed = parseField(spec, this._raw.nproc);
    return parsed.ok ? [Number(parsed.value)] : [];
  }

  /** Warn, before Start, when nproc asks this machine for more cores (or GPUs) than it has. */
  private _refreshFit(): void {
    if (!this._fit) {
      return;
    }
    const local = this._where.engine === 'local';
    const warning = this._machine && local ? oversubscriptionWarning(this._nprocs(), this._machine) : null;
    this._fit.textContent = warning ?? '';
    this._fit.hidden = !warning;
  }

  private _showErrors(errors: Record<string, string>): void {
    for (const name of this._errors.keys()) {
      this._setError(name, errors[name] ?? '');
    }
    // Errors of the sweep and the parameters: those of `where` are the chooser's.
    const unplaced = Object.entries(errors).filter(([name]) => !this._errors.has(name) && !name.includes('where'));
    if (unplaced.length) {
      this._setMessage(unplaced.map(([name, message]) => `${name}: ${message}`).join('; '), 'error');
    }
  }

  private _setError(name: string, message: string): void {
    const node = this._errors.get(name);
    if (!node) {
      return;
    }
    node.textContent = message;
    node.closest('.gpudojo-run-form-field, .gpudojo-run-sweep')?.classList.toggle('gpudojo-mod-invalid', !!message);
    this._inputs.get(name)?.setAttribute('aria-invalid', message ? 'true' : 'false');
  }

  private _setMessage(text: string, kind: 'info' | 'error'): void {
    this._message.textContent = text;
    this._message.setAttribute('data-kind', kind);
  }

  private _start: (request: LabRunRequest) => Promise<Run[]>;
  private _raw: RawValues;
  private _sweep: SweepDraft;
  private _inputs = new Map<string, FieldInput>();
  private _errors = new Map<string, HTMLElement>();
  private _sweepInputs: FieldInput[] = [];
  private _startButton!: HTMLButtonElement;
  private _recordMemory!: HTMLInputElement;
  private _initialRecordMemory: boolean;
  private _recordProfile: HTMLInputElement | null = null;
  private _initialRecordProfile: boolean;
  private _message!: HTMLElement;
  private _where: WhereChooser;
  private _machine: MachineFacts | null = null;
  private _fit!: HTMLElement;
}
