import {
  exampleState,
  examplesMenuLabel,
  examplesOf,
  labsWithExamples,
  problemsText,
  wouldLoseEdits
} from '../../extension/src/kernels/examples';
import { RunForm, formFromPreset } from '../../extension/src/kernels/runSpec';
import { CUDA_STARTER, NUMBA_STARTER, starterRun } from '../../extension/src/kernels/starters';
import { example, labExamples } from './kernelsFixtures';

const EMPTY_FORM: RunForm = { kernel: '', grid: '1', block: '1', sharedBytes: '0', args: '[]', expected: '{}' };

describe('exampleState', () => {
  it("loads the example's language, source and whole launch into the playground", () => {
    const state = exampleState(example());
    expect(state.language).toBe('numba');
    expect(state.source).toContain('def block_sum(x, total, n)');
    expect(state.run).toEqual({
      kernel: 'block_sum',
      grid: [4],
      block: [256],
      shared_bytes: 0,
      args: example().args,
      expected: { total: 'total + x.sum(dtype=np.float64)' }
    });
  });

  it('replaces every run field of the previous launch, so none lingers', () => {
    // The numba starter's vector add, with dynamic shared memory the learner set.
    const previous = { ...formFromPreset(starterRun('numba'), EMPTY_FORM), sharedBytes: '64' };
    const form = formFromPreset(exampleState(example({ expected: {} })).run, previous);
    expect(form).toMatchObject({ kernel: 'block_sum', grid: '4', block: '256', sharedBytes: '0', expected: '{}' });
    expect(form.args).toContain('"name": "total"');
    expect(form.args).not.toContain('"name": "c"');
  });

  it('does not share arrays with the example, so loading it again loads it as fetched', () => {
    const source = example();
    const { run } = exampleState(source);
    run.grid?.push(2);
    run.args?.splice(0, 1);
    expect(source.grid).toEqual([4]);
    expect(source.args[0].name).toBe('x');
  });
});

describe('the examples menu', () => {
  it("names the lab by its title, or by its id when the title is not known", () => {
    expect(examplesMenuLabel('lab-01-cuda-hello', 'CUDA hello world')).toBe('Examples from CUDA hello world…');
    expect(examplesMenuLabel('lab-01-cuda-hello')).toBe('Examples from lab-01-cuda-hello…');
  });

  it("lists one lab's examples in lab.toml order", () => {
    expect(examplesOf(labExamples(), 'lab-01-cuda-hello').map(e => e.index)).toEqual([0, 5]);
    expect(examplesOf(labExamples(), 'lab-02-memory')).toEqual([]);
  });

  it("says what is wrong with a lab's [[kernels]] entries, and only that lab's", () => {
    expect(problemsText(labExamples(), 'lab-02-memory')).toBe('kernels[1]: tiled.cu: No such file or directory');
    expect(problemsText(labExamples(), 'lab-01-cuda-hello')).toBe('kernels: a warning about the whole lab');
    expect(problemsText(labExamples(), 'lab-03-streams')).toBe('');
  });
});

describe('labsWithExamples', () => {
  it('is the labs with at least one example; a lab with only problems is not one', () => {
    expect([...labsWithExamples(labExamples())].sort()).toEqual(['lab-01-cuda-hello', 'lab-03-streams']);
    expect(labsWithExamples({ examples: [], problems: [] }).size).toBe(0);
  });
});

describe('wouldLoseEdits', () => {
  const examples = examplesOf(labExamples(), 'lab-01-cuda-hello');

  it('is false for a source as an example or the starter left it', () => {
    expect(wouldLoseEdits(example().source, 'numba', examples)).toBe(false);
    expect(wouldLoseEdits(example().source.replace(/\n/g, '\r\n') + '\n\n', 'numba', examples)).toBe(false);
    expect(wouldLoseEdits(NUMBA_STARTER, 'numba', examples)).toBe(false);
    expect(wouldLoseEdits(CUDA_STARTER, 'cuda', examples)).toBe(false);
    expect(wouldLoseEdits('  \n', 'cuda', examples)).toBe(false);
  });

  it('is true once the learner changed it', () => {
    expect(wouldLoseEdits(example().source.replace('pass', 'total[0] = 1'), 'numba', examples)).toBe(true);
    expect(wouldLoseEdits(CUDA_STARTER.replace('a * x[i]', '2 * x[i]'), 'cuda', examples)).toBe(true);
  });

  it("compares with the same language's sources only", () => {
    expect(wouldLoseEdits(example().source, 'cuda', examples)).toBe(true);
    expect(wouldLoseEdits(NUMBA_STARTER, 'cuda', examples)).toBe(true);
  });
});
