import {
  codeFence,
  inlineCodeSegments,
  locateTocHeadings,
  mermaidFences,
  normalizeHeading
} from '../../extension/src/course/toc';

describe('normalizeHeading', () => {
  it("ignores JupyterLab's anchor mark, code marks, case and spacing", () => {
    expect(normalizeHeading('The `__global__`  Keyword¶')).toBe('the global keyword');
    expect(normalizeHeading('[Links](http://x) *stay* text')).toBe('links stay text');
  });
});

describe('locateTocHeadings', () => {
  const headings = [
    { level: 1, text: 'Lesson title¶' },
    { level: 2, text: 'Threads and blocks¶' },
    { level: 3, text: 'Summary¶' },
    { level: 2, text: 'Memory¶' },
    { level: 3, text: 'Summary¶' }
  ];

  it('maps entries to headings by level and text', () => {
    expect(
      locateTocHeadings(
        [
          { level: 2, title: 'Threads and blocks' },
          { level: 2, title: 'Memory' }
        ],
        headings
      )
    ).toEqual([1, 3]);
  });

  it('maps repeated titles to successive headings', () => {
    expect(
      locateTocHeadings(
        [
          { level: 3, title: 'Summary' },
          { level: 3, title: 'Summary' }
        ],
        headings
      )
    ).toEqual([2, 4]);
  });

  it('falls back to the next heading of the same level when the text differs', () => {
    expect(
      locateTocHeadings(
        [
          { level: 2, title: 'Threads and blocks' },
          { level: 2, title: 'Memory spaces (renamed)' }
        ],
        headings
      )
    ).toEqual([1, 3]);
  });

  it('answers -1 for an entry with no heading', () => {
    expect(locateTocHeadings([{ level: 5, title: 'Nowhere' }], headings)).toEqual([-1]);
  });
});

describe('codeFence', () => {
  it('fences code as python and drops trailing newlines', () => {
    expect(codeFence('print(1)\n\n')).toBe('```python\nprint(1)\n```');
  });

  it('uses a fence longer than any backtick run in the code', () => {
    const fenced = codeFence('s = """```x```"""\nt = "````"');
    expect(fenced.startsWith('`````python\n')).toBe(true);
    expect(fenced.endsWith('\n`````')).toBe(true);
  });
});

describe('inlineCodeSegments', () => {
  it('splits text into plain and code parts', () => {
    expect(inlineCodeSegments('Use `threadIdx.x` and `blockDim.x`.')).toEqual([
      { text: 'Use ', code: false },
      { text: 'threadIdx.x', code: true },
      { text: ' and ', code: false },
      { text: 'blockDim.x', code: true },
      { text: '.', code: false }
    ]);
  });

  it('leaves text without code, or with an unmatched backtick, as it is', () => {
    expect(inlineCodeSegments('plain')).toEqual([{ text: 'plain', code: false }]);
    expect(inlineCodeSegments('a ` b')).toEqual([{ text: 'a ` b', code: false }]);
  });
});

describe('mermaidFences', () => {
  it("turns MyST's {mermaid} directive fences into mermaid fences JupyterLab draws", () => {
    expect(mermaidFences('Text\n```{mermaid}\nflowchart LR\n  A --> B\n```\n')).toBe(
      'Text\n```mermaid\nflowchart LR\n  A --> B\n```\n'
    );
    expect(mermaidFences('````{mermaid} \nx\n````')).toBe('````mermaid\nx\n````');
  });

  it('leaves other fences and inline mentions alone', () => {
    const source = '```python\nprint("{mermaid}")\n```\nWrite `{mermaid}` blocks.';
    expect(mermaidFences(source)).toBe(source);
  });
});
