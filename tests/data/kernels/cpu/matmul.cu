// Tiled matrix multiply: C = A B for n x n row-major matrices, TILE x TILE tiles in shared memory.
#define TILE 16

template <typename T>
__device__ T load_or_zero(const T* m, int row, int col, int n) {
  return (row < n && col < n) ? m[row * n + col] : T(0);
}

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    As[threadIdx.y][threadIdx.x] = load_or_zero(A, row, k0 + threadIdx.x, n);
    Bs[threadIdx.y][threadIdx.x] = load_or_zero(B, k0 + threadIdx.y, col, n);
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
    __syncthreads();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}
