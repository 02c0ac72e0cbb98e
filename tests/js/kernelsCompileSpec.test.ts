import { DEFAULT_SETTINGS, buildCompileRequest, compileOptions } from '../../extension/src/kernels/compileSpec';
import { formFromPreset } from '../../extension/src/kernels/runSpec';
import { NUMBA_RUN, NUMBA_STARTER } from '../../extension/src/kernels/starters';

const EMPTY_FORM = { kernel: '', grid: '1', block: '1', sharedBytes: '0', args: '[]', expected: '' };

describe('compileOptions', () => {
  it('passes defines to CUDA C only', () => {
    const settings = { ...DEFAULT_SETTINGS, arch: 'sm_80', defines: 'N=8', fastMath: true };
    expect(compileOptions(settings, 'cuda')).toEqual({
      ok: true,
      value: { opt_level: 3, max_registers: null, fast_math: true, defines: { N: '8' } }
    });
    expect(compileOptions({ ...settings, defines: 'bad-name=1' }, 'numba')).toEqual({
      ok: true,
      value: { opt_level: 3, max_registers: null, fast_math: true, defines: {} }
    });
  });

  it('says what is wrong with the defines', () => {
    expect(compileOptions({ ...DEFAULT_SETTINGS, defines: 'X=a;b' }, 'cuda')).toEqual({
      ok: false,
      error: expect.stringMatching(/^Defines: X: the value may hold/)
    });
  });
});

describe('buildCompileRequest', () => {
  it('asks for SASS and the occupancy at the run block size, with numba signatures from the run fields', () => {
    const built = buildCompileRequest({
      source: NUMBA_STARTER,
      language: 'numba',
      settings: { ...DEFAULT_SETTINGS, arch: 'sm_90' },
      form: formFromPreset(NUMBA_RUN, EMPTY_FORM),
      blockSize: 128,
      dynamicSharedBytes: 512
    });
    expect(built).toEqual({
      ok: true,
      value: {
        source: NUMBA_STARTER,
        language: 'numba',
        arch: 'sm_90',
        options: { opt_level: 3, max_registers: null, fast_math: false, defines: {} },
        sass: true,
        block_size: 128,
        dynamic_shared_bytes: 512,
        signatures: { vector_add: 'void(float32[:], float32[:], float32[:])' }
      }
    });
  });

  it('sends nothing before an architecture is chosen', () => {
    const built = buildCompileRequest({
      source: '',
      language: 'cuda',
      settings: DEFAULT_SETTINGS,
      form: EMPTY_FORM,
      blockSize: 256,
      dynamicSharedBytes: 0
    });
    expect(built.ok).toBe(false);
  });
});
