// Shared-memory races for racecheck (tests/check_e2e.rs): two kernels with a race
// each, in the forms CUDA programs have them, and three correct kernels that must
// report nothing. Launch each with blocks of 64 threads (warp_sum_*: 32), any grid.
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

// out[64 * block + t] = 3 * (63 - t) + 1, read from the word thread 63 - t stores,
// with no __syncthreads() between the store and the load: thread t and thread 63 - t
// are in different warps, so the load races with the store.
extern "C" __global__ void missing_syncthreads(unsigned int* out) {
    __shared__ unsigned int s[64];
    unsigned int t = threadIdx.x;
    s[t] = 3u * t + 1u;
    out[blockIdx.x * 64u + t] = s[63u - t];
}

// The same with the barrier.
extern "C" __global__ void with_syncthreads(unsigned int* out) {
    __shared__ unsigned int s[64];
    unsigned int t = threadIdx.x;
    s[t] = 3u * t + 1u;
    __syncthreads();
    out[blockIdx.x * 64u + t] = s[63u - t];
}

// out[block] = the sum of in[32 * block .. 32 * block + 32], by a warp-synchronous
// reduction in the style of code written for pre-Volta GPUs: volatile shared memory
// and no __syncwarp(), so thread t's read of s[t + 8] races with thread t + 8's
// write of it, both in warp 0.
extern "C" __global__ void warp_sum_unsynced(const unsigned int* in, unsigned int* out) {
    volatile __shared__ unsigned int s[32];
    unsigned int t = threadIdx.x;
    s[t] = in[blockIdx.x * 32u + t];
    __syncthreads();
    if (t < 16) {
        s[t] += s[t + 16];
        s[t] += s[t + 8];
        s[t] += s[t + 4];
        s[t] += s[t + 2];
        s[t] += s[t + 1];
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

// The same sum as NVIDIA's Volta guide fixes it: each step reads, __syncwarp(),
// writes, __syncwarp().
extern "C" __global__ void warp_sum_synced(const unsigned int* in, unsigned int* out) {
    __shared__ unsigned int s[32];
    unsigned int t = threadIdx.x;
    s[t] = in[blockIdx.x * 32u + t];
    __syncwarp();
    unsigned int v = s[t];
#pragma unroll
    for (unsigned int k = 16; k > 0; k >>= 1) {
        if (t < k) v += s[t + k];
        __syncwarp();
        if (t < k) s[t] = v;
        __syncwarp();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

// out[64 * block + t] = (t ^ 1) + (a count of 64 from shared atomics): neighbouring
// threads write neighbouring bytes of one word (no race: different bytes), and every
// thread adds to one counter atomically (no race: atomics).
extern "C" __global__ void bytes_and_atomics(unsigned int* out) {
    __shared__ unsigned char b[64];
    __shared__ unsigned int count;
    unsigned int t = threadIdx.x;
    if (t == 0) count = 0;
    b[t] = (unsigned char)t;
    __syncthreads();
    atomicAdd(&count, 1u);
    __syncthreads();
    out[blockIdx.x * 64u + t] = b[t ^ 1u] + count;
}
