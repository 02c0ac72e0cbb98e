/**
 * WelcomeView: the course's home in the main area: progress, the next step with the one
 * button that takes it, what this machine can and cannot do, the map of the course and the
 * way to its reading list.
 * It only renders: the course model and the devices model hold the state, commands act.
 */

import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import type { CatalogItem, Catalog } from '../api/types';
import { h } from '../dom';
import type { DevicesModel } from '../gpu/devicesModel';
import { formatMinutes } from './catalog';
import { CourseCommandIds } from './commands';
import { CourseProgress, courseProgress, coursePath, doneText, nextStep } from './journey';
import { machineSummary } from './machine';
import { CourseModel } from './model';
import { renderProgressMark } from './section';

/** The command that opens an item of the course, and its args. */
export function openItemCommand(item: Pick<CatalogItem, 'kind' | 'id'>): { id: string; args: { id: string } } {
  const id =
    item.kind === 'lesson'
      ? CourseCommandIds.openLesson
      : item.kind === 'lab'
        ? CourseCommandIds.openLabReadme
        : CourseCommandIds.openExercise;
  return { id, args: { id: item.id } };
}

export class WelcomeView extends Widget {
  constructor(options: { model: CourseModel; devices: DevicesModel; commands: CommandRegistry }) {
    super();
    this._model = options.model;
    this._devices = options.devices;
    this._commands = options.commands;
    this.addClass('gpudojo-welcome');
    this.title.label = 'gpudojo';
    this.title.caption = 'The course’s home: your progress, the next step, this machine and the map';
    this._model.changed.connect(this._render, this);
    this._devices.changed.connect(this._render, this);
    this._render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._model.changed.disconnect(this._render, this);
    this._devices.changed.disconnect(this._render, this);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this._model.catalog && !this._model.loading) {
      void this._model.refresh();
    }
    if (!this._devices.devices) {
      void this._devices.fetchOnce();
    }
  }

  private _render(): void {
    const { catalog, error } = this._model;
    // Keep what the reader opened (the machine's details) and where they scrolled.
    const open = this.node.querySelector<HTMLDetailsElement>('.gpudojo-welcome-machine details')?.open ?? false;
    const scroll = this.node.scrollTop;
    this.node.textContent = '';
    this.node.appendChild(
      h(
        'header',
        { className: 'gpudojo-welcome-header' },
        h('div', { className: 'gpudojo-lesson-kicker', text: 'gpudojo' }),
        h('h1', { text: 'GPU computing and distributed training' }),
        h('p', {
          className: 'gpudojo-welcome-lede',
          text: 'Lessons, labs and exercises, from how a GPU works to training across many of them; each has a path on this machine, GPU or not.'
        })
      )
    );
    if (error) {
      this.node.appendChild(h('div', { className: 'gpudojo-error', attrs: { role: 'alert' }, text: `The course could not be loaded: ${error}` }));
    }
    if (!catalog) {
      if (!error) {
        this.node.appendChild(h('div', { className: 'gpudojo-loading', text: 'Loading the course…' }));
      }
      return;
    }
    const progress = courseProgress(catalog);
    this.node.appendChild(this._renderProgress(progress));
    this.node.appendChild(this._renderNext(catalog));
    this.node.appendChild(this._renderMachine(catalog, open));
    this.node.appendChild(this._renderMap(catalog));
    this.node.appendChild(this._renderReading());
    this.node.scrollTop = scroll;
  }

  private _renderProgress(p: CourseProgress): HTMLElement {
    const share = p.all.total ? Math.round((100 * p.all.done) / p.all.total) : 0;
    const test = !p.moduleTest.available
      ? null
      : p.moduleTest.passed
        ? 'passed'
        : p.moduleTest.attempts
          ? 'not passed yet'
          : 'not taken';
    const part = (label: string, c: { done: number; total: number }, kind: string) =>
      h(
        'li',
        { attrs: { 'data-kind': kind } },
        h('span', { className: 'gpudojo-welcome-count', text: `${c.done} of ${c.total}` }),
        ` ${label}`
      );
    return h(
      'section',
      { className: 'gpudojo-welcome-progress', attrs: { 'aria-label': 'Your progress' } },
      h('div', { className: 'gpudojo-welcome-done', text: doneText(p.all), attrs: { 'data-done': String(p.all.done) } }),
      h(
        'div',
        { className: 'gpudojo-welcome-bar', attrs: { role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': String(p.all.total), 'aria-valuenow': String(p.all.done) } },
        h('div', { className: 'gpudojo-welcome-bar-fill', attrs: { style: `width: ${share}%` } })
      ),
      h(
        'ul',
        { className: 'gpudojo-welcome-parts' },
        part('lessons', p.lesson, 'lesson'),
        part('labs', p.lab, 'lab'),
        part('exercises', p.exercise, 'exercise'),
        test ? h('li', { attrs: { 'data-kind': 'module-test' } }, 'module test: ', h('span', { className: 'gpudojo-welcome-count', text: test })) : null
      )
    );
  }

  private _renderNext(catalog: Catalog): HTMLElement {
    const step = nextStep(catalog);
    const section = h(
      'section',
      { className: 'gpudojo-welcome-next', attrs: { 'aria-label': 'Next step', 'data-kind': step.kind, 'data-id': step.id } },
      h('div', { className: 'gpudojo-lesson-label', text: step.kind === 'done' ? 'Done' : 'Next step' }),
      h('div', { className: 'gpudojo-welcome-next-text', text: step.text }),
      h('div', { className: 'gpudojo-welcome-next-why', text: step.why })
    );
    if (step.kind !== 'done') {
      const button = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-welcome-continue',
        text: step.action,
        attrs: { type: 'button' }
      });
      button.addEventListener('click', () => void this._commands.execute(CourseCommandIds.continueCourse));
      section.appendChild(button);
    }
    return section;
  }

  private _renderMachine(catalog: Catalog, open: boolean): HTMLElement {
    const machine = machineSummary(this._devices.devices, catalog);
    const details = h(
      'details',
      {},
      h('summary', { className: 'gpudojo-welcome-machine-line', text: machine.line }),
      h(
        'dl',
        { className: 'gpudojo-welcome-machine-details' },
        ...machine.details.flatMap(d => [h('dt', { text: d.label }), h('dd', { text: d.text })])
      )
    );
    details.open = open;
    return h(
      'section',
      { className: 'gpudojo-welcome-machine', attrs: { 'aria-label': 'This machine', 'data-mode': machine.mode } },
      h('div', { className: 'gpudojo-lesson-label', text: 'This machine' }),
      details
    );
  }

  private _renderMap(catalog: Catalog): HTMLElement {
    const next = nextStep(catalog);
    const stages = coursePath(catalog).map((stage, index) => {
      const rows = (stage.lesson ? [stage.lesson, ...stage.items] : stage.items).map(item =>
        this._renderMapItem(item, next.kind === item.kind && next.id === item.id)
      );
      return h(
        'li',
        { className: 'gpudojo-welcome-stage', attrs: { 'data-stage': String(index + 1) } },
        h('div', { className: 'gpudojo-welcome-stage-label', text: stage.lesson ? `Part ${index + 1}` : 'Also' }),
        h('ul', { className: 'gpudojo-welcome-stage-items', attrs: { role: 'list' } }, ...rows)
      );
    });
    const test = catalog.module_test ?? null;
    if (test) {
      const status = test.passed ? 'completed' : test.attempts ? 'in_progress' : 'not_started';
      const row = h(
        'li',
        { className: 'gpudojo-welcome-item', attrs: { 'data-kind': 'module-test', 'data-status': status } },
        h('span', { className: 'gpudojo-kind-tag', text: 'test' }),
        h('span', { className: 'gpudojo-welcome-item-title', text: test.title }),
        renderProgressMark(status)
      );
      this._clickable(row, CourseCommandIds.openModuleTest, {});
      stages.push(
        h(
          'li',
          { className: 'gpudojo-welcome-stage' },
          h('div', { className: 'gpudojo-welcome-stage-label', text: 'End' }),
          h('ul', { className: 'gpudojo-welcome-stage-items', attrs: { role: 'list' } }, row)
        )
      );
    }
    return h(
      'section',
      { className: 'gpudojo-welcome-map', attrs: { 'aria-label': 'Map of the course' } },
      h('div', { className: 'gpudojo-lesson-label', text: 'Map of the course' }),
      h('ol', { className: 'gpudojo-welcome-stages' }, ...stages)
    );
  }

  /** Beyond the course: the reading list, whose entries say which lessons they deepen. */
  private _renderReading(): HTMLElement {
    const button = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-welcome-open-reading',
      text: 'Open the reading list',
      attrs: { type: 'button' }
    });
    button.addEventListener('click', () => void this._commands.execute(CourseCommandIds.openReadingList));
    return h(
      'section',
      { className: 'gpudojo-welcome-reading', attrs: { 'aria-label': 'Reading list' } },
      h('div', { className: 'gpudojo-lesson-label', text: 'Reading list' }),
      h('div', {
        className: 'gpudojo-welcome-reading-text',
        text: 'To go further: the papers, guides and docs the lessons lean on, what to read each for, and which lessons it deepens.'
      }),
      button
    );
  }

  private _renderMapItem(item: CatalogItem, isNext: boolean): HTMLElement {
    const status = item.progress?.status ?? 'not_started';
    const minutes = formatMinutes(item.minutes);
    const row = h(
      'li',
      {
        className: `gpudojo-welcome-item${isNext ? ' gpudojo-mod-next' : ''}`,
        attrs: { 'data-kind': item.kind, 'data-id': item.id, 'data-status': status }
      },
      h('span', { className: 'gpudojo-kind-tag', text: item.kind }),
      h('span', { className: 'gpudojo-welcome-item-title', text: item.title }),
      minutes ? h('span', { className: 'gpudojo-course-minutes', text: minutes }) : null,
      renderProgressMark(status)
    );
    const command = openItemCommand(item);
    this._clickable(row, command.id, command.args);
    return row;
  }

  private _clickable(row: HTMLElement, command: string, args: { id?: string }): void {
    row.classList.add('gpudojo-mod-clickable');
    row.tabIndex = 0;
    row.setAttribute('role', 'button');
    const open = () => void this._commands.execute(command, args);
    row.addEventListener('click', open);
    row.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        open();
      }
    });
  }

  private _model: CourseModel;
  private _devices: DevicesModel;
  private _commands: CommandRegistry;
}
