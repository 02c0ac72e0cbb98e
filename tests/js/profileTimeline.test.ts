import type { EventDetail, Lane, OpRow, ProfileStep, ProfileWindow, Span } from '../../extension/src/api/types';
import { EventCache } from '../../extension/src/profile/eventCache';
import {
  LANE_GAP,
  LEVEL_PX,
  MAX_LEVELS,
  hitSpan,
  indexWindow,
  laneAt,
  layoutLanes,
  spanAt,
  spanRect
} from '../../extension/src/profile/laneLayout';
import { DEFAULT_OP_SORT, basisOf, nextSort, sortOps, withBasis } from '../../extension/src/profile/opSort';
import { luminance, readableOn, spanKind } from '../../extension/src/profile/palette';
import { roundTop, stepBars, stepRange } from '../../extension/src/profile/stepBars';
import { WINDOW_DEBOUNCE_MS, WindowLoader, WindowRequest } from '../../extension/src/timeline/windowLoader';

function step(n: number, start: number, parts: Partial<Record<ProfileStep['breakdown'][number]['category'], number>>): ProfileStep {
  const breakdown = Object.entries(parts).map(([category, us]) => ({ category, us }) as ProfileStep['breakdown'][number]);
  return { step: n, start_us: start, dur_us: breakdown.reduce((s, c) => s + c.us, 0), breakdown };
}

describe('step-time chart geometry', () => {
  const steps = [
    step(3, 0, { idle: 10_000, compute: 52_000, data_loading: 41_000 }),
    step(4, 103_000, { compute: 50_000, data_loading: 20_000 })
  ];

  it('stacks each step’s categories bottom-up in chart order, on a shared round top', () => {
    const layout = stepBars(steps);
    expect(layout.topUs).toBeGreaterThanOrEqual(103_000);
    expect(layout.ticks[0]).toBe(0);
    expect(layout.ticks[layout.ticks.length - 1]).toBe(layout.topUs);
    const first = layout.bars[0];
    expect(first.segments.map(s => s.category)).toEqual(['compute', 'data_loading', 'idle']);
    expect(first.segments[0].bottom).toBe(0);
    expect(first.segments[1].bottom).toBeCloseTo(first.segments[0].height);
    const top = first.segments[2];
    expect((top.bottom + top.height) * layout.topUs).toBeCloseTo(103_000);
    // The shorter step stands lower: bars compare by height.
    const second = layout.bars[1];
    const height = (b: typeof second) => b.segments.reduce((s, x) => s + x.height, 0);
    expect(height(second)).toBeLessThan(height(first));
    expect(second.step).toBe(4);
  });

  it('rounds the top to a readable figure at or above the longest step', () => {
    expect(roundTop(103_000)).toEqual({ topUs: 125_000, ticks: [0, 25_000, 50_000, 75_000, 100_000, 125_000] });
    expect(roundTop(41).topUs).toBe(50);
    expect(roundTop(100_000).topUs).toBe(100_000);
    expect(roundTop(0)).toEqual({ topUs: 1, ticks: [0, 1] });
  });

  it('zooms the timeline to a clicked step with a small margin, inside the trace', () => {
    const range = stepRange(steps[1], { t0: 0, t1: 200_000 });
    expect(range.t0).toBeLessThan(103_000);
    expect(range.t0).toBeGreaterThan(100_000);
    expect(range.t1).toBeGreaterThan(173_000);
    expect(stepRange(steps[0], { t0: 0, t1: 200_000 }).t0).toBe(0);
  });
});

const lanes: Lane[] = [
  { id: 0, label: 'rank 0 · main thread', kind: 'thread', rank: 0, events: 900, max_depth: 3 },
  { id: 1, label: 'rank 0 · stream 7', kind: 'stream', rank: 0, events: 300, max_depth: 0 },
  { id: 2, label: 'rank 0 · python', kind: 'thread', rank: 0, events: 5000, max_depth: 40 }
];

function span(t: number, dur: number, depth: number, name = 'aten::mm', extra: Partial<Span> = {}): Span {
  return { t_us: t, dur_us: dur, depth, name, cat: 'cpu_op', count: 1, ref: t, ...extra };
}

describe('timeline lanes', () => {
  it('gives each lane its nesting levels, capped, stacked with gaps', () => {
    const layout = layoutLanes(lanes);
    expect(layout.boxes.map(b => [b.y, b.levels, b.hiddenLevels])).toEqual([
      [0, 4, 0],
      [4 * LEVEL_PX + LANE_GAP, 1, 0],
      [5 * LEVEL_PX + 2 * LANE_GAP, MAX_LEVELS, 41 - MAX_LEVELS]
    ]);
    expect(layout.height).toBe((5 + MAX_LEVELS) * LEVEL_PX + 2 * LANE_GAP);
    expect(laneAt(layout, 4 * LEVEL_PX + 1)).toBeNull(); // the gap
    expect(laneAt(layout, 4 * LEVEL_PX + LANE_GAP + 2)?.lane).toBe(1);
  });

  it('places a span by its time and level, never narrower than a pixel, deep ones on the last level', () => {
    const layout = layoutLanes(lanes);
    const view = { t0: 1000, t1: 2000 };
    expect(spanRect(span(1250, 100, 2), view, 500, layout.boxes[0])).toEqual({
      x: 125,
      y: 2 * LEVEL_PX,
      width: 50,
      height: LEVEL_PX - 1
    });
    expect(spanRect(span(1500, 0.01, 0), view, 500, layout.boxes[0]).width).toBe(1);
    const deep = spanRect(span(1500, 10, 30), view, 500, layout.boxes[2]);
    expect(deep.y).toBe(layout.boxes[2].y + (MAX_LEVELS - 1) * LEVEL_PX);
  });

  it('finds the span under the cursor, with a pixel of slack for thin ones', () => {
    const spans = [span(0, 10, 0), span(20, 5, 0), span(100, 0.2, 0)];
    expect(spanAt(spans, 22, 0)?.t_us).toBe(20);
    expect(spanAt(spans, 15, 0)).toBeNull();
    expect(spanAt(spans, 100.9, 1)?.t_us).toBe(100);
    expect(spanAt([], 5, 1)).toBeNull();
  });

  it('hit-tests a window by lane, level and time', () => {
    const layout = layoutLanes(lanes);
    const window: ProfileWindow = {
      t0_us: 0,
      t1_us: 1000,
      px: 1000,
      lanes: [
        { lane: 0, spans: [span(100, 500, 0, 'ProfilerStep#3'), span(120, 100, 1, 'aten::linear')] },
        { lane: 1, spans: [span(300, 50, 0, 'sgemm_kernel', { cat: 'kernel' })] }
      ]
    };
    const index = indexWindow(window, layout);
    const view = { t0: 0, t1: 1000 };
    expect(hitSpan(index, layout, view, 1000, 150, LEVEL_PX + 2)?.span.name).toBe('aten::linear');
    expect(hitSpan(index, layout, view, 1000, 150, 2)?.span.name).toBe('ProfilerStep#3');
    expect(hitSpan(index, layout, view, 1000, 320, layout.boxes[1].y + 3)).toEqual({ lane: 1, span: window.lanes[1].spans[0] });
    expect(hitSpan(index, layout, view, 1000, 900, 2)).toBeNull();
  });
});

describe('span colours', () => {
  it('colours a span by what it is: kernels compute, NCCL communication, loaders, copies, syncs', () => {
    expect(spanKind({ name: 'ampere_sgemm_128x64_tn', cat: 'kernel' })).toBe('compute');
    expect(spanKind({ name: 'ncclDevKernel_AllReduce_Sum_f32_RING_LL', cat: 'kernel' })).toBe('communication');
    expect(spanKind({ name: 'Memcpy HtoD (Pageable -> Device)', cat: 'gpu_memcpy' })).toBe('memcpy');
    expect(spanKind({ name: 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__', cat: 'user_annotation' })).toBe(
      'data_loading'
    );
    expect(spanKind({ name: 'aten::item', cat: 'cpu_op' })).toBe('sync');
    expect(spanKind({ name: 'cudaStreamSynchronize', cat: 'cuda_runtime' })).toBe('sync');
    expect(spanKind({ name: 'cudaLaunchKernel', cat: 'cuda_runtime' })).toBe('runtime');
    expect(spanKind({ name: 'aten::addmm', cat: 'cpu_op' })).toBe('cpu_op');
    expect(spanKind({ name: 'ProfilerStep#3', cat: 'user_annotation' })).toBe('step');
    expect(spanKind({ name: 'nn.Module: Linear_0', cat: 'python_function' })).toBe('python');
  });
});

describe('span names on their fill', () => {
  it('reads theme colours in hex and rgb() form', () => {
    expect(luminance('#000')).toBe(0);
    expect(luminance('#ffffff')).toBeCloseTo(1);
    expect(luminance('rgb(255, 255, 255)')).toBeCloseTo(1);
    expect(luminance('rgba(0, 0, 0, 0.5)')).toBe(0);
    expect(luminance('var(--jp-brand-color1)')).toBeNull();
  });

  it('writes a name in whichever of the theme’s two text colours reads on the span', () => {
    const texts: [string, string] = ['rgba(255, 255, 255, 1)', '#212121'];
    expect(readableOn('#bbdefb', texts)).toBe('#212121'); // light blue (dark theme's python frames)
    expect(readableOn('#1565c0', texts)).toBe('rgba(255, 255, 255, 1)');
    expect(readableOn('transparent', texts)).toBe(texts[0]);
  });
});

describe('window loader', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function deferred<T>() {
    let resolve!: (value: T) => void;
    const promise = new Promise<T>(r => (resolve = r));
    return { promise, resolve };
  }

  it('asks once per burst of viewport changes, after the debounce', async () => {
    const asked: WindowRequest[] = [];
    const loader = new WindowLoader<string>({
      fetch: async request => {
        asked.push(request);
        return 'w';
      },
      loaded: () => undefined,
      failed: () => undefined
    });
    for (let i = 0; i < 5; i++) {
      loader.request({ t0: i, t1: 100 + i, px: 800 });
    }
    jest.advanceTimersByTime(WINDOW_DEBOUNCE_MS - 1);
    expect(asked).toHaveLength(0);
    jest.advanceTimersByTime(1);
    expect(asked).toEqual([{ t0: 4, t1: 104, px: 800 }]);
    expect(WINDOW_DEBOUNCE_MS).toBeLessThanOrEqual(80);
  });

  it('drops an answer that arrives after a newer viewport was asked for, and aborts its request', async () => {
    const answers = [deferred<string>(), deferred<string>()];
    const signals: AbortSignal[] = [];
    const loaded: string[] = [];
    let call = 0;
    const loader = new WindowLoader<string>({
      fetch: (_request, signal) => {
        signals.push(signal);
        return answers[call++].promise;
      },
      loaded: window => loaded.push(window),
      failed: () => undefined
    });
    loader.request({ t0: 0, t1: 100, px: 500 }, true);
    loader.request({ t0: 10, t1: 20, px: 500 }, true);
    expect(signals[0].aborted).toBe(true);
    answers[1].resolve('new');
    answers[0].resolve('old');
    await Promise.resolve();
    await Promise.resolve();
    expect(loaded).toEqual(['new']);
    expect(loader.busy).toBe(false);
  });

  it('drops the answer in flight as soon as a newer viewport is waiting for its debounce', async () => {
    const answer = deferred<string>();
    const loaded: string[] = [];
    const loader = new WindowLoader<string>({
      fetch: () => answer.promise,
      loaded: window => loaded.push(window),
      failed: () => undefined
    });
    loader.request({ t0: 0, t1: 100, px: 500 }, true);
    loader.request({ t0: 0, t1: 50, px: 500 });
    answer.resolve('stale');
    await Promise.resolve();
    await Promise.resolve();
    expect(loaded).toEqual([]);
    expect(loader.busy).toBe(true);
    loader.dispose();
  });

  it('reports a failure of the latest request only', async () => {
    const failures: string[] = [];
    const loader = new WindowLoader<string>({
      fetch: async () => {
        throw new Error('503');
      },
      loaded: () => undefined,
      failed: error => failures.push(error.message)
    });
    loader.request({ t0: 0, t1: 1, px: 10 }, true);
    await Promise.resolve();
    await Promise.resolve();
    expect(failures).toEqual(['503']);
  });
});

describe('event detail cache', () => {
  const detail = (ref: number): EventDetail => ({
    ref,
    name: 'aten::mm',
    cat: 'cpu_op',
    lane: 0,
    t_us: 0,
    dur_us: 1,
    input_shapes: '',
    stack: [],
    args: {}
  });

  it('asks the server once per event, keeping only the most recent ones', async () => {
    const asked: number[] = [];
    const cache = new EventCache(async ref => {
      asked.push(ref);
      return detail(ref);
    }, 2);
    await cache.get(1);
    await cache.get(1);
    await cache.get(2);
    await cache.get(1); // 1 is now the most recent
    await cache.get(3); // drops 2
    expect(asked).toEqual([1, 2, 3]);
    expect(cache.has(2)).toBe(false);
    expect(cache.has(1)).toBe(true);
    expect((await cache.get(3)).ref).toBe(3);
  });

  it('forgets a failed fetch so the next hover asks again', async () => {
    let fail = true;
    const cache = new EventCache(async ref => {
      if (fail) {
        throw new Error('gone');
      }
      return detail(ref);
    });
    await expect(cache.get(7)).rejects.toThrow('gone');
    expect(cache.has(7)).toBe(false);
    fail = false;
    expect((await cache.get(7)).ref).toBe(7);
  });
});

describe('operator table sort', () => {
  const op = (name: string, self: number, total: number, deviceSelf: number, calls: number): OpRow => ({
    name,
    calls,
    self_us: self,
    total_us: total,
    device_self_us: deviceSelf,
    device_total_us: deviceSelf * 2,
    input_shapes: []
  });
  const rows = [op('aten::mm', 500, 600, 900, 10), op('aten::add', 800, 800, 50, 30), op('aten::relu', 100, 100, 10, 10)];

  it('opens by self CPU time, largest first', () => {
    expect(sortOps(rows, DEFAULT_OP_SORT).map(r => r.name)).toEqual(['aten::add', 'aten::mm', 'aten::relu']);
  });

  it('turns a column around on a second click, starts a new one largest first (names A-Z)', () => {
    const byCalls = nextSort(DEFAULT_OP_SORT, 'calls');
    expect(byCalls).toEqual({ key: 'calls', descending: true });
    // Equal call counts keep the name order.
    expect(sortOps(rows, byCalls).map(r => r.name)).toEqual(['aten::add', 'aten::mm', 'aten::relu']);
    expect(nextSort(byCalls, 'calls')).toEqual({ key: 'calls', descending: false });
    expect(nextSort(byCalls, 'name')).toEqual({ key: 'name', descending: false });
    expect(sortOps(rows, { key: 'name', descending: false }).map(r => r.name)[0]).toBe('aten::add');
  });

  it('sorts the same column on the device clock when the toggle says device', () => {
    const device = withBasis(DEFAULT_OP_SORT, 'device');
    expect(device).toEqual({ key: 'device_self_us', descending: true });
    expect(basisOf(device)).toBe('device');
    expect(sortOps(rows, device).map(r => r.name)).toEqual(['aten::mm', 'aten::add', 'aten::relu']);
    expect(withBasis({ key: 'device_total_us', descending: false }, 'cpu')).toEqual({ key: 'total_us', descending: true });
    expect(withBasis({ key: 'calls', descending: true }, 'device')).toEqual({ key: 'device_self_us', descending: true });
  });
});
