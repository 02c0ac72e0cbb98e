"""A shared-memory block reduction in numba: each block writes the sum of its slice."""

from numba import cuda, float32

THREADS = 64


@cuda.jit("void(float32[:], float32[:])")
def block_sum(values, out):
    partial = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    partial[t] = values[i] if i < values.size else 0.0
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = partial[0]


@cuda.jit
def fill_past_end(x):
    # No bounds check: threads past the end of x write out of bounds.
    i = cuda.grid(1)
    x[i] = 1.0
