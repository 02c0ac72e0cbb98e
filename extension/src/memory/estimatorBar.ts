/**
 * The estimator's stacked bar: one segment per term, left to right, on a scale
 * wide enough for both the estimate and the measured peak, so the gap between
 * them shows as empty bar (or as the marker inside the bar when the model
 * over-estimates).
 */

import type { Estimate, EstimateComponent, EstimateRequest } from '../api/types';

export interface BarSegment {
  component: EstimateComponent;
  bytes: number;
  /** Left edge and width, in percent of the bar. */
  left: number;
  width: number;
}

export interface EstimatorBarLayout {
  segments: BarSegment[];
  /** The measured peak's position in percent of the bar, or null without one. */
  marker: number | null;
  /** What 100% of the bar is (bytes). */
  scaleBytes: number;
}

export const COMPONENT_LABELS: Record<EstimateComponent, string> = {
  parameters: 'Parameters',
  gradients: 'Gradients',
  optimizer_states: 'Optimizer states',
  master_weights: 'Master weights',
  activations: 'Activations'
};

/** Segments (terms with no bytes are left out) and the marker, in percent. */
export function estimatorBar(estimate: Estimate): EstimatorBarLayout {
  const measured = estimate.measured_peak_bytes ?? null;
  const sum = estimate.terms.reduce((total, term) => total + Math.max(0, term.bytes), 0);
  const scaleBytes = Math.max(sum, estimate.total_bytes, measured ?? 0);
  const segments: BarSegment[] = [];
  if (scaleBytes <= 0) {
    return { segments, marker: null, scaleBytes: 0 };
  }
  let left = 0;
  for (const term of estimate.terms) {
    if (term.bytes <= 0) {
      continue;
    }
    const width = (term.bytes / scaleBytes) * 100;
    segments.push({ component: term.component, bytes: term.bytes, left, width });
    left += width;
  }
  return { segments, marker: measured === null ? null : (measured / scaleBytes) * 100, scaleBytes };
}

/** The estimator form's fields as typed (strings; the checkbox as a boolean). */
export type EstimatorFields = Record<string, string | boolean>;

const OPTIMIZERS = ['sgd', 'sgd-momentum', 'adam', 'adamw'] as const;
const PRECISIONS = ['fp32', 'mixed-fp16', 'mixed-bf16', 'bf16'] as const;

/** Defaults of the form: the server's, with the parameter count left for the learner. */
export const ESTIMATOR_DEFAULTS: EstimateRequest = {
  parameters: 0,
  optimizer: 'adam',
  precision: 'fp32',
  zero_stage: 0,
  data_parallel: 1,
  micro_batch: 1,
  activation_bytes_per_sample: 0,
  checkpointing: false,
  layers: 1,
  measured_peak_bytes: null
};

/**
 * The request from the form's fields, or the errors per field (the server's own
 * bounds: parameters > 0, counts >= 1, bytes >= 0, whole numbers).
 */
export function buildEstimateRequest(fields: EstimatorFields): { request: EstimateRequest | null; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const whole = (name: string, min: number): number => {
    const text = String(fields[name] ?? '').trim();
    const value = Number(text);
    if (!text || !Number.isInteger(value) || value < min) {
      errors[name] = `a whole number, at least ${min}`;
    }
    return value;
  };
  const optimizer = OPTIMIZERS.find(o => o === fields.optimizer) ?? 'adam';
  const precision = PRECISIONS.find(p => p === fields.precision) ?? 'fp32';
  const stage = Number(fields.zero_stage);
  const request: EstimateRequest = {
    parameters: whole('parameters', 1),
    optimizer,
    precision,
    zero_stage: stage === 1 || stage === 2 || stage === 3 ? stage : 0,
    data_parallel: whole('data_parallel', 1),
    micro_batch: whole('micro_batch', 1),
    activation_bytes_per_sample: whole('activation_bytes_per_sample', 0),
    checkpointing: fields.checkpointing === true,
    layers: whole('layers', 1)
  };
  const measured = String(fields.measured_peak_bytes ?? '').trim();
  if (measured) {
    request.measured_peak_bytes = whole('measured_peak_bytes', 0);
  }
  return { request: Object.keys(errors).length ? null : request, errors };
}
