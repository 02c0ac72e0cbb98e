// Stands in for the CUDA toolkit header of this name: gpudojo_cuda.h already defines what kernels use.
#include "gpudojo_cuda.h"
