/**
 * @jest-environment jsdom
 */
import { EditorState } from '@codemirror/state';
import { diagnosticDecorations } from '../../extension/src/kernels/editorMarks';

describe('diagnosticDecorations', () => {
  it('gives each diagnosed line a decoration with data-diag-line, the severity class and the message', () => {
    const state = EditorState.create({ doc: 'int a;\nint b = q;\n\nreturn' });
    const set = diagnosticDecorations(state, [
      { line: 2, column: 9, severity: 'error', message: 'identifier "q" is undefined' },
      { line: 4, column: null, severity: 'warning', message: 'odd' },
      { line: null, column: null, severity: 'error', message: 'no line' }
    ]);
    const found: Array<{ from: number; to: number; cls: string; attrs: Record<string, string> }> = [];
    set.between(0, state.doc.length, (from, to, decoration) => {
      const spec = decoration.spec as { class: string; attributes: Record<string, string> };
      found.push({ from, to, cls: spec.class, attrs: spec.attributes });
    });
    const lines = found.filter(d => d.cls.startsWith('gpudojo-diag-line'));
    expect(lines.map(d => [d.from, d.cls, d.attrs['data-diag-line']])).toEqual([
      [7, 'gpudojo-diag-line gpudojo-diag-error', '2'],
      [19, 'gpudojo-diag-line gpudojo-diag-warning', '4']
    ]);
    expect(lines[0].attrs.title).toBe('error: identifier "q" is undefined');
    const underlines = found.filter(d => d.cls.startsWith('gpudojo-diag-underline'));
    expect(underlines.map(d => state.doc.sliceString(d.from, d.to))).toEqual(['q', 'return']);
  });
});
