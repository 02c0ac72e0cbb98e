/** LabCatalog: the runnable labs (GET runs/labs), loaded once and shared by the course section, forms and views. */

import { ISignal, Signal } from '@lumino/signaling';
import type { LabList, LabProblem, LabSummary } from '../api/types';

/** The part of the API client the catalog uses (GpudojoClient satisfies it). */
export interface LabSource {
  getLabs(): Promise<LabList>;
}

export class LabCatalog {
  constructor(source: LabSource) {
    this._source = source;
  }

  /** Emitted after every load (the labs or the error changed). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The message of the last failed load, or null. */
  get error(): string | null {
    return this._error;
  }

  get problems(): readonly LabProblem[] {
    return this._problems;
  }

  get labs(): readonly LabSummary[] {
    return [...this._labs.values()];
  }

  /** Lab `id`'s manifest summary, or null when it is not runnable (or not loaded yet). */
  get(id: string | null | undefined): LabSummary | null {
    return id ? this._labs.get(id) ?? null : null;
  }

  /** Why lab `id` cannot run, when its manifest failed; null otherwise. */
  problem(id: string): string | null {
    return this._problems.find(p => p.lab === id)?.message ?? null;
  }

  /** The labs, loading them the first time (later calls share that load). */
  ensure(): Promise<void> {
    return this._pending ?? (this._loaded ? Promise.resolve() : this.refresh());
  }

  /** Load the labs again. */
  refresh(): Promise<void> {
    if (!this._pending) {
      this._pending = this._load().finally(() => {
        this._pending = null;
      });
    }
    return this._pending;
  }

  private async _load(): Promise<void> {
    try {
      const list = await this._source.getLabs();
      this._labs = new Map(list.labs.map(lab => [lab.id, lab]));
      this._problems = list.problems ?? [];
      this._error = null;
      this._loaded = true;
    } catch (error) {
      this._error = (error as Error).message ?? String(error);
    }
    this._changed.emit();
  }

  private _source: LabSource;
  private _labs = new Map<string, LabSummary>();
  private _problems: LabProblem[] = [];
  private _error: string | null = null;
  private _loaded = false;
  private _pending: Promise<void> | null = null;
  private _changed = new Signal<this, void>(this);
}
