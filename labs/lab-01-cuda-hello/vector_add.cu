// lab-01: c = a + b over n floats, written two ways.
//
// extern "C" keeps the kernel names unmangled, so a launcher (the kernel playground,
// CuPy, cuModuleGetFunction) can find them as "vector_add" and "vector_add_grid_stride".

// One thread per element. The grid is rounded up to whole blocks, so the last block
// may have threads with no element: the bounds check sends them straight to the end.
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

// A grid of any size covers any n: each thread starts at its global index and steps
// by the number of threads in the whole grid. Neighbouring threads still touch
// neighbouring elements on every pass, so each warp's loads stay coalesced.
// The loop condition is the bounds check.
extern "C" __global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        c[i] = a[i] + b[i];
    }
}
