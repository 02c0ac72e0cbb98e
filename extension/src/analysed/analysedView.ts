/**
 * AnalysedView: a main-area panel of one file the server analyses (a memory
 * capture, a profile trace). It opens with a status line and, while a file
 * never opened before is analysed in a child process, the analysis's progress;
 * then the subclass draws the result. A failure shows in the view's alert.
 */

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { h } from '../dom';
import { gpudojoIcon } from '../icons';
import { PROGRESS_POLL_MS, Progress, ProgressWords, progressText, progressValue } from './progress';

/** What a view's timeline gives it to manage. */
export interface ThemedPart {
  refreshTheme(): void;
  dispose(): void;
}

export interface AnalysedViewOptions<T> {
  /** The file's id ("file:…" or "run:…"). */
  id: string;
  /** The view's feature in class names and data attributes: "memory", "profile". */
  feature: string;
  /** The data attribute that carries the id: "capture", "trace". */
  idAttribute: string;
  /** The tab's label before the result names the file better. */
  label: string;
  /** How the analysis names its work. */
  words: ProgressWords;
  /** The result; the server analyses a file it has not seen before. */
  fetch: () => Promise<T>;
  /** How far that analysis is (null: no answer). */
  progress: () => Promise<Progress | null>;
}

export abstract class AnalysedView<T, L extends ThemedPart = ThemedPart> extends Widget {
  protected constructor(options: AnalysedViewOptions<T>) {
    super();
    this._analysed = options;
    this.addClass(`gpudojo-${options.feature}-view`);
    this.node.setAttribute(`data-${options.idAttribute}`, options.id);
    this.node.setAttribute('data-state', 'loading');
    this.title.label = `${options.label}: ${options.id.replace(/^(file|run):/, '')}`;
    this.title.icon = gpudojoIcon;
    this.title.closable = true;
    this.status = h('p', {
      className: `gpudojo-${options.feature}-status`,
      text: `Analysing the ${options.words.subject}…`,
      attrs: { role: 'status' }
    });
    this._error = h('div', { className: 'gpudojo-error', attrs: { role: 'alert' } });
    this._error.hidden = true;
    this.node.append(this.status, this._error);
  }

  /** Re-read theme colours (the timeline draws with them). */
  refreshTheme(): void {
    this.timeline?.refreshTheme();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._waiting = false;
    this.timeline?.dispose();
    super.dispose();
  }

  /** Draw `given` at once, or fetch the result; subclasses call it last in their constructor. */
  protected start(given?: T): void {
    if (given !== undefined) {
      this._drawResult(given);
    } else {
      void this._load();
    }
  }

  /** Draw the result below the status line (which is hidden once it is drawn). */
  protected abstract draw(result: T): void;

  protected showError(message: string): void {
    this._error.textContent = message;
    this._error.hidden = false;
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.timeline?.refreshTheme();
  }

  /** The status line: "Analysing the capture…", then the analysis's progress. */
  protected readonly status: HTMLElement;

  /** The view's timeline, once drawn: themed with the page and disposed with the view. */
  protected timeline: L | null = null;

  private _drawResult(result: T): void {
    this.draw(result);
    this.status.hidden = true;
    this.node.setAttribute('data-state', 'ready');
  }

  private async _load(): Promise<void> {
    const { feature, words } = this._analysed;
    const bar = h('progress', { className: `gpudojo-${feature}-progress`, attrs: { max: '1' } }) as HTMLProgressElement;
    this.status.after(bar);
    this._waiting = true;
    void this._pollProgress(bar);
    try {
      const result = await this._analysed.fetch();
      if (!this.isDisposed) {
        this._drawResult(result);
      }
    } catch (error) {
      this.status.hidden = true;
      this.node.setAttribute('data-state', 'error');
      this.showError(`The ${words.subject} could not be analysed: ${(error as Error).message}`);
    } finally {
      this._waiting = false;
      bar.remove();
    }
  }

  /** Say how far the first analysis is until the result arrives. */
  private async _pollProgress(bar: HTMLProgressElement): Promise<void> {
    const { words } = this._analysed;
    while (this._waiting && !this.isDisposed) {
      await new Promise(resolve => setTimeout(resolve, PROGRESS_POLL_MS));
      const progress = this._waiting ? await this._analysed.progress().catch(() => null) : null;
      if (progress && this._waiting) {
        this.status.textContent = progressText(words, progress);
        const value = progressValue(words, progress);
        if (value === null) {
          bar.removeAttribute('value');
        } else {
          bar.value = value;
        }
      }
    }
  }

  private _analysed: AnalysedViewOptions<T>;
  private _error: HTMLElement;
  private _waiting = false;
}
