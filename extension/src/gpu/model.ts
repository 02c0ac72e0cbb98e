/**
 * TelemetryModel: the samples the GPU monitor shows, kept to a time window,
 * plus pause state, rate and mode as the server last reported them.
 *
 * It knows nothing about sockets or the DOM: the monitor feeds it parsed
 * messages and renders what it emits.
 */

import { ISignal, Signal } from '@lumino/signaling';
import type {
  RecordingInfo,
  TelemetryMessage,
  TelemetryMode,
  TelemetrySample
} from '../api/types';
import {
  AlignedSeries,
  GpuMetricSpec,
  HostMetricSpec,
  gpuIndices,
  gpuSeries,
  hostSeries,
  sampleTime
} from './series';

/** What changed in the model. */
export type TelemetryChange = 'history' | 'sample' | 'state' | 'window' | 'paused';

export interface TelemetryModelOptions {
  /** Width of the time window kept (s). */
  windowSeconds?: number;
  /** Hard cap on samples kept, whatever their times (count). */
  maxSamples?: number;
}

/** The server's ceiling (20 Hz) times the longest window (600 s), with headroom. */
const DEFAULT_MAX_SAMPLES = 20 * 600 + 100;

export class TelemetryModel {
  constructor(options: TelemetryModelOptions = {}) {
    this._windowSeconds = options.windowSeconds ?? 120;
    this._maxSamples = options.maxSamples ?? DEFAULT_MAX_SAMPLES;
  }

  /** Emitted after every change, with what changed. */
  get changed(): ISignal<this, TelemetryChange> {
    return this._changed;
  }

  /** Emitted when the server reports an error on the stream (its message). */
  get errorReported(): ISignal<this, string> {
    return this._errorReported;
  }

  /** Samples inside the window, oldest first. */
  get samples(): ReadonlyArray<TelemetrySample> {
    return this._start === 0 ? this._buffer : this._buffer.slice(this._start);
  }

  /** Number of samples inside the window. */
  get size(): number {
    return this._buffer.length - this._start;
  }

  /** Samples accepted since the model was created, history included (count). */
  get received(): number {
    return this._received;
  }

  /** The most recent sample, or null before the first one. */
  get latest(): TelemetrySample | null {
    return this.size > 0 ? this._buffer[this._buffer.length - 1] : null;
  }

  /** Whether new samples are being ignored. */
  get paused(): boolean {
    return this._paused;
  }

  /** The rate the server samples at for this stream, as it last said (Hz). */
  get rateHz(): number | null {
    return this._rateHz;
  }

  /** The server's rate ceiling (Hz). */
  get maxHz(): number | null {
    return this._maxHz;
  }

  /** Where the numbers come from, from the history message; null before it. */
  get mode(): TelemetryMode | null {
    return this._mode;
  }

  /** What the replayed recording is (synthetic or measured, rate, length); null when live. */
  get recording(): RecordingInfo | null {
    return this._recording;
  }

  /** The last error the server reported on the stream, or null. */
  get lastError(): string | null {
    return this._lastError;
  }

  /** Width of the time window kept (s). */
  get windowSeconds(): number {
    return this._windowSeconds;
  }

  set windowSeconds(seconds: number) {
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds === this._windowSeconds) {
      return;
    }
    this._windowSeconds = seconds;
    this._trim();
    this._changed.emit('window');
  }

  /** Pause or resume locally: while paused, incoming samples are dropped. */
  setPaused(paused: boolean): void {
    if (paused === this._paused) {
      return;
    }
    this._paused = paused;
    this._changed.emit('paused');
  }

  /** Apply one message from the telemetry stream. */
  handleMessage(message: TelemetryMessage): void {
    switch (message.type) {
      case 'history':
        this._rateHz = message.rate_hz;
        this._maxHz = message.max_hz;
        this._mode = message.mode;
        this._recording = message.recording ?? null;
        this._lastError = null;
        this._buffer = [];
        this._start = 0;
        for (const sample of [...message.samples].sort((a, b) => sampleTime(a) - sampleTime(b))) {
          this._append(sample);
        }
        this._trim();
        this._changed.emit('history');
        break;
      case 'sample': {
        if (this._paused) {
          return;
        }
        if (this._append(message)) {
          this._trim();
          this._changed.emit('sample');
        }
        break;
      }
      case 'state':
        this._paused = message.paused;
        this._rateHz = message.rate_hz;
        this._changed.emit('state');
        break;
      case 'error':
        this._lastError = message.error.message;
        this._errorReported.emit(message.error.message);
        break;
    }
  }

  /** Sorted GPU indices seen in the window. */
  gpuIndices(): number[] {
    return gpuIndices(this.samples);
  }

  /** Aligned series `[xs, ...ys per GPU]` of one GPU metric over the window. */
  gpuSeries(spec: GpuMetricSpec, gpus?: ReadonlyArray<number>): AlignedSeries {
    const samples = this.samples;
    return gpuSeries(samples, spec, gpus ?? gpuIndices(samples));
  }

  /** Aligned series `[xs, ys]` of one host metric over the window. */
  hostSeries(spec: HostMetricSpec): AlignedSeries {
    return hostSeries(this.samples, spec);
  }

  /** Forget every sample (e.g. when the monitor reconnects to another server). */
  clear(): void {
    this._buffer = [];
    this._start = 0;
    this._changed.emit('history');
  }

  /** Add a sample at the end; false when it is out of order and was dropped. */
  private _append(sample: TelemetrySample): boolean {
    const last = this.latest;
    const t = sampleTime(sample);
    if (last && t <= sampleTime(last)) {
      // A replay reads each recorded sample as often as the rate asks: one is enough.
      if (t >= sampleTime(last) - this._windowSeconds) {
        // A duplicate or a late frame: the chart needs increasing times.
        return false;
      }
      // The clock went back by more than a window (a replay restarted): start over.
      this._buffer = [];
      this._start = 0;
    }
    this._buffer.push(sample);
    this._received++;
    return true;
  }

  /** Drop samples older than the window or beyond the count cap. */
  private _trim(): void {
    const last = this.latest;
    if (!last) {
      return;
    }
    const oldest = sampleTime(last) - this._windowSeconds;
    let start = this._start;
    while (start < this._buffer.length && sampleTime(this._buffer[start]) < oldest) {
      start++;
    }
    start = Math.max(start, this._buffer.length - this._maxSamples);
    this._start = start;
    // Compact now and then so trimming stays amortised O(1) per sample.
    if (this._start > 1024 && this._start * 2 > this._buffer.length) {
      this._buffer = this._buffer.slice(this._start);
      this._start = 0;
    }
  }

  private _buffer: TelemetrySample[] = [];
  private _start = 0;
  private _received = 0;
  private _paused = false;
  private _rateHz: number | null = null;
  private _maxHz: number | null = null;
  private _mode: TelemetryMode | null = null;
  private _recording: RecordingInfo | null = null;
  private _lastError: string | null = null;
  private _windowSeconds: number;
  private _maxSamples: number;
  private _changed = new Signal<this, TelemetryChange>(this);
  private _errorReported = new Signal<this, string>(this);
}
