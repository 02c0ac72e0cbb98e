/**
 * The estimator: what training this model should take, by component, next to
 * the capture's measured peak. The form starts from the capture's model context
 * when labkit recorded one, and from the peak; the answer is a stacked bar with
 * the measured peak marked, the formulas, and what the gap is made of.
 */

import type { Estimate, EstimateRequest, TransformerEstimate, TransformerEstimateRequest } from '../api/types';
import { h } from '../dom';
import { COMPONENT_LABELS, ESTIMATOR_DEFAULTS, EstimatorFields, buildEstimateRequest, estimatorBar } from './estimatorBar';
import { formatBytes } from './format';
import {
  RECOMPUTE,
  TRANSFORMER_DEFAULTS,
  TRANSFORMER_NUMBERS,
  TRANSFORMER_SWITCHES,
  buildTransformerRequest,
  transformerFacts
} from './transformerForm';

/** model: from a parameter count and measured activations; transformer: from the model's shape and layout. */
export type EstimatorMode = 'model' | 'transformer';

export interface EstimatorViewOptions {
  /** Prefill: the capture's model context (may be partial). */
  context: Partial<EstimateRequest> | null;
  measuredPeakBytes: number | null;
  estimate: (request: EstimateRequest) => Promise<Estimate>;
  /** Colour of term i of the bar. */
  colorOf: (index: number) => string;
  /** The transformer mode's call; without it the view has the plain mode only. */
  estimateTransformer?: (request: TransformerEstimateRequest) => Promise<TransformerEstimate>;
  /** The mode shown first (default: model). */
  mode?: EstimatorMode;
}

type Input = HTMLInputElement | HTMLSelectElement;

const HELP: Record<string, string> = {
  parameters: 'Parameter count',
  optimizer: 'Optimizer',
  precision: 'Precision',
  zero_stage: 'ZeRO stage',
  data_parallel: 'Data-parallel ranks',
  micro_batch: 'Micro-batch (samples)',
  activation_bytes_per_sample: 'Activation bytes per sample',
  checkpointing: 'Gradient checkpointing',
  layers: 'Layers',
  measured_peak_bytes: 'Measured peak (bytes)'
};

export class EstimatorView {
  constructor(options: EstimatorViewOptions) {
    this._options = options;
    const start: EstimateRequest = { ...ESTIMATOR_DEFAULTS, ...(options.context ?? {}) };
    start.measured_peak_bytes = options.context?.measured_peak_bytes ?? options.measuredPeakBytes;
    const fields = h('div', { className: 'gpudojo-estimator-fields' });
    const select = (name: string, values: string[], value: string) => {
      const node = h('select', { className: 'jp-mod-styled', attrs: { name } });
      values.forEach(v => node.appendChild(h('option', { text: v, attrs: { value: v } })));
      node.value = value;
      return node;
    };
    const number = (name: string, value: number | null | undefined) => {
      const node = h('input', { className: 'jp-mod-styled', attrs: { name, type: 'number', min: '0', step: '1' } });
      node.value = value === null || value === undefined || (name === 'parameters' && !value) ? '' : String(value);
      return node;
    };
    const box = h('input', { attrs: { name: 'checkpointing', type: 'checkbox' } });
    box.checked = start.checkpointing;
    const inputs: Input[] = [
      number('parameters', start.parameters),
      select('optimizer', ['sgd', 'sgd-momentum', 'adam', 'adamw'], start.optimizer),
      select('precision', ['fp32', 'mixed-fp16', 'mixed-bf16', 'bf16'], start.precision),
      select('zero_stage', ['0', '1', '2', '3'], String(start.zero_stage)),
      number('data_parallel', start.data_parallel),
      number('micro_batch', start.micro_batch),
      number('activation_bytes_per_sample', start.activation_bytes_per_sample),
      box,
      number('layers', start.layers),
      number('measured_peak_bytes', start.measured_peak_bytes)
    ];
    for (const input of inputs) {
      const name = input.getAttribute('name') ?? '';
      this._inputs.set(name, input);
      const error = h('span', { className: 'gpudojo-field-error', attrs: { 'data-for': name, role: 'alert' } });
      this._errors.set(name, error);
      fields.appendChild(
        h('label', { className: 'gpudojo-estimator-field' }, h('span', { text: HELP[name] ?? name }), input, error)
      );
    }
    const run = runButton();
    run.addEventListener('click', () => void this.submit());
    this._result = h('div', { className: 'gpudojo-estimator-result', attrs: { 'aria-live': 'polite' } });
    this._forms.model = h(
      'div',
      { className: 'gpudojo-estimator-form', attrs: { 'data-mode': 'model' } },
      h('p', {
        className: 'gpudojo-memory-muted',
        text: options.context
          ? 'Prefilled from what labkit recorded about the model.'
          : 'Type in the model: parameter count, optimizer, precision, batch. The measured peak is this capture’s.'
      }),
      fields,
      h('div', { className: 'gpudojo-estimator-actions' }, run)
    );
    const modes = h('div', { className: 'gpudojo-estimator-modes', attrs: { role: 'group', 'aria-label': 'Estimate from' } });
    if (options.estimateTransformer) {
      for (const [mode, label] of [
        ['model', 'Parameter count'],
        ['transformer', 'Transformer shape']
      ] as const) {
        const button = h('button', {
          className: 'jp-Button jp-mod-styled gpudojo-estimator-mode',
          text: label,
          attrs: { type: 'button', 'data-mode': mode }
        });
        button.addEventListener('click', () => this.setMode(mode));
        this._modeButtons.set(mode, button);
        modes.appendChild(button);
      }
    }
    this.node = h(
      'section',
      { className: 'gpudojo-memory-panel gpudojo-estimator' },
      h('h3', { text: 'What should training take?' }),
      this._modeButtons.size ? modes : null,
      this._forms.model,
      this._result
    );
    this.setMode(options.mode ?? 'model');
  }

  readonly node: HTMLElement;

  /** Which form is shown. */
  get mode(): EstimatorMode {
    return this._mode;
  }

  /**
   * Show one mode's form (the transformer's only when the view has its call, built the
   * first time it is shown); the last answer is cleared.
   */
  setMode(mode: EstimatorMode): void {
    const next = mode === 'transformer' && this._options.estimateTransformer ? 'transformer' : 'model';
    if (next === 'transformer' && !this._forms.transformer) {
      this._forms.transformer = this._transformerForm();
      this.node.insertBefore(this._forms.transformer, this._result);
    }
    if (next !== this._mode) {
      this._result.textContent = '';
    }
    this._mode = next;
    this.node.setAttribute('data-mode', next);
    for (const [name, form] of Object.entries(this._forms)) {
      form.hidden = name !== next;
    }
    for (const [name, button] of this._modeButtons) {
      button.setAttribute('aria-pressed', String(name === next));
      button.classList.toggle('jp-mod-accept', name === next);
    }
  }

  /** Check the transformer fields, POST estimate-transformer, draw the answer. */
  async submitTransformer(): Promise<TransformerEstimate | null> {
    const values: EstimatorFields = {};
    for (const [name, input] of this._tInputs) {
      values[name] = input instanceof HTMLInputElement && input.type === 'checkbox' ? input.checked : input.value;
    }
    const { request, errors } = buildTransformerRequest(values);
    for (const [name, node] of this._tErrors) {
      node.textContent = errors[name] ?? '';
    }
    if (!request || !this._options.estimateTransformer) {
      return null;
    }
    this._result.textContent = 'Estimating…';
    try {
      const estimate = await this._options.estimateTransformer(request);
      const asEstimate: Estimate = {
        terms: estimate.terms,
        total_bytes: estimate.total_bytes,
        measured_peak_bytes: null,
        gap_bytes: null,
        gap_explained: estimate.notes ?? []
      };
      this._render(asEstimate, transformerFacts(estimate));
      return estimate;
    } catch (error) {
      this._result.textContent = `The estimate failed: ${(error as Error).message}`;
      return null;
    }
  }

  private _transformerForm(): HTMLElement {
    const start = TRANSFORMER_DEFAULTS;
    const fields = h('div', { className: 'gpudojo-estimator-fields' });
    const add = (name: string, label: string, input: Input) => {
      this._tInputs.set(name, input);
      const error = h('span', { className: 'gpudojo-field-error', attrs: { 'data-for': name, role: 'alert' } });
      this._tErrors.set(name, error);
      fields.appendChild(h('label', { className: 'gpudojo-estimator-field' }, h('span', { text: label }), input, error));
    };
    for (const { name, label, min } of TRANSFORMER_NUMBERS) {
      const node = h('input', { className: 'jp-mod-styled', attrs: { name, type: 'number', min: String(min), step: '1' } });
      node.value = String(start[name]);
      add(name, label, node);
    }
    const select = (name: string, label: string, values: readonly string[], value: string) => {
      const node = h('select', { className: 'jp-mod-styled', attrs: { name } });
      values.forEach(v => node.appendChild(h('option', { text: v, attrs: { value: v } })));
      node.value = value;
      add(name, label, node);
    };
    select('precision', 'Precision', ['fp32', 'mixed-fp16', 'mixed-bf16', 'bf16'], start.precision);
    select('optimizer', 'Optimizer', ['sgd', 'sgd-momentum', 'adam', 'adamw'], start.optimizer);
    select('zero_stage', 'ZeRO / FSDP stage', ['0', '1', '2', '3'], String(start.zero_stage));
    select('recompute', 'Recomputation', RECOMPUTE, start.recompute);
    for (const { name, label } of TRANSFORMER_SWITCHES) {
      const box = h('input', { attrs: { name, type: 'checkbox' } });
      box.checked = start[name] === true;
      add(name, label, box);
    }
    const run = runButton();
    run.addEventListener('click', () => void this.submitTransformer());
    return h(
      'div',
      { className: 'gpudojo-estimator-form', attrs: { 'data-mode': 'transformer' } },
      h('p', {
        className: 'gpudojo-memory-muted',
        text: 'A GPT-style model from its shape: memory per GPU of the first pipeline stage, activations as Korthikanti et al. (2022) count them.'
      }),
      fields,
      h('div', { className: 'gpudojo-estimator-actions' }, run)
    );
  }

  /** Check the fields, POST estimate, draw the answer. */
  async submit(): Promise<Estimate | null> {
    const values: EstimatorFields = {};
    for (const [name, input] of this._inputs) {
      values[name] = input instanceof HTMLInputElement && input.type === 'checkbox' ? input.checked : input.value;
    }
    const { request, errors } = buildEstimateRequest(values);
    for (const [name, node] of this._errors) {
      node.textContent = errors[name] ?? '';
    }
    if (!request) {
      return null;
    }
    this._result.textContent = 'Estimating…';
    try {
      const estimate = await this._options.estimate(request);
      this._render(estimate);
      return estimate;
    } catch (error) {
      this._result.textContent = `The estimate failed: ${(error as Error).message}`;
      return null;
    }
  }

  private _render(estimate: Estimate, facts: string[] = []): void {
    const layout = estimatorBar(estimate);
    const bar = h('div', {
      className: 'gpudojo-estimator-bar',
      attrs: { role: 'img', 'aria-label': `Estimated ${formatBytes(estimate.total_bytes)} by component` }
    });
    layout.segments.forEach((segment, i) => {
      const node = h('span', {
        className: 'gpudojo-estimator-segment',
        title: `${COMPONENT_LABELS[segment.component]}: ${formatBytes(segment.bytes)}`,
        attrs: { 'data-component': segment.component }
      });
      node.style.left = `${segment.left}%`;
      node.style.width = `${segment.width}%`;
      node.style.background = this._options.colorOf(i);
      bar.appendChild(node);
    });
    if (layout.marker !== null) {
      const marker = h('span', { className: 'gpudojo-estimator-marker', title: 'Measured peak' });
      marker.style.left = `${layout.marker}%`;
      bar.appendChild(marker);
    }
    const formulas = h('ul', { className: 'gpudojo-estimator-formulas' });
    estimate.terms.forEach((term, i) => {
      const swatch = h('span', { className: 'gpudojo-memory-swatch' });
      swatch.style.background = this._options.colorOf(i);
      formulas.appendChild(
        h(
          'li',
          { attrs: { 'data-component': term.component } },
          swatch,
          h('strong', { text: `${COMPONENT_LABELS[term.component]} ${formatBytes(term.bytes)}` }),
          ' = ',
          h('code', { text: term.formula })
        )
      );
    });
    const measured = estimate.measured_peak_bytes;
    const summary =
      measured !== null && measured !== undefined
        ? `Estimated ${formatBytes(estimate.total_bytes)}; measured peak ${formatBytes(measured)}; gap ${formatBytes(
            estimate.gap_bytes ?? measured - estimate.total_bytes
          )}.`
        : `Estimated ${formatBytes(estimate.total_bytes)}.`;
    const gap = h('ul', { className: 'gpudojo-estimator-gap' });
    estimate.gap_explained.forEach(line => gap.appendChild(h('li', { text: line })));
    this._result.textContent = '';
    const factList = h('ul', { className: 'gpudojo-estimator-facts' });
    facts.forEach(line => factList.appendChild(h('li', { text: line })));
    this._result.append(
      h('p', { className: 'gpudojo-estimator-total', text: summary }),
      facts.length ? factList : '',
      bar,
      formulas,
      gap
    );
  }

  private _options: EstimatorViewOptions;
  private _inputs = new Map<string, Input>();
  private _errors = new Map<string, HTMLElement>();
  private _tInputs = new Map<string, Input>();
  private _tErrors = new Map<string, HTMLElement>();
  private _forms: { model?: HTMLElement; transformer?: HTMLElement } = {};
  private _modeButtons = new Map<EstimatorMode, HTMLElement>();
  private _mode: EstimatorMode = 'model';
  private _result: HTMLElement;
}

function runButton(): HTMLButtonElement {
  return h('button', {
    className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-estimator-run',
    text: 'Estimate',
    attrs: { type: 'button' }
  });
}
