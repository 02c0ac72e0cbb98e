/** DevicesModel: the latest GET gpu/devices answer, refreshed by a Poll. */

import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import { GpudojoClient } from '../api/client';
import type { DevicesResponse } from '../api/types';

/** Poll interval while the sidebar is visible (ms). */
const POLL_INTERVAL_MS = 5000;

/** Longest wait between polls after repeated failures (ms). */
const POLL_MAX_MS = 60000;

export class DevicesModel {
  constructor(client: GpudojoClient) {
    this._client = client;
    this._poll = new Poll<void, Error, 'standby'>({
      auto: false,
      factory: () => this._fetch(),
      frequency: { interval: POLL_INTERVAL_MS, backoff: true, max: POLL_MAX_MS },
      name: 'gpudojo:devices',
      // Stand by when the browser tab is hidden, or when no view shows the data.
      standby: () => (this._isShown && !this._isShown() ? true : 'when-hidden')
    });
  }

  /** Poll only while `isShown()` is true (e.g. the sidebar section is visible). */
  pollWhile(isShown: () => boolean): void {
    this._isShown = isShown;
  }

  /** Emitted after every fetch, successful or not. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The last successful answer, or null before the first one. */
  get devices(): DevicesResponse | null {
    return this._devices;
  }

  /** The message of the last failed fetch, or null when the last fetch worked. */
  get error(): string | null {
    return this._error;
  }

  /** Start polling (idempotent). */
  start(): void {
    if (!this._started) {
      this._started = true;
      void this._poll.start();
    }
  }

  /** Fetch now; resolves when the answer (or error) is in. */
  async refresh(): Promise<void> {
    this.start();
    await this._poll.refresh();
    await this._poll.tick;
  }

  /**
   * Fetch once now, whether or not a view keeps the poll running (a view that shows the
   * machine once, such as the course's home); resolves when the answer (or error) is in.
   */
  async fetchOnce(): Promise<void> {
    await this._fetch().catch(() => undefined);
  }

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  private async _fetch(): Promise<void> {
    try {
      this._devices = await this._client.getDevices();
      this._error = null;
      this._changed.emit();
    } catch (error) {
      this._error = (error as Error).message ?? String(error);
      this._changed.emit();
      // Rethrow so the poll backs off.
      throw error;
    }
  }

  private _client: GpudojoClient;
  private _poll: Poll<void, Error, 'standby'>;
  private _started = false;
  private _isShown: (() => boolean) | null = null;
  private _devices: DevicesResponse | null = null;
  private _error: string | null = null;
  private _changed = new Signal<this, void>(this);
}
