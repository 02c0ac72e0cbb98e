/**
 * SourceEditor: JupyterLab's own CodeMirror editor for the kernel source,
 * with diagnostic marks in the text and the list of diagnostics under it.
 */

import { CodeEditor, CodeEditorWrapper } from '@jupyterlab/codeeditor';
import { CodeMirrorEditor } from '@jupyterlab/codemirror';
import { Panel, Widget } from '@lumino/widgets';
import type { Diagnostic, KernelLanguage } from '../api/types';
import type { AccessMark } from './accessReport';
import { DiagnosticList, goToEditorLine } from './diagnosticList';
import { EditorListener, playgroundExtensions, setAccessMarks, setDiagnostics, setLinkedLine } from './editorMarks';

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
    this._list = new DiagnosticList(line => this.goToLine(line));
    this.addWidget(this._wrapper);
    this.addWidget(new Widget({ node: this._list.node }));
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
    this._list.show(diagnostics);
  }

  /** Put the cursor at the start of `line` (1-based), scroll to it and focus the editor. */
  goToLine(line: number): void {
    goToEditorLine(this._wrapper.editor, line);
  }

  /** Mark the lines a run's memory-access report found wasteful (none: an empty list). */
  setAccessMarks(marks: ReadonlyArray<AccessMark>): void {
    this._view()?.dispatch({ effects: setAccessMarks.of(marks) });
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
  private _list: DiagnosticList;
}
