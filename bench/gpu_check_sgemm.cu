// Tiled single-precision matrix product for `make gpu-check`: C = A @ B, all row-major float32,
// A is M x K, B is K x N, C is M x N. Launch with 32 x 32 threads per block and a grid of
// ceil(N / 32) x ceil(M / 32) blocks.
//
// Each block owns one 32 x 32 tile of C. It walks K in steps of 32: the block copies one tile of
// A and one tile of B into shared memory (each thread one element of each), waits for the whole
// tile to be there, and every thread adds 32 products to its own element of C. A value loaded
// from global memory is then used 32 times from shared memory instead of once, which cuts the
// global traffic by that factor against the one-thread-per-element product.
//
// Shared-memory banks: in the inner loop a warp (32 threads of one threadIdx.y) reads one
// element of As (the same address for all: a broadcast) and 32 consecutive elements of Bs (32
// different banks), so neither read conflicts and no padding is needed.

#define TILE 32

extern "C" __global__ void sgemm_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Out-of-range elements load as zero, so edge tiles add nothing for them.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (col < N && k0 + ty < K) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();  // the tiles are complete before anyone reads them
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();  // everyone is done with the tiles before they are overwritten
    }
    if (row < M && col < N) {
        C[row * N + col] = acc;
    }
}
