/*
 * warp_divergent: warp collectives in control flow that differs across the warps
 * of a block (and within warps, with exact member masks): the patterns that need
 * predication when warps are emulated with block-wide barriers.
 *
 * divergent(const int* in, int n, int* out, int* block_out)
 *   Launch: 1-D grid of 1-D blocks whose size is a multiple of 32, at most 1024.
 *   t = threadIdx.x, lane = t % 32, warp = t / 32, i = blockIdx.x*blockDim.x + t,
 *   v = i < n ? in[i] : 0, FULL = 0xffffffff. All int arithmetic wraps.
 *   block_out[blockIdx.x] = the sum of v over the block, by the usual two stages: a
 *     full-warp shuffle-down sum, lane 0 stores it in __shared__ partial[warp],
 *     __syncthreads, then only warp 0 (a branch the other warps skip) sums
 *     partial[0..nwarps) with another shuffle-down sum, and thread 0 stores it.
 *   For i < n, out[3i..3i+3] =
 *     [0] with k = v & 7: acc = 0; while (__any_sync(FULL, k > 0)) { if (k > 0)
 *         { acc += k; --k; } }: so k(k+1)/2 of the initial k
 *     [1] the number of iterations of that loop: the largest v & 7 in the warp
 *     [2] acc2 = 0; for j in 0..5: m = __ballot_sync(FULL, j < lane % 5); if
 *         (j < lane % 5) { acc2 += __popc(__ballot_sync(m, (v >> j) & 1))
 *         + __shfl_sync(m, v, lowest lane of m) }
 *
 * early(const int* in, int n, int* out)
 *   Launch: 1-D grid of 1-D blocks of any size. mask = __ballot_sync(FULL, i < n)
 *   over the warp's lanes, then threads with i >= n return; the others write
 *   out[2i] = the number of lanes in mask with odd v (__popc(__ballot_sync(mask,
 *   v & 1))) and out[2i+1] = v of the warp's lane 0 (__shfl_sync(mask, v, 0)).
 *   (The lanes with i < n are a prefix of each warp, so lane 0 is in mask.)
 *   Blocks must be a multiple of 32 threads (FULL names every lane).
 *
 * aggregate(const int* in, int n, int* out, int* counter)
 *   Stream compaction with warp-aggregated atomics: each thread with i < n and
 *   in[i] > 0 (a branch that differs within warps) takes m = __activemask() (the
 *   lanes in the branch), the lowest lane of m adds __popc(m) to *counter with one
 *   atomicAdd, broadcasts the old value with __shfl_sync(m, ..., leader), and each
 *   lane writes in[i] to out[old + the number of lanes of m below it]. Afterwards
 *   *counter (initially 0) is the number of positive inputs and out[0..*counter)
 *   holds them in some order.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

#define FULL 0xffffffffu

static __device__ __forceinline__ int warp_sum(int x)
{
    for (int o = 16; o > 0; o >>= 1) {
        x += __shfl_down_sync(FULL, x, o);
    }
    return x;
}

extern "C" __global__ void divergent(const int* in, int n, int* out, int* block_out)
{
    __shared__ int partial[32];
    int t = threadIdx.x;
    int lane = t & 31;
    int warp = t >> 5;
    int i = blockIdx.x * blockDim.x + t;
    int v = i < n ? in[i] : 0;

    int s = warp_sum(v);
    if (lane == 0) {
        partial[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        int x = t < (int)(blockDim.x >> 5) ? partial[t] : 0;
        x = warp_sum(x);
        if (t == 0) {
            block_out[blockIdx.x] = x;
        }
    }

    int k = v & 7;
    int acc = 0;
    int iters = 0;
    while (__any_sync(FULL, k > 0)) {
        if (k > 0) {
            acc += k;
            --k;
        }
        ++iters;
    }

    int acc2 = 0;
    for (int j = 0; j < 5; ++j) {
        unsigned int m = __ballot_sync(FULL, j < lane % 5);
        if (j < lane % 5) {
            int low = __popc((m & (0u - m)) - 1u);
            acc2 += __popc(__ballot_sync(m, (v >> j) & 1)) + __shfl_sync(m, v, low);
        }
    }
    if (i < n) {
        out[3 * i] = acc;
        out[3 * i + 1] = iters;
        out[3 * i + 2] = acc2;
    }
}

extern "C" __global__ void early(const int* in, int n, int* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int mask = __ballot_sync(FULL, i < n);
    if (i >= n) {
        return;
    }
    int v = in[i];
    out[2 * i] = __popc(__ballot_sync(mask, v & 1));
    out[2 * i + 1] = __shfl_sync(mask, v, 0);
}

extern "C" __global__ void aggregate(const int* in, int n, int* out, int* counter)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = i < n ? in[i] : 0;
    if (v > 0) {
        unsigned int m = __activemask();
        int leader = __popc((m & (0u - m)) - 1u);
        int base = 0;
        if (lane == leader) {
            base = atomicAdd(counter, __popc(m));
        }
        base = __shfl_sync(m, base, leader);
        out[base + __popc(m & ((1u << lane) - 1u))] = v;
    }
}
