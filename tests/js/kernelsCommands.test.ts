import { labPlaygroundTitle, playgroundId, readPlaygroundArgs } from '../../extension/src/kernels/commands';

describe('readPlaygroundArgs', () => {
  it('keeps well-typed fields of what a lesson passes', () => {
    expect(
      readPlaygroundArgs({
        source: 'code',
        language: 'numba',
        arch: 'sm_90',
        title: ' Lesson 3 ',
        run: { kernel: 'k', grid: [4], block: [128, 2], shared_bytes: 64, args: [{ name: 'x', value: 1 }], expected: { y: 'x' } }
      })
    ).toEqual({
      source: 'code',
      language: 'numba',
      arch: 'sm_90',
      title: 'Lesson 3',
      run: { kernel: 'k', grid: [4], block: [128, 2], shared_bytes: 64, args: [{ name: 'x', value: 1 }], expected: { y: 'x' } }
    });
  });

  it('drops fields of the wrong type rather than failing', () => {
    expect(
      readPlaygroundArgs({ source: 3, language: 'fortran', arch: 'compute_90', title: '', run: { grid: [0], block: 'x', expected: { y: 1 } } })
    ).toEqual({ run: { expected: {} } });
    expect(readPlaygroundArgs({})).toEqual({});
  });
});

describe('readPlaygroundArgs of a lab', () => {
  it("titles a lab's playground by the lab, so opening it again reveals the same tab", () => {
    const args = readPlaygroundArgs({ lab: 'lab-01-cuda-hello', labTitle: ' CUDA hello world ' });
    expect(args).toEqual({ lab: 'lab-01-cuda-hello', labTitle: 'CUDA hello world', title: 'Kernels: lab-01-cuda-hello' });
    expect(playgroundId(args.title)).toBe(playgroundId(readPlaygroundArgs({ lab: 'lab-01-cuda-hello' }).title));
    expect(playgroundId(args.title)).not.toBe(playgroundId(undefined));
  });

  it('keeps a title given with the lab (a restored tab keeps its own)', () => {
    expect(readPlaygroundArgs({ lab: 'lab-01-cuda-hello', title: 'Mine', source: 'x' })).toEqual({
      lab: 'lab-01-cuda-hello',
      title: 'Mine',
      source: 'x'
    });
  });

  it("drops a lab id that is not a lab folder's name, and a lab title without a lab", () => {
    expect(readPlaygroundArgs({ lab: '../etc', labTitle: 'x' })).toEqual({});
    expect(readPlaygroundArgs({ lab: 3 })).toEqual({});
    expect(readPlaygroundArgs({ lab: 'lab 1' })).toEqual({});
    expect(readPlaygroundArgs({ labTitle: 'CUDA hello world' })).toEqual({});
  });

  it('names the tab "Kernels: <lab id>"', () => {
    expect(labPlaygroundTitle('lab-01-cuda-hello')).toBe('Kernels: lab-01-cuda-hello');
  });
});

describe('playgroundId', () => {
  it('is the plain id without a title, and one per title otherwise', () => {
    expect(playgroundId(undefined)).toBe('gpudojo-kernel-playground');
    expect(playgroundId('Lesson 3: SAXPY!')).toBe('gpudojo-kernel-playground-lesson-3-saxpy');
    expect(playgroundId('***')).toBe('gpudojo-kernel-playground-untitled');
  });
});
