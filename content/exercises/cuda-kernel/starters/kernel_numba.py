"""cuda-kernel: the same fused bias + GELU as kernel.cu, written with numba.cuda.

    y[r, c] = GELU(a * x[r, c] + b[c])      GELU(z) = 0.5 * z * (1 + erf(z / sqrt(2)))

x and y are flat float32 arrays of n = rows * cols elements (a row-major matrix seen as a
vector), b has cols elements. On a machine without a GPU, run it in numba's CUDA simulator,
which executes every thread on the CPU and raises IndexError on an out-of-range access:

    NUMBA_ENABLE_CUDASIM=1 python kernel_numba.py
"""

import math

import numpy as np
from numba import cuda

INV_SQRT2 = 0.7071067811865476  # 1 / sqrt(2)


@cuda.jit
def fused_bias_gelu(x, b, y, a, n, cols):
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    # TODO: the bounds check. The grid is rounded up to whole blocks, so the last block
    #       has threads with no element; as written they read and write past the end.
    z = a * x[i] + b[i % cols]  # element i is in column i % cols
    y[i] = 0.5 * z * (1.0 + math.erf(z * INV_SQRT2))


def gelu_reference(x: np.ndarray, b: np.ndarray, a: float, cols: int) -> np.ndarray:
    """The same computation in NumPy (float64), for checking the kernel."""
    z = a * x.astype(np.float64).reshape(-1, cols) + b.astype(np.float64)
    erf = np.vectorize(math.erf)
    return (0.5 * z * (1.0 + erf(z * INV_SQRT2))).reshape(-1)


if __name__ == "__main__":
    rows, cols, block = 13, 37, 64  # n = 481: not a multiple of the block
    n = rows * cols
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    y = np.zeros(n, dtype=np.float32)
    grid = (n + block - 1) // block
    fused_bias_gelu[grid, block](x, b, y, 1.5, n, cols)
    err = float(np.abs(y - gelu_reference(x, b, 1.5, cols)).max())
    print(f"n = {n}, grid {grid} x block {block} = {grid * block} threads: max |error| = {err:.2e}")
