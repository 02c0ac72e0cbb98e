/** CourseSection: the sidebar's Course section, rendering what CourseModel holds. */

import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import type { CatalogItem, CourseProblem, ModuleTestScores } from '../api/types';
import { h } from '../dom';
import { formatMinutes, groupCatalog, moduleTestSummary, needsTag, progressMark, runsHere } from './catalog';
import { KernelCommandIds } from '../kernels/commands';
import { RunCommandIds } from '../runs/commands';
import { CourseCommandIds } from './commands';
import { CourseModel } from './model';

/** The tag of an item that needs one GPU or several; null for a CPU item. */
export function renderNeedsTag(item: Pick<CatalogItem, 'needs' | 'cpu_path'>): HTMLElement | null {
  const tag = needsTag(item.needs, item.cpu_path);
  if (!tag) {
    return null;
  }
  return h('span', {
    className: `gpudojo-needs gpudojo-needs-${item.needs}`,
    text: tag.text,
    title: tag.tooltip,
    attrs: { 'aria-label': tag.tooltip }
  });
}

/** What runs an item on this machine: "runs here (CPU, gloo)", "GPU only"; the tooltip has the CPU path. */
export function renderRunsHere(
  item: Pick<CatalogItem, 'needs' | 'cpu_path' | 'launcher'>,
  gpus: number
): HTMLElement {
  const here = runsHere(item, gpus);
  return h('span', {
    className: `gpudojo-runs-here gpudojo-mod-${here.where}`,
    text: here.text,
    title: here.tooltip,
    attrs: { 'aria-label': `${here.text}. ${here.tooltip}`, 'data-where': here.where }
  });
}

/** Make `row` act as a button: click, Enter and Space run `open`. */
export function makeClickable(row: HTMLElement, open: () => void): void {
  row.classList.add('gpudojo-mod-clickable');
  row.tabIndex = 0;
  row.setAttribute('role', 'button');
  row.addEventListener('click', open);
  row.addEventListener('keydown', event => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      open();
    }
  });
}

/** Open lab `lab`'s kernel examples in its Kernel Playground. */
export function openLabKernels(commands: CommandRegistry, lab: Pick<CatalogItem, 'id' | 'title'>): void {
  void commands.execute(KernelCommandIds.openPlayground, { lab: lab.id, labTitle: lab.title });
}

/**
 * A lab's Run button, when the runs feature can run it (its command is there
 * and visible for the lab). It opens the lab's parameter form; its click and
 * keys stay its own, so the row's action (the kernel playground) does not fire.
 */
export function renderRunButton(commands: CommandRegistry, lab: Pick<CatalogItem, 'id' | 'title'>): HTMLElement | null {
  const args = { lab: lab.id };
  if (!commands.hasCommand(RunCommandIds.runLab) || !commands.isVisible(RunCommandIds.runLab, args)) {
    return null;
  }
  const button = h('button', {
    className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-run-lab',
    text: 'Run',
    title: `Run ${lab.title}: choose its parameters and start it`,
    attrs: { type: 'button', 'data-lab': lab.id, 'aria-label': `Run ${lab.title}` }
  });
  button.addEventListener('click', event => {
    event.stopPropagation();
    void commands.execute(RunCommandIds.runLab, args);
  });
  button.addEventListener('keydown', event => event.stopPropagation());
  return button;
}

/** The progress mark: an empty circle, a half circle or a check. */
export function renderProgressMark(status: string): HTMLElement {
  const mark = progressMark(status);
  return h('span', {
    className: `gpudojo-progress-mark gpudojo-mod-${mark.shape}`,
    title: mark.label,
    attrs: { role: 'img', 'aria-label': mark.label, 'data-status': status }
  });
}

export class CourseSection extends Widget {
  constructor(options: { model: CourseModel; commands: CommandRegistry }) {
    super();
    this._model = options.model;
    this._commands = options.commands;
    this.id = 'gpudojo-course-section';
    this.addClass('gpudojo-course-section');
    this.title.label = 'Course';
    this.title.caption = 'Lessons, labs and exercises, with your progress';
    this._model.changed.connect(this._render, this);
    // Labs gain their Run button once the runs feature knows which labs can run.
    this._commands.commandChanged.connect(this._onCommandChanged, this);
    this._render();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this._model.catalog && !this._model.loading) {
      void this._model.refresh();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._model.changed.disconnect(this._render, this);
    this._commands.commandChanged.disconnect(this._onCommandChanged, this);
    super.dispose();
  }

  private _onCommandChanged(_: CommandRegistry, change: CommandRegistry.ICommandChangedArgs): void {
    if (change.id === RunCommandIds.runLab) {
      this._render();
    }
  }

  private _render(): void {
    const { catalog, error } = this._model;
    const node = this.node;
    node.textContent = '';
    if (error) {
      node.appendChild(
        h(
          'div',
          { className: 'gpudojo-error', attrs: { role: 'alert' } },
          `The course could not be loaded: ${error} `,
          this._retryButton()
        )
      );
    }
    if (!catalog) {
      if (!error) {
        node.appendChild(h('div', { className: 'gpudojo-loading', text: 'Loading the course…' }));
      }
      return;
    }
    if (catalog.problems.length) {
      node.appendChild(renderProblems(catalog.problems));
    }
    const gpus = catalog.gpus ?? 0;
    for (const group of groupCatalog(catalog)) {
      const list = h('ul', { className: 'gpudojo-course-list', attrs: { role: 'list' } });
      for (const item of group.items) {
        list.appendChild(this._renderItem(item, gpus));
      }
      node.appendChild(
        h(
          'div',
          { className: 'gpudojo-course-group', attrs: { 'data-kind': group.kind } },
          h('div', { className: 'gpudojo-subheading', text: group.label }),
          group.items.length
            ? list
            : h('div', { className: 'gpudojo-course-empty', text: 'No lessons yet.' })
        )
      );
    }
    node.appendChild(this._renderModuleGroup(catalog.module_test ?? null));
  }

  /** The end of the course: the module test with its scores, and what a learner can do at the end. */
  private _renderModuleGroup(test: ModuleTestScores | null): HTMLElement {
    const list = h('ul', { className: 'gpudojo-course-list', attrs: { role: 'list' } });
    if (test) {
      const status = test.passed ? 'completed' : test.attempts ? 'in_progress' : 'not_started';
      const row = h(
        'li',
        { className: 'gpudojo-course-item', attrs: { 'data-kind': 'module-test', 'data-status': status } },
        h('span', { className: 'gpudojo-course-order', text: '' }),
        h(
          'div',
          { className: 'gpudojo-course-body' },
          h('span', { className: 'gpudojo-course-title', text: test.title }),
          h(
            'div',
            { className: 'gpudojo-course-meta' },
            h('span', { className: 'gpudojo-course-score', text: moduleTestSummary(test) })
          )
        ),
        renderProgressMark(status)
      );
      makeClickable(row, () => void this._commands.execute(CourseCommandIds.openModuleTest));
      list.appendChild(row);
    }
    const goals = h(
      'li',
      { className: 'gpudojo-course-item', attrs: { 'data-kind': 'acceptance' } },
      h('span', { className: 'gpudojo-course-order', text: '' }),
      h(
        'div',
        { className: 'gpudojo-course-body' },
        h('span', { className: 'gpudojo-course-title', text: 'What you can do at the end' }),
        h(
          'div',
          { className: 'gpudojo-course-meta' },
          h('span', { className: 'gpudojo-course-note', text: 'the module’s acceptance list, ticked from your progress' })
        )
      )
    );
    makeClickable(goals, () => void this._commands.execute(CourseCommandIds.openAcceptance));
    list.appendChild(goals);
    const reading = h(
      'li',
      { className: 'gpudojo-course-item', attrs: { 'data-kind': 'reading' } },
      h('span', { className: 'gpudojo-course-order', text: '' }),
      h(
        'div',
        { className: 'gpudojo-course-body' },
        h('span', { className: 'gpudojo-course-title', text: 'Reading list' }),
        h(
          'div',
          { className: 'gpudojo-course-meta' },
          h('span', { className: 'gpudojo-course-note', text: 'what to read next, and what for, lesson by lesson' })
        )
      )
    );
    makeClickable(reading, () => void this._commands.execute(CourseCommandIds.openReadingList));
    list.appendChild(reading);
    return h(
      'div',
      { className: 'gpudojo-course-group', attrs: { 'data-kind': 'module' } },
      h('div', { className: 'gpudojo-subheading', text: 'Module' }),
      list
    );
  }

  private _renderItem(item: CatalogItem, gpus: number): HTMLElement {
    const status = item.progress?.status ?? 'not_started';
    const minutes = formatMinutes(item.minutes);
    // Labs always say what runs them here; other items only when they need a GPU.
    const where = item.kind === 'lab' || item.needs !== 'cpu' ? renderRunsHere(item, gpus) : null;
    const meta = [
      where,
      minutes ? h('span', { className: 'gpudojo-course-minutes', text: minutes }) : null,
      // Under the title, not beside it: the title keeps the row's width.
      item.kind === 'lab' ? renderRunButton(this._commands, item) : null,
      item.kind === 'lab' && this._model.hasKernelExamples(item.id) ? this._kernelsButton(item) : null
    ];
    const row = h(
      'li',
      {
        className: 'gpudojo-course-item',
        attrs: { 'data-kind': item.kind, 'data-id': item.id, 'data-status': status }
      },
      h('span', { className: 'gpudojo-course-order', text: String(item.order) }),
      h(
        'div',
        { className: 'gpudojo-course-body' },
        h('span', { className: 'gpudojo-course-title', text: item.title }),
        h('div', { className: 'gpudojo-course-meta' }, ...meta)
      ),
      renderProgressMark(status)
    );
    if (item.kind === 'lesson') {
      makeClickable(row, () => void this._commands.execute(CourseCommandIds.openLesson, { id: item.id }));
    } else if (item.kind === 'exercise') {
      row.title = `${item.title}: open the exercise (start, check, see each requirement)`;
      makeClickable(row, () => void this._commands.execute(CourseCommandIds.openExercise, { id: item.id }));
    } else if (item.kind === 'lab') {
      if (this._model.hasKernelExamples(item.id)) {
        row.setAttribute('data-kernels', 'true');
      }
      row.title = `${item.title}: read the lab (what it does, how to run it, what to look for)`;
      makeClickable(row, () => void this._commands.execute(CourseCommandIds.openLabReadme, { id: item.id }));
    }
    return row;
  }

  /** A lab's Kernels button: its kernel examples in the Kernel Playground (the row opens the README). */
  private _kernelsButton(lab: CatalogItem): HTMLElement {
    const button = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-open-kernels',
      text: 'Kernels',
      title: `Open the kernels of ${lab.title} in the Kernel Playground`,
      attrs: { type: 'button', 'data-lab': lab.id, 'aria-label': `Open the kernels of ${lab.title}` }
    });
    button.addEventListener('click', event => {
      event.stopPropagation();
      openLabKernels(this._commands, lab);
    });
    button.addEventListener('keydown', event => event.stopPropagation());
    return button;
  }

  private _retryButton(): HTMLElement {
    const retry = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-retry',
      text: 'Retry'
    });
    retry.addEventListener('click', () => void this._model.refresh());
    return retry;
  }

  private _model: CourseModel;
  private _commands: CommandRegistry;
}

/** A collapsed warning listing the course files that failed to load (`summary`: its one line). */
export function renderProblems(problems: CourseProblem[], summary?: string): HTMLElement {
  const list = h('ul', { className: 'gpudojo-course-problem-list' });
  for (const p of problems) {
    list.appendChild(
      h(
        'li',
        { className: 'gpudojo-course-problem' },
        h('code', { text: p.file }),
        p.field ? ' ' : null,
        p.field ? h('span', { className: 'gpudojo-course-problem-field', text: p.field }) : null,
        `: ${p.message}`
      )
    );
  }
  const count = problems.length;
  return h(
    'details',
    { className: 'gpudojo-course-problems', attrs: { role: 'status' } },
    h('summary', {
      text: summary ?? `${count} course file${count === 1 ? '' : 's'} could not be loaded`
    }),
    list
  );
}
