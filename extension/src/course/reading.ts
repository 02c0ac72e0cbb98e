/**
 * ReadingListView: the course reading list (content/resources/reading.md) in the main area:
 * entries grouped by section, each with its link, author, what to read it for and the
 * lessons it deepens (by title, each opening its lesson), narrowed by a lesson filter.
 */

import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { ReadingEntry, ReadingList } from '../api/types';
import { h } from '../dom';
import { CourseCommandIds } from './commands';
import { CourseModel } from './model';
import { codeSpans, emptyReadingText, groupReading, lessonChoices, lessonTitle, readingCount } from './readingList';
import { renderProblems } from './section';

export interface ReadingListSource {
  getReadingList(): Promise<ReadingList>;
}

export interface ReadingListViewOptions {
  source: ReadingListSource;
  model: CourseModel;
  commands: CommandRegistry;
  /** Show only what deepens this lesson (null or absent: every entry). */
  lesson?: string | null;
}

export class ReadingListView extends Widget {
  constructor(options: ReadingListViewOptions) {
    super();
    this._options = options;
    this._lesson = options.lesson ?? null;
    this.addClass('gpudojo-reading');
    this.title.label = 'Reading list';
    this.title.caption = 'What to read next, and what for: the sources each lesson leans on';
    // Lesson titles come from the catalog, which may arrive after the list.
    options.model.changed.connect(this._render, this);
    this._render();
    void this.load();
  }

  /** The list as last loaded, or null. */
  get reading(): ReadingList | null {
    return this._data;
  }

  /** The lesson the list is narrowed to, or null for every entry. */
  get lesson(): string | null {
    return this._lesson;
  }

  /** Emitted when the lesson filter changes (so that a reload reopens it filtered alike). */
  get lessonChanged(): ISignal<this, string | null> {
    return this._lessonChanged;
  }

  /** Narrow the list to what deepens `lesson` (null: show every entry). */
  setLesson(lesson: string | null): void {
    if (lesson === this._lesson) {
      return;
    }
    this._lesson = lesson;
    this._render();
    this.node.scrollTop = 0;
    this._lessonChanged.emit(lesson);
  }

  async load(): Promise<void> {
    const seq = ++this._seq;
    this._error = null;
    try {
      const data = await this._options.source.getReadingList();
      if (this.isDisposed || seq !== this._seq) {
        return;
      }
      this._data = data;
    } catch (error) {
      if (this.isDisposed || seq !== this._seq) {
        return;
      }
      this._error = (error as Error).message ?? String(error);
    }
    this._render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._options.model.changed.disconnect(this._render, this);
    Signal.clearData(this);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    const { model } = this._options;
    if (!model.catalog && !model.loading) {
      void model.refresh();
    }
  }

  private _render(): void {
    const node = this.node;
    const scroll = node.scrollTop;
    node.textContent = '';
    node.appendChild(this._renderHeader());
    if (this._error) {
      const retry = h('button', { className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-retry', text: 'Retry' });
      retry.addEventListener('click', () => void this.load());
      node.appendChild(
        h(
          'div',
          { className: 'gpudojo-error', attrs: { role: 'alert' } },
          `The reading list could not be loaded: ${this._error} `,
          retry
        )
      );
      return;
    }
    const data = this._data;
    if (!data) {
      node.appendChild(h('div', { className: 'gpudojo-loading', text: 'Loading the reading list…' }));
      return;
    }
    if (data.problems.length) {
      const count = data.problems.length;
      node.appendChild(
        renderProblems(data.problems, `${count} problem${count === 1 ? '' : 's'} in the reading list (for its authors)`)
      );
    }
    const groups = groupReading(data.entries, this._lesson);
    if (!groups.length) {
      node.appendChild(this._renderEmpty());
    }
    for (const group of groups) {
      node.appendChild(
        h(
          'section',
          { className: 'gpudojo-reading-section', attrs: { 'data-section': group.section } },
          h('h2', { className: 'gpudojo-reading-section-title', text: group.section }),
          h('ul', { className: 'gpudojo-reading-entries', attrs: { role: 'list' } }, ...group.entries.map(e => this._renderEntry(e)))
        )
      );
    }
    node.scrollTop = scroll;
  }

  private _renderHeader(): HTMLElement {
    const { catalog } = this._options.model;
    const select = h('select', {
      className: 'gpudojo-reading-filter-select',
      attrs: { 'aria-label': 'Show the reading for a lesson' }
    });
    const choices = lessonChoices(catalog);
    if (this._lesson !== null && !choices.some(c => c.id === this._lesson)) {
      // Filtered to a lesson before the catalog (or a lesson it no longer has): keep it selectable.
      choices.push({ id: this._lesson, title: this._lesson });
    }
    select.appendChild(h('option', { text: 'All lessons', attrs: { value: '' } }));
    for (const choice of choices) {
      select.appendChild(h('option', { text: choice.title, attrs: { value: choice.id } }));
    }
    select.value = this._lesson ?? '';
    select.addEventListener('change', () => this.setLesson(select.value || null));
    const shown = this._data ? groupReading(this._data.entries, this._lesson).reduce((n, g) => n + g.entries.length, 0) : null;
    return h(
      'header',
      { className: 'gpudojo-lesson-header' },
      h('div', { className: 'gpudojo-lesson-kicker', text: 'The course reading list' }),
      h('h1', { className: 'gpudojo-lesson-title', text: 'Reading list' }),
      h('p', {
        className: 'gpudojo-reading-lede',
        text: 'What to read next, and what for: each entry names the part worth your time and the lessons it takes further. Links open in a new tab; a lesson’s title opens the lesson.'
      }),
      h(
        'div',
        { className: 'gpudojo-reading-filter' },
        h('label', { className: 'gpudojo-lesson-label', text: 'Lesson' }, select),
        shown === null
          ? null
          : h('span', {
              className: 'gpudojo-reading-count',
              text: readingCount(shown, this._lesson, catalog),
              attrs: { role: 'status' }
            })
      )
    );
  }

  private _renderEmpty(): HTMLElement {
    const { catalog } = this._options.model;
    const lesson = this._lesson;
    const actions = h('div', { className: 'gpudojo-lesson-actions' });
    if (lesson !== null) {
      const all = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-reading-show-all',
        text: 'Show all lessons’ reading',
        attrs: { type: 'button' }
      });
      all.addEventListener('click', () => this.setLesson(null));
      actions.appendChild(all);
      if (lessonTitle(catalog, lesson) !== null) {
        const back = h('button', {
          className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-reading-back',
          text: 'Back to the lesson',
          attrs: { type: 'button' }
        });
        back.addEventListener('click', () => void this._options.commands.execute(CourseCommandIds.openLesson, { id: lesson }));
        actions.appendChild(back);
      }
    }
    return h(
      'div',
      { className: 'gpudojo-reading-empty', attrs: { role: 'status' } },
      h('p', { text: emptyReadingText(lesson, catalog) }),
      actions.childElementCount ? actions : null
    );
  }

  private _renderEntry(entry: ReadingEntry): HTMLElement {
    const { catalog } = this._options.model;
    const lessons = h('span', { className: 'gpudojo-reading-lessons' });
    entry.deepens.forEach((id, index) => {
      if (index) {
        lessons.append(', ');
      }
      const title = lessonTitle(catalog, id);
      if (title === null) {
        // Not in the catalog (yet): the id, as the list names it.
        lessons.appendChild(h('code', { className: 'gpudojo-reading-lesson', text: id, attrs: { 'data-id': id } }));
        return;
      }
      const link = h('a', {
        className: `gpudojo-reading-lesson${id === this._lesson ? ' gpudojo-mod-current' : ''}`,
        text: title,
        title: `Open the lesson “${title}”`,
        attrs: { href: '#', 'data-id': id }
      });
      link.addEventListener('click', event => {
        event.preventDefault();
        void this._options.commands.execute(CourseCommandIds.openLesson, { id });
      });
      lessons.appendChild(link);
    });
    const readFor = h('p', { className: 'gpudojo-reading-for' }, h('strong', { text: 'Read it for: ' }));
    for (const part of codeSpans(entry.read_for)) {
      readFor.appendChild(part.code ? h('code', { text: part.text }) : document.createTextNode(part.text));
    }
    return h(
      'li',
      { className: 'gpudojo-reading-entry', attrs: { 'data-title': entry.title } },
      h('a', {
        className: 'gpudojo-reading-title',
        text: entry.title,
        title: `${entry.link} (opens in a new tab)`,
        attrs: { href: entry.link, target: '_blank', rel: 'noopener' }
      }),
      h('div', { className: 'gpudojo-reading-by', text: `by ${entry.by}` }),
      readFor,
      h('div', { className: 'gpudojo-reading-deepens' }, h('strong', { text: 'Deepens: ' }), lessons)
    );
  }

  private _options: ReadingListViewOptions;
  private _lesson: string | null;
  private _data: ReadingList | null = null;
  private _error: string | null = null;
  private _seq = 0;
  private _lessonChanged = new Signal<this, string | null>(this);
}
