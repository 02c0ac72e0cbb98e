/**
 * Fetches the window of the latest viewport, for every windowed timeline (memory
 * captures, profile traces): a query waits a short
 * debounce (one wheel spin asks once, not per notch), a newer query aborts the
 * one in flight, and an answer that arrives after a newer query was made is
 * dropped, so what is drawn always matches the latest viewport asked for.
 */

import type { TimeRange } from './viewport';

/** Wait after the last viewport change before asking (ms). */
export const WINDOW_DEBOUNCE_MS = 60;

export interface WindowRequest extends TimeRange {
  /** The plot's width in CSS px: spans under one pixel come back merged. */
  px: number;
}

export type FetchWindow<W> = (request: WindowRequest, signal: AbortSignal) => Promise<W>;

export interface WindowLoaderOptions<W> {
  fetch: FetchWindow<W>;
  /** The answer to the latest request. */
  loaded: (window: W, request: WindowRequest) => void;
  /** The latest request failed (not: was aborted or made stale). */
  failed: (error: Error) => void;
  debounceMs?: number;
}

export class WindowLoader<W> {
  constructor(options: WindowLoaderOptions<W>) {
    this._options = options;
  }

  /** Ask for `request` after the debounce (or now); replaces any query not answered yet. */
  request(request: WindowRequest, immediately = false): void {
    if (this._disposed) {
      return;
    }
    this._clearTimer();
    // A newer viewport makes the answer in flight useless: stop waiting for it now.
    this._seq++;
    this._inFlight?.abort();
    this._inFlight = null;
    if (immediately) {
      void this._send(request);
      return;
    }
    this._timer = setTimeout(() => {
      this._timer = null;
      void this._send(request);
    }, this._options.debounceMs ?? WINDOW_DEBOUNCE_MS);
  }

  /** Whether a query is waiting or in flight. */
  get busy(): boolean {
    return this._timer !== null || this._inFlight !== null;
  }

  dispose(): void {
    this._clearTimer();
    this._inFlight?.abort();
    this._inFlight = null;
    this._disposed = true;
  }

  private _clearTimer(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private async _send(request: WindowRequest): Promise<void> {
    const controller = new AbortController();
    this._inFlight = controller;
    const seq = ++this._seq;
    const current = () => seq === this._seq && !this._disposed;
    try {
      const window = await this._options.fetch(request, controller.signal);
      if (current()) {
        this._inFlight = null;
        this._options.loaded(window, request);
      }
    } catch (error) {
      if (current()) {
        this._inFlight = null;
        this._options.failed(error as Error);
      }
    }
  }

  private _options: WindowLoaderOptions<W>;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _inFlight: AbortController | null = null;
  private _seq = 0;
  private _disposed = false;
}
