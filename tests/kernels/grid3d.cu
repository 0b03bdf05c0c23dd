/*
 * grid3d: every thread of a 3-D grid of 3-D blocks writes a value that
 * depends on all twelve special registers (threadIdx, blockIdx, blockDim,
 * gridDim; x, y, z each), so a mixed-up special register is caught.
 *
 * All arithmetic is u32, wrapping modulo 2^32:
 *   bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)
 *   tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)
 *   gid = bid * (blockDim.x * blockDim.y * blockDim.z) + tid
 *   t   = threadIdx.x | (threadIdx.y << 8) | (threadIdx.z << 16)
 *   b   = blockIdx.x * 7 + blockIdx.y * 131 + blockIdx.z * 1031
 *   g   = blockDim.x * 3 + blockDim.y * 37 + blockDim.z * 101
 *       + gridDim.x * 5 + gridDim.y * 59 + gridDim.z * 113
 *   out[gid] = t ^ (b << 12) ^ (g << 24)
 *
 * out must hold gridDim.x*gridDim.y*gridDim.z * blockDim.x*blockDim.y*blockDim.z
 * u32 values; every one is written exactly once.
 * Launch: any 3-D shape; use pairwise different sizes in every dimension so
 * that swapped x/y/z registers are detected.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void grid3d(unsigned int* out)
{
    unsigned int bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned int gid = bid * (blockDim.x * blockDim.y * blockDim.z) + tid;

    unsigned int t = threadIdx.x | (threadIdx.y << 8) | (threadIdx.z << 16);
    unsigned int b = blockIdx.x * 7u + blockIdx.y * 131u + blockIdx.z * 1031u;
    unsigned int g = blockDim.x * 3u + blockDim.y * 37u + blockDim.z * 101u
                   + gridDim.x * 5u + gridDim.y * 59u + gridDim.z * 113u;

    out[gid] = t ^ (b << 12) ^ (g << 24);
}
