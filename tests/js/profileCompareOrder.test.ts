import { beforeAfter, beforeIsNewer, runName, runTime } from '../../extension/src/profile/compareOrder';
import { differenceLine, differencesSummary } from '../../extension/src/profile/diffRows';

const run = (id: string, created_at: number) => ({
  id,
  title: 'PyTorch on the GPU',
  lab: 'lab-02-pytorch-gpu',
  created_at,
  device_mode: 'cpu' as const
});

describe('before and after of a comparison', () => {
  it('puts the older run before, from whichever side it is picked', () => {
    expect(beforeAfter({ id: 'new', createdAt: 200 }, { id: 'old', createdAt: 100 })).toEqual(['old', 'new']);
    expect(beforeAfter({ id: 'old', createdAt: 100 }, { id: 'new', createdAt: 200 })).toEqual(['old', 'new']);
  });

  it('swaps on request', () => {
    expect(beforeAfter({ id: 'new', createdAt: 200 }, { id: 'old', createdAt: 100 }, true)).toEqual(['new', 'old']);
  });

  it('keeps this trace before when a time is unknown (a trace file) or the runs started together', () => {
    expect(beforeAfter({ id: 'this', createdAt: 200 }, { id: 'file:x.json', createdAt: null })).toEqual(['this', 'file:x.json']);
    expect(beforeAfter({ id: 'file:x.json' }, { id: 'run', createdAt: 5 })).toEqual(['file:x.json', 'run']);
    expect(beforeAfter({ id: 'this', createdAt: 5 }, { id: 'that', createdAt: 5 })).toEqual(['this', 'that']);
  });

  it('knows when a diff was opened newer first', () => {
    expect(beforeIsNewer({ a_run: run('a', 200), b_run: run('b', 100) })).toBe(true);
    expect(beforeIsNewer({ a_run: run('a', 100), b_run: run('b', 200) })).toBe(false);
    expect(beforeIsNewer({ a_run: null, b_run: run('b', 100) })).toBe(false);
  });
});

describe('the runs of a comparison in words', () => {
  const now = new Date(2026, 11, 5, 15, 0, 0);
  const today = new Date(2026, 11, 5, 14, 5, 9).getTime() / 1000;
  const earlier = new Date(2026, 11, 3, 9, 30, 0).getTime() / 1000;

  it('names a run by title, start and mode, not by id', () => {
    expect(runTime(today, now)).toBe('14:05:09');
    expect(runTime(earlier, now)).toBe('3 Dec 09:30');
    expect(runName(run('20261205-140509-abcdef', today), now)).toBe('PyTorch on the GPU, started 14:05:09 (CPU fallback)');
  });

  it('says what changed, that nothing did, or that a side is a file', () => {
    const changes = [
      { key: 'param:max_batch', label: 'max_batch', a: '4', b: '8' },
      { key: 'mode', label: 'mode', a: 'CPU fallback', b: 'GPU' }
    ];
    expect(differencesSummary({ a_run: run('a', 1), b_run: run('b', 2), changes })).toBe(
      'What changed: max_batch 4 → 8, mode CPU fallback → GPU.'
    );
    expect(differenceLine(changes[0])).toBe('max_batch: 4 → 8');
    expect(differencesSummary({ a_run: run('a', 1), b_run: run('b', 2), changes: [] })).toContain('same lab, parameters');
    expect(differencesSummary({ a_run: run('a', 1), b_run: null, changes: [] })).toContain('A trace file is no run');
    expect(differencesSummary({ a_run: run('a', 1), b_run: run('a', 1), changes: [] })).toBe('Both traces are of the same run.');
  });
});
