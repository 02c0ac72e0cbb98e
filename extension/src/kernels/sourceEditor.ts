/**
 * SourceEditor: JupyterLab's own CodeMirror editor for the kernel source,
 * with diagnostic marks in the text and the list of diagnostics under it.
 */

import { CodeEditor, CodeEditorWrapper } from '@jupyterlab/codeeditor';
import { CodeMirrorEditor } from '@jupyterlab/codemirror';
import { Panel, Widget } from '@lumino/widgets';
import type { Diagnostic, KernelLanguage } from '../api/types';
import { h } from '../dom';
import { describeDiagnostic } from './diagnostics';
import { EditorListener, playgroundExtensions, setDiagnostics, setLinkedLine } from './editorMarks';

/** The mime type that picks each language's highlighting from JupyterLab's language registry. */
export const LANGUAGE_MIME: Record<KernelLanguage, string> = {
  cuda: 'text/x-c++src',
  numba: 'text/x-python'
};

export interface SourceEditorOptions extends EditorListener {
  factory: CodeEditor.Factory;
  text: string;
  language: KernelLanguage;
}

export class SourceEditor extends Panel {
  constructor(options: SourceEditorOptions) {
    super();
    this.addClass('gpudojo-source');
    this._model = new CodeEditor.Model({ mimeType: LANGUAGE_MIME[options.language] });
    this._model.sharedModel.setSource(options.text);
    this._wrapper = new CodeEditorWrapper({
      factory: options.factory,
      model: this._model,
      editorOptions: {
        config: { lineNumbers: true, lineWrap: false, tabSize: 4 },
        extensions: [playgroundExtensions(options)]
      }
    });
    this._wrapper.addClass('gpudojo-editor');
    this._list = h('ul', { className: 'gpudojo-diagnostics', attrs: { 'aria-label': 'Diagnostics' } });
    this._list.addEventListener('click', event => {
      const item = (event.target as Element | null)?.closest('li[data-line]');
      const line = Number(item?.getAttribute('data-line'));
      if (line > 0) {
        this.goToLine(line);
      }
    });
    this.addWidget(this._wrapper);
    this.addWidget(new Widget({ node: this._list }));
  }

  /** The editor's text. */
  get text(): string {
    return this._model.sharedModel.getSource();
  }

  /** Replace the whole text (a language switch, a preset), keeping undo out of it. */
  setText(text: string): void {
    if (text !== this.text) {
      this._model.sharedModel.setSource(text);
    }
  }

  /** Highlight as `language`. */
  setLanguage(language: KernelLanguage): void {
    this._model.mimeType = LANGUAGE_MIME[language];
  }

  /** Mark `diagnostics` in the text and list them under it. */
  setDiagnostics(diagnostics: ReadonlyArray<Diagnostic>): void {
    this._view()?.dispatch({ effects: setDiagnostics.of(diagnostics) });
    this._list.textContent = '';
    this._list.hidden = diagnostics.length === 0;
    for (const diagnostic of diagnostics) {
      const item = h('li', {
        className: `gpudojo-diagnostic gpudojo-diag-${diagnostic.severity}`,
        text: describeDiagnostic(diagnostic),
        attrs: { 'data-severity': diagnostic.severity }
      });
      if (diagnostic.line) {
        item.setAttribute('data-line', String(diagnostic.line));
        item.title = 'Go to this line';
        item.tabIndex = 0;
        item.addEventListener('keydown', event => {
          if (event.key === 'Enter') {
            this.goToLine(diagnostic.line!);
          }
        });
      }
      this._list.appendChild(item);
    }
  }

  /** Put the cursor at the start of `line` (1-based), scroll to it and focus the editor. */
  goToLine(line: number): void {
    const editor = this._wrapper.editor;
    const position = { line: Math.max(0, Math.min(line, editor.lineCount) - 1), column: 0 };
    editor.setCursorPosition(position);
    editor.revealPosition(position);
    editor.focus();
  }

  /** Show which source line a clicked assembly line came from (null: none). */
  setLinkedLine(line: number | null): void {
    this._view()?.dispatch({ effects: setLinkedLine.of(line) });
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    super.dispose();
    this._model.dispose();
  }

  private _view() {
    const editor = this._wrapper.editor;
    return editor instanceof CodeMirrorEditor ? editor.editor : null;
  }

  private _model: CodeEditor.Model;
  private _wrapper: CodeEditorWrapper;
  private _list: HTMLUListElement;
}
