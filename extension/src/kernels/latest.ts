/**
 * Timing helpers of the playground: compile after a pause in typing, and show
 * only the answer of the newest request (an older answer arriving late is dropped).
 */

/** One request of a LatestRequest: its abort signal and whether it is still the newest. */
export interface RequestTicket {
  readonly id: number;
  readonly signal: AbortSignal;
  /** True while no newer request was started and this one was not cancelled. */
  isLatest(): boolean;
}

/**
 * Hands out tickets so that only the newest request's answer is applied.
 *
 * Starting a request aborts the one before it, so the browser does not keep
 * waiting on answers nobody will read.
 */
export class LatestRequest {
  /** Start a request; the previous one (if any) is aborted and stops being the latest. */
  start(): RequestTicket {
    this._controller?.abort();
    const controller = new AbortController();
    this._controller = controller;
    const id = ++this._seq;
    return {
      id,
      signal: controller.signal,
      isLatest: () => id === this._seq && !controller.signal.aborted
    };
  }

  /** Abort the request in flight, so its answer is ignored. */
  cancel(): void {
    this._controller?.abort();
    this._controller = null;
    this._seq++;
  }

  private _seq = 0;
  private _controller: AbortController | null = null;
}

/** The timer functions a Debouncer uses (the window's, or jest's fakes). */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const globalTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: handle => clearTimeout(handle as ReturnType<typeof setTimeout>)
};

/** Calls `callback` once `delayMs` (ms) after the last `schedule()`; `flush()` calls it now. */
export class Debouncer {
  constructor(callback: () => void, delayMs: number, timers: Timers = globalTimers) {
    this._callback = callback;
    this.delayMs = delayMs;
    this._timers = timers;
  }

  /** Quiet time before the call (ms). */
  readonly delayMs: number;

  /** True while a call is scheduled. */
  get pending(): boolean {
    return this._handle !== null;
  }

  /** (Re)start the wait: the call happens `delayMs` after the last schedule. */
  schedule(): void {
    this.cancel();
    this._handle = this._timers.setTimeout(() => {
      this._handle = null;
      this._callback();
    }, this.delayMs);
  }

  /** Call now, dropping the scheduled call. */
  flush(): void {
    this.cancel();
    this._callback();
  }

  /** Drop the scheduled call, if any. */
  cancel(): void {
    if (this._handle !== null) {
      this._timers.clearTimeout(this._handle);
      this._handle = null;
    }
  }

  private _callback: () => void;
  private _timers: Timers;
  private _handle: unknown = null;
}
