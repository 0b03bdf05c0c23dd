/*
 * dyn_shared: dynamic (extern) shared memory after static shared arrays, and
 * 8- and 16-bit shared stores from neighbouring threads into the same words.
 *
 * Launch: 1-D grid of 1-D blocks with blockDim.x >= 64, dynamic shared memory
 * of blockDim.x * 4 bytes. For block k, thread t (i = k*blockDim.x + t), all
 * arithmetic u32 wrapping mod 2^32:
 *   buf[t]  = (i < n) ? in[i] : 0                      (dynamic shared, u32)
 *   tag[t]  = (u16)(t * 1000 + k)      for t < 64      (static shared, u16)
 *   byt[t]  = (u8)(t * 3 + 1)          for t < 64      (static shared, u8)
 *   __syncthreads()
 *   if (i < n) out[i] = buf[blockDim.x - 1 - t] + tag[t % 64] + byt[(t * 7) % 64]
 * (buf is the block's slice of `in` reversed; tag/byt values are zero-extended.)
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void dyn_shared(const unsigned int* in, unsigned int* out, int n)
{
    extern __shared__ unsigned int buf[];
    __shared__ unsigned short tag[64];
    __shared__ unsigned char byt[64];

    unsigned int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[t] = (i < n) ? in[i] : 0u;
    if (t < 64) {
        tag[t] = (unsigned short)(t * 1000u + blockIdx.x);
        byt[t] = (unsigned char)(t * 3u + 1u);
    }
    __syncthreads();
    unsigned int r = buf[blockDim.x - 1 - t] + tag[t % 64] + byt[(t * 7) % 64];
    if (i < n) {
        out[i] = r;
    }
}
