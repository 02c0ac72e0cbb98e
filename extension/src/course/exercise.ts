/**
 * ExerciseView: one exercise in the main area. The README (rendered by
 * JupyterLab's markdown renderer), Start / Open my copy / Check / Reset, the
 * requirement list (ticking while the hidden checks run), each failure's reason,
 * figures and links to the files it is about, the copy's files, the attempt
 * history, and the mode label: GPU, or the CPU variant with what it cannot show.
 * The checks themselves run on the server.
 */

import { Panel, Widget } from '@lumino/widgets';
import type { CheckAttempt, ExerciseDoc, ExerciseStart, ExerciseWorkspace, RequirementResult } from '../api/types';
import { h } from '../dom';
import { renderProgressMark } from './section';
import {
  attemptLine,
  checkStatus,
  filesToOpen,
  formatFigure,
  isRunning,
  modeLabel,
  outcomeMark,
  requirementFiles,
  requirementRows,
  sandboxNote
} from './exerciseModel';

/** The calls the view makes (GpudojoClient satisfies it). */
export interface ExerciseSource {
  getExercise(id: string): Promise<ExerciseDoc>;
  startExercise(id: string, reset?: boolean): Promise<ExerciseStart>;
  checkExercise(id: string): Promise<CheckAttempt>;
}

export interface ExerciseViewOptions {
  exerciseId: string;
  source: ExerciseSource;
  /** Open a file of the workspace (path relative to the server's root); `preview` for the README. */
  openPath: (path: string, preview?: boolean) => void;
  /** A widget showing markdown (the README). */
  createMarkdown: (source: string) => Widget;
  /** Ask before a reset; resolves true to go on. */
  confirmReset: (path: string) => Promise<boolean>;
  /** Called when progress may have changed (a check finished, a start). */
  changed?: () => void;
  /** Milliseconds between polls while a check runs. */
  pollMs?: number;
}

export class ExerciseView extends Panel {
  constructor(options: ExerciseViewOptions) {
    super();
    this._options = options;
    this.exerciseId = options.exerciseId;
    this.addClass('gpudojo-exercise');
    this.addClass('gpudojo-lesson-view');
    this.title.label = options.exerciseId;
    this.title.closable = true;
    void this.load();
  }

  readonly exerciseId: string;

  /** The document last drawn (null before the first load). */
  get doc(): ExerciseDoc | null {
    return this._doc;
  }

  async load(): Promise<void> {
    let doc: ExerciseDoc;
    try {
      doc = await this._options.source.getExercise(this.exerciseId);
    } catch (error) {
      if (!this.isDisposed) {
        this._showError(`The exercise could not be loaded: ${(error as Error).message ?? error}`);
      }
      return;
    }
    if (this.isDisposed) {
      return;
    }
    this._draw(doc);
  }

  dispose(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    super.dispose();
  }

  private _draw(doc: ExerciseDoc): void {
    const wasRunning = this._doc !== null && isRunning(this._doc);
    this._doc = doc;
    this.title.label = doc.meta.title;
    if (!this._readme) {
      this._buildFrame(doc);
    }
    this._drawHeader(doc);
    this._drawRequirements(doc);
    this._drawHistory(doc);
    const running = isRunning(doc);
    if (running) {
      this._schedulePoll();
    } else if (wasRunning) {
      this._options.changed?.();
    }
  }

  /** The parts drawn once: header, actions, requirement list, history, README. */
  private _buildFrame(doc: ExerciseDoc): void {
    this._clear();
    this._header = h('header', { className: 'gpudojo-lesson-header' });
    this._actions = h('div', { className: 'gpudojo-exercise-actions' });
    this._message = h('div', { className: 'gpudojo-exercise-message', attrs: { role: 'alert' } });
    this._status = h('p', { className: 'gpudojo-exercise-status', attrs: { role: 'status', 'aria-live': 'polite' } });
    this._sandbox = h('p', { className: 'gpudojo-exercise-sandbox' });
    this._list = h('ol', { className: 'gpudojo-exercise-requirements', attrs: { 'aria-label': 'Requirements' } });
    this._history = h('section', { className: 'gpudojo-exercise-history' });
    this._add(
      h(
        'div',
        { className: 'gpudojo-exercise-top' },
        this._header,
        this._actions,
        this._message,
        h(
          'section',
          { className: 'gpudojo-exercise-check' },
          h('h2', { className: 'gpudojo-lesson-label', text: 'Requirements' }),
          this._status,
          this._sandbox,
          this._list
        ),
        this._history
      )
    );
    this._readme = this._options.createMarkdown(doc.readme);
    this._readme.addClass('gpudojo-exercise-readme');
    this.addWidget(this._readme);
  }

  private _drawHeader(doc: ExerciseDoc): void {
    const header = this._header!;
    const gpuReqs = doc.meta.requirements.filter(r => r.gpu).length;
    const mode = modeLabel(doc.mode, doc.meta.cpu_cannot_show, gpuReqs);
    header.textContent = '';
    header.append(
      h('div', { className: 'gpudojo-lesson-kicker', text: `Exercise ${doc.meta.order} · ${doc.meta.minutes} min` }),
      h(
        'h1',
        { className: 'gpudojo-lesson-title' },
        doc.meta.title,
        ' ',
        renderProgressMark(doc.progress.status)
      ),
      h(
        'p',
        { className: 'gpudojo-exercise-mode', attrs: { 'data-mode': doc.mode } },
        h('span', { className: `gpudojo-mode-badge gpudojo-mod-${doc.mode}`, text: mode.text }),
        ' ',
        mode.detail
      )
    );
    const actions = this._actions!;
    actions.textContent = '';
    const running = isRunning(doc);
    const ws = doc.workspace;
    if (!ws.exists) {
      actions.append(
        this._button('Start', `Copy the starters into ${ws.path}/ and open them`, () => void this._start(false), {
          primary: true
        })
      );
    } else {
      actions.append(
        this._button('Open my copy', `Open ${this._openList(doc, ws).join(', ')} and the README`, () =>
          this._openCopy(doc, ws)
        ),
        this._button(
          'Check',
          'Run the hidden checks against your copy',
          () => void this._check(),
          { primary: true, disabled: running }
        ),
        this._button('Reset', 'Copy the starters again (your copy is kept beside it)', () => void this._reset(), {
          disabled: running
        })
      );
    }
    actions.append(
      h('span', {
        className: 'gpudojo-exercise-path',
        text: ws.exists ? `Your copy: ${ws.path}/` : `Start copies the starters into ${ws.path}/`
      })
    );
    if (ws.exists) {
      // Every file of the copy, one click away (the README opens as a preview).
      const shown = ws.files.filter(f => !f.endsWith('.pyc'));
      actions.append(
        h(
          'span',
          { className: 'gpudojo-exercise-files', attrs: { 'aria-label': 'Files of your copy' } },
          ...shown.map(f => this._fileLink(ws, f, f))
        )
      );
    }
  }

  /** The files Start and "Open my copy" open, relative to the copy's folder. */
  private _openList(doc: ExerciseDoc, ws: ExerciseWorkspace): string[] {
    return filesToOpen(doc.meta.main, doc.meta.requirements, ws.files);
  }

  /** A link that opens `file` of the learner's copy. */
  private _fileLink(ws: ExerciseWorkspace, file: string, text: string): HTMLElement {
    const link = h('button', {
      className: 'gpudojo-exercise-file',
      text,
      title: `Open ${ws.path}/${file}`,
      attrs: { type: 'button', 'data-file': file }
    });
    link.addEventListener('click', () => this._options.openPath(`${ws.path}/${file}`, file === 'README.md'));
    return link;
  }

  private _drawRequirements(doc: ExerciseDoc): void {
    const running = isRunning(doc);
    const attempt = doc.current ?? doc.last ?? null;
    this._status!.textContent = checkStatus(attempt, running);
    this._status!.dataset.state = running ? 'running' : attempt ? attempt.status : 'none';
    this._sandbox!.textContent = sandboxNote(attempt) ?? '';
    const list = this._list!;
    list.textContent = '';
    const specs = new Map(doc.meta.requirements.map(spec => [spec.id, spec]));
    for (const r of requirementRows(doc)) {
      // A failure links to the files it is about, so the learner goes straight to the fix.
      const files =
        r.outcome === 'failed' && doc.workspace.exists
          ? requirementFiles(
              { files: specs.get(r.id)?.files, statement: r.statement, message: r.message },
              doc.workspace.files
            )
          : [];
      list.appendChild(this._requirement(r, running, files, doc.workspace));
    }
  }

  private _requirement(r: RequirementResult, running: boolean, files: string[], ws: ExerciseWorkspace): HTMLElement {
    const mark = outcomeMark(r.outcome, running);
    return h(
      'li',
      {
        className: 'gpudojo-exercise-requirement',
        attrs: { 'data-id': r.id, 'data-outcome': r.outcome }
      },
      h('span', {
        className: `gpudojo-outcome gpudojo-mod-${mark.shape}`,
        title: mark.label,
        attrs: { role: 'img', 'aria-label': mark.label }
      }),
      h(
        'div',
        { className: 'gpudojo-exercise-requirement-body' },
        h(
          'div',
          { className: 'gpudojo-exercise-statement' },
          h('code', { text: r.id }),
          ' ',
          r.statement,
          r.gpu ? h('span', { className: 'gpudojo-needs gpudojo-needs-gpu', text: 'GPU', title: 'Checked only with a GPU' }) : null
        ),
        r.message ? h('div', { className: 'gpudojo-exercise-reason', text: r.message }) : null,
        files.length
          ? h(
              'div',
              { className: 'gpudojo-exercise-fix-in' },
              'Fix in ',
              ...files.map(f => this._fileLink(ws, f, f))
            )
          : null,
        r.figures.length
          ? h(
              'ul',
              { className: 'gpudojo-exercise-figures' },
              ...r.figures.map(f => h('li', { text: formatFigure(f) }))
            )
          : null
      )
    );
  }

  private _drawHistory(doc: ExerciseDoc): void {
    const section = this._history!;
    section.textContent = '';
    if (!doc.history.length) {
      return;
    }
    section.append(
      h('h2', { className: 'gpudojo-lesson-label', text: `Attempts (${doc.history.length})` }),
      h(
        'ol',
        { className: 'gpudojo-exercise-attempts' },
        ...doc.history.map(a =>
          h('li', {
            text: attemptLine(a),
            attrs: { 'data-completed': String(a.completed), 'data-status': a.status }
          })
        )
      )
    );
  }

  private async _start(reset: boolean): Promise<void> {
    this._say('');
    try {
      const started = await this._options.source.startExercise(this.exerciseId, reset);
      const ws = started.workspace;
      this._openCopy(this._doc, ws);
      if (started.kept_as) {
        this._say(`Your previous copy was moved to ${started.kept_as}.`, 'info');
      }
      this._options.changed?.();
    } catch (error) {
      this._say(`Could not start the exercise: ${(error as Error).message ?? error}`);
    }
    await this.load();
  }

  private async _reset(): Promise<void> {
    const ws = this._doc?.workspace;
    if (!ws || !(await this._options.confirmReset(ws.path))) {
      return;
    }
    await this._start(true);
  }

  private async _check(): Promise<void> {
    this._say('');
    try {
      const attempt = await this._options.source.checkExercise(this.exerciseId);
      if (this._doc) {
        // Draw the attempt at once (every requirement pending), then poll.
        this._draw({ ...this._doc, current: attempt });
      }
    } catch (error) {
      this._say(`Could not check: ${(error as Error).message ?? error}`);
      await this.load();
    }
  }

  /** The README as a preview, then every file the requirements name, the main starter last (in front). */
  private _openCopy(doc: ExerciseDoc | null, ws: ExerciseWorkspace): void {
    this._options.openPath(ws.readme, true);
    const files = doc ? this._openList(doc, ws) : [];
    if (!files.length) {
      this._options.openPath(ws.main);
      return;
    }
    for (const file of files) {
      this._options.openPath(`${ws.path}/${file}`);
    }
  }

  private _schedulePoll(): void {
    if (this._timer !== null) {
      return;
    }
    this._timer = setTimeout(() => {
      this._timer = null;
      void this.load();
    }, this._options.pollMs ?? 500);
  }

  private _button(
    text: string,
    title: string,
    onClick: () => void,
    opts: { primary?: boolean; disabled?: boolean } = {}
  ): HTMLButtonElement {
    const button = h('button', {
      className: `jp-Button jp-mod-styled ${opts.primary ? 'jp-mod-accept' : 'jp-mod-reject'} gpudojo-exercise-button`,
      text,
      title,
      attrs: { type: 'button', 'data-action': text.toLowerCase().replace(/ /g, '-') }
    });
    button.disabled = !!opts.disabled;
    button.addEventListener('click', onClick);
    return button;
  }

  private _say(text: string, kind: 'error' | 'info' = 'error'): void {
    if (this._message) {
      this._message.textContent = text;
      this._message.dataset.kind = kind;
    }
  }

  private _showError(text: string): void {
    this._clear();
    const retry = h('button', { className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-retry', text: 'Retry' });
    retry.addEventListener('click', () => void this.load());
    this._add(h('div', { className: 'gpudojo-error', attrs: { role: 'alert' } }, `${text} `, retry));
  }

  private _add(node: HTMLElement): void {
    this.addWidget(new Widget({ node }));
  }

  private _clear(): void {
    for (const widget of [...this.widgets]) {
      widget.dispose();
    }
    this._readme = null;
  }

  private _options: ExerciseViewOptions;
  private _doc: ExerciseDoc | null = null;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _readme: Widget | null = null;
  private _header: HTMLElement | null = null;
  private _actions: HTMLElement | null = null;
  private _message: HTMLElement | null = null;
  private _status: HTMLElement | null = null;
  private _sandbox: HTMLElement | null = null;
  private _list: HTMLElement | null = null;
  private _history: HTMLElement | null = null;
}
