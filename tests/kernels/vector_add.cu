/*
 * vector_add: element-wise sum of two float vectors.
 *
 *   i = blockIdx.x * blockDim.x + threadIdx.x
 *   if (i < n) c[i] = a[i] + b[i]        (IEEE f32 add, round to nearest even)
 *
 * Launch: 1-D grid of 1-D blocks, any sizes; threads with i >= n do nothing.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
