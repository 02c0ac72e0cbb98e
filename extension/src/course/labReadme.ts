/** LabReadmeView: a lab's README in the main area, rendered by JupyterLab's markdown renderer, with its Run button. */

import { CommandRegistry } from '@lumino/commands';
import { Panel, Widget } from '@lumino/widgets';
import type { LabReadme } from '../api/types';
import { h } from '../dom';
import { CourseModel } from './model';
import { openLabKernels, renderProgressMark, renderRunButton, renderRunsHere } from './section';

/** The call the view makes (GpudojoClient satisfies it). */
export interface LabReadmeSource {
  getLabReadme(id: string): Promise<LabReadme>;
}

export class LabReadmeView extends Panel {
  constructor(options: {
    labId: string;
    source: LabReadmeSource;
    model: CourseModel;
    commands: CommandRegistry;
    createMarkdown: (source: string) => Widget;
  }) {
    super();
    this._options = options;
    this.labId = options.labId;
    this.addClass('gpudojo-lab-readme');
    this.title.label = options.model.item('lab', options.labId)?.title ?? options.labId;
    this.title.caption = `${this.title.label}: the lab’s README`;
    this._header = h('header', { className: 'gpudojo-lesson-header' });
    this.addWidget(new Widget({ node: this._header }));
    options.model.changed.connect(this._renderHeader, this);
    options.commands.commandChanged.connect(this._renderHeader, this);
    this._renderHeader();
    void this.load();
  }

  /** The id of the lab shown. */
  readonly labId: string;

  async load(): Promise<void> {
    const { source, labId, createMarkdown } = this._options;
    this._body?.dispose();
    const loading = new Widget({ node: h('div', { className: 'gpudojo-loading', text: 'Loading the README…' }) });
    this._body = loading;
    this.addWidget(loading);
    let doc: LabReadme;
    try {
      doc = await source.getLabReadme(labId);
    } catch (error) {
      if (!this.isDisposed) {
        loading.node.className = 'gpudojo-error';
        loading.node.setAttribute('role', 'alert');
        loading.node.textContent = `The lab's README could not be loaded: ${(error as Error).message ?? error}`;
      }
      return;
    }
    if (this.isDisposed) {
      return;
    }
    loading.dispose();
    this.title.label = doc.title;
    this._body = doc.markdown.trim()
      ? createMarkdown(doc.markdown)
      : new Widget({ node: h('div', { className: 'gpudojo-course-empty', text: 'This lab has no README yet.' }) });
    this._body.addClass('gpudojo-lab-readme-body');
    this.addWidget(this._body);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._options.model.changed.disconnect(this._renderHeader, this);
    this._options.commands.commandChanged.disconnect(this._renderHeader, this);
    super.dispose();
  }

  private _renderHeader(): void {
    const { model, commands, labId } = this._options;
    const lab = model.item('lab', labId);
    const header = this._header;
    header.textContent = '';
    header.appendChild(h('div', { className: 'gpudojo-lesson-kicker', text: lab ? `Lab ${lab.order}` : 'Lab' }));
    header.appendChild(h('h1', { className: 'gpudojo-lesson-title', text: lab?.title ?? labId }));
    if (!lab) {
      return;
    }
    const actions = h('div', { className: 'gpudojo-lesson-actions' });
    const run = renderRunButton(commands, lab);
    if (run) {
      run.classList.remove('jp-mod-minimal');
      run.classList.add('jp-mod-accept');
      run.textContent = 'Run the lab';
      actions.appendChild(run);
    }
    if (model.hasKernelExamples(lab.id)) {
      const kernels = h('button', {
        className: 'jp-Button jp-mod-styled gpudojo-open-kernels',
        text: 'Open its kernels in the playground',
        attrs: { type: 'button' }
      });
      kernels.addEventListener('click', () => openLabKernels(commands, lab));
      actions.appendChild(kernels);
    }
    header.appendChild(
      h(
        'div',
        { className: 'gpudojo-lesson-meta' },
        renderRunsHere(lab, model.catalog?.gpus ?? 0),
        renderProgressMark(lab.progress.status),
        h('span', { className: 'gpudojo-course-note', text: lab.progress.status === 'completed' ? 'completed' : 'a run that passes its checks completes it' })
      )
    );
    header.appendChild(actions);
  }

  private _options: {
    labId: string;
    source: LabReadmeSource;
    model: CourseModel;
    commands: CommandRegistry;
    createMarkdown: (source: string) => Widget;
  };
  private _header: HTMLElement;
  private _body: Widget | null = null;
}
