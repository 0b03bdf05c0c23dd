/*
 * convert: CUDA's conversion intrinsics, each one cvt with an explicit
 * rounding mode (or a bit cast), results in typed buffers.
 *
 * For each i < n (i = blockIdx.x*blockDim.x + threadIdx.x), with f = x[i]
 * (f32), g = d[i] (f64), k = ki[i] (s32) and l = li[i] (s64):
 *
 *   oi[8*i + 0] = __float2int_rn(f)          cvt.rni.s32.f32
 *   oi[8*i + 1] = __float2int_rz(f)          cvt.rzi.s32.f32
 *   oi[8*i + 2] = __float2int_rd(f)          cvt.rmi.s32.f32
 *   oi[8*i + 3] = __float2int_ru(f)          cvt.rpi.s32.f32
 *   oi[8*i + 4] = (int)__float2uint_rn(f)    cvt.rni.u32.f32
 *   oi[8*i + 5] = __double2int_rn(g)         cvt.rni.s32.f64
 *   oi[8*i + 6] = (int)__double2uint_ru(g)   cvt.rpi.u32.f64
 *   oi[8*i + 7] = __float_as_int(f)          the bits of f (mov.b32)
 *   ol[3*i + 0] = __float2ll_rd(f)           cvt.rmi.s64.f32
 *   ol[3*i + 1] = __double2ll_rn(g)          cvt.rni.s64.f64
 *   ol[3*i + 2] = (long long)__float2ull_rz(f)  cvt.rzi.u64.f32
 *   of[10*i + 0] = __double2float_rn(g)      cvt.rn.f32.f64
 *   of[10*i + 1] = __double2float_rz(g)      cvt.rz.f32.f64
 *   of[10*i + 2] = __double2float_ru(g)      cvt.rp.f32.f64
 *   of[10*i + 3] = __double2float_rd(g)      cvt.rm.f32.f64
 *   of[10*i + 4] = __int2float_rz(k)         cvt.rz.f32.s32
 *   of[10*i + 5] = __int2float_rd(k)         cvt.rm.f32.s32
 *   of[10*i + 6] = __int2float_ru(k)         cvt.rp.f32.s32
 *   of[10*i + 7] = __uint2float_rd((unsigned)k)  cvt.rm.f32.u32
 *   of[10*i + 8] = __ll2float_rn(l)          cvt.rn.f32.s64
 *   of[10*i + 9] = __ull2float_ru((unsigned long long)l)  cvt.rp.f32.u64
 *   od[2*i + 0]  = __ll2double_rz(l)         cvt.rz.f64.s64
 *   od[2*i + 1]  = __ull2double_ru((unsigned long long)l)  cvt.rp.f64.u64
 *
 * Semantics (PTX ISA, cvt): float-to-integer conversions round as named, then
 * clamp to the destination range (-inf and +inf included); NaN gives 0,
 * except for an f64 source or a 64-bit destination, where it gives
 * 1 << (width - 1) (0x80000000 / 0x8000000000000000). Float and
 * integer-to-float conversions round exactly as named (IEEE 754), subnormals
 * kept, overflow to the largest finite value or infinity as the rounding
 * direction says.
 *
 * clang (-nocudainc -nocudalib): cuda_shim.h maps each intrinsic to its
 * __nvvm_* builtin, as libdevice does without -ftz.
 *
 * Launch: 1-D grid of 1-D blocks, any sizes; threads with i >= n do nothing.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void convert(const float* x, const double* d, const int* ki,
                                   const long long* li, int* oi, long long* ol, float* of,
                                   double* od, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float f = x[i];
    double g = d[i];
    int k = ki[i];
    long long l = li[i];

    int* pi = oi + 8 * (long long)i;
    pi[0] = __float2int_rn(f);
    pi[1] = __float2int_rz(f);
    pi[2] = __float2int_rd(f);
    pi[3] = __float2int_ru(f);
    pi[4] = (int)__float2uint_rn(f);
    pi[5] = __double2int_rn(g);
    pi[6] = (int)__double2uint_ru(g);
    pi[7] = __float_as_int(f);

    long long* pl = ol + 3 * (long long)i;
    pl[0] = __float2ll_rd(f);
    pl[1] = __double2ll_rn(g);
    pl[2] = (long long)__float2ull_rz(f);

    float* pf = of + 10 * (long long)i;
    pf[0] = __double2float_rn(g);
    pf[1] = __double2float_rz(g);
    pf[2] = __double2float_ru(g);
    pf[3] = __double2float_rd(g);
    pf[4] = __int2float_rz(k);
    pf[5] = __int2float_rd(k);
    pf[6] = __int2float_ru(k);
    pf[7] = __uint2float_rd((unsigned int)k);
    pf[8] = __ll2float_rn(l);
    pf[9] = __ull2float_ru((unsigned long long)l);

    double* pd = od + 2 * (long long)i;
    pd[0] = __ll2double_rz(l);
    pd[1] = __ull2double_ru((unsigned long long)l);
}
