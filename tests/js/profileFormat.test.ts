import type { EventDetail, ProfileDiff, ProfileProgress, Span } from '../../extension/src/api/types';
import { breakdownRows, modeWarning, opRowsByChange, stepHeadline } from '../../extension/src/profile/diffRows';
import {
  breakdownLine,
  breakdownShares,
  formatCount,
  formatDeltaUs,
  formatPerStep,
  formatShare,
  formatSpeedup,
  formatUs,
  modeTag
} from '../../extension/src/profile/format';
import { progressText, progressValue } from '../../extension/src/profile/progress';
import { STACK_LINES, detailLines, spanLines } from '../../extension/src/profile/tooltip';

describe('profile figures in words', () => {
  it('writes trace microseconds in the unit a person reads', () => {
    expect(formatUs(0.8)).toBe('0.8 µs');
    expect(formatUs(5)).toBe('5 µs');
    expect(formatUs(850)).toBe('850 µs');
    expect(formatUs(12_500)).toBe('12.5 ms');
    expect(formatUs(3_200_000)).toBe('3.20 s');
    expect(formatUs(null)).toBe('—');
    expect(formatDeltaUs(1500)).toBe('+1.50 ms');
    expect(formatDeltaUs(-850)).toBe('-850 µs');
  });

  it('writes shares, counts and per-step figures', () => {
    expect(formatShare(0.413)).toBe('41%');
    expect(formatShare(0.001)).toBe('<1%');
    expect(formatShare(0)).toBe('0%');
    expect(formatCount(1900)).toBe('1,900');
    expect(formatPerStep(2)).toBe('2');
    expect(formatPerStep(2.5)).toBe('2.5');
    expect(formatPerStep(0.333)).toBe('0.33');
    expect(formatPerStep(1900.4)).toBe('1,900');
  });

  it('gives the mean breakdown as one line, largest first, empty categories left out', () => {
    const breakdown = [
      { category: 'compute' as const, us: 52 },
      { category: 'data_loading' as const, us: 41 },
      { category: 'communication' as const, us: 0 },
      { category: 'idle' as const, us: 7 }
    ];
    expect(breakdownLine(breakdown)).toBe('compute 52% · data loading 41% · idle 7%');
    const shares = breakdownShares(breakdown);
    expect(shares.map(s => s.category)).toEqual(['compute', 'communication', 'data_loading', 'memcpy', 'sync', 'idle']);
    expect(shares.reduce((sum, s) => sum + s.share, 0)).toBeCloseTo(1);
    expect(breakdownLine([])).toBe('');
  });

  it('labels every figure with the trace mode', () => {
    expect(modeTag('gpu')).toBe('GPU trace');
    expect(modeTag('cpu')).toBe('CPU-only trace');
  });

  it('says a speed-up both ways round', () => {
    expect(formatSpeedup(1.5)).toBe('1.50× faster');
    expect(formatSpeedup(0.8)).toBe('1.25× slower');
    expect(formatSpeedup(1.001)).toBe('no change');
    expect(formatSpeedup(Infinity)).toBe('—');
  });
});

describe('profile comparison rows', () => {
  const diff: ProfileDiff = {
    a: 'run:20250101-120000-aaaaaa:rank0.trace.json',
    b: 'run:20250102-120000-bbbbbb:rank0.trace.json',
    a_mode: 'cpu',
    b_mode: 'cpu',
    step_a_us: 120_000,
    step_b_us: 80_000,
    speedup: 1.5,
    breakdown: [
      { key: 'idle', a_us: 5000, b_us: 4000, delta_us: -1000 },
      { key: 'data_loading', a_us: 50_000, b_us: 10_000, delta_us: -40_000 },
      { key: 'compute', a_us: 65_000, b_us: 66_000, delta_us: 1000 }
    ],
    ops: [
      { name: 'aten::addmm', a_self_us: 100, b_self_us: 150, delta_us: 50, a_calls: 3, b_calls: 3 },
      { name: 'enumerate(DataLoader)', a_self_us: 40_000, b_self_us: 2_000, delta_us: -38_000, a_calls: 1, b_calls: 1 },
      { name: 'aten::item', a_self_us: 10, b_self_us: 1000, delta_us: 990, a_calls: 1, b_calls: 2 }
    ],
    findings_resolved: ['data-loading'],
    findings_new: [],
    a_run: null,
    b_run: null,
    changes: []
  };

  it('leads with the step time and the speed-up, after against before', () => {
    expect(stepHeadline(diff)).toBe('Step time 120 ms → 80.0 ms: after is 1.50× faster');
    expect(stepHeadline({ ...diff, step_a_us: 80_000, step_b_us: 120_000, speedup: 2 / 3 })).toBe(
      'Step time 80.0 ms → 120 ms: after is 1.50× slower'
    );
    expect(stepHeadline({ ...diff, speedup: 1 })).toBe('Step time 120 ms → 80.0 ms: no change');
  });

  it('lists the breakdown in the step chart’s order, in words', () => {
    expect(breakdownRows(diff.breakdown).map(r => [r.label, r.delta_us])).toEqual([
      ['compute', 1000],
      ['data loading', -40_000],
      ['idle', -1000]
    ]);
  });

  it('lists operators by the size of their change, whichever way it went', () => {
    expect(opRowsByChange(diff.ops).map(r => r.name)).toEqual(['enumerate(DataLoader)', 'aten::item', 'aten::addmm']);
    expect(opRowsByChange(diff.ops, 1)).toHaveLength(1);
  });

  it('warns when a GPU trace is compared with a CPU-only one', () => {
    expect(modeWarning(diff)).toBeNull();
    expect(modeWarning({ a_mode: 'gpu', b_mode: 'cpu' })).toMatch(/Before is a GPU trace, after a CPU-only trace/);
  });
});

describe('analysis progress in the profile view', () => {
  const at = (phase: ProfileProgress['phase'], fraction: number | null = null, elapsed_ms = 0): ProfileProgress => ({
    trace: 'file:big.json',
    phase,
    fraction,
    elapsed_ms
  });

  it('says how much of the trace is read, with the time so far past a second', () => {
    expect(progressText(at('reading', 0.434, 2140))).toBe('Reading the trace: 43% (2.1 s)');
    expect(progressText(at('queued', null, 1500))).toBe('Waiting for the analysis worker (1.5 s)');
    expect(progressText(at('analysing'))).toMatch(/steps/);
    expect(progressText(at('not_started'))).toBe('Analysing the trace…');
  });

  it('moves the bar forward only, indeterminate when nothing is measured', () => {
    const values = [at('reading', 0.1), at('reading', 1), at('analysing'), at('indexing'), at('done')].map(progressValue);
    expect(values).toEqual([...(values as number[])].sort((a, b) => a - b));
    expect(values[values.length - 1]).toBe(1);
    expect(progressValue(at('queued'))).toBeNull();
  });
});

describe('timeline tooltip', () => {
  const span: Span = { t_us: 1_000_250, dur_us: 1500, depth: 1, name: 'aten::addmm', cat: 'cpu_op', count: 1, ref: 42 };

  it('names the span with its duration and kind at once', () => {
    const lines = spanLines(span, 1_000_000);
    expect(lines.map(l => l.text)).toEqual(['aten::addmm', '1.50 ms · cpu_op · at 250 µs']);
  });

  it('says a merged span is several, to be told apart by zooming in', () => {
    const lines = spanLines({ ...span, count: 37, ref: -1 }, 1_000_000);
    expect(lines.find(l => l.kind === 'merged')?.text).toMatch(/^37 spans under a pixel/);
  });

  it('adds the shapes and the top of the stack from the event detail', () => {
    const detail: EventDetail = {
      ref: 42,
      name: 'aten::addmm',
      cat: 'cpu_op',
      lane: 0,
      t_us: 1_000_250,
      dur_us: 1500,
      input_shapes: '[[64, 512], [512, 512]]',
      stack: Array.from({ length: 11 }, (_, i) => `train.py(${50 + i}): step`),
      args: { 'Sequence number': '12', 'Ignored arg': 'x' }
    };
    const lines = detailLines(detail);
    expect(lines[0]).toEqual({ kind: 'shapes', text: 'shapes [[64, 512], [512, 512]]' });
    expect(lines.filter(l => l.kind === 'stack')).toHaveLength(STACK_LINES);
    expect(lines.find(l => l.kind === 'stack')?.text).toBe('train.py(50): step');
    expect(lines.find(l => l.kind === 'stack-more')?.text).toBe('… 3 more frames');
    expect(lines.filter(l => l.kind === 'arg').map(l => l.text)).toEqual(['Sequence number: 12']);
  });
});
