// cuda-kernel: a fused bias + GELU, the epilogue that follows a linear layer.
//
//     y[r, c] = GELU(a * x[r, c] + b[c])      GELU(z) = 0.5 * z * (1 + erf(z / sqrt(2)))
//
// x and y are row-major (rows x cols) float32 arrays seen as flat vectors of n = rows * cols
// elements; b holds one value per column. PyTorch spends three kernels on the same thing
// (a * x, + b, gelu), each reading and writing the whole tensor; this kernel reads x once
// and writes y once.
//
// extern "C" keeps the symbol unmangled, so ops.py (CuPy) finds it as "fused_bias_gelu".

extern "C" __global__ void fused_bias_gelu(const float* __restrict__ x,
                                           const float* __restrict__ b,
                                           float* __restrict__ y,
                                           float a, int n, int cols) {
    // One thread per element. A signed 32-bit index is enough because ops.py refuses
    // tensors of 2^31 elements or more.
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    // The grid is rounded up to whole blocks, so the last block has threads with no
    // element: they must not touch memory.
    if (i >= n) return;

    // Element i sits in column i % cols of its row. Neighbouring threads read neighbouring
    // x[i] (coalesced) and, mostly, neighbouring b[c]; b is small and stays in cache.
    float z = fmaf(a, x[i], b[i % cols]);
    y[i] = 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));  // 0.7071... = 1 / sqrt(2)
}
