// Fully unrolling a thousand dependent steps keeps ptxas busy for well over ten seconds.
extern "C" __global__ void slow(float* out) {
  float x = out[threadIdx.x];
#pragma unroll
  for (int i = 0; i < 1000; ++i) { x = x * out[(i * 7) % 97 + threadIdx.x] + sinf(x); }
  out[threadIdx.x] = x;
}
