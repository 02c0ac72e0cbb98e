/**
 * Scaling maths of a sweep: time per epoch per point, the speedup over the
 * first measured point, the ideal speedup (the ratio of process counts) and
 * the efficiency (speedup over ideal).
 */

import type { ParamValue, RunStatus } from '../api/types';

/** The metric a point's time per epoch is the mean of (rank 0's values, s). */
export const EPOCH_TIME_METRIC = 'epoch_time_s';

export interface ScalingInput {
  runId: string;
  /** The swept parameter's value in this run. */
  value: ParamValue;
  /** Processes of this run. */
  nproc: number;
  status: RunStatus;
  /** Mean time per epoch of rank 0 (s); null when not measured (yet). */
  epochTimeS: number | null;
}

export interface ScalingPoint extends ScalingInput {
  /** Time per epoch of the base point over this point's; null without both. */
  speedup: number | null;
  /** Speedup if every added process helped fully: nproc / base nproc. */
  ideal: number | null;
  /** speedup / ideal (1 = perfect scaling). */
  efficiency: number | null;
}

/** Mean of `values`; null for none (s in, s out). */
export function mean(values: readonly number[]): number | null {
  return values.length ? values.reduce((sum, v) => sum + v, 0) / values.length : null;
}

/** The points of a sweep in its order; the base is the first with a measured time. */
export function scalingPoints(inputs: readonly ScalingInput[]): ScalingPoint[] {
  const base = inputs.find(p => p.epochTimeS !== null && p.epochTimeS > 0) ?? null;
  return inputs.map(point => {
    if (!base || base.epochTimeS === null) {
      return { ...point, speedup: null, ideal: null, efficiency: null };
    }
    const ideal = base.nproc > 0 ? point.nproc / base.nproc : null;
    const speedup = point.epochTimeS !== null && point.epochTimeS > 0 ? base.epochTimeS / point.epochTimeS : null;
    const efficiency = speedup !== null && ideal ? speedup / ideal : null;
    return { ...point, speedup, ideal, efficiency };
  });
}

/** The base point's index (the first measured), or -1. */
export function basePointIndex(points: readonly ScalingInput[]): number {
  return points.findIndex(p => p.epochTimeS !== null && p.epochTimeS > 0);
}

export interface ScalingSeries {
  /** x of each point: the value itself when every value is a number, else its position. */
  xs: number[];
  /** Text of each x tick. */
  labels: string[];
  epochTimeS: Array<number | null>;
  speedup: Array<number | null>;
  ideal: Array<number | null>;
}

/** The chart's series, sorted by x (uPlot needs x ascending); table order stays the sweep's. */
export function scalingSeries(points: readonly ScalingPoint[]): ScalingSeries {
  const numeric = points.every(p => typeof p.value === 'number');
  const order = points.map((p, i) => ({ p, x: numeric ? (p.value as number) : i }));
  order.sort((a, b) => a.x - b.x);
  return {
    xs: order.map(o => o.x),
    labels: order.map(o => String(o.p.value)),
    epochTimeS: order.map(o => o.p.epochTimeS),
    speedup: order.map(o => o.p.speedup),
    ideal: order.map(o => o.p.ideal)
  };
}
