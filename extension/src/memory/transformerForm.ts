/**
 * The estimator's transformer mode: the form's fields, their checks (the
 * server's own: whole numbers in bounds, h divisible by a, a and h by the
 * tensor-parallel size, L by the pipeline-parallel size) and the facts shown
 * beside the bar (parameters, FLOPs per token, activations per layer).
 */

import type { Recompute, TransformerEstimate, TransformerEstimateRequest } from '../api/types';
import type { EstimatorFields } from './estimatorBar';
import { formatBytes } from './format';

/** A GPT-2-small-sized model on one GPU: a start the learner changes. */
export const TRANSFORMER_DEFAULTS: TransformerEstimateRequest = {
  layers: 12,
  hidden: 768,
  heads: 12,
  sequence: 1024,
  micro_batch: 8,
  vocab: 50257,
  learned_positions: true,
  precision: 'mixed-bf16',
  optimizer: 'adam',
  data_parallel: 1,
  tensor_parallel: 1,
  pipeline_parallel: 1,
  sequence_parallel: false,
  zero_stage: 0,
  recompute: 'none',
  flash_attention: false,
  dropout: true
};

/** The numeric fields, their labels and lower bounds, in form order. */
export const TRANSFORMER_NUMBERS: ReadonlyArray<{ name: keyof TransformerEstimateRequest; label: string; min: number }> = [
  { name: 'layers', label: 'Layers L', min: 1 },
  { name: 'hidden', label: 'Hidden size h', min: 1 },
  { name: 'heads', label: 'Attention heads a', min: 1 },
  { name: 'sequence', label: 'Sequence length s', min: 1 },
  { name: 'micro_batch', label: 'Micro-batch b', min: 1 },
  { name: 'vocab', label: 'Vocabulary V', min: 1 },
  { name: 'data_parallel', label: 'Data parallel (DP)', min: 1 },
  { name: 'tensor_parallel', label: 'Tensor parallel (TP)', min: 1 },
  { name: 'pipeline_parallel', label: 'Pipeline parallel (PP)', min: 1 }
];

/** The yes/no fields and their labels. */
export const TRANSFORMER_SWITCHES: ReadonlyArray<{ name: keyof TransformerEstimateRequest; label: string }> = [
  { name: 'sequence_parallel', label: 'Sequence parallel' },
  { name: 'flash_attention', label: 'FlashAttention' },
  { name: 'dropout', label: 'Dropout' },
  { name: 'learned_positions', label: 'Learned positions' }
];

export const RECOMPUTE: readonly Recompute[] = ['none', 'selective', 'full'];
const PRECISIONS = ['fp32', 'mixed-fp16', 'mixed-bf16', 'bf16'] as const;
const OPTIMIZERS = ['sgd', 'sgd-momentum', 'adam', 'adamw'] as const;

/** The request from the form's fields, or the errors per field. */
export function buildTransformerRequest(fields: EstimatorFields): {
  request: TransformerEstimateRequest | null;
  errors: Record<string, string>;
} {
  const errors: Record<string, string> = {};
  const n: Record<string, number> = {};
  for (const { name, min } of TRANSFORMER_NUMBERS) {
    const text = String(fields[name] ?? '').trim();
    const value = Number(text);
    if (!text || !Number.isSafeInteger(value) || value < min) {
      errors[name] = `a whole number, at least ${min}`;
    }
    n[name] = value;
  }
  if (!errors.hidden && !errors.heads && n.hidden % n.heads) {
    errors.heads = `must divide the hidden size ${n.hidden}`;
  }
  if (!errors.tensor_parallel && !errors.heads && !errors.hidden && (n.heads % n.tensor_parallel || n.hidden % n.tensor_parallel)) {
    errors.tensor_parallel = 'must divide the heads and the hidden size';
  }
  if (!errors.pipeline_parallel && !errors.layers && n.layers % n.pipeline_parallel) {
    errors.pipeline_parallel = `must divide the layers (${n.layers})`;
  }
  const stage = Number(fields.zero_stage);
  const request: TransformerEstimateRequest = {
    layers: n.layers,
    hidden: n.hidden,
    heads: n.heads,
    sequence: n.sequence,
    micro_batch: n.micro_batch,
    vocab: n.vocab,
    learned_positions: fields.learned_positions === true,
    precision: PRECISIONS.find(p => p === fields.precision) ?? 'mixed-bf16',
    optimizer: OPTIMIZERS.find(o => o === fields.optimizer) ?? 'adam',
    data_parallel: n.data_parallel,
    tensor_parallel: n.tensor_parallel,
    pipeline_parallel: n.pipeline_parallel,
    sequence_parallel: fields.sequence_parallel === true,
    zero_stage: stage === 1 || stage === 2 || stage === 3 ? stage : 0,
    recompute: RECOMPUTE.find(r => r === fields.recompute) ?? 'none',
    flash_attention: fields.flash_attention === true,
    dropout: fields.dropout === true
  };
  return { request: Object.keys(errors).length ? null : request, errors };
}

/** A count as people say it: 124.4M, 174.6B. */
export function formatCount(n: number): string {
  for (const [unit, scale] of [
    ['T', 1e12],
    ['B', 1e9],
    ['M', 1e6],
    ['k', 1e3]
  ] as const) {
    if (Math.abs(n) >= scale) {
      return `${(n / scale).toFixed(1)}${unit}`;
    }
  }
  return String(n);
}

/** The facts shown above the bar, one sentence each. */
export function transformerFacts(estimate: TransformerEstimate): string[] {
  return [
    `${formatCount(estimate.parameter_count)} parameters in all, ${formatCount(estimate.parameters_per_gpu)} on this GPU.`,
    `Training FLOPs per token: ${formatCount(estimate.flops_per_token)} (6N + 12Lsh).`,
    `Activations per layer on this GPU: ${formatBytes(estimate.activation_bytes_per_layer)}.`
  ];
}
