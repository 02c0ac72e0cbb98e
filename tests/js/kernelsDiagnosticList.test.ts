/**
 * @jest-environment jsdom
 */
import type { CodeEditor } from '@jupyterlab/codeeditor';
import type { Diagnostic } from '../../extension/src/api/types';
import { DiagnosticList, goToEditorLine } from '../../extension/src/kernels/diagnosticList';

const DIAGNOSTICS: Diagnostic[] = [
  { line: 3, column: 14, severity: 'error', message: 'identifier "undeclared_offset" is undefined' },
  { line: null, column: null, severity: 'warning', message: 'no line known' }
];

describe('DiagnosticList', () => {
  it('lists each diagnostic with its line, and hides itself when there are none', () => {
    const list = new DiagnosticList(() => undefined);
    expect(list.node.hidden).toBe(true);
    list.show(DIAGNOSTICS);
    expect(list.node.hidden).toBe(false);
    const items = Array.from(list.node.querySelectorAll('li'));
    expect(items.map(li => li.textContent)).toEqual([
      'line 3:14: error: identifier "undeclared_offset" is undefined',
      'warning: no line known'
    ]);
    expect(items.map(li => li.getAttribute('data-line'))).toEqual(['3', null]);
    list.show([]);
    expect(list.node.hidden).toBe(true);
    expect(list.node.childElementCount).toBe(0);
  });

  it('goes to a diagnostic line on a click or Enter, and nowhere for one without a line', () => {
    const visited: number[] = [];
    const list = new DiagnosticList(line => visited.push(line));
    list.show(DIAGNOSTICS);
    const [withLine, without] = Array.from(list.node.querySelectorAll('li'));
    withLine.click();
    withLine.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    withLine.dispatchEvent(new KeyboardEvent('keydown', { key: 'a' }));
    without.click();
    expect(visited).toEqual([3, 3]);
  });
});

describe('goToEditorLine', () => {
  /** The part of CodeEditor.IEditor the function uses, recording what it was asked. */
  function fakeEditor(lineCount: number) {
    const calls: string[] = [];
    const editor = {
      lineCount,
      setCursorPosition: (p: CodeEditor.IPosition) => calls.push(`cursor ${p.line}:${p.column}`),
      revealPosition: (p: CodeEditor.IPosition) => calls.push(`reveal ${p.line}`),
      focus: () => calls.push('focus')
    };
    return { editor: editor as unknown as CodeEditor.IEditor, calls };
  }

  it('puts the cursor at the start of the line (0-based in the editor), shows it and focuses the editor', () => {
    const { editor, calls } = fakeEditor(20);
    goToEditorLine(editor, 5);
    expect(calls).toEqual(['cursor 4:0', 'reveal 4', 'focus']);
  });

  it('clamps a line past the end to the last line', () => {
    const { editor, calls } = fakeEditor(8);
    goToEditorLine(editor, 42);
    expect(calls[0]).toBe('cursor 7:0');
  });
});
