/**
 * RunsListModel: the run history (GET runs, newest first) under the chosen
 * filters; polled every 2 s while a run is queued or running, rarely otherwise.
 */

import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import type { RunFilters } from '../api/client';
import { FINAL_STATUSES, Run, RunList, RunStatus } from '../api/types';

export interface RunsSource {
  listRuns(filters: RunFilters): Promise<RunList>;
}

/** Poll intervals (ms): while a run is active, and while none is. */
export const ACTIVE_POLL_MS = 2000;
export const IDLE_POLL_MS = 30_000;

/** Rows the list asks for. */
const LIST_LIMIT = 100;

export interface RunsFilter {
  lab: string;
  status: RunStatus | '';
}

/** Whether any of `runs` may still change. */
export function hasActiveRun(runs: readonly Run[]): boolean {
  return runs.some(run => !FINAL_STATUSES.has(run.status));
}

export class RunsListModel {
  constructor(source: RunsSource) {
    this._source = source;
    this._poll = new Poll({
      auto: false,
      factory: () => this._load(),
      frequency: { interval: IDLE_POLL_MS, backoff: true, max: 120_000 },
      standby: 'when-hidden',
      name: 'gpudojo:runs-list'
    });
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get runs(): readonly Run[] {
    return this._runs;
  }

  get error(): string | null {
    return this._error;
  }

  get filter(): RunsFilter {
    return { ...this._filter };
  }

  /** Whether a load has finished (rows or an error). */
  get loaded(): boolean {
    return this._loaded;
  }

  setFilter(filter: Partial<RunsFilter>): void {
    this._filter = { ...this._filter, ...filter };
    void this.refresh();
  }

  /** Start polling (the first load at once). */
  start(): void {
    void this._poll.start();
  }

  /** Load now (e.g. right after starting a run). */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  private async _load(): Promise<void> {
    const filters: RunFilters = { limit: LIST_LIMIT };
    if (this._filter.lab) {
      filters.lab = this._filter.lab;
    }
    if (this._filter.status) {
      filters.status = this._filter.status;
    }
    try {
      const list = await this._source.listRuns(filters);
      this._runs = list.runs;
      this._error = null;
    } catch (error) {
      this._error = (error as Error).message ?? String(error);
      this._loaded = true;
      this._changed.emit();
      throw error;
    }
    this._loaded = true;
    const interval = hasActiveRun(this._runs) ? ACTIVE_POLL_MS : IDLE_POLL_MS;
    if (this._poll.frequency.interval !== interval) {
      this._poll.frequency = { ...this._poll.frequency, interval };
    }
    this._changed.emit();
  }

  private _source: RunsSource;
  private _poll: Poll;
  private _runs: Run[] = [];
  private _error: string | null = null;
  private _loaded = false;
  private _filter: RunsFilter = { lab: '', status: '' };
  private _changed = new Signal<this, void>(this);
}
