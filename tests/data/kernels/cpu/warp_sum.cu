// Block sum with warp shuffles: each warp reduces in registers, warp leaders meet in shared memory.
__device__ float warp_reduce(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_down_sync(0xffffffff, v, offset);
  return v;
}

extern "C" __global__ void warp_sum(const float* in, float* out, unsigned* ballots, int n) {
  __shared__ float per_warp[32];
  int t = threadIdx.x, lane = t % 32, warp = t / 32;
  int i = blockIdx.x * blockDim.x + t;
  float v = i < n ? in[i] : 0.0f;
  unsigned odd = __ballot_sync(0xffffffff, i % 2 == 1);
  if (lane == 0) ballots[i / 32] = odd;
  v = warp_reduce(v);
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? per_warp[lane] : 0.0f;
    for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffff, v, mask);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
