import type { Diagnostic } from '../../extension/src/api/types';
import {
  LineSource,
  countDiagnostics,
  describeDiagnostic,
  diagnosticMarks,
  underlineSpan
} from '../../extension/src/kernels/diagnostics';

/** Lines of `text` with document offsets, numbered from 1 as the editor does. */
function doc(text: string): LineSource {
  const lines = text.split('\n');
  const starts: number[] = [];
  let offset = 0;
  for (const line of lines) {
    starts.push(offset);
    offset += line.length + 1;
  }
  return {
    lines: lines.length,
    line: n => ({ from: starts[n - 1], to: starts[n - 1] + lines[n - 1].length, text: lines[n - 1] })
  };
}

const SOURCE = [
  'extern "C" __global__ void k(float *y)',
  '{',
  '    y[threadIdx.x] = undeclared_name + 1;',
  '',
  '    return',
  '}'
].join('\n');

describe('underlineSpan', () => {
  it('underlines the identifier the column points at', () => {
    const text = '    y[threadIdx.x] = undeclared_name + 1;';
    expect(underlineSpan(text, 22)).toEqual([21, 36]);
    expect(text.slice(21, 36)).toBe('undeclared_name');
  });

  it('underlines the code of the line, not its indentation, when there is no column', () => {
    expect(underlineSpan('    return  ', null)).toEqual([4, 10]);
  });

  it('marks the last character when the column is past the code, and nothing on a blank line', () => {
    expect(underlineSpan('    return', 11)).toEqual([9, 10]);
    expect(underlineSpan('   ', 2)).toBeNull();
  });

  it('underlines one symbol when the column is on punctuation', () => {
    expect(underlineSpan('a = b +;', 7)).toEqual([6, 7]);
  });
});

describe('diagnosticMarks', () => {
  it('puts one mark on each diagnosed line, at document offsets, with the worst severity first', () => {
    const diagnostics: Diagnostic[] = [
      { line: 3, column: 22, severity: 'warning', message: 'something odd' },
      { line: 3, column: 22, severity: 'error', message: 'identifier "undeclared_name" is undefined' },
      { line: 5, column: null, severity: 'error', message: "expected a ';'" }
    ];
    const source = doc(SOURCE);
    const marks = diagnosticMarks(diagnostics, source);
    expect(marks.map(m => [m.line, m.severity])).toEqual([
      [3, 'error'],
      [5, 'error']
    ]);
    const line3 = source.line(3);
    expect(marks[0].lineFrom).toBe(line3.from);
    expect(marks[0].messages[0]).toBe('error: identifier "undeclared_name" is undefined');
    const underline = marks[0].underlines[0];
    expect(SOURCE.slice(underline.from, underline.to)).toBe('undeclared_name');
    expect(SOURCE.slice(marks[1].underlines[0].from, marks[1].underlines[0].to)).toBe('return');
  });

  it('leaves out diagnostics without a line or past the end of the document', () => {
    const marks = diagnosticMarks(
      [
        { line: null, column: null, severity: 'error', message: 'link failed' },
        { line: 99, column: null, severity: 'error', message: 'in a header' },
        { line: 4, column: 1, severity: 'warning', message: 'blank line' }
      ],
      doc(SOURCE)
    );
    expect(marks).toHaveLength(1);
    expect(marks[0].line).toBe(4);
    expect(marks[0].underlines).toEqual([]);
  });
});

describe('countDiagnostics and describeDiagnostic', () => {
  it('counts errors and warnings as the status line says them', () => {
    expect(
      countDiagnostics([
        { line: null, column: null, severity: 'error', message: 'a' },
        { line: null, column: null, severity: 'error', message: 'b' },
        { line: null, column: null, severity: 'warning', message: 'c' },
        { line: null, column: null, severity: 'note', message: 'd' }
      ])
    ).toBe('2 errors, 1 warning');
    expect(countDiagnostics([])).toBe('');
  });

  it('says where and how bad', () => {
    expect(describeDiagnostic({ line: 3, column: 9, severity: 'error', message: 'x' })).toBe('line 3:9: error: x');
    expect(describeDiagnostic({ line: null, column: null, severity: 'warning', message: 'y' })).toBe('warning: y');
  });
});
