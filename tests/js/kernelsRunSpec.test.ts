import {
  RunForm,
  buildRunRequest,
  compileSignatures,
  formFromPreset,
  hasExplicitSignature,
  numbaSignature,
  parseDim3,
  parseExpected,
  parseRunArgs,
  presetFromForm,
  simulatorProblem
} from '../../extension/src/kernels/runSpec';
import { archList } from './kernelsFixtures';
import { CUDA_RUN, NUMBA_RUN, NUMBA_STARTER } from '../../extension/src/kernels/starters';

const EMPTY: RunForm = { kernel: '', grid: '1', block: '1', sharedBytes: '0', args: '[]', expected: '' };

describe('parseDim3', () => {
  it('reads 1 to 3 sizes written as a list, with commas, blanks or x', () => {
    expect(parseDim3('256', 'Block')).toEqual({ ok: true, value: [256] });
    expect(parseDim3('16, 16', 'Block')).toEqual({ ok: true, value: [16, 16] });
    expect(parseDim3('[8,8,4]', 'Grid')).toEqual({ ok: true, value: [8, 8, 4] });
    expect(parseDim3('32x8', 'Block')).toEqual({ ok: true, value: [32, 8] });
  });

  it('says which field is wrong and why', () => {
    expect(parseDim3('', 'Grid')).toEqual({ ok: false, error: expect.stringContaining('Grid: give 1 to 3 sizes') });
    expect(parseDim3('1,2,3,4', 'Grid').ok).toBe(false);
    expect(parseDim3('0', 'Block')).toEqual({ ok: false, error: 'Block: "0" is not a whole number of at least 1' });
    expect(parseDim3('2.5', 'Block').ok).toBe(false);
  });
});

describe('parseRunArgs', () => {
  it('accepts the starter presets as the textarea shows them', () => {
    for (const preset of [CUDA_RUN, NUMBA_RUN]) {
      const form = formFromPreset(preset, EMPTY);
      expect(parseRunArgs(form.args)).toEqual({ ok: true, value: preset.args });
    }
  });

  it('infers the kind from the fields and fills the default dtypes', () => {
    const parsed = parseRunArgs('[{"name": "x", "shape": 4}, {"name": "n", "value": 4}]');
    expect(parsed).toEqual({
      ok: true,
      value: [
        { kind: 'array', name: 'x', dtype: 'float32', shape: [4] },
        { kind: 'scalar', name: 'n', dtype: 'int32', value: 4 }
      ]
    });
  });

  it('takes bfloat16 arrays (CUDA C __nv_bfloat16)', () => {
    expect(parseRunArgs('[{"name": "x", "shape": 4, "dtype": "bfloat16"}]')).toEqual({
      ok: true,
      value: [{ kind: 'array', name: 'x', dtype: 'bfloat16', shape: [4] }]
    });
  });

  it.each([
    ['[1,', 'not valid JSON'],
    ['{"name": "x"}', 'must be a JSON list'],
    ['[{"kind": "array", "name": "x", "shape": [0]}]', 'args[0] (x): shape must be'],
    ['[{"kind": "array", "name": "x", "shape": [1,1,1,1]}]', 'shape must be'],
    ['[{"kind": "array", "name": "x", "shape": [4], "dtype": "float"}]', 'dtype must be one of float16'],
    ['[{"kind": "scalar", "name": "n", "dtype": "int8", "value": 1}]', 'dtype must be one of float32'],
    ['[{"kind": "scalar", "name": "n"}]', 'a scalar needs a numeric value'],
    ['[{"kind": "array", "name": "x", "shape": [4], "init": "rand"}]', 'init must be one of'],
    ['[{"kind": "array", "name": "x", "shape": [4], "output": "yes"}]', 'output must be true or false'],
    ['[{"kind": "array", "name": "x", "shape": [4], "size": 4}]', 'unknown field size'],
    ['[{"kind": "tensor", "name": "x"}]', 'kind must be "array" or "scalar"'],
    ['[{"kind": "array", "name": "2x", "shape": [4]}]', 'name must be an identifier'],
    ['[{"name": "x", "shape": [4]}, {"name": "x", "value": 1}]', 'args[1]: the name "x" is used twice']
  ])('refuses %s with a message naming the problem', (text, message) => {
    const parsed = parseRunArgs(text);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.error).toContain(message);
  });

  it('refuses more than 32 arguments', () => {
    const args = Array.from({ length: 33 }, (_, i) => ({ name: `a${i}`, value: 1 }));
    expect(parseRunArgs(JSON.stringify(args))).toEqual({ ok: false, error: 'At most 32 arguments' });
  });
});

describe('parseExpected', () => {
  const args = [
    { kind: 'array' as const, name: 'x', shape: [4] },
    { kind: 'array' as const, name: 'y', shape: [4], output: true }
  ];

  it('maps output arrays to NumPy expressions; empty text means nothing to check', () => {
    expect(parseExpected('{"y": "2 * x"}', args)).toEqual({ ok: true, value: { y: '2 * x' } });
    expect(parseExpected('  ', args)).toEqual({ ok: true, value: {} });
  });

  it('refuses names that are not output arrays and non-string expressions', () => {
    expect(parseExpected('{"x": "1"}', args)).toEqual({ ok: false, error: expect.stringContaining('not an output array') });
    expect(parseExpected('{"y": 2}', args).ok).toBe(false);
    expect(parseExpected('["y"]', args).ok).toBe(false);
  });
});

describe('buildRunRequest', () => {
  it('builds the RunRequest of the CUDA starter preset', () => {
    const form = formFromPreset(CUDA_RUN, EMPTY);
    const built = buildRunRequest(form, { source: 'src', language: 'cuda', options: { opt_level: 3 } });
    expect(built).toEqual({
      ok: true,
      value: {
        source: 'src',
        language: 'cuda',
        kernel: 'saxpy',
        grid: [16],
        block: [256],
        shared_bytes: 0,
        args: CUDA_RUN.args,
        expected: { y: 'a * x + y' },
        options: { opt_level: 3 }
      }
    });
  });

  it('stops at the first bad field', () => {
    const form = { ...formFromPreset(CUDA_RUN, EMPTY), block: '0' };
    expect(buildRunRequest(form, { source: '', language: 'cuda', options: {} })).toEqual({
      ok: false,
      error: 'Block: "0" is not a whole number of at least 1'
    });
    const noKernel = { ...formFromPreset(CUDA_RUN, EMPTY), kernel: ' ' };
    expect(buildRunRequest(noKernel, { source: '', language: 'cuda', options: {} }).ok).toBe(false);
    const shared = { ...formFromPreset(CUDA_RUN, EMPTY), sharedBytes: '-4' };
    expect(buildRunRequest(shared, { source: '', language: 'cuda', options: {} }).ok).toBe(false);
  });
});

describe('numba signatures', () => {
  it('types arrays by dtype and rank, scalars by dtype', () => {
    expect(
      numbaSignature([
        { kind: 'array', name: 'a', dtype: 'float32', shape: [8] },
        { kind: 'array', name: 'm', dtype: 'float64', shape: [4, 4] },
        { kind: 'scalar', name: 'n', value: 8 }
      ])
    ).toBe('void(float32[:], float64[:, :], int32)');
  });

  it('sees a signature in the decorator, but not in keyword-only decorators', () => {
    expect(hasExplicitSignature('@cuda.jit("void(float32[:])")\ndef k(a):\n    pass', 'k')).toBe(true);
    expect(hasExplicitSignature("@cuda.jit(['void(int32[:])'])\ndef k(a):\n    pass", 'k')).toBe(true);
    expect(hasExplicitSignature('@cuda.jit\ndef k(a):\n    pass', 'k')).toBe(false);
    expect(hasExplicitSignature('@cuda.jit(fastmath=True)\ndef k(a):\n    pass', 'k')).toBe(false);
    expect(hasExplicitSignature('@cuda.jit()\ndef k(a):\n    pass', 'k')).toBe(false);
    expect(hasExplicitSignature('@cuda.jit("void()")\ndef other():\n    pass\n\ndef k():\n    pass', 'k')).toBe(false);
  });

  it('gives the compile the run kernel typed from the run arguments, unless the source names one', () => {
    const form = formFromPreset(NUMBA_RUN, EMPTY);
    expect(compileSignatures(NUMBA_STARTER, form)).toEqual({
      vector_add: 'void(float32[:], float32[:], float32[:])'
    });
    const signed = NUMBA_STARTER.replace('@cuda.jit', '@cuda.jit("void(float64[:], float64[:], float64[:])")');
    expect(compileSignatures(signed, form)).toEqual({});
    expect(compileSignatures(NUMBA_STARTER, { ...form, args: '[' })).toEqual({});
  });
});

describe('presetFromForm', () => {
  it('turns the starter fields back into the starter preset', () => {
    expect(presetFromForm(formFromPreset(NUMBA_RUN, EMPTY))).toEqual(NUMBA_RUN);
  });

  it('keeps the fields that parse and drops the others', () => {
    const form = { ...formFromPreset(CUDA_RUN, EMPTY), block: 'many', args: '[' };
    const preset = presetFromForm(form);
    expect(preset).toEqual({ kernel: 'saxpy', grid: [16], shared_bytes: 0 });
  });
});

describe('simulatorProblem', () => {
  const request = (grid: number[], block: number[], language: 'cuda' | 'numba' = 'numba') => ({
    source: '',
    language,
    kernel: 'k',
    grid,
    block,
    args: []
  });

  it('refuses more threads than the server simulates, only when the run would go to the simulator', () => {
    expect(simulatorProblem(request([64], [128]), archList())).toContain('8192 threads');
    expect(simulatorProblem(request([32], [128]), archList())).toBeNull();
    expect(simulatorProblem(request([64], [128]), archList({ gpu_arch: 'sm_90' }))).toBeNull();
    expect(simulatorProblem(request([64], [128], 'cuda'), archList())).toBeNull();
    expect(simulatorProblem(request([64], [128]), null)).toBeNull();
  });
});
