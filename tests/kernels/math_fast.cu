/*
 * math_fast: CUDA's fast-math intrinsics (PTX .approx instructions) and its
 * IEEE intrinsics with an explicit rounding mode, 20 f32 results per element.
 *
 * For each i < n (i = blockIdx.x*blockDim.x + threadIdx.x), with a = x[i] and
 * b = y[i], it writes out[20*i + k]:
 *
 *   k  intrinsic             PTX (all six compilations, no -ftz, no -use_fast_math)
 *   0  __expf(a)             mul.f32 t, a, 0f3FB8AA3B (log2 e, rounded to f32);
 *                            ex2.approx.f32 t
 *   1  __logf(a)             lg2.approx.f32 l, a; mul.f32 l, 0f3F317218 (ln 2)
 *   2  __log2f(a)            lg2.approx.f32
 *   3  __sinf(a)             sin.approx.f32
 *   4  __cosf(a)             cos.approx.f32
 *   5  __fdividef(a, b)      div.approx.f32
 *   6  rsqrtf(a)             rsqrt.approx.f32
 *   7  __saturatef(a)        cvt.sat.f32.f32
 *   8  __frcp_rn(a)          rcp.rn.f32
 *   9  __fsqrt_rn(a)         sqrt.rn.f32
 *  10  __fdiv_rn(a, b)       div.rn.f32
 *  11  __fmaf_rn(a, b, a)    fma.rn.f32
 *  12  __fadd_rz(a, b)       add.rz.f32
 *  13  __fadd_ru(a, b)       add.rp.f32
 *  14  __fmul_rd(a, b)       mul.rm.f32
 *  15  __fmul_ru(a, b)       mul.rp.f32
 *  16  __fdiv_rz(a, b)       div.rz.f32
 *  17  __fsqrt_ru(a)         sqrt.rp.f32
 *  18  __frcp_rd(a)          rcp.rm.f32
 *  19  __fmaf_rd(a, b, -a)   neg.f32; fma.rm.f32
 *
 * Slots 8-19 are exact (IEEE 754 with the given rounding, subnormals kept);
 * slots 0-6 are approximations within the PTX ISA's error bounds, and slot 7
 * clamps to [0, 1] with NaN -> +0 (PTX ISA, cvt .sat).
 *
 * clang (-nocudainc -nocudalib) has no libdevice: cuda_shim.h defines these
 * intrinsics the way libdevice does without -ftz, through the __nvvm_*
 * builtins, so clang emits the same instructions.
 *
 * Launch: 1-D grid of 1-D blocks, any sizes; threads with i >= n do nothing.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void math_fast(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float a = x[i];
    float b = y[i];
    float* o = out + 20 * (long long)i;

    o[0] = __expf(a);
    o[1] = __logf(a);
    o[2] = __log2f(a);
    o[3] = __sinf(a);
    o[4] = __cosf(a);
    o[5] = __fdividef(a, b);
    o[6] = rsqrtf(a);
    o[7] = __saturatef(a);
    o[8] = __frcp_rn(a);
    o[9] = __fsqrt_rn(a);
    o[10] = __fdiv_rn(a, b);
    o[11] = __fmaf_rn(a, b, a);
    o[12] = __fadd_rz(a, b);
    o[13] = __fadd_ru(a, b);
    o[14] = __fmul_rd(a, b);
    o[15] = __fmul_ru(a, b);
    o[16] = __fdiv_rz(a, b);
    o[17] = __fsqrt_ru(a);
    o[18] = __frcp_rd(a);
    o[19] = __fmaf_rd(a, b, -a);
}
