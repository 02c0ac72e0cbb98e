/** What a new playground shows: a starter kernel per language and the run that tests it. */

import type { KernelLanguage } from '../api/types';
import type { RunPreset } from './runSpec';

/** y = a*x + y over n floats: one thread per element, guarded against the grid's extra threads. */
export const CUDA_STARTER = `// SAXPY: y = a * x + y, one thread per element.
// extern "C" keeps the name unmangled, so the run panel can launch it as "saxpy".
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
`;

/** c = a + b with numba: the same guard, written in Python. */
export const NUMBA_STARTER = `# Vector add with numba: c = a + b, one thread per element.
from numba import cuda


@cuda.jit
def vector_add(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]
`;

/** 4096 elements in blocks of 256: 16 blocks, the output checked against NumPy. */
export const CUDA_RUN: Required<RunPreset> = {
  kernel: 'saxpy',
  grid: [16],
  block: [256],
  shared_bytes: 0,
  args: [
    { kind: 'scalar', name: 'n', dtype: 'int32', value: 4096 },
    { kind: 'scalar', name: 'a', dtype: 'float32', value: 2 },
    { kind: 'array', name: 'x', dtype: 'float32', shape: [4096], init: 'random', seed: 1 },
    { kind: 'array', name: 'y', dtype: 'float32', shape: [4096], init: 'random', seed: 2, output: true }
  ],
  expected: { y: 'a * x + y' }
};

/**
 * 1024 elements in blocks of 128: few enough threads for numba's simulator,
 * which runs every thread in Python.
 */
export const NUMBA_RUN: Required<RunPreset> = {
  kernel: 'vector_add',
  grid: [8],
  block: [128],
  shared_bytes: 0,
  args: [
    { kind: 'array', name: 'a', dtype: 'float32', shape: [1024], init: 'random', seed: 1 },
    { kind: 'array', name: 'b', dtype: 'float32', shape: [1024], init: 'arange' },
    { kind: 'array', name: 'c', dtype: 'float32', shape: [1024], init: 'zeros', output: true }
  ],
  expected: { c: 'a + b' }
};

/** The starter source of `language`. */
export function starterSource(language: KernelLanguage): string {
  return language === 'cuda' ? CUDA_STARTER : NUMBA_STARTER;
}

/** The run that goes with the starter of `language`. */
export function starterRun(language: KernelLanguage): Required<RunPreset> {
  return language === 'cuda' ? CUDA_RUN : NUMBA_RUN;
}
