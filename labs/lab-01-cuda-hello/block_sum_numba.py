"""lab-01: total[0] += sum(x) in numba, the same three stages as block_sum.cu.

The block size must be a power of two, at most MAX_BLOCK (1024).
"""

from numba import cuda, float32

MAX_BLOCK = 1024  # shared arrays need a size known when the kernel is compiled


@cuda.jit("void(float32[:], float32[:], int32)")
def block_sum(x, total, n):
    partial = cuda.shared.array(MAX_BLOCK, float32)
    t = cuda.threadIdx.x

    acc = float32(0.0)  # float32 on purpose: a bare 0.0 would make the sum float64
    i = cuda.grid(1)
    while i < n:
        acc += x[i]
        i += cuda.gridsize(1)
    partial[t] = acc
    cuda.syncthreads()  # all loads are in shared memory before any thread reads a neighbour's

    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            partial[t] += partial[t + s]
        cuda.syncthreads()  # reached by every thread, so it sits outside the if
        s //= 2

    if t == 0:
        cuda.atomic.add(total, 0, partial[0])
