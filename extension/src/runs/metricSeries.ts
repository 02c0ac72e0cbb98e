/**
 * MetricSeries: what a run's ranks reported, per metric and per rank, as
 * (step, value) points; and the aligned arrays uPlot draws (x = step, one y
 * array per rank, null where a rank has no point at that step).
 */

import type { MetricEvent } from '../api/types';

interface Points {
  steps: number[];
  values: number[];
}

/** `[steps, ...values per rank]`, aligned on the steps. */
export type StepSeries = [number[], ...Array<Array<number | null>>];

export class MetricSeries {
  /** Bumped on every new point. */
  get version(): number {
    return this._version;
  }

  /** Metric names in the order they first arrived. */
  names(): string[] {
    return [...this._byName.keys()];
  }

  /** Ranks that reported `name`, in order. */
  ranks(name: string): number[] {
    return [...(this._byName.get(name)?.keys() ?? [])].sort((a, b) => a - b);
  }

  /**
   * Record a metric event: each numeric value becomes a point at its step.
   *
   * Strings, booleans and nulls (NaN and infinities arrive as null) are not
   * drawn. Without a step, a point goes after the rank's last one.
   */
  add(event: MetricEvent): void {
    for (const [name, value] of Object.entries(event.values)) {
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        continue;
      }
      let byRank = this._byName.get(name);
      if (!byRank) {
        byRank = new Map();
        this._byName.set(name, byRank);
      }
      let points = byRank.get(event.rank);
      if (!points) {
        points = { steps: [], values: [] };
        byRank.set(event.rank, points);
      }
      const last = points.steps.length ? points.steps[points.steps.length - 1] : -1;
      const step = typeof event.step === 'number' && Number.isFinite(event.step) ? event.step : last + 1;
      points.steps.push(step);
      points.values.push(value);
      this._version++;
    }
  }

  /** The values `rank` reported for `name`, in order. */
  values(name: string, rank: number): readonly number[] {
    return this._byName.get(name)?.get(rank)?.values ?? [];
  }

  /** Points of `name`, all ranks together. */
  pointCount(name: string): number {
    let n = 0;
    for (const points of this._byName.get(name)?.values() ?? []) {
      n += points.steps.length;
    }
    return n;
  }

  /** Mean of what `rank` reported for `name`; null when it reported nothing. */
  mean(name: string, rank: number): number | null {
    const values = this.values(name, rank);
    if (!values.length) {
      return null;
    }
    return values.reduce((sum, v) => sum + v, 0) / values.length;
  }

  /** Aligned series of `name` for `ranks`: a step two ranks share is one x; a repeated step keeps the last value. */
  aligned(name: string, ranks: number[] = this.ranks(name)): StepSeries {
    const byRank = this._byName.get(name);
    const steps = new Set<number>();
    for (const rank of ranks) {
      for (const step of byRank?.get(rank)?.steps ?? []) {
        steps.add(step);
      }
    }
    const xs = [...steps].sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    const ys = ranks.map(rank => {
      const row: Array<number | null> = new Array(xs.length).fill(null);
      const points = byRank?.get(rank);
      if (points) {
        for (let i = 0; i < points.steps.length; i++) {
          row[at.get(points.steps[i]) as number] = points.values[i];
        }
      }
      return row;
    });
    return [xs, ...ys];
  }

  private _byName = new Map<string, Map<number, Points>>();
  private _version = 0;
}

/**
 * The metrics to chart, in order: a lab's manifest metrics that have points
 * (the manifest names what matters; other values, like the epoch number, are
 * bookkeeping), or every metric with points for a script.
 */
export function chartedMetrics(series: MetricSeries, manifest: ReadonlyArray<{ name: string }> | null): string[] {
  const names = manifest ? manifest.map(m => m.name) : series.names();
  return names.filter(name => series.pointCount(name) > 0);
}
