import { filePlaygroundTitle, playgroundId, playgroundIdOf, readPlaygroundArgs } from '../../extension/src/kernels/commands';
import {
  compilesAsItIsEdited,
  fileCompileRequest,
  fileMode,
  fileRunPreset,
  fileStatus,
  isCudaPath,
  kernelResources
} from '../../extension/src/kernels/fileFeedback';
import type { ArchList, CompileResult, KernelReport, Occupancy } from '../../extension/src/api/types';

// Small fixtures of our own: only the fields these words read.
function occupancyAt(blockSize: number, overrides: Partial<Occupancy> = {}): Occupancy {
  return { block_size: blockSize, occupancy: 1, error: null, ...overrides } as Occupancy;
}

function kernel(name: string, overrides: Partial<KernelReport> = {}): KernelReport {
  return {
    name,
    symbol: name,
    registers: 32,
    shared_bytes: 0,
    spill_stores_bytes: 0,
    spill_loads_bytes: 0,
    occupancy: occupancyAt(256),
    ...overrides
  } as KernelReport;
}

function compiled(overrides: Partial<CompileResult> = {}): CompileResult {
  return {
    ok: true,
    language: 'cuda',
    arch: 'sm_90',
    cached: false,
    compiler: 'NVRTC 12.9',
    diagnostics: [],
    log: '',
    kernels: [kernel('saxpy')],
    timings: { compile_ms: 40, sass_ms: 5, total_ms: 46 },
    ...overrides
  } as CompileResult;
}

function archList(overrides: Partial<ArchList> = {}): ArchList {
  return {
    archs: [{ arch: 'sm_80' }, { arch: 'sm_90' }],
    default_arch: 'sm_80',
    nvrtc_version: '12.9',
    compiler_problem: null,
    gpu_arch: null,
    gpu_name: null,
    ...overrides
  } as ArchList;
}

describe('which files get CUDA highlighting and compile feedback', () => {
  it('highlights .cu and .cuh, and compiles only .cu (a header alone has no kernels)', () => {
    expect(isCudaPath('gpudojo-exercises/cuda-kernel/kernel.cu')).toBe(true);
    expect(isCudaPath('common.CUH')).toBe(true);
    expect(isCudaPath('ops.py')).toBe(false);
    expect(isCudaPath('notes.cu.txt')).toBe(false);
    expect(compilesAsItIsEdited('kernel.cu')).toBe(true);
    expect(compilesAsItIsEdited('common.cuh')).toBe(false);
  });
});

describe('fileCompileRequest', () => {
  it('compiles the text as CUDA C with the playground defaults, for this GPU when the server compiles for it', () => {
    const request = fileCompileRequest('__global__ void k() {}', archList({ gpu_arch: 'sm_90', gpu_name: 'NVIDIA H100' }));
    expect(request).toMatchObject({
      source: '__global__ void k() {}',
      language: 'cuda',
      arch: 'sm_90',
      options: { opt_level: 3, max_registers: null, fast_math: false, defines: {} },
      block_size: 256
    });
    expect(fileCompileRequest('x', archList()).arch).toBe('sm_80');
  });
});

describe('fileMode', () => {
  it('says GPU and names the GPU and compiler when there is one', () => {
    const mode = fileMode(archList({ gpu_arch: 'sm_90', gpu_name: 'NVIDIA H100' }), compiled());
    expect(mode.badge).toBe('GPU');
    expect(mode.detail).toBe("NVRTC 12.9 for sm_90, this machine's NVIDIA H100.");
  });

  it('says CPU emulation without a GPU, and that registers are the target GPU’s', () => {
    const mode = fileMode(archList(), null);
    expect(mode.badge).toBe('CPU emulation');
    expect(mode.detail).toContain('No GPU here: NVRTC 12.9 compiles for sm_80');
    expect(mode.detail).toContain('CPU emulator');
  });
});

describe('fileStatus', () => {
  it('reads like the playground’s status line', () => {
    expect(fileStatus('idle', null, null)).toBe('Not compiled yet');
    expect(fileStatus('compiling', compiled(), null)).toBe('Compiling…');
    expect(fileStatus('ok', compiled(), null)).toBe('Compiled in 45.0 ms');
    expect(fileStatus('ok', compiled({ cached: true }), null)).toBe('Compiles (cached)');
    const broken = compiled({
      ok: false,
      kernels: [],
      diagnostics: [{ line: 3, column: 5, severity: 'error', message: 'expected a ";"' }]
    });
    expect(fileStatus('error', broken, null)).toBe('Does not compile: 1 error');
    expect(fileStatus('error', null, 'No compiler on the server: no NVRTC')).toBe('No compiler on the server: no NVRTC');
  });
});

describe('kernelResources', () => {
  it('gives registers, spills, shared memory and occupancy in one line', () => {
    expect(kernelResources(kernel('fused_bias_gelu', { registers: 18 }))).toBe(
      'fused_bias_gelu: 18 registers, no spills, 0 B shared, occupancy 100% at 256 threads'
    );
    const spilling = kernel('big', { registers: 255, spill_stores_bytes: 64, spill_loads_bytes: 128 });
    expect(kernelResources(spilling)).toContain('64 B spill stores, 128 B spill loads');
    const refused = kernel('huge', { occupancy: occupancyAt(256, { error: 'too many registers' }) });
    expect(kernelResources(refused)).toContain('cannot launch 256 threads: too many registers');
  });
});

describe('a playground linked to a file', () => {
  it('takes the file, titles the tab with its name and is found again by its path', () => {
    const args = readPlaygroundArgs({ source: 'x', language: 'cuda', file: 'gpudojo-exercises/cuda-kernel/kernel.cu' });
    expect(args.file).toBe('gpudojo-exercises/cuda-kernel/kernel.cu');
    expect(args.title).toBe(filePlaygroundTitle(args.file!));
    expect(args.title).toBe('kernel.cu · Playground');
    expect(playgroundIdOf(args)).toBe(playgroundIdOf({ file: 'gpudojo-exercises/cuda-kernel/kernel.cu' }));
    expect(playgroundIdOf(args)).not.toBe(playgroundIdOf({ file: 'elsewhere/kernel.cu' }));
    expect(playgroundIdOf({ title: 'Kernels: lab-01' })).toBe(playgroundId('Kernels: lab-01'));
  });

  it('refuses a path that climbs out of the root', () => {
    expect(readPlaygroundArgs({ file: '../etc/passwd' }).file).toBeUndefined();
    expect(readPlaygroundArgs({ file: 42 } as never).file).toBeUndefined();
  });
});

describe('fileRunPreset', () => {
  it('names the file’s first kernel and leaves the arguments to the learner', () => {
    const source = '// a\nextern "C" __global__ void fused_bias_gelu(const float* x) {}\n__global__ void other() {}';
    expect(fileRunPreset(source)).toEqual({ kernel: 'fused_bias_gelu', args: [], expected: {} });
    expect(fileRunPreset('__global__ __launch_bounds__(256) void tiled(float* a) {}')?.kernel).toBe('tiled');
    expect(fileRunPreset('__device__ float f(float x) { return x; }')).toBeNull();
  });
});
