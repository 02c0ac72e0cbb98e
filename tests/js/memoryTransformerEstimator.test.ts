/**
 * @jest-environment jsdom
 */
import type { TransformerEstimate, TransformerEstimateRequest } from '../../extension/src/api/types';
import { parseProductLink } from '../../extension/src/course/productLinks';
import { readEstimatorMode } from '../../extension/src/memory/commands';
import { EstimatorView } from '../../extension/src/memory/estimatorView';
import {
  TRANSFORMER_DEFAULTS,
  buildTransformerRequest,
  formatCount,
  transformerFacts
} from '../../extension/src/memory/transformerForm';

function fieldsOf(request: TransformerEstimateRequest): Record<string, string | boolean> {
  return Object.fromEntries(
    Object.entries(request).map(([k, v]) => [k, typeof v === 'boolean' ? v : String(v)])
  );
}

const ANSWER: TransformerEstimate = {
  terms: [
    { component: 'parameters', bytes: 1000, formula: '500 params x 2 B' },
    { component: 'activations', bytes: 3000, formula: '2 layers x sbh(34 + 5as/h); s=32 b=2 h=64 a=4' }
  ],
  total_bytes: 4000,
  parameter_count: 174_590_681_088,
  parameters_per_gpu: 2_796_791_808,
  activation_bytes_per_layer: 1500,
  flops_per_token: 1_076_535_115_776,
  notes: ['Per GPU of the first pipeline stage.']
};

describe('transformer form', () => {
  it('sends every field of a valid form, typed as the server takes them', () => {
    const { request, errors } = buildTransformerRequest(fieldsOf(TRANSFORMER_DEFAULTS));
    expect(errors).toEqual({});
    expect(request).toEqual(TRANSFORMER_DEFAULTS);
  });

  it('refuses what the server would, naming the field', () => {
    const bad = { ...fieldsOf(TRANSFORMER_DEFAULTS), hidden: '770', layers: '0', micro_batch: '1.5' };
    const { request, errors } = buildTransformerRequest(bad);
    expect(request).toBeNull();
    expect(errors.heads).toMatch(/must divide the hidden size 770/);
    expect(errors.layers).toMatch(/whole number, at least 1/);
    expect(errors.micro_batch).toMatch(/whole number/);
    const tp = buildTransformerRequest({ ...fieldsOf(TRANSFORMER_DEFAULTS), tensor_parallel: '5' });
    expect(tp.errors.tensor_parallel).toMatch(/must divide the heads/);
    const pp = buildTransformerRequest({ ...fieldsOf(TRANSFORMER_DEFAULTS), pipeline_parallel: '5' });
    expect(pp.errors.pipeline_parallel).toMatch(/must divide the layers \(12\)/);
  });

  it('states parameters, FLOPs per token and activations per layer as people say them', () => {
    expect(formatCount(124_439_808)).toBe('124.4M');
    expect(transformerFacts(ANSWER)).toEqual([
      '174.6B parameters in all, 2.8B on this GPU.',
      'Training FLOPs per token: 1.1T (6N + 12Lsh).',
      'Activations per layer on this GPU: 1.46 KiB.'
    ]);
  });
});

describe('transformer mode from a link', () => {
  it('maps estimator=transformer to the command with the mode', () => {
    const parsed = parseProductLink('gpudojo:open-memory?estimator=transformer');
    expect(parsed.ok && parsed.action.args).toEqual({ estimator: true, mode: 'transformer' });
    expect(readEstimatorMode({ estimator: true, mode: 'transformer' })).toBe('transformer');
    expect(readEstimatorMode({ estimator: true })).toBe('model');
    const refused = parseProductLink('gpudojo:open-memory?estimator=llm');
    expect(!refused.ok && refused.reason).toMatch(/1 or transformer/);
  });

  it('opens in transformer mode, posts the shape and draws the bar with the facts', async () => {
    const sent: TransformerEstimateRequest[] = [];
    const view = new EstimatorView({
      context: null,
      measuredPeakBytes: null,
      estimate: () => Promise.reject(new Error('not this mode')),
      estimateTransformer: request => {
        sent.push(request);
        return Promise.resolve(ANSWER);
      },
      colorOf: () => 'red',
      mode: 'transformer'
    });
    expect(view.mode).toBe('transformer');
    const form = view.node.querySelector<HTMLElement>('.gpudojo-estimator-form[data-mode="transformer"]')!;
    expect(form.hidden).toBe(false);
    expect(view.node.querySelector<HTMLElement>('.gpudojo-estimator-form[data-mode="model"]')!.hidden).toBe(true);
    form.querySelector<HTMLSelectElement>('select[name="recompute"]')!.value = 'selective';
    form.querySelector<HTMLInputElement>('input[name="flash_attention"]')!.checked = true;
    const answer = await view.submitTransformer();
    expect(answer).toBe(ANSWER);
    expect(sent[0]).toEqual({ ...TRANSFORMER_DEFAULTS, recompute: 'selective', flash_attention: true });
    expect(view.node.querySelectorAll('.gpudojo-estimator-segment')).toHaveLength(2);
    expect(view.node.querySelector('.gpudojo-estimator-facts')!.textContent).toContain('174.6B parameters');
    expect(view.node.querySelector('.gpudojo-estimator-gap')!.textContent).toContain('first pipeline stage');
    // Switching back clears the answer and shows the parameter-count form.
    view.setMode('model');
    expect(view.node.querySelector('.gpudojo-estimator-bar')).toBeNull();
    expect(form.hidden).toBe(true);
  });

  it('has no transformer mode without its call', () => {
    const view = new EstimatorView({
      context: null,
      measuredPeakBytes: null,
      estimate: () => Promise.reject(new Error('unused')),
      colorOf: () => 'red',
      mode: 'transformer'
    });
    expect(view.mode).toBe('model');
    expect(view.node.querySelector('.gpudojo-estimator-modes')).toBeNull();
  });
});
