/**
 * SweepModel: a sweep's runs (GET runs/sweeps/{group}, polled while any is
 * unfinished) and each member's metrics, read from its event stream as it
 * runs (a finished member's stream replays and closes by itself).
 */

import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import type { RunStream } from '../api/runStream';
import { FINAL_STATUSES, Sweep } from '../api/types';
import { MetricSeries } from './metricSeries';
import { EPOCH_TIME_METRIC, ScalingPoint, mean, scalingPoints } from './scaling';

/** The part of the API client the model uses (GpudojoClient satisfies it). */
export interface SweepSource {
  getSweep(group: string): Promise<Sweep>;
  openRunStream(id: string): RunStream;
}

/** How often the sweep is asked for while a member is unfinished (ms). */
const POLL_MS = 2000;

export class SweepModel {
  constructor(readonly group: string, source: SweepSource) {
    this._source = source;
    this._poll = new Poll({
      auto: false,
      factory: () => this.refresh(),
      frequency: { interval: POLL_MS, backoff: true, max: 30_000 },
      standby: 'when-hidden',
      name: `gpudojo:sweep-${group}`
    });
  }

  /** Emitted when the sweep, a member's metrics or the error changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get sweep(): Sweep | null {
    return this._sweep;
  }

  get error(): string | null {
    return this._error;
  }

  /** Whether every member has ended. */
  get isFinal(): boolean {
    return !!this._sweep && this._sweep.runs.every(run => FINAL_STATUSES.has(run.status));
  }

  /** The scaling points, in the sweep's order (time per epoch: mean of rank 0's epoch_time_s). */
  points(): ScalingPoint[] {
    const sweep = this._sweep;
    if (!sweep) {
      return [];
    }
    return scalingPoints(
      sweep.runs.map(run => ({
        runId: run.id,
        value: run.params[sweep.param] ?? '',
        nproc: run.nproc,
        status: run.status,
        epochTimeS: mean(this._metrics.get(run.id)?.values(EPOCH_TIME_METRIC, 0) ?? [])
      }))
    );
  }

  /** Ask for the sweep once (rejects when that fails, so the poll backs off). */
  async refresh(): Promise<void> {
    try {
      this._sweep = await this._source.getSweep(this.group);
      this._error = null;
    } catch (error) {
      this._error = (error as Error).message ?? String(error);
      this._changed.emit();
      throw error;
    }
    for (const run of this._sweep.runs) {
      if (run.status !== 'queued' && !this._streams.has(run.id)) {
        this._follow(run.id);
      }
    }
    this._changed.emit();
    if (this.isFinal) {
      void this._poll.stop();
    }
  }

  /** Start polling (the first ask at once). */
  start(): void {
    void this._poll.start();
  }

  dispose(): void {
    this._poll.dispose();
    for (const stream of this._streams.values()) {
      stream.dispose();
    }
    this._streams.clear();
    Signal.clearData(this);
  }

  private _follow(runId: string): void {
    const series = new MetricSeries();
    this._metrics.set(runId, series);
    const stream = this._source.openRunStream(runId);
    this._streams.set(runId, stream);
    stream.batchReceived.connect((_, events) => {
      let changed = false;
      for (const event of events) {
        if (event.type === 'metric') {
          series.add(event);
          changed = true;
        }
      }
      if (changed) {
        this._changed.emit();
      }
    });
    stream.connect(-1);
  }

  private _source: SweepSource;
  private _poll: Poll;
  private _sweep: Sweep | null = null;
  private _error: string | null = null;
  private _metrics = new Map<string, MetricSeries>();
  private _streams = new Map<string, RunStream>();
  private _changed = new Signal<this, void>(this);
}
