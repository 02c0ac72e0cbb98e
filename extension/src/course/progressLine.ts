/** CourseProgressLine: the sidebar header's line, "3 of 25 done · Next: Lesson 2: …", the next step one click away. */

import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';
import { h } from '../dom';
import { CourseCommandIds } from './commands';
import { courseProgress, doneText, nextStep } from './journey';
import { CourseModel } from './model';

export class CourseProgressLine extends Widget {
  constructor(options: { model: CourseModel; commands: CommandRegistry }) {
    super();
    this._model = options.model;
    this._commands = options.commands;
    this.addClass('gpudojo-progress-line');
    this._model.changed.connect(this._render, this);
    this._render();
  }

  dispose(): void {
    if (!this.isDisposed) {
      this._model.changed.disconnect(this._render, this);
    }
    super.dispose();
  }

  private _render(): void {
    const catalog = this._model.catalog;
    this.node.textContent = '';
    if (!catalog) {
      return;
    }
    const all = courseProgress(catalog).all;
    const done = h('button', {
      className: 'gpudojo-progress-done',
      text: doneText(all),
      title: 'Open the course’s home: your progress and the map of the course',
      attrs: { type: 'button', 'data-done': String(all.done), 'data-total': String(all.total) }
    });
    done.addEventListener('click', () => void this._commands.execute(CourseCommandIds.openWelcome));
    this.node.appendChild(done);
    const step = nextStep(catalog);
    if (step.kind === 'done') {
      this.node.appendChild(h('span', { className: 'gpudojo-progress-next', text: ' · course finished' }));
      return;
    }
    const next = h('button', {
      className: 'gpudojo-progress-next',
      text: `Next: ${step.text}`,
      title: `${step.action}: ${step.text} (${step.why})`,
      attrs: { type: 'button', 'data-kind': step.kind, 'data-id': step.id }
    });
    next.addEventListener('click', () => void this._commands.execute(CourseCommandIds.continueCourse));
    this.node.appendChild(next);
  }

  private _model: CourseModel;
  private _commands: CommandRegistry;
}
