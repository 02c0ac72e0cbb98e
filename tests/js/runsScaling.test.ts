import { ScalingInput, basePointIndex, mean, scalingPoints, scalingSeries } from '../../extension/src/runs/scaling';

function input(value: number | string, nproc: number, epochTimeS: number | null): ScalingInput {
  return { runId: `run-${value}`, value, nproc, status: 'succeeded', epochTimeS };
}

describe('scaling maths', () => {
  it('gives speedup over the first point, the ideal nproc ratio and the efficiency', () => {
    const points = scalingPoints([input(1, 1, 8), input(2, 2, 5), input(4, 4, 4)]);
    expect(points.map(p => p.speedup)).toEqual([1, 1.6, 2]);
    expect(points.map(p => p.ideal)).toEqual([1, 2, 4]);
    expect(points.map(p => p.efficiency)).toEqual([1, 0.8, 0.5]);
  });

  it('takes the first measured point as the base when the first run failed', () => {
    const points = scalingPoints([input(1, 1, null), input(2, 2, 6), input(4, 4, 4)]);
    expect(basePointIndex(points)).toBe(1);
    expect(points[0].speedup).toBeNull();
    expect(points[0].ideal).toBe(0.5);
    expect(points[2].speedup).toBe(1.5);
    expect(points[2].efficiency).toBe(0.75);
  });

  it('has no speedups before anything is measured', () => {
    const points = scalingPoints([input(1, 1, null), input(2, 2, null)]);
    expect(points.every(p => p.speedup === null && p.ideal === null && p.efficiency === null)).toBe(true);
    expect(basePointIndex(points)).toBe(-1);
  });

  it('keeps the ideal at 1 when the swept parameter is not the process count', () => {
    const points = scalingPoints([input(64, 2, 4), input(128, 2, 3)]);
    expect(points[1].ideal).toBe(1);
    expect(points[1].efficiency).toBeCloseTo(4 / 3);
  });

  it('sorts the chart by value, and uses positions for values that are not numbers', () => {
    const sorted = scalingSeries(scalingPoints([input(4, 4, 4), input(1, 1, 8)]));
    expect(sorted.xs).toEqual([1, 4]);
    expect(sorted.epochTimeS).toEqual([8, 4]);
    expect(sorted.speedup).toEqual([0.5, 1]);
    const named = scalingSeries(scalingPoints([input('all', 1, 2), input('vector-add', 1, 1)]));
    expect(named.xs).toEqual([0, 1]);
    expect(named.labels).toEqual(['all', 'vector-add']);
  });

  it('means rank 0’s epoch times', () => {
    expect(mean([2, 4, 6])).toBe(4);
    expect(mean([])).toBeNull();
  });
});
