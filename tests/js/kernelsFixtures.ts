/** Compile, occupancy, run and lab example answers shaped like the server's, for the kernels tests. */

import type {
  ArchList,
  CompileResult,
  KernelExample,
  KernelExamples,
  KernelReport,
  Occupancy,
  OccupancyPoint,
  OccupancyReport,
  RunResult
} from '../../extension/src/api/types';

export function occupancyAt(blockSize: number, overrides: Partial<Occupancy> = {}): Occupancy {
  return {
    block_size: blockSize,
    registers_per_thread: 32,
    shared_bytes_per_block: 1024,
    active_blocks_per_sm: Math.floor(2048 / blockSize),
    active_warps_per_sm: 64,
    max_warps_per_sm: 64,
    occupancy: 1,
    limited_by: 'warps',
    blocks_limit: { warps: Math.floor(2048 / blockSize), blocks: 32, registers: 8, shared_memory: 160 },
    error: null,
    ...overrides
  };
}

export function curve(): OccupancyPoint[] {
  const points: OccupancyPoint[] = [];
  for (let size = 32; size <= 1024; size += 32) {
    points.push({ block_size: size, active_warps_per_sm: 64, occupancy: 1, limited_by: 'warps' });
  }
  return points;
}

export function kernel(name: string, overrides: Partial<KernelReport> = {}): KernelReport {
  return {
    name,
    symbol: name,
    registers: 32,
    shared_bytes: 0,
    constant_bytes: 380,
    stack_bytes: 0,
    local_bytes: 0,
    spill_stores_bytes: 0,
    spill_loads_bytes: 0,
    barriers: 0,
    sass: [
      { offset: 0, text: 'LDC R1, c[0x0][0x28]', line: null },
      { offset: 16, text: 'S2R R0, SR_CTAID.X', line: 5 },
      { offset: 32, text: 'FFMA R9, R4, UR6, R9', line: 7 }
    ],
    occupancy: occupancyAt(256),
    curve: curve(),
    ...overrides
  };
}

export function compiled(overrides: Partial<CompileResult> = {}): CompileResult {
  return {
    ok: true,
    language: 'cuda',
    arch: 'sm_90',
    cached: false,
    key: 'k1',
    compiler: 'NVRTC 12.9',
    diagnostics: [],
    log: '',
    ptx: '.version 8.8\n.visible .entry saxpy(\n{\n}\n',
    ptx_lines: [null, null, 5, null],
    kernels: [kernel('saxpy')],
    truncated: [],
    timings: { compile_ms: 40, sass_ms: 5, total_ms: 46 },
    ...overrides
  };
}

export function archList(overrides: Partial<ArchList> = {}): ArchList {
  const arch = (name: string, family: string, examples: string) => ({
    arch: name,
    compute_capability: `${name[3]}.${name[4]}`,
    family,
    examples,
    max_threads_per_block: 1024,
    max_warps_per_sm: 64,
    max_blocks_per_sm: 32,
    registers_per_sm: 65536,
    max_registers_per_thread: 255,
    register_allocation_unit: 256,
    shared_bytes_per_sm: 233472,
    max_shared_bytes_per_block: 232448,
    shared_allocation_unit: 128,
    reserved_shared_bytes_per_block: 1024,
    warp_size: 32
  });
  return {
    archs: [arch('sm_80', 'Ampere', 'A100, A30'), arch('sm_90', 'Hopper', 'H100, H200')],
    default_arch: 'sm_80',
    nvrtc_version: '12.9',
    numba_available: true,
    compiler_problem: null,
    gpu_arch: null,
    gpu_name: null,
    max_source_bytes: 65536,
    simulator_max_threads: 4096,
    ...overrides
  };
}

export function occupancyReport(blockSize: number): OccupancyReport {
  return { occupancy: occupancyAt(blockSize), curve: curve() };
}

export function simulatorRun(overrides: Partial<RunResult> = {}): RunResult {
  return {
    status: 'passed',
    mode: 'simulator',
    mode_note: "Ran in numba's CUDA simulator on the CPU",
    device: null,
    checks: [{ name: 'c', ok: true, checked: true, max_abs_error: 0, mismatches: 0, first_mismatch: null, preview: [0, 1, 2] }],
    timing: null,
    error: null,
    stdout: '',
    compile: null,
    emulator: null,
    memory: null,
    wall_ms: 900,
    ...overrides
  };
}

/** A numba block sum as lab-01 offers it (index 5 of the lab's kernels). */
export function example(overrides: Partial<KernelExample> = {}): KernelExample {
  return {
    lab: 'lab-01-cuda-hello',
    index: 5,
    title: 'Sum of a vector with shared memory and barriers (numba, runs in the simulator)',
    file: 'block_sum_numba.py',
    language: 'numba',
    kernel: 'block_sum',
    grid: [4],
    block: [256],
    shared_bytes: 0,
    args: [
      { kind: 'array', name: 'x', dtype: 'float32', shape: [4096], init: 'random', value: 0, seed: 3, output: false },
      { kind: 'array', name: 'total', dtype: 'float32', shape: [1], init: 'zeros', value: 0, seed: 0, output: true },
      { kind: 'scalar', name: 'n', dtype: 'int32', value: 4096 }
    ],
    expected: { total: 'total + x.sum(dtype=np.float64)' },
    source: 'from numba import cuda\n\n\n@cuda.jit\ndef block_sum(x, total, n):\n    pass\n',
    ...overrides
  };
}

/** GET kernels/examples of two labs: lab-01 with a CUDA C and a numba kernel, lab-02 with one whose file is missing. */
export function labExamples(): KernelExamples {
  return {
    examples: [
      example(),
      example({
        index: 0,
        title: 'Vector add, one thread per element (CUDA C)',
        file: 'vector_add.cu',
        language: 'cuda',
        kernel: 'vector_add',
        grid: [16],
        expected: { c: 'a + b' },
        source: 'extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {}\n'
      }),
      example({ lab: 'lab-03-streams', index: 0, title: 'Streams' })
    ],
    problems: [
      { lab: 'lab-02-memory', index: 1, message: 'tiled.cu: No such file or directory' },
      { lab: 'lab-01-cuda-hello', index: null, message: 'kernels: a warning about the whole lab' }
    ]
  };
}
