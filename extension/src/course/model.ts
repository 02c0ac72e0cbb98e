/** CourseModel: the catalog with this user's progress, shared by the sidebar and lesson views. */

import { ISignal, Signal } from '@lumino/signaling';
import type { Catalog, CatalogItem, CourseKind, KernelExamples, ProgressEntry } from '../api/types';
import { labsWithExamples } from '../kernels/examples';

/** The part of the API client the model uses (GpudojoClient satisfies it). */
export interface CatalogSource {
  getCatalog(): Promise<Catalog>;
  /** All labs' kernel examples: which labs can open in the Kernel Playground. */
  getKernelExamples(): Promise<KernelExamples>;
}

/** Which item's progress changed; `entry` when the new state is known. */
export interface ProgressChange {
  kind: CourseKind;
  id: string;
  entry: ProgressEntry | null;
}

export class CourseModel {
  constructor(source: CatalogSource) {
    this._source = source;
  }

  /** Emitted when the catalog, the error or the loading state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted when a view changed an item's progress (before the catalog reloads). */
  get progressChanged(): ISignal<this, ProgressChange> {
    return this._progressChanged;
  }

  /** The last catalog loaded, or null before the first one. */
  get catalog(): Catalog | null {
    return this._catalog;
  }

  /** The message of the last failed load, or null when it worked. */
  get error(): string | null {
    return this._error;
  }

  /** True while a load is in flight. */
  get loading(): boolean {
    return this._pending !== null;
  }

  /** Whether lab `id` offers kernel examples, so it opens in the Kernel Playground. */
  hasKernelExamples(id: string): boolean {
    return this._labsWithExamples.has(id);
  }

  /** The catalog item of `kind`/`id`, or null. */
  item(kind: CourseKind, id: string): CatalogItem | null {
    const catalog = this._catalog;
    if (!catalog) {
      return null;
    }
    const list =
      kind === 'lesson' ? catalog.lessons : kind === 'lab' ? catalog.labs : catalog.exercises;
    return list.find(item => item.id === id) ?? null;
  }

  /**
   * Load the catalog; resolves when it (or the error) is in.
   *
   * A call while a load is in flight runs once more after it, so the newest
   * progress is never missed.
   */
  refresh(): Promise<void> {
    if (this._pending) {
      this._again = true;
      return this._pending;
    }
    this._pending = this._load();
    this._changed.emit();
    return this._pending;
  }

  /**
   * Record that an item's progress changed: apply `entry` at once when given,
   * tell listeners, and reload the catalog.
   */
  noteProgress(kind: CourseKind, id: string, entry: ProgressEntry | null = null): Promise<void> {
    if (entry) {
      const item = this.item(kind, id);
      if (item) {
        item.progress = entry;
        this._changed.emit();
      }
    }
    this._progressChanged.emit({ kind, id, entry });
    return this.refresh();
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private async _load(): Promise<void> {
    try {
      do {
        this._again = false;
        // Asked once per load for all labs, not per item: the sidebar renders often.
        const labs = this._source.getKernelExamples().then(labsWithExamples, (error: unknown) => {
          // Labs then only lose their playground link; the course itself is fine.
          console.warn('gpudojo: the labs’ kernel examples could not be loaded.', error);
          return null;
        });
        try {
          this._catalog = await this._source.getCatalog();
          this._error = null;
        } catch (error) {
          this._error = (error as Error).message ?? String(error);
        }
        // A failed fetch keeps the labs known before, rather than unlinking them for a blip.
        this._labsWithExamples = (await labs) ?? this._labsWithExamples;
      } while (this._again);
    } finally {
      this._pending = null;
      this._changed.emit();
    }
  }

  private _source: CatalogSource;
  private _catalog: Catalog | null = null;
  private _labsWithExamples: ReadonlySet<string> = new Set();
  private _error: string | null = null;
  private _pending: Promise<void> | null = null;
  private _again = false;
  private _changed = new Signal<this, void>(this);
  private _progressChanged = new Signal<this, ProgressChange>(this);
}
