/**
 * LessonView: one lesson in the main area: header and actions, table of
 * contents, the cells rendered by JupyterLab's own markdown renderer, related
 * items, the next lesson and the quiz.
 */

import { showErrorMessage } from '@jupyterlab/apputils';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { CommandRegistry } from '@lumino/commands';
import { Panel, Widget } from '@lumino/widgets';
import type {
  CourseKind,
  LessonCell,
  LessonDoc,
  NotebookCopy,
  ProgressEntry,
  ProgressStatus,
  QuizResult,
  RelatedItem
} from '../api/types';
import { h } from '../dom';
import { formatMinutes } from './catalog';
import { QUIZ_PASS_SHARE, quizPassed } from './journey';
import { CourseCommandIds } from './commands';
import { expectedOutputLabel } from './expectedOutput';
import { CourseModel } from './model';
import { ProductAction, activateProductLinks, markProductLinks } from './productLinks';
import { QuizView } from './quiz';
import { renderNeedsTag } from './section';
import { HeadingInfo, codeFence, locateTocHeadings, mermaidFences } from './toc';

/** The calls a lesson makes (GpudojoClient satisfies it). */
export interface LessonSource {
  getLesson(id: string): Promise<LessonDoc>;
  submitQuiz(id: string, answers: Record<string, string[]>): Promise<QuizResult>;
  setProgress(kind: CourseKind, id: string, status: ProgressStatus): Promise<ProgressEntry>;
  createLessonNotebook(id: string, overwrite?: boolean): Promise<NotebookCopy>;
}

export interface LessonViewOptions {
  lessonId: string;
  source: LessonSource;
  model: CourseModel;
  rendermime: IRenderMimeRegistry;
  commands: CommandRegistry;
  /** Open a file (relative to the server root) in the main area. */
  openPath: (path: string) => void;
  /** Resolves true when this server can run GPU cells (devices mode 'gpu'). */
  canRunGpu: () => Promise<boolean>;
}

const HEADING_SELECTOR = 'h1, h2, h3, h4, h5, h6';

export class LessonView extends Panel {
  constructor(options: LessonViewOptions) {
    super();
    this._options = options;
    this.lessonId = options.lessonId;
    this.addClass('gpudojo-lesson-view');
    const known = options.model.item('lesson', options.lessonId);
    this.title.label = known?.title ?? options.lessonId;
    this.title.caption = this.title.label;
    options.model.changed.connect(this._onCatalogChanged, this);
    void this.load();
  }

  /** The id of the lesson shown. */
  readonly lessonId: string;

  /** The lesson as last loaded, or null. */
  get doc(): LessonDoc | null {
    return this._doc;
  }

  /** (Re)load the lesson from the server and render it. */
  async load(): Promise<void> {
    this._clear();
    this._addNode(h('div', { className: 'gpudojo-loading', text: 'Loading the lesson…' }));
    const { source, lessonId, canRunGpu } = this._options;
    let doc: LessonDoc;
    let gpu: boolean;
    try {
      [doc, gpu] = await Promise.all([
        source.getLesson(lessonId),
        canRunGpu().catch(() => false)
      ]);
    } catch (error) {
      if (this.isDisposed) {
        return;
      }
      this._clear();
      const retry = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-retry',
        text: 'Retry'
      });
      retry.addEventListener('click', () => void this.load());
      this._addNode(
        h(
          'div',
          { className: 'gpudojo-error', attrs: { role: 'alert' } },
          `The lesson "${lessonId}" could not be loaded: ${(error as Error).message ?? error} `,
          retry
        )
      );
      return;
    }
    if (this.isDisposed) {
      return;
    }
    this._doc = doc;
    this._status = doc.progress?.status ?? 'not_started';
    this.title.label = doc.meta.title;
    this.title.caption = doc.meta.title;
    this._render(doc, gpu);
    if (this._status === 'not_started') {
      // Opening a lesson starts it: the sidebar shows a half circle from now on.
      void this._setStatus('in_progress');
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._options.model.changed.disconnect(this._onCatalogChanged, this);
    super.dispose();
  }

  /** Scroll the rendered heading of toc entry `index` into view. */
  scrollToTocEntry(index: number): void {
    const doc = this._doc;
    if (!doc || !this._body) {
      return;
    }
    const nodes = Array.from(this._body.node.querySelectorAll<HTMLElement>(HEADING_SELECTOR));
    const headings: HeadingInfo[] = nodes.map(node => ({
      level: Number(node.tagName.slice(1)),
      text: node.textContent ?? ''
    }));
    const target = locateTocHeadings(doc.toc, headings)[index];
    if (target !== undefined && target >= 0) {
      nodes[target].scrollIntoView({ block: 'start', behavior: 'smooth' });
    }
  }

  private _render(doc: LessonDoc, gpu: boolean): void {
    this._clear();
    this._addNode(this._renderHeader(doc));
    if (doc.toc.length) {
      this._addNode(this._renderToc(doc));
    }
    const body = new Panel();
    body.addClass('gpudojo-lesson-body');
    for (const cell of doc.cells) {
      body.addWidget(
        cell.type === 'code'
          ? this._renderCodeCell(cell, gpu)
          : this._markdown(markProductLinks(mermaidFences(cell.source)), true)
      );
    }
    this._body = body;
    this.addWidget(body);
    this._addNode(this._renderFooter(doc));
    if (doc.quiz.length) {
      this.addWidget(
        new QuizView({
          lessonId: doc.meta.id,
          questions: doc.quiz,
          lastResult: doc.last_quiz ?? null,
          createMarkdown: source => this._markdown(source),
          submit: answers => this._options.source.submitQuiz(doc.meta.id, answers),
          // Each attempt is served in its own order: the lesson, fetched again, carries the next.
          nextAttempt: async () => (await this._options.source.getLesson(doc.meta.id)).quiz,
          graded: result => {
            this._quizResult = result;
            this._updateCompleteButton();
            void this._options.model.noteProgress('lesson', doc.meta.id);
          }
        })
      );
    }
    this._quizResult = doc.last_quiz ?? null;
    this._end = this._renderEnd(doc);
    this._addNode(this._end);
    this._updateCompleteButton();
  }

  /**
   * Where the learner finishes: after the quiz. Mark complete is offered once the quiz passes
   * (a lesson without a quiz offers it at once), then the next lesson by its title.
   */
  private _renderEnd(doc: LessonDoc): HTMLElement {
    this._endComplete = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-mark-complete-end',
      attrs: { type: 'button' }
    });
    this._endComplete.addEventListener('click', () => void this._setStatus('completed'));
    this._endNote = h('div', { className: 'gpudojo-lesson-end-note' });
    const next = doc.next
      ? this._itemLink(doc.next, 'gpudojo-next-lesson-end', `Next lesson: ${doc.next.title}`)
      : null;
    next?.setAttribute('data-id', doc.next?.id ?? '');
    return h(
      'section',
      { className: 'gpudojo-lesson-end', attrs: { 'aria-label': 'Finish the lesson' } },
      this._endNote,
      h('div', { className: 'gpudojo-lesson-actions' }, this._endComplete, next)
    );
  }

  private _renderHeader(doc: LessonDoc): HTMLElement {
    const { meta } = doc;
    const minutes = formatMinutes(meta.minutes);
    const openNotebook = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-open-notebook',
      text: 'Open as notebook',
      title: 'Copy this lesson into a notebook you can run and edit (an earlier copy is kept)'
    });
    openNotebook.addEventListener('click', () => void this._openNotebook(openNotebook));
    this._markComplete = h('button', { className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-mark-complete' });
    this._markComplete.addEventListener('click', () => void this._setStatus('completed'));
    this._actionError = h('div', { className: 'gpudojo-lesson-action-error', attrs: { role: 'alert' } });
    this._updateCompleteButton();
    const objectives = meta.objectives.length
      ? h(
          'div',
          { className: 'gpudojo-lesson-objectives' },
          h('div', { className: 'gpudojo-lesson-label', text: 'You will learn to' }),
          h('ul', {}, ...meta.objectives.map(o => h('li', { text: o })))
        )
      : null;
    return h(
      'header',
      { className: 'gpudojo-lesson-header' },
      h('div', { className: 'gpudojo-lesson-kicker', text: `Lesson ${meta.order}` }),
      h('h1', { className: 'gpudojo-lesson-title', text: meta.title }),
      h(
        'div',
        { className: 'gpudojo-lesson-meta' },
        minutes ? h('span', { className: 'gpudojo-lesson-minutes', text: minutes }) : null,
        renderNeedsTag(meta)
      ),
      meta.needs !== 'cpu' && meta.cpu_path
        ? h(
            'div',
            { className: 'gpudojo-lesson-cpu-path' },
            h('strong', { text: meta.needs === 'multi-gpu' ? 'Without several GPUs: ' : 'Without a GPU: ' }),
            meta.cpu_path
          )
        : null,
      objectives,
      h('div', { className: 'gpudojo-lesson-actions' }, openNotebook, this._markComplete),
      this._actionError
    );
  }

  private _renderToc(doc: LessonDoc): HTMLElement {
    const list = h('ol', {});
    doc.toc.forEach((entry, index) => {
      const link = h('a', {
        text: entry.title,
        attrs: { href: '#', 'data-level': String(entry.level) }
      });
      link.addEventListener('click', event => {
        event.preventDefault();
        this.scrollToTocEntry(index);
      });
      list.appendChild(h('li', { className: `gpudojo-toc-level-${entry.level}` }, link));
    });
    return h(
      'nav',
      { className: 'gpudojo-lesson-toc', attrs: { 'aria-label': 'Contents' } },
      h('div', { className: 'gpudojo-lesson-label', text: 'Contents' }),
      list
    );
  }

  private _renderCodeCell(cell: LessonCell, gpu: boolean): Widget {
    const box = new Panel();
    box.addClass('gpudojo-lesson-code');
    const gpus = cell.gpus ?? 1;
    if (cell.needs_gpu) {
      box.addClass('gpudojo-mod-needs-gpu');
      box.addWidget(
        new Widget({
          node: h('span', {
            className: 'gpudojo-needs gpudojo-needs-gpu gpudojo-cell-tag',
            text: gpus > 1 ? `Needs ${gpus} GPUs` : 'Needs a GPU'
          })
        })
      );
    }
    box.addWidget(this._markdown(codeFence(cell.source, 'python')));
    // This server's GPU count is not known here: a multi-GPU cell always shows its expected output.
    if (cell.needs_gpu && (!gpu || gpus > 1)) {
      const kind = cell.expected_kind ?? 'unknown';
      box.addWidget(
        new Widget({
          node: h(
            'div',
            { className: 'gpudojo-expected-output', attrs: { 'data-kind': kind } },
            h('div', {
              className: 'gpudojo-expected-output-label',
              text: expectedOutputLabel(cell)
            }),
            cell.expected_output
              ? h('pre', { text: cell.expected_output })
              : h('div', { className: 'gpudojo-expected-output-none', text: 'No output was recorded.' })
          )
        })
      );
    }
    return box;
  }

  private _renderFooter(doc: LessonDoc): HTMLElement {
    const parts: HTMLElement[] = [];
    if (doc.related.length) {
      const list = h('ul', { className: 'gpudojo-lesson-related-list' });
      for (const item of doc.related) {
        const link = this._itemLink(item, 'gpudojo-related-link');
        if (item.kind === 'lab') {
          this._labLinks.push({ item, link });
        }
        list.appendChild(
          h(
            'li',
            { attrs: { 'data-kind': item.kind, 'data-id': item.id } },
            h('span', { className: 'gpudojo-kind-tag', text: item.kind }),
            link
          )
        );
      }
      parts.push(
        h(
          'section',
          { className: 'gpudojo-lesson-related' },
          h('div', { className: 'gpudojo-lesson-label', text: 'Related' }),
          list
        )
      );
    }
    // Right after the lesson's "Where next": the reading list, narrowed to this lesson.
    const reading = h('a', {
      className: 'gpudojo-lesson-reading-link',
      text: 'Reading for this lesson',
      title: 'The papers, guides and docs that take this lesson further, and what to read them for',
      attrs: { href: '#', 'data-id': doc.meta.id }
    });
    reading.addEventListener('click', event => {
      event.preventDefault();
      void this._options.commands.execute(CourseCommandIds.openReadingList, { lesson: doc.meta.id });
    });
    parts.push(h('div', { className: 'gpudojo-lesson-reading' }, reading));
    if (doc.next) {
      const next = this._itemLink(doc.next, 'gpudojo-next-lesson', `Next: ${doc.next.title}`);
      next.setAttribute('data-id', doc.next.id);
      parts.push(h('div', { className: 'gpudojo-lesson-next' }, next));
    }
    return h('footer', { className: 'gpudojo-lesson-footer' }, ...parts);
  }

  /** A link that opens a lesson or an exercise, or a lab's kernels in the playground; other items only show their title. */
  private _itemLink(item: RelatedItem, className: string, text = item.title): HTMLElement {
    const action = this._action(item);
    if (!action) {
      return h('span', { className, text });
    }
    const link = h('a', { className, text, title: action.title, attrs: { href: '#' } });
    link.addEventListener('click', event => {
      event.preventDefault();
      action.open();
    });
    return link;
  }

  /** What following a link to `item` does, or null when there is nothing to open yet. */
  private _action(item: RelatedItem): { open: () => void; title: string } | null {
    const { commands, model } = this._options;
    if (item.kind === 'lesson') {
      return { open: () => void commands.execute(CourseCommandIds.openLesson, { id: item.id }), title: '' };
    }
    if (item.kind === 'exercise') {
      return {
        open: () => void commands.execute(CourseCommandIds.openExercise, { id: item.id }),
        title: 'Open the exercise'
      };
    }
    if (item.kind === 'lab') {
      return {
        open: () => void commands.execute(CourseCommandIds.openLabReadme, { id: item.id }),
        title: model.hasKernelExamples(item.id)
          ? 'Read the lab (its kernels open in the Kernel Playground from there)'
          : 'Read the lab'
      };
    }
    return null;
  }

  private _onCatalogChanged(): void {
    this._syncProgressFromCatalog();
    this._syncLabLinks();
  }

  /** Link the related labs whose kernel examples arrived after the lesson was drawn (or unlink them). */
  private _syncLabLinks(): void {
    for (const entry of this._labLinks) {
      const linked = entry.link.tagName === 'A';
      if (linked !== this._options.model.hasKernelExamples(entry.item.id)) {
        const fresh = this._itemLink(entry.item, entry.link.className);
        entry.link.replaceWith(fresh);
        entry.link = fresh;
      }
    }
  }

  /** A widget rendering `source` with JupyterLab's markdown renderer (math, code, mermaid). */
  private _markdown(source: string, productLinks = false): Widget {
    const renderer = this._options.rendermime.createRenderer('text/markdown');
    renderer.addClass('gpudojo-lesson-markdown');
    renderer
      .renderModel(new MimeModel({ data: { 'text/markdown': source } }))
      .then(() => {
        if (productLinks) {
          activateProductLinks(renderer.node, action => this._runProductAction(action));
        }
      })
      .catch(reason => console.warn('gpudojo: a lesson cell could not be rendered.', reason));
    return renderer;
  }

  /** Follow a product link: run its command, or say why it cannot run here. */
  private _runProductAction(action: ProductAction): void {
    const { commands } = this._options;
    if (!commands.hasCommand(action.command)) {
      void showErrorMessage(
        'This link cannot be followed',
        `${action.description}: the part of gpudojo that does this (${action.command}) is not loaded.`
      );
      return;
    }
    commands.execute(action.command, action.args).catch(error => {
      void showErrorMessage('This link did not work', `${action.description}: ${(error as Error).message ?? error}`);
    });
  }

  private async _openNotebook(button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    this._showActionError(null);
    try {
      const copy = await this._options.source.createLessonNotebook(this.lessonId);
      this._options.openPath(copy.path);
    } catch (error) {
      this._showActionError(
        `The notebook could not be created: ${(error as Error).message ?? error}`
      );
    } finally {
      button.disabled = false;
    }
  }

  private async _setStatus(status: ProgressStatus): Promise<void> {
    const previous = this._status;
    this._status = status;
    this._updateCompleteButton();
    this._showActionError(null);
    this._saving++;
    try {
      const entry = await this._options.source.setProgress('lesson', this.lessonId, status);
      this._status = entry.status;
      this._updateCompleteButton();
      void this._options.model.noteProgress('lesson', this.lessonId, entry);
    } catch (error) {
      this._status = previous;
      this._updateCompleteButton();
      this._showActionError(
        `Your progress could not be saved: ${(error as Error).message ?? error}`
      );
    } finally {
      this._saving--;
    }
  }

  /** Follow progress changed elsewhere (another view, a reload of the catalog). */
  private _syncProgressFromCatalog(): void {
    const item = this._options.model.item('lesson', this.lessonId);
    // While a change is being saved the catalog may still hold the old status.
    if (item && this._doc && !this._saving && item.progress.status !== this._status) {
      this._status = item.progress.status;
      this._updateCompleteButton();
    }
  }

  private _updateCompleteButton(): void {
    const done = this._status === 'completed';
    for (const button of [this._markComplete, this._endComplete]) {
      if (!button) {
        continue;
      }
      button.textContent = done ? 'Completed ✓' : 'Mark complete';
      button.disabled = done;
      button.dataset.status = this._status;
      button.title = done ? 'You completed this lesson' : 'Mark this lesson as completed';
    }
    const end = this._end;
    if (end && this._endComplete && this._endNote) {
      const hasQuiz = !!this._doc?.quiz.length;
      const offered = done || !hasQuiz || quizPassed(this._quizResult);
      end.dataset.offered = String(offered);
      this._endComplete.hidden = !offered;
      const result = this._quizResult;
      this._endNote.textContent = done
        ? 'You completed this lesson.'
        : offered
          ? hasQuiz && result
            ? `Quiz passed (${result.score} of ${result.total}): mark the lesson complete.`
            : 'Finished reading? Mark the lesson complete.'
          : result
            ? `Quiz: ${result.score} of ${result.total}. Get ${Math.ceil(QUIZ_PASS_SHARE * result.total)} right (Try again keeps the right ones) to finish the lesson here.`
            : 'Answer the quiz to finish the lesson here.';
    }
  }

  private _showActionError(message: string | null): void {
    if (this._actionError) {
      this._actionError.textContent = message ?? '';
      this._actionError.hidden = !message;
    }
  }

  private _addNode(node: HTMLElement): void {
    this.addWidget(new Widget({ node }));
  }

  private _clear(): void {
    for (const widget of [...this.widgets]) {
      widget.dispose();
    }
    this._body = null;
    this._labLinks = [];
    this._markComplete = null;
    this._actionError = null;
    this._end = null;
    this._endComplete = null;
    this._endNote = null;
  }

  private _options: LessonViewOptions;
  private _doc: LessonDoc | null = null;
  private _status: ProgressStatus = 'not_started';
  private _saving = 0;
  private _body: Panel | null = null;
  private _markComplete: HTMLButtonElement | null = null;
  /** The end of the lesson, after the quiz: Mark complete once the quiz passes, the next lesson. */
  private _end: HTMLElement | null = null;
  private _endComplete: HTMLButtonElement | null = null;
  private _endNote: HTMLElement | null = null;
  private _quizResult: QuizResult | null = null;
  private _actionError: HTMLElement | null = null;
  /** The related labs' links, redrawn when which labs have kernel examples changes. */
  private _labLinks: Array<{ item: RelatedItem; link: HTMLElement }> = [];
}
