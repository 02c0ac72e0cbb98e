// Writes through a pointer far outside any allocation: CUDA_ERROR_ILLEGAL_ADDRESS on a GPU.
extern "C" __global__ void wild_write(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  x[i + (1 << 28)] = 1.0f;
}
