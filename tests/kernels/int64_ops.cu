/*
 * int64_ops: a battery of 64-bit integer operations, 8 results per element.
 *
 * For each i < n (i = blockIdx.x*blockDim.x + threadIdx.x), with
 *   a  = A[i]                        (u64)
 *   sb = B[i]                        (s64)
 *   b  = (u64)sb                     (same bits)
 *   sa = (s64)a                      (same bits)
 *   d  = b | 1                       (odd, hence non-zero, divisor)
 * all arithmetic wrapping modulo 2^64, it writes:
 *   out[8*i+0] = a + b
 *   out[8*i+1] = (a - b) ^ (a & ~b)
 *   out[8*i+2] = (a * b) + (a | b)                      (low 64 bits of the product)
 *   out[8*i+3] = __umul64hi(a, b)                       (high 64 bits of the
 *                                                        unsigned 128-bit product)
 *   out[8*i+4] = (a << (b & 63)) ^ (a >> ((b >> 8) & 63))   (logical shifts)
 *   out[8*i+5] = (u64)(sb >> (a & 63))                  (arithmetic shift right)
 *   out[8*i+6] = (a / d) ^ (u64)smax(sb, sa)            (unsigned division,
 *                                                        signed 64-bit max)
 *   out[8*i+7] = (a % d) + (u64)smin(sb, sa) + (a > b ? a : ~b)
 *                                                       (unsigned remainder,
 *                                                        signed 64-bit min,
 *                                                        unsigned compare-select)
 *
 * Launch: 1-D grid of 1-D blocks, any sizes; threads with i >= n do nothing.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

static __device__ __forceinline__ long long smax64(long long x, long long y)
{
    return x > y ? x : y;
}

static __device__ __forceinline__ long long smin64(long long x, long long y)
{
    return x < y ? x : y;
}

extern "C" __global__ void int64_ops(const unsigned long long* A, const long long* B,
                                     unsigned long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    unsigned long long a = A[i];
    long long sb = B[i];
    unsigned long long b = (unsigned long long)sb;
    long long sa = (long long)a;
    unsigned long long d = b | 1ull;
    unsigned long long* o = out + 8 * (long long)i;

    o[0] = a + b;
    o[1] = (a - b) ^ (a & ~b);
    o[2] = (a * b) + (a | b);
    o[3] = __umul64hi(a, b);
    o[4] = (a << (b & 63)) ^ (a >> ((b >> 8) & 63));
    o[5] = (unsigned long long)(sb >> (a & 63));
    o[6] = (a / d) ^ (unsigned long long)smax64(sb, sa);
    o[7] = (a % d) + (unsigned long long)smin64(sb, sa) + (a > b ? a : ~b);
}
