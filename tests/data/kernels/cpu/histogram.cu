// Histogram of integers in [0, bins): a private histogram per block in dynamic shared memory,
// merged into the global one with atomics.
extern "C" __global__ void histogram(const int* values, unsigned int* counts, int n, int bins) {
  extern __shared__ unsigned int local[];
  for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[values[i] % bins], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x) atomicAdd(&counts[b], local[b]);
}
