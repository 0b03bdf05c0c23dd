/*
 * big_shared: a block-wide computation through 40,968 bytes of static shared memory,
 * more than Vulkan devices such as lavapipe (32 KiB) have on chip and less than
 * CUDA's 48 KiB per block: ptxvk keeps such a window in device memory, a slice per
 * block (lower/src/pass/shared_in_memory.rs).
 *
 * Launch: 1-D grid of 1-D blocks, any sizes; `in` holds 4096 u32, `out` holds
 * gridDim.x * blockDim.x u32, `sums` holds gridDim.x u64.
 *
 * Block b, thread t of n threads (all arithmetic wraps at 32 bits):
 *   words[i] = in[(b * 7 + i) % 4096] ^ (i * 2654435761)   for i < 9216
 *   bytes[i] = (b + i * 3) & 0xff                            for i < 4096
 *   (both written by threads t, t + n, t + 2n, ...), then a barrier;
 *   s = sum over i = t, t + n, ... < 9216 of words[9215 - i]
 *     + sum over i = t, t + n, ... < 4096 of bytes[4095 - i] << (i & 7);
 *   out[b * n + t] = s; sums[b] = the sum of every thread's s of the block, in 64 bits
 *   (a shared 64-bit atomicAdd), written by thread 0 after a second barrier.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

#define WORDS 9216
#define BYTES 4096

extern "C" __global__ void big_shared(const unsigned int* in, unsigned int* out,
                                      unsigned long long* sums)
{
    __shared__ unsigned int words[WORDS];
    __shared__ unsigned char bytes[BYTES];
    __shared__ unsigned long long total;

    unsigned int t = threadIdx.x, n = blockDim.x, b = blockIdx.x;
    if (t == 0) total = 0;
    for (unsigned int i = t; i < WORDS; i += n) {
        words[i] = in[(b * 7 + i) % 4096] ^ (i * 2654435761u);
    }
    for (unsigned int i = t; i < BYTES; i += n) {
        bytes[i] = (unsigned char)(b + i * 3);
    }
    __syncthreads();
    unsigned int s = 0;
    for (unsigned int i = t; i < WORDS; i += n) {
        s += words[WORDS - 1 - i];
    }
    for (unsigned int i = t; i < BYTES; i += n) {
        s += (unsigned int)bytes[BYTES - 1 - i] << (i & 7);
    }
    atomicAdd(&total, (unsigned long long)s);
    __syncthreads();
    out[b * n + t] = s;
    if (t == 0) sums[b] = total;
}
