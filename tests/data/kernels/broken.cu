extern "C" __global__ void broken(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
  int unused = 3;
  x[i] = undefined_function(i);
}
