// lab-01: total[0] += the sum of x[0..n), in one launch of any grid size.
//
// Three stages, one per level of the launch hierarchy:
//   thread: add up x[i], x[i + stride], ... in a register (a grid-stride loop);
//   block:  combine the block's per-thread sums in shared memory, a tree of halving steps;
//   grid:   thread 0 of each block adds its block's sum to total[0] with atomicAdd,
//           because no barrier exists between the blocks of one launch.
// The tree needs blockDim.x to be a power of two, at most MAX_BLOCK.

#define MAX_BLOCK 1024

extern "C" __global__ void block_sum(const float* x, float* total, int n) {
    // Sized for the largest block CUDA allows, so every launch fits; the cost is 4 KB of
    // shared memory per block whatever the block size.
    __shared__ float partial[MAX_BLOCK];
    int t = threadIdx.x;

    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) {
        sum += x[i];
    }
    partial[t] = sum;
    __syncthreads();  // every thread's sum is in shared memory before anyone reads a neighbour's

    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            partial[t] += partial[t + s];
        }
        __syncthreads();  // outside the if: all threads of the block must reach it
    }

    if (t == 0) {
        atomicAdd(total, partial[0]);
    }
}
