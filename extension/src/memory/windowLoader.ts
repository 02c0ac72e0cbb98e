/**
 * Fetches the timeline window for the latest viewport: queries wait a short
 * debounce (a wheel spin asks once, not per notch), a newer query aborts the
 * older, and an answer that arrives after a newer query was made is dropped, so
 * the latest response always wins.
 */

import type { MemoryWindow } from '../api/types';
import type { TimeRange } from './viewport';

/** Wait after the last viewport change before asking (ms). */
export const WINDOW_DEBOUNCE_MS = 80;

export interface WindowRequest extends TimeRange {
  /** Sample count: the plot's width in CSS px. */
  px: number;
}

export type FetchWindow = (request: WindowRequest, signal: AbortSignal) => Promise<MemoryWindow>;

export interface WindowLoaderOptions {
  fetch: FetchWindow;
  /** The answer for the latest request. */
  loaded: (window: MemoryWindow, request: WindowRequest) => void;
  failed: (error: Error) => void;
  debounceMs?: number;
}

export class WindowLoader {
  constructor(options: WindowLoaderOptions) {
    this._options = options;
  }

  /** Ask for `request` after the debounce; replaces any query not answered yet. */
  request(request: WindowRequest, immediately = false): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
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
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this._inFlight?.abort();
    this._disposed = true;
  }

  private async _send(request: WindowRequest): Promise<void> {
    this._inFlight?.abort();
    const controller = new AbortController();
    this._inFlight = controller;
    const seq = ++this._seq;
    try {
      const window = await this._options.fetch(request, controller.signal);
      if (seq === this._seq && !this._disposed) {
        this._inFlight = null;
        this._options.loaded(window, request);
      }
    } catch (error) {
      if (seq === this._seq && !this._disposed) {
        this._inFlight = null;
        this._options.failed(error as Error);
      }
    }
  }

  private _options: WindowLoaderOptions;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _inFlight: AbortController | null = null;
  private _seq = 0;
  private _disposed = false;
}
