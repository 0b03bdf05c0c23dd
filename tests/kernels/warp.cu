/*
 * warp: warp-level intrinsics in block-uniform code (every thread of the block runs
 * them; only the final stores are guarded), defined for partial last warps too.
 *
 * warp_ops(const int* in, int n, int* out)
 *   Launch: 1-D grid of 1-D blocks of any size. t = threadIdx.x, lane = t % 32,
 *   i = blockIdx.x*blockDim.x + t, v = i < n ? in[i] : 0. A warp is 32 consecutive
 *   threads of the block; its lanes are the threads that exist (a last warp may
 *   have fewer), "active" the mask of those lanes. Each thread with i < n writes
 *   9 ints at out[9i]:
 *     [0] __activemask()
 *     [1] the sum of v over the lane's 16-lane segment (xor butterfly, width 16)
 *     [2] __ballot_sync(active, v & 1)
 *     [3] the number of lanes below this one with v & 1
 *     [4] __any_sync(active, v > 1000) | __all_sync(active, v >= 0) << 1
 *     [5] __match_any_sync(active, v & 3) (sm_70+, else a loop of __shfl_sync)
 *     [6] the sum of v over the active lanes (__reduce_add_sync on sm_80+, else a
 *         loop of __shfl_sync over the active lanes)
 *     [7] __shfl_up_sync(active, v, 1, 16): v of the lane below in the 16-lane
 *         segment, own v at a segment's first lane
 *     [8] the inclusive prefix sum of v over the 16-lane segment (Hillis-Steele:
 *         for d = 1, 2, 4, 8: x += __shfl_up_sync(active, x, d, 16) where
 *         lane % 16 >= d)
 *   All int arithmetic wraps. Segments of 16 lanes lie within the existing lanes
 *   when the block size is a multiple of 16.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void warp_ops(const int* in, int n, int* out)
{
    int t = threadIdx.x;
    int lane = t & 31;
    int i = blockIdx.x * blockDim.x + t;
    int v = i < n ? in[i] : 0;
    unsigned int active = __activemask();
    int s16 = v;
    for (int o = 8; o > 0; o >>= 1) {
        s16 += __shfl_xor_sync(active, s16, o, 16);
    }
    unsigned int b = __ballot_sync(active, v & 1);
    int rank = __popc(b & ((1u << lane) - 1u));
    int votes = __any_sync(active, v > 1000) | (__all_sync(active, v >= 0) << 1);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    unsigned int m = __match_any_sync(active, v & 3);
#else
    unsigned int m = 0;
    for (int k = 0; k < 32; ++k) {
        int x = __shfl_sync(active, v & 3, k);
        if (((active >> k) & 1u) && x == (v & 3)) {
            m |= 1u << k;
        }
    }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && defined(__CUDACC_VER_MAJOR__)
    int total = (int)__reduce_add_sync(active, (unsigned int)v);
#else
    int total = 0;
    for (int k = 0; k < 32; ++k) {
        int x = __shfl_sync(active, v, k);
        if ((active >> k) & 1u) {
            total += x;
        }
    }
#endif
    int up = __shfl_up_sync(active, v, 1, 16);
    int scan = v;
    for (int d = 1; d < 16; d <<= 1) {
        int x = __shfl_up_sync(active, scan, d, 16);
        if ((lane & 15) >= d) {
            scan += x;
        }
    }
    if (i < n) {
        int* o = out + 9 * i;
        o[0] = (int)active;
        o[1] = s16;
        o[2] = (int)b;
        o[3] = rank;
        o[4] = votes;
        o[5] = (int)m;
        o[6] = total;
        o[7] = up;
        o[8] = scan;
    }
}
