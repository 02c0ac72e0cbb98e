/**
 * RunState: the newest run of a playground: whether it is in flight, its
 * result (which says the mode that produced it), why it could not be asked
 * for, and whether the source changed since.
 */

import type { RunRequest, RunResult } from '../api/types';
import { LatestRequest } from './latest';

/** The part of the API client a run uses. */
export interface RunSource {
  runKernel(request: RunRequest, signal?: AbortSignal): Promise<RunResult>;
}

export class RunState {
  /** `onChange` is called after every change of the state. */
  constructor(client: RunSource, onChange: () => void) {
    this._client = client;
    this._onChange = onChange;
  }

  get running(): boolean {
    return this._running;
  }

  /** The newest run's result, or null. */
  get result(): RunResult | null {
    return this._result;
  }

  /** Why the last run could not be asked for (bad fields, a refused request), or null. */
  get error(): string | null {
    return this._error;
  }

  /** True when the source or settings changed since the shown result. */
  get stale(): boolean {
    return this._stale;
  }

  /** Send `request`; a run already in flight is dropped. Resolves when this run's answer is shown or dropped. */
  async start(request: RunRequest): Promise<void> {
    const ticket = this._latest.start();
    this._running = true;
    this._error = null;
    this._onChange();
    try {
      const result = await this._client.runKernel(request, ticket.signal);
      if (!ticket.isLatest()) {
        return;
      }
      this._result = result;
      this._stale = false;
    } catch (error) {
      if (!ticket.isLatest()) {
        return;
      }
      this._error = error instanceof Error ? error.message : String(error);
    }
    this._running = false;
    this._onChange();
  }

  /** Say why a run was not sent. */
  refuse(message: string): void {
    this._error = message;
    this._onChange();
  }

  /** The source or settings changed: the shown result is about an older kernel. */
  markStale(): void {
    if (this._result && !this._stale) {
      this._stale = true;
      this._onChange();
    }
  }

  /** Forget everything (a language switch): the run in flight is dropped. */
  clear(): void {
    this._latest.cancel();
    this._running = false;
    this._result = null;
    this._error = null;
    this._stale = false;
    this._onChange();
  }

  dispose(): void {
    this._latest.cancel();
  }

  private _client: RunSource;
  private _onChange: () => void;
  private _latest = new LatestRequest();
  private _running = false;
  private _result: RunResult | null = null;
  private _error: string | null = null;
  private _stale = false;
}
