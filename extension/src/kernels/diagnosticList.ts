/**
 * The list of compile diagnostics under a CUDA editor, the playground's and a
 * .cu file's alike: one item per diagnostic, and a click (or Enter) on one
 * that has a line goes to that line.
 */

import type { CodeEditor } from '@jupyterlab/codeeditor';
import type { Diagnostic } from '../api/types';
import { h } from '../dom';
import { describeDiagnostic } from './diagnostics';

export class DiagnosticList {
  /** `goToLine` moves the editor to a clicked diagnostic's line (1-based). */
  constructor(goToLine: (line: number) => void) {
    this._goToLine = goToLine;
    this.node = h('ul', { className: 'gpudojo-diagnostics', attrs: { 'aria-label': 'Diagnostics' } });
    this.node.hidden = true;
    this.node.addEventListener('click', event => {
      const line = Number((event.target as Element | null)?.closest('li[data-line]')?.getAttribute('data-line'));
      if (line > 0) {
        this._goToLine(line);
      }
    });
  }

  readonly node: HTMLUListElement;

  /** List `diagnostics` (hidden when there are none). */
  show(diagnostics: ReadonlyArray<Diagnostic>): void {
    this.node.textContent = '';
    this.node.hidden = diagnostics.length === 0;
    for (const diagnostic of diagnostics) {
      const item = h('li', {
        className: `gpudojo-diagnostic gpudojo-diag-${diagnostic.severity}`,
        text: describeDiagnostic(diagnostic),
        attrs: { 'data-severity': diagnostic.severity }
      });
      const line = diagnostic.line;
      if (line) {
        item.setAttribute('data-line', String(line));
        item.title = 'Go to this line';
        item.tabIndex = 0;
        item.addEventListener('keydown', event => {
          if (event.key === 'Enter') {
            this._goToLine(line);
          }
        });
      }
      this.node.appendChild(item);
    }
  }

  private _goToLine: (line: number) => void;
}

/** Put `editor`'s cursor at the start of `line` (1-based, clamped to the text), scroll to it and focus it. */
export function goToEditorLine(editor: CodeEditor.IEditor, line: number): void {
  const position = { line: Math.max(0, Math.min(line, editor.lineCount) - 1), column: 0 };
  editor.setCursorPosition(position);
  editor.revealPosition(position);
  editor.focus();
}
