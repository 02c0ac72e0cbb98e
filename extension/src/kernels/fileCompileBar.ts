/**
 * FileCompileBar: the playground's compile feedback on a .cu file open in JupyterLab's
 * editor. It compiles the text after a pause in typing (the playground's compile API and
 * defaults), marks errors on their lines in the editor, and shows above it the mode
 * (GPU or CPU emulation, and the compiler), the status, each kernel's registers and
 * spills, and the diagnostics (a click goes to the line).
 */

import type { CodeEditor } from '@jupyterlab/codeeditor';
import { CodeMirrorEditor } from '@jupyterlab/codemirror';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import type { ArchList, CompileResult } from '../api/types';
import { h } from '../dom';
import { DiagnosticList, goToEditorLine } from './diagnosticList';
import { diagnosticsExtension, setDiagnostics } from './editorMarks';
import { fileCompileRequest, fileMode, fileStatus, kernelResources } from './fileFeedback';
import { Debouncer, LatestRequest } from './latest';
import type { KernelSource } from './model';
import { COMPILE_DELAY_MS } from './model';

export interface FileCompileBarOptions {
  /** The editor of the file (JupyterLab's FileEditor's). */
  editor: CodeEditor.IEditor;
  /** The file's current text. */
  text: () => string;
  /** The server's architectures (fetched once for every file). */
  archs: () => Promise<ArchList>;
  client: Pick<KernelSource, 'compileKernel'>;
  /** Open the file in the Kernel Playground. */
  openInPlayground: () => void;
  debounceMs?: number;
}

export class FileCompileBar extends Widget {
  constructor(options: FileCompileBarOptions) {
    super();
    this._options = options;
    this.addClass('gpudojo-file-compile');
    this.node.setAttribute('aria-label', 'CUDA compile feedback');
    this._badge = h('span', { className: 'gpudojo-mode-badge gpudojo-file-mode' });
    this._status = h('span', {
      className: 'gpudojo-compile-status',
      attrs: { 'data-state': 'idle', role: 'status', 'aria-live': 'polite' }
    });
    this._detail = h('span', { className: 'gpudojo-file-compile-detail' });
    const open = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-file-open-playground',
      text: 'Open in Kernel Playground',
      title: 'PTX, SASS, occupancy and runs of this file; Save there writes back to it',
      attrs: { type: 'button' }
    });
    open.addEventListener('click', () => options.openInPlayground());
    this._resources = h('ul', { className: 'gpudojo-file-resources', attrs: { 'aria-label': 'Kernel resources' } });
    this._list = new DiagnosticList(line => goToEditorLine(options.editor, line));
    this.node.append(
      h('div', { className: 'gpudojo-file-compile-head' }, this._badge, this._status, this._detail, open),
      this._resources,
      this._list.node
    );
    const editor = options.editor;
    if (editor instanceof CodeMirrorEditor) {
      editor.injectExtension(diagnosticsExtension());
    }
    this._debouncer = new Debouncer(() => void this.compile(), options.debounceMs ?? COMPILE_DELAY_MS);
    this._draw();
  }

  /** The newest compile's answer, once there is one. */
  get result(): CompileResult | null {
    return this._result;
  }

  /** The text changed: compile after a pause in typing. */
  schedule(): void {
    this._debouncer.schedule();
  }

  /** Compile the file's text now; only the newest compile's answer is shown. */
  async compile(): Promise<void> {
    this._debouncer.cancel();
    const ticket = this._latest.start();
    let archs: ArchList;
    try {
      archs = await this._options.archs();
    } catch (error) {
      if (ticket.isLatest()) {
        this._problem = `Cannot compile: the server's architectures did not load (${(error as Error).message ?? error})`;
        this._draw();
      }
      return;
    }
    if (!ticket.isLatest()) {
      return;
    }
    this._archs = archs;
    if (archs.compiler_problem) {
      this._problem = `No compiler on the server: ${archs.compiler_problem}`;
      this._draw();
      return;
    }
    this._problem = null;
    this._state = 'compiling';
    this._draw();
    try {
      const result = await this._options.client.compileKernel(fileCompileRequest(this._options.text(), archs), ticket.signal);
      if (!ticket.isLatest()) {
        return;
      }
      this._result = result;
      this._state = result.ok ? 'ok' : 'error';
    } catch (error) {
      if (!ticket.isLatest()) {
        return;
      }
      this._state = 'error';
      this._problem = `The compile request failed: ${(error as Error).message ?? error}`;
    }
    this._draw();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._fitHeight();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    // A narrower editor wraps the lines: the bar may need more height.
    if (msg.width >= 0) {
      this._fitHeight();
    }
  }

  /**
   * Ask the editor's layout for the bar's natural height (at most a third of the window):
   * a Lumino box layout gives a child only its CSS min-height.
   */
  private _fitHeight(): void {
    if (!this.isAttached) {
      return;
    }
    const style = getComputedStyle(this.node);
    let height = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom) + parseFloat(style.borderBottomWidth);
    const gap = parseFloat(style.rowGap) || 0;
    let shown = 0;
    for (const child of Array.from(this.node.children) as HTMLElement[]) {
      if (!child.hidden) {
        height += child.offsetHeight;
        shown += 1;
      }
    }
    height += gap * Math.max(0, shown - 1);
    const wanted = `${Math.ceil(Math.min(height, window.innerHeight / 3))}px`;
    if (this.node.style.minHeight !== wanted) {
      this.node.style.minHeight = wanted;
      this.parent?.fit();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._debouncer.cancel();
    this._latest.cancel();
    super.dispose();
  }

  private _draw(): void {
    const result = this._result;
    const shown = this._state === 'error' && this._problem ? 'error' : this._state;
    this._status.setAttribute('data-state', shown);
    this._status.textContent = fileStatus(this._state, result, this._problem);
    this._status.title = result?.log ? result.log.slice(0, 2000) : '';
    if (this._archs) {
      const mode = fileMode(this._archs, result);
      this._badge.textContent = mode.badge;
      this._badge.dataset.mode = mode.badge === 'GPU' ? 'gpu' : 'cpu-emulation';
      this._badge.hidden = false;
      this._detail.textContent = mode.detail;
    } else {
      this._badge.hidden = true;
      this._detail.textContent = 'CUDA C++ · compiled by the server as you type';
    }
    this._resources.textContent = '';
    for (const kernel of result?.ok ? result.kernels : []) {
      this._resources.appendChild(
        h('li', {
          className: 'gpudojo-file-kernel',
          text: kernelResources(kernel),
          attrs: { 'data-kernel': kernel.name, 'data-registers': String(kernel.registers) }
        })
      );
    }
    this._resources.hidden = this._resources.childElementCount === 0;
    const diagnostics = result?.diagnostics ?? [];
    const editor = this._options.editor;
    if (editor instanceof CodeMirrorEditor) {
      editor.editor.dispatch({ effects: setDiagnostics.of(diagnostics) });
    }
    this._list.show(diagnostics);
    this._fitHeight();
  }

  private _options: FileCompileBarOptions;
  private _badge: HTMLElement;
  private _status: HTMLElement;
  private _detail: HTMLElement;
  private _resources: HTMLUListElement;
  private _list: DiagnosticList;
  private _debouncer: Debouncer;
  private _latest = new LatestRequest();
  private _archs: ArchList | null = null;
  private _result: CompileResult | null = null;
  private _problem: string | null = null;
  private _state: 'idle' | 'compiling' | 'ok' | 'error' = 'idle';
}
