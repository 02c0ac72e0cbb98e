/**
 * A run view's section for the files a run records (memory captures, profile
 * traces): a title, a message for when there are none, the list, and a place
 * below it. It asks the server for the run's files when the run starts and
 * again once it has ended (when they are written); a subclass says how to list
 * them and how to show them.
 */

import type { Run } from '../api/types';
import { FINAL_STATUSES } from '../api/types';
import { h } from '../dom';

export interface ArtifactSectionParts {
  /** "Memory", "Profile". */
  title: string;
  /** The section's own class ("gpudojo-run-memory-section"). */
  sectionClass: string;
  /** Classes of the list and of the message above it. */
  listClass: string;
  messageClass: string;
  /** What follows the list (an inline view, a compare button). */
  below: HTMLElement;
  /** "memory captures": said when the server cannot list them. */
  what: string;
}

export abstract class RunArtifactSection<T> {
  constructor(parts: ArtifactSectionParts) {
    this._what = parts.what;
    this.list = h('ul', { className: parts.listClass });
    this.message = h('p', { className: parts.messageClass });
    this.node = h(
      'section',
      { className: `gpudojo-run-section ${parts.sectionClass}` },
      h('h3', { text: parts.title }),
      this.message,
      this.list,
      parts.below
    );
  }

  readonly node: HTMLElement;

  /** Look for the run's files when it starts, and again once it has ended. */
  update(run: Run): void {
    const phase = FINAL_STATUSES.has(run.status) ? 'final' : 'live';
    this.run = run;
    if (phase === this._phase) {
      return;
    }
    this._phase = phase;
    void this.refresh();
  }

  /** List the run's files and show them (or why the list could not be had). */
  async refresh(): Promise<void> {
    const run = this.run;
    if (!run) {
      return;
    }
    let items: T[];
    try {
      items = await this.fetch(run);
    } catch (error) {
      this.listFailed(run);
      this.message.textContent = `The run's ${this._what} could not be listed: ${(error as Error).message}`;
      return;
    }
    await this.show(run, items);
  }

  /** GET the run's files. */
  protected abstract fetch(run: Run): Promise<T[]>;

  /** Render `items`: the list is the subclass's to fill (startList clears it and sets the message). */
  protected abstract show(run: Run, items: T[]): Promise<void> | void;

  /** Called before the error message is shown (the profile section decides whether to show itself). */
  protected listFailed(_run: Run): void {
    // Nothing by default.
  }

  /** Clear the list and say `empty` when there is nothing in it. */
  protected startList(count: number, empty: string): void {
    this.list.textContent = '';
    this.message.textContent = count ? '' : empty;
    this.message.hidden = count > 0;
  }

  protected readonly list: HTMLElement;
  protected readonly message: HTMLElement;
  protected run: Run | null = null;
  private readonly _what: string;
  private _phase: 'live' | 'final' | null = null;
}
