import { parseDefines } from '../../extension/src/kernels/defines';

describe('parseDefines', () => {
  it('reads NAME=VALUE pairs separated by blanks', () => {
    expect(parseDefines('A=1  B=2\tTILE=(16*2)')).toEqual({
      defines: { A: '1', B: '2', TILE: '(16*2)' },
      errors: []
    });
  });

  it('reads a bare NAME as NAME=1, as -DNAME does, and lets a later NAME win', () => {
    expect(parseDefines('USE_FAST N=1 N=2').defines).toEqual({ USE_FAST: '1', N: '2' });
  });

  it('keeps a quoted value with blanks together, and an empty value', () => {
    expect(parseDefines('E="1 + 2" F= G=""').defines).toEqual({ E: '1 + 2', F: '', G: '' });
  });

  it('reports names that are not C identifiers and values the server refuses', () => {
    const parsed = parseDefines('1A=2 OK=3 BAD=a;b');
    expect(parsed.defines).toEqual({ OK: '3' });
    expect(parsed.errors).toHaveLength(2);
    expect(parsed.errors[0]).toContain('"1A" is not a C identifier');
    expect(parsed.errors[1]).toContain('BAD');
  });

  it('refuses more than 32 defines', () => {
    const text = Array.from({ length: 33 }, (_, i) => `D${i}=1`).join(' ');
    expect(parseDefines(text).errors).toEqual(['at most 32 defines']);
  });

  it('is empty for an empty field', () => {
    expect(parseDefines('   ')).toEqual({ defines: {}, errors: [] });
  });
});
