import type { Estimate, MemoryWindow } from '../../extension/src/api/types';
import { buildEstimateRequest, estimatorBar } from '../../extension/src/memory/estimatorBar';
import { LegendState } from '../../extension/src/memory/legendState';
import { MIN_SPAN_US, clampRange, panBy, stretchImage, wheelFactor, zoomAt } from '../../extension/src/timeline/viewport';
import { WindowLoader, WindowRequest } from '../../extension/src/timeline/windowLoader';

const bounds = { t0: 0, t1: 1000 };

describe('zoom and pan', () => {
  it('zooms about the cursor, keeping the time under it in place', () => {
    const view = zoomAt(bounds, bounds, 0.25, 2);
    expect(view).toEqual({ t0: 125, t1: 625 });
    expect(view.t0 + 0.25 * (view.t1 - view.t0)).toBe(250);
  });
  it('never leaves the capture nor goes below the narrowest span', () => {
    expect(zoomAt(bounds, bounds, 0.5, 1 / 4)).toEqual(bounds);
    const deep = zoomAt(bounds, bounds, 0.5, 1e9);
    expect(deep.t1 - deep.t0).toBe(MIN_SPAN_US);
    expect(panBy({ t0: 800, t1: 900 }, bounds, 5)).toEqual({ t0: 900, t1: 1000 });
    expect(panBy({ t0: 100, t1: 200 }, bounds, -0.5)).toEqual({ t0: 50, t1: 150 });
    expect(clampRange({ t0: -50, t1: 50 }, bounds)).toEqual({ t0: 0, t1: 100 });
  });
  it('zooms in on a wheel turned away, out on one turned towards the user', () => {
    expect(wheelFactor(-100)).toBeGreaterThan(1);
    expect(wheelFactor(100)).toBeLessThan(1);
  });
  it('stretches the old picture to the new range while the window loads', () => {
    expect(stretchImage({ t0: 0, t1: 1000 }, { t0: 250, t1: 750 }, 500)).toEqual({ x: -250, width: 1000 });
  });
});

describe('LegendState', () => {
  it('isolates one category, and a second click gives back what was hidden before', () => {
    const legend = new LegendState(3);
    legend.toggleHidden(2);
    expect(legend.mask()).toEqual([true, true, false]);
    legend.isolate(1);
    expect(legend.mask()).toEqual([false, true, false]);
    legend.isolate(1);
    expect(legend.mask()).toEqual([true, true, false]);
    expect(legend.allVisible).toBe(false);
    legend.toggleHidden(2);
    expect(legend.allVisible).toBe(true);
  });
});

describe('estimator bar', () => {
  const estimate: Estimate = {
    terms: [
      { component: 'parameters', bytes: 400, formula: '100 × 4 B' },
      { component: 'gradients', bytes: 400, formula: '100 × 4 B' },
      { component: 'optimizer_states', bytes: 0, formula: 'sgd' },
      { component: 'activations', bytes: 200, formula: '2 × 100 B' }
    ],
    total_bytes: 1000,
    measured_peak_bytes: 1250,
    gap_bytes: 250,
    gap_explained: ['allocator caching']
  };
  it('lays terms end to end on a scale that holds the measured peak, and marks it', () => {
    const bar = estimatorBar(estimate);
    expect(bar.segments.map(s => [s.component, s.left, s.width])).toEqual([
      ['parameters', 0, 32],
      ['gradients', 32, 32],
      ['activations', 64, 16]
    ]);
    expect(bar.marker).toBe(100);
    expect(estimatorBar({ ...estimate, measured_peak_bytes: 500 }).marker).toBe(50);
  });
  it('checks the form as the server would', () => {
    const ok = buildEstimateRequest({ parameters: '1000', optimizer: 'adamw', precision: 'mixed-bf16', zero_stage: '2',
      data_parallel: '4', micro_batch: '8', activation_bytes_per_sample: '0', checkpointing: true, layers: '12', measured_peak_bytes: '' });
    expect(ok.request).toEqual({ parameters: 1000, optimizer: 'adamw', precision: 'mixed-bf16', zero_stage: 2, data_parallel: 4,
      micro_batch: 8, activation_bytes_per_sample: 0, checkpointing: true, layers: 12 });
    const bad = buildEstimateRequest({ parameters: '0', micro_batch: '1.5', data_parallel: '1', activation_bytes_per_sample: '0', layers: '1' });
    expect(bad.request).toBeNull();
    expect(Object.keys(bad.errors).sort()).toEqual(['micro_batch', 'parameters']);
  });
});

describe('WindowLoader', () => {
  const empty = (t0: number): MemoryWindow => ({ t0_us: t0, t1_us: t0 + 1, times_us: [], by_category: [], other_bytes: [], bands: [], frames: {} });
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('asks once per burst of viewport changes, for the last one', async () => {
    const asked: WindowRequest[] = [];
    const loaded: number[] = [];
    const loader = new WindowLoader<MemoryWindow>({
      fetch: async request => {
        asked.push(request);
        return empty(request.t0);
      },
      loaded: w => loaded.push(w.t0_us),
      failed: () => undefined
    });
    loader.request({ t0: 1, t1: 2, px: 10 });
    loader.request({ t0: 3, t1: 4, px: 10 });
    jest.runAllTimers();
    await Promise.resolve();
    await Promise.resolve();
    expect(asked.map(r => r.t0)).toEqual([3]);
    expect(loaded).toEqual([3]);
  });

  it('drops an answer that arrives after a newer query was sent, and aborts it', async () => {
    const pending: Array<{ t0: number; resolve: (w: MemoryWindow) => void; signal: AbortSignal }> = [];
    const loaded: number[] = [];
    const loader = new WindowLoader<MemoryWindow>({
      fetch: (request, signal) => new Promise(resolve => pending.push({ t0: request.t0, resolve, signal })),
      loaded: w => loaded.push(w.t0_us),
      failed: () => undefined
    });
    loader.request({ t0: 1, t1: 2, px: 10 }, true);
    loader.request({ t0: 5, t1: 6, px: 10 }, true);
    expect(pending[0].signal.aborted).toBe(true);
    pending[1].resolve(empty(5));
    pending[0].resolve(empty(1));
    await Promise.resolve();
    await Promise.resolve();
    expect(loaded).toEqual([5]);
  });
});
