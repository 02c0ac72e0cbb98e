"""lab-01: c = a + b in numba, the same two kernels as vector_add.cu.

The signatures are written out so the kernels compile to PTX and SASS on a machine
without a GPU; numba's CUDA simulator runs them thread by thread on the CPU.
"""

from numba import cuda


@cuda.jit("void(float32[:], float32[:], float32[:], int32)")
def vector_add(a, b, c, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        c[i] = a[i] + b[i]


@cuda.jit("void(float32[:], float32[:], float32[:], int32)")
def vector_add_grid_stride(a, b, c, n):
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    stride = cuda.gridsize(1)  # gridDim.x * blockDim.x
    while i < n:
        c[i] = a[i] + b[i]
        i += stride
