import { SourceAsmMap, splitListing } from '../../extension/src/kernels/asmMap';

describe('SourceAsmMap', () => {
  it('finds every PTX line of a source line, in order, and the source line of each PTX line', () => {
    const map = SourceAsmMap.fromPtx([null, 3, 4, 3, null, 7, 3]);
    expect(map.asmLinesOf(3)).toEqual([1, 3, 6]);
    expect(map.asmLinesOf(4)).toEqual([2]);
    expect(map.asmLinesOf(5)).toEqual([]);
    expect(map.sourceLineOf(5)).toBe(7);
    expect(map.sourceLineOf(0)).toBeNull();
    expect(map.sourceLineOf(99)).toBeNull();
    expect(map.length).toBe(7);
    expect(map.hasLineInfo).toBe(true);
  });

  it('maps SASS instructions by their line, and says when there is no line info at all', () => {
    const map = SourceAsmMap.fromSass([
      { offset: 0, text: 'LDC R1, c[0x0][0x28]', line: null },
      { offset: 16, text: 'S2R R0, SR_TID.X', line: 5 },
      { offset: 32, text: 'EXIT', line: null }
    ]);
    expect(map.asmLinesOf(5)).toEqual([1]);
    expect(map.sourceLineOf(1)).toBe(5);
    expect(SourceAsmMap.fromSass([{ offset: 0, text: 'EXIT', line: null }]).hasLineInfo).toBe(false);
  });

  it('ignores line 0 and negative lines (no source)', () => {
    const map = new SourceAsmMap([0, -1, 2]);
    expect(map.sourceLineOf(0)).toBeNull();
    expect(map.asmLinesOf(0)).toEqual([]);
    expect(map.asmLinesOf(2)).toEqual([2]);
  });

  it('indexes 20k lines quickly enough to redo on every compile', () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => (i % 3 ? (i % 50) + 1 : null));
    const t0 = Date.now();
    const map = SourceAsmMap.fromPtx(lines);
    expect(Date.now() - t0).toBeLessThan(200);
    expect(map.asmLinesOf(2).length).toBeGreaterThan(200);
  });
});

describe('splitListing', () => {
  it('does not count a trailing newline as a line, and handles CRLF and empty text', () => {
    expect(splitListing('a\nb\n')).toEqual(['a', 'b']);
    expect(splitListing('a\r\nb')).toEqual(['a', 'b']);
    expect(splitListing('')).toEqual([]);
    expect(splitListing('a\n\n')).toEqual(['a', '']);
  });
});
