/*
 * block_reduce: per-block sum of 256 floats with a shared-memory tree.
 *
 * Launch: 1-D grid of 1-D blocks, blockDim.x MUST be 256 (the shared array
 * has 256 slots); any gridDim.x. Block k sums in[256*k .. 256*k+255]
 * (elements with index >= n count as 0.0f) and writes out[k].
 *
 * Exact order of the f32 additions (round to nearest even, no FMA), for a
 * block with values v[0..255] (v[t] = in[256*k+t], or 0.0f if out of range):
 *   for (s = 128; s > 0; s >>= 1)
 *       for (t = 0; t < s; t++) v[t] = v[t] + v[t + s];
 *   out[k] = v[0];
 * Uses __shared__ memory and __syncthreads() (bar.sync 0) between steps.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void block_reduce(const float* in, float* out, int n)
{
    __shared__ float sdata[256];

    unsigned int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();

    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }

    if (tid == 0) {
        out[blockIdx.x] = sdata[0];
    }
}
