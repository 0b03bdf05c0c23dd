/*
 * saxpy: y = a * x + y over n floats, with a grid-stride loop.
 *
 *   for (i = blockIdx.x*blockDim.x + threadIdx.x; i < n; i += blockDim.x*gridDim.x)
 *       y[i] = a * x[i] + y[i];
 *
 * Compilers contract `a * x[i] + y[i]` into a single fused multiply-add
 * (fma.rn.f32: one rounding); a CPU reference must use fmaf(a, x[i], y[i]).
 * (All three compilers used here contract by default.)
 *
 * Launch: 1-D grid of 1-D blocks, any sizes (the loop covers all of n even
 * when the grid has fewer threads than n).
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = a * x[i] + y[i];
    }
}
