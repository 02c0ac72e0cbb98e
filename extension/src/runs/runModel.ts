/**
 * RunModel: one run as its stream has told it so far: the run document, the
 * log lines per rank, the metric series per rank and the truncation notice.
 * Pure state: batches in, signals out; the view decides when to draw.
 */

import { ISignal, Signal } from '@lumino/signaling';
import { FINAL_STATUSES, Run, RunEvent } from '../api/types';
import { LogBuffer } from './logBuffer';
import { MetricSeries } from './metricSeries';

/** What a batch changed (several at once; the view redraws only those parts). */
export interface RunChange {
  run: boolean;
  logs: boolean;
  metrics: boolean;
}

export class RunModel {
  constructor(readonly id: string) {}

  readonly logs = new LogBuffer();
  readonly metrics = new MetricSeries();

  /** Emitted once per applied batch or run document. */
  get changed(): ISignal<this, RunChange> {
    return this._changed;
  }

  /** The run as last reported; null until the first status or GET. */
  get run(): Run | null {
    return this._run;
  }

  /** The highest seq applied (-1 before any). */
  get lastSeq(): number {
    return this._lastSeq;
  }

  /** The server's notice that output past its limit is not streamed; null while complete. */
  get truncated(): string | null {
    return this._truncated;
  }

  /** Whether the run has reached a final status. */
  get isFinal(): boolean {
    return !!this._run && FINAL_STATUSES.has(this._run.status);
  }

  /**
   * Apply a batch of events in order; an event at or below the last seq
   * applied is a replayed duplicate and is skipped. Returns what changed.
   */
  applyBatch(events: readonly RunEvent[]): RunChange {
    const change: RunChange = { run: false, logs: false, metrics: false };
    for (const event of events) {
      if (event.seq <= this._lastSeq) {
        continue;
      }
      this._lastSeq = event.seq;
      switch (event.type) {
        case 'log':
          this.logs.append(event.rank, event.stream === 'stderr' ? 'stderr' : 'stdout', event.text);
          change.logs = true;
          break;
        case 'metric':
          this.metrics.add(event);
          change.metrics = true;
          break;
        case 'status':
          this._run = event.run;
          change.run = true;
          break;
        case 'truncated':
          this._truncated = event.message;
          this.logs.append(null, 'marker', event.message);
          change.logs = true;
          break;
      }
    }
    if (change.run || change.logs || change.metrics) {
      this._changed.emit(change);
    }
    return change;
  }

  /**
   * Take a run document from REST (GET, cancel). The stream is the authority:
   * a document is only taken while none is known, or when it is final and the
   * known one is not (a cancel's answer may beat its status event).
   */
  offerRun(run: Run): boolean {
    if (run.id !== this.id) {
      return false;
    }
    const known = this._run;
    if (known && (this.isFinal || !FINAL_STATUSES.has(run.status))) {
      return false;
    }
    this._run = run;
    this._changed.emit({ run: true, logs: false, metrics: false });
    return true;
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private _run: Run | null = null;
  private _lastSeq = -1;
  private _truncated: string | null = null;
  private _changed = new Signal<this, RunChange>(this);
}
