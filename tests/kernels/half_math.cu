/*
 * half_math: cuda_fp16.h / cuda_bf16.h arithmetic and conversions on raw
 * 16-bit inputs, 20 16-bit results and 2 f32 results per element.
 *
 * For each i < n (i = blockIdx.x*blockDim.x + threadIdx.x), with a, b, c the
 * bits A[i], B[i], C[i] read as f16 (and ba, bb the bits A[i], B[i] read as
 * bf16), f0 = F[2*i], f1 = F[2*i+1] (f32), it writes oh[20*i + k]
 * (raw 16-bit results) and of[2*i + k]:
 *
 *   oh  0  __hadd(a, b)              f16, round to nearest even
 *   oh  1  __hsub(a, b)
 *   oh  2  __hmul(a, b)
 *   oh  3  __hfma(a, b, c)           one rounding
 *   oh  4  __hneg(a)
 *   oh  5  __habs(a)
 *   oh  6  __hmin(a, b)              NaN loses to a number; -0 < +0
 *   oh  7  __hmax(a, b)
 *   oh  8  __float2half_rn(f0)
 *   oh  9  __float2half_rz(f0)
 *   oh 10, 11  __hadd2({a, b}, {c, a})           (low, high) = (a + c, b + a)
 *   oh 12, 13  __hfma2({a, b}, {b, c}, {c, a})   (low, high) = (a*b + c, b*c + a)
 *   oh 14, 15  __float22half2_rn({f0, f1})       (low, high) = (f16(f0), f16(f1))
 *   oh 16  __float2bfloat16_rn(f0)   bf16, round to nearest even
 *   oh 17  __hadd(ba, bb)            bf16 arithmetic, one rounding
 *   oh 18  __hmul(ba, bb)
 *   oh 19  __hsub(ba, bb)
 *   of 0   __half2float(a)           exact
 *   of 1   __bfloat162float(ba)      exact
 *
 * Every result is the correctly rounded IEEE value (subnormals kept, overflow
 * to infinity); NaN results are some NaN (the payload depends on the path).
 *
 * What the compilers make of it (the headers pick a path per architecture):
 *   - f16 arithmetic is inline PTX from the headers from sm_53 on
 *     (add.f16, fma.rn.f16, add.f16x2, fma.rn.f16x2, neg.f16, abs.f16, and
 *     from sm_80 min.f16/max.f16; before sm_80 min/max go through
 *     min.f32/max.f32, which is exact).
 *   - NVRTC compute_52 has no f16 arithmetic: the headers compute in f32 and
 *     round once to f16, which is exact for + - * (f32 has more than
 *     2*11+2 bits), but they do not define __hfma/__hfma2 there at all. For
 *     __CUDA_ARCH__ < 530 this file therefore computes the fma itself with
 *     the same result as fma.rn.f16 (see fma_f16_exact below).
 *   - bf16 is native only from sm_80 (fma.rn.bf16 with 1.0 / -0.0 / -1.0,
 *     cvt.rn.bf16.f32) and sm_90 (add/sub/mul.bf16, cvt.f32.bf16); before,
 *     the headers compute in f32 and round to bf16 in software (NaN ->
 *     0x7fff), which is exact for + - * as well.
 *   - clang (-nocudainc): cuda_shim.h defines the types and functions the way
 *     the headers do for sm_70 (the same inline PTX for f16, f32 emulation
 *     for bf16).
 *   - nvcc and NVRTC read CUDA 13's cuda_fp16.h / cuda_bf16.h (NVRTC through
 *     --include-path, see scripts/gen-ptx).
 *
 * Launch: 1-D grid of 1-D blocks, any sizes; threads with i >= n do nothing.
 */
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#else
#include "cuda_shim.h"
#endif

#if __CUDA_ARCH__ < 530
/* fma.rn.f16 without f16 arithmetic. p = a*b is exact in f32 (11 x 11 bits);
 * TwoSum gives s + e == p + c exactly. Rounding s + e to f32 *to odd* (s, or
 * the neighbour of s towards e when s is even and e != 0) and then to f16 to
 * nearest gives the correctly rounded f16 result, because f32 has at least
 * two more bits than f16 (the round-to-odd property). Infinities and NaN take
 * the plain path; s cannot be 0 while e != 0. */
static __device__ __forceinline__ __half fma_f16_exact(__half a, __half b, __half c)
{
    float p = __half2float(a) * __half2float(b);
    float fc = __half2float(c);
    float s = p + fc;
    float bp = s - fc;
    float e = (p - bp) + (fc - (s - bp));
    unsigned int u = __float_as_uint(s);
    if ((u & 0x7f800000u) != 0x7f800000u && e != 0.0f && (u & 1u) == 0u) {
        u = ((e > 0.0f) == (s > 0.0f)) ? u + 1u : u - 1u;
    }
    return __float2half_rn(__uint_as_float(u));
}
#endif

extern "C" __global__ void half_math(const unsigned short* A, const unsigned short* B,
                                     const unsigned short* C, const float* F,
                                     unsigned short* oh, float* of, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    __half a = __ushort_as_half(A[i]);
    __half b = __ushort_as_half(B[i]);
    __half c = __ushort_as_half(C[i]);
    float f0 = F[2 * i];
    float f1 = F[2 * i + 1];
    unsigned short* o = oh + 20 * (long long)i;

    o[0] = __half_as_ushort(__hadd(a, b));
    o[1] = __half_as_ushort(__hsub(a, b));
    o[2] = __half_as_ushort(__hmul(a, b));
#if __CUDA_ARCH__ >= 530
    o[3] = __half_as_ushort(__hfma(a, b, c));
#else
    o[3] = __half_as_ushort(fma_f16_exact(a, b, c));
#endif
    o[4] = __half_as_ushort(__hneg(a));
    o[5] = __half_as_ushort(__habs(a));
    o[6] = __half_as_ushort(__hmin(a, b));
    o[7] = __half_as_ushort(__hmax(a, b));
    o[8] = __half_as_ushort(__float2half_rn(f0));
    o[9] = __half_as_ushort(__float2half_rz(f0));

    __half2 s = __hadd2(__halves2half2(a, b), __halves2half2(c, a));
    o[10] = __half_as_ushort(__low2half(s));
    o[11] = __half_as_ushort(__high2half(s));
#if __CUDA_ARCH__ >= 530
    __half2 t = __hfma2(__halves2half2(a, b), __halves2half2(b, c), __halves2half2(c, a));
#else
    __half2 t = __halves2half2(fma_f16_exact(a, b, c), fma_f16_exact(b, c, a));
#endif
    o[12] = __half_as_ushort(__low2half(t));
    o[13] = __half_as_ushort(__high2half(t));
    __half2 u = __float22half2_rn(make_float2(f0, f1));
    o[14] = __half_as_ushort(__low2half(u));
    o[15] = __half_as_ushort(__high2half(u));

    __nv_bfloat16 ba = __ushort_as_bfloat16(A[i]);
    __nv_bfloat16 bb = __ushort_as_bfloat16(B[i]);
    o[16] = __bfloat16_as_ushort(__float2bfloat16_rn(f0));
    o[17] = __bfloat16_as_ushort(__hadd(ba, bb));
    o[18] = __bfloat16_as_ushort(__hmul(ba, bb));
    o[19] = __bfloat16_as_ushort(__hsub(ba, bb));

    of[2 * i] = __half2float(a);
    of[2 * i + 1] = __bfloat162float(ba);
}
