/*
 * cuda_shim.h - the minimum of the CUDA device environment needed by the
 * kernels in this directory, for clang in `-nocudainc -nocudalib` mode.
 *
 * nvcc and NVRTC define `__CUDACC__` and provide all of this themselves, so
 * every definition here is guarded by `#ifndef __CUDACC__` (clang only defines
 * `__CUDACC__` from its CUDA runtime wrapper header, which -nocudainc skips).
 * The kernels additionally only include this header when `__CUDACC__` is
 * undefined, so nvcc/NVRTC never even open it.
 *
 * What it provides:
 *   __global__ __device__ __shared__ __host__   (as clang CUDA attributes)
 *   __forceinline__ __noinline__                (as function attributes)
 *   uint3 / dim3, threadIdx blockIdx blockDim gridDim
 *       (each read goes through the __nvvm_read_ptx_sreg_* builtins, like
 *        clang's own __clang_cuda_builtin_vars.h; unused components are
 *        removed by the optimiser since the reads are side-effect free)
 *   __syncthreads()    is already a clang NVPTX builtin (bar.sync 0)
 *   __umul64hi(a, b)   high 64 bits of the 128-bit product, via __int128
 *                      (libdevice's __nv_umul64hi is unavailable with
 *                      -nocudalib; LLVM lowers this to mul.hi.u64)
 *   fast-math and rounding intrinsics (__expf, __logf, __log2f, __sinf,
 *   __cosf, __fdividef, rsqrtf, __saturatef, __f{add,mul,div,sqrt,rcp,ma}_r?)
 *                      as libdevice defines them without -ftz, through the
 *                      matching __nvvm_* builtins (so the same .approx and
 *                      directed-rounding instructions come out)
 *   conversion intrinsics (__float2int_rn, __double2float_rz, __int2float_rd,
 *   __float_as_int, ...) likewise, through the __nvvm_* conversion builtins
 *   __half, __half2, __nv_bfloat16, float2 and the cuda_fp16.h / cuda_bf16.h
 *                      functions half_math.cu uses, written like CUDA's headers
 *                      for sm_70: f16 arithmetic as the same inline PTX, bf16
 *                      emulated in f32 with the headers' software rounding
 *   atomicAdd/Sub/Max/Min/And/Or/Xor/Exch/CAS/Inc/Dec (the overloads
 *   atomics.cu uses) and __threadfence(), through the same __nvvm_atom_*_gen_*
 *   and __nvvm_membar_gl builtins as clang's __clang_cuda_device_functions.h;
 *   __float_as_uint, __uint_as_float, __double_as_longlong,
 *   __longlong_as_double as bit casts
 *   printf, malloc, free (declarations) and __trap() (__builtin_trap)
 *   __syncthreads_count (bar.red.popc, through __nvvm_bar0_popc)
 *   warp intrinsics: __activemask, __syncwarp, __shfl{,_xor,_up,_down}_sync, __ballot_sync,
 *   __any_sync, __all_sync, __match_any_sync, __popc
 *   SIMD intrinsics: __vabsdiff{u,s}{2,4} and __vsad{u,s}{2,4}, as the
 *                      vabsdiff2/vabsdiff4 video instructions (`.add` for sums)
 *   texture and surface objects: cudaTextureObject_t / cudaSurfaceObject_t
 *                      (64-bit handles), float4 / int4 / uint4, the
 *                      cudaSurfaceBoundaryMode enum, and the instantiations
 *                      texture.cu uses of tex1D, tex2D, tex3D, tex2DLayered,
 *                      tex1Dfetch, surf2Dread and surf2Dwrite, as the same
 *                      inline `tex.*` / `suld.b.*` / `sust.b.*` PTX nvcc emits
 * Everything else is `static` and inline: a kernel that does not use a function
 * gets no code from it.
 */
#ifndef PTXVK_CUDA_SHIM_H
#define PTXVK_CUDA_SHIM_H

#ifndef __CUDACC__

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))

struct uint3 {
    unsigned int x, y, z;
};
typedef uint3 dim3;

static __device__ __forceinline__ uint3 __ptxvk_threadIdx(void) {
    uint3 v = {(unsigned int)__nvvm_read_ptx_sreg_tid_x(),
               (unsigned int)__nvvm_read_ptx_sreg_tid_y(),
               (unsigned int)__nvvm_read_ptx_sreg_tid_z()};
    return v;
}
static __device__ __forceinline__ uint3 __ptxvk_blockIdx(void) {
    uint3 v = {(unsigned int)__nvvm_read_ptx_sreg_ctaid_x(),
               (unsigned int)__nvvm_read_ptx_sreg_ctaid_y(),
               (unsigned int)__nvvm_read_ptx_sreg_ctaid_z()};
    return v;
}
static __device__ __forceinline__ dim3 __ptxvk_blockDim(void) {
    dim3 v = {(unsigned int)__nvvm_read_ptx_sreg_ntid_x(),
              (unsigned int)__nvvm_read_ptx_sreg_ntid_y(),
              (unsigned int)__nvvm_read_ptx_sreg_ntid_z()};
    return v;
}
static __device__ __forceinline__ dim3 __ptxvk_gridDim(void) {
    dim3 v = {(unsigned int)__nvvm_read_ptx_sreg_nctaid_x(),
              (unsigned int)__nvvm_read_ptx_sreg_nctaid_y(),
              (unsigned int)__nvvm_read_ptx_sreg_nctaid_z()};
    return v;
}

#define threadIdx (__ptxvk_threadIdx())
#define blockIdx (__ptxvk_blockIdx())
#define blockDim (__ptxvk_blockDim())
#define gridDim (__ptxvk_gridDim())

static __device__ __forceinline__ unsigned long long
__umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * (unsigned __int128)b) >> 64);
}

/* ---- fast-math intrinsics (libdevice's __nv_fast_* without -ftz) ---- */

/* __expf(x) = ex2.approx(x * log2(e)), the product rounded to f32 first. */
static __device__ __forceinline__ float __expf(float x) {
    return __nvvm_ex2_approx_f(x * 0x1.715476p+0f);
}
/* __logf(x) = lg2.approx(x) * ln(2). */
static __device__ __forceinline__ float __logf(float x) {
    return __nvvm_lg2_approx_f(x) * 0x1.62e430p-1f;
}
static __device__ __forceinline__ float __log2f(float x) { return __nvvm_lg2_approx_f(x); }
static __device__ __forceinline__ float __sinf(float x) { return __nvvm_sin_approx_f(x); }
static __device__ __forceinline__ float __cosf(float x) { return __nvvm_cos_approx_f(x); }
static __device__ __forceinline__ float __fdividef(float x, float y) {
    return __nvvm_div_approx_f(x, y);
}
static __device__ __forceinline__ float rsqrtf(float x) { return __nvvm_rsqrt_approx_f(x); }
static __device__ __forceinline__ float __saturatef(float x) { return __nvvm_saturate_f(x); }

/* ---- IEEE rounding intrinsics ---- */

static __device__ __forceinline__ float __frcp_rn(float x) { return __nvvm_rcp_rn_f(x); }
static __device__ __forceinline__ float __frcp_rd(float x) { return __nvvm_rcp_rm_f(x); }
static __device__ __forceinline__ float __fsqrt_rn(float x) { return __nvvm_sqrt_rn_f(x); }
static __device__ __forceinline__ float __fsqrt_ru(float x) { return __nvvm_sqrt_rp_f(x); }
static __device__ __forceinline__ float __fdiv_rn(float x, float y) { return __nvvm_div_rn_f(x, y); }
static __device__ __forceinline__ float __fdiv_rz(float x, float y) { return __nvvm_div_rz_f(x, y); }
static __device__ __forceinline__ float __fadd_rz(float x, float y) { return __nvvm_add_rz_f(x, y); }
static __device__ __forceinline__ float __fadd_ru(float x, float y) { return __nvvm_add_rp_f(x, y); }
static __device__ __forceinline__ float __fmul_rd(float x, float y) { return __nvvm_mul_rm_f(x, y); }
static __device__ __forceinline__ float __fmul_ru(float x, float y) { return __nvvm_mul_rp_f(x, y); }
static __device__ __forceinline__ float __fmaf_rn(float x, float y, float z) {
    return __nvvm_fma_rn_f(x, y, z);
}
static __device__ __forceinline__ float __fmaf_rd(float x, float y, float z) {
    return __nvvm_fma_rm_f(x, y, z);
}

/* ---- conversion intrinsics ---- */

static __device__ __forceinline__ int __float2int_rn(float x) { return __nvvm_f2i_rn(x); }
static __device__ __forceinline__ int __float2int_rz(float x) { return __nvvm_f2i_rz(x); }
static __device__ __forceinline__ int __float2int_rd(float x) { return __nvvm_f2i_rm(x); }
static __device__ __forceinline__ int __float2int_ru(float x) { return __nvvm_f2i_rp(x); }
static __device__ __forceinline__ unsigned int __float2uint_rn(float x) { return __nvvm_f2ui_rn(x); }
static __device__ __forceinline__ long long __float2ll_rd(float x) { return __nvvm_f2ll_rm(x); }
static __device__ __forceinline__ unsigned long long __float2ull_rz(float x) {
    return __nvvm_f2ull_rz(x);
}
static __device__ __forceinline__ int __double2int_rn(double x) { return __nvvm_d2i_rn(x); }
static __device__ __forceinline__ unsigned int __double2uint_ru(double x) { return __nvvm_d2ui_rp(x); }
static __device__ __forceinline__ long long __double2ll_rn(double x) { return __nvvm_d2ll_rn(x); }
static __device__ __forceinline__ float __double2float_rn(double x) { return __nvvm_d2f_rn(x); }
static __device__ __forceinline__ float __double2float_rz(double x) { return __nvvm_d2f_rz(x); }
static __device__ __forceinline__ float __double2float_rd(double x) { return __nvvm_d2f_rm(x); }
static __device__ __forceinline__ float __double2float_ru(double x) { return __nvvm_d2f_rp(x); }
/* Not __nvvm_i2f_rz / __nvvm_ll2d_rz: LLVM 14's NVPTX instcombine turns those
 * two into sitofp, which rounds to nearest (cvt.rn). Same instruction, by hand. */
static __device__ __forceinline__ float __int2float_rz(int x) {
    float r;
    asm("cvt.rz.f32.s32 %0, %1;" : "=f"(r) : "r"(x));
    return r;
}
static __device__ __forceinline__ float __int2float_rd(int x) { return __nvvm_i2f_rm(x); }
static __device__ __forceinline__ float __int2float_ru(int x) { return __nvvm_i2f_rp(x); }
static __device__ __forceinline__ float __uint2float_rd(unsigned int x) { return __nvvm_ui2f_rm(x); }
static __device__ __forceinline__ float __ll2float_rn(long long x) { return __nvvm_ll2f_rn(x); }
static __device__ __forceinline__ float __ull2float_ru(unsigned long long x) {
    return __nvvm_ull2f_rp(x);
}
static __device__ __forceinline__ double __ll2double_rz(long long x) {
    double r;
    asm("cvt.rz.f64.s64 %0, %1;" : "=d"(r) : "l"(x));
    return r;
}
static __device__ __forceinline__ double __ull2double_ru(unsigned long long x) {
    return __nvvm_ull2d_rp(x);
}
static __device__ __forceinline__ int __float_as_int(float x) { return __builtin_bit_cast(int, x); }

/* ---- half precision: the subset of cuda_fp16.h / cuda_bf16.h in use ----
 * Types hold the raw bits. For sm_70 CUDA's headers write f16 arithmetic as
 * inline PTX (copied below, same text) and emulate bf16 in f32: f32 result,
 * then the headers' software round-to-nearest-even (NaN -> 0x7fff). */

struct __half {
    unsigned short __x;
};
struct __attribute__((aligned(4))) __half2 {
    unsigned int __u; /* low 16 bits: .x, high 16 bits: .y */
};
struct __nv_bfloat16 {
    unsigned short __x;
};
struct __attribute__((aligned(8))) float2 {
    float x, y;
};

static __device__ __forceinline__ float2 make_float2(float x, float y) {
    float2 v = {x, y};
    return v;
}
static __device__ __forceinline__ __half __ushort_as_half(unsigned short u) {
    __half h = {u};
    return h;
}
static __device__ __forceinline__ unsigned short __half_as_ushort(__half h) { return h.__x; }
static __device__ __forceinline__ float __half2float(__half a) {
    float f;
    asm("{  cvt.f32.f16 %0, %1;}\n" : "=f"(f) : "h"(a.__x));
    return f;
}
static __device__ __forceinline__ __half __float2half_rn(float a) {
    __half r;
    asm("{  cvt.rn.f16.f32 %0, %1;}\n" : "=h"(r.__x) : "f"(a));
    return r;
}
static __device__ __forceinline__ __half __float2half_rz(float a) {
    __half r;
    asm("{  cvt.rz.f16.f32 %0, %1;}\n" : "=h"(r.__x) : "f"(a));
    return r;
}
#define PTXVK_HALF_BINARY(fn, op)                                                   \
    static __device__ __forceinline__ __half fn(__half a, __half b) {              \
        __half r;                                                                   \
        asm("{" op " %0,%1,%2;\n}" : "=h"(r.__x) : "h"(a.__x), "h"(b.__x));         \
        return r;                                                                   \
    }
PTXVK_HALF_BINARY(__hadd, "add.f16")
PTXVK_HALF_BINARY(__hsub, "sub.f16")
PTXVK_HALF_BINARY(__hmul, "mul.f16")
#undef PTXVK_HALF_BINARY
static __device__ __forceinline__ __half __hfma(__half a, __half b, __half c) {
    __half r;
    asm("{fma.rn.f16 %0,%1,%2,%3;\n}" : "=h"(r.__x) : "h"(a.__x), "h"(b.__x), "h"(c.__x));
    return r;
}
static __device__ __forceinline__ __half __hneg(__half a) {
    __half r;
    asm("{neg.f16 %0,%1;\n}" : "=h"(r.__x) : "h"(a.__x));
    return r;
}
static __device__ __forceinline__ __half __habs(__half a) {
    __half r;
    asm("{abs.f16 %0,%1;\n}" : "=h"(r.__x) : "h"(a.__x));
    return r;
}
/* Before sm_80 the headers take min/max in f32 (min.f32/max.f32: NaN loses,
 * -0.0 < +0.0) and convert back, which is exact. */
static __device__ __forceinline__ __half __hmin(__half a, __half b) {
    float r;
    asm("{min.f32 %0,%1,%2;\n}" : "=f"(r) : "f"(__half2float(a)), "f"(__half2float(b)));
    return __float2half_rn(r);
}
static __device__ __forceinline__ __half __hmax(__half a, __half b) {
    float r;
    asm("{max.f32 %0,%1,%2;\n}" : "=f"(r) : "f"(__half2float(a)), "f"(__half2float(b)));
    return __float2half_rn(r);
}
static __device__ __forceinline__ __half2 __halves2half2(__half a, __half b) {
    __half2 r;
    asm("{  mov.b32 %0, {%1,%2};}\n" : "=r"(r.__u) : "h"(a.__x), "h"(b.__x));
    return r;
}
static __device__ __forceinline__ __half __low2half(__half2 a) {
    __half r;
    asm("{.reg .f16 low,high;\n"
        " mov.b32 {low,high}, %1;\n"
        " mov.b16 %0, low;}"
        : "=h"(r.__x)
        : "r"(a.__u));
    return r;
}
static __device__ __forceinline__ __half __high2half(__half2 a) {
    __half r;
    asm("{.reg .f16 low,high;\n"
        " mov.b32 {low,high}, %1;\n"
        " mov.b16 %0, high;}"
        : "=h"(r.__x)
        : "r"(a.__u));
    return r;
}
static __device__ __forceinline__ __half2 __hadd2(__half2 a, __half2 b) {
    __half2 r;
    asm("{add.f16x2 %0,%1,%2;\n}" : "=r"(r.__u) : "r"(a.__u), "r"(b.__u));
    return r;
}
static __device__ __forceinline__ __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
    __half2 r;
    asm("{fma.rn.f16x2 %0,%1,%2,%3;\n}" : "=r"(r.__u) : "r"(a.__u), "r"(b.__u), "r"(c.__u));
    return r;
}
static __device__ __forceinline__ __half2 __float22half2_rn(float2 a) {
    __half2 r;
    asm("{.reg .f16 low,high;\n"
        "  cvt.rn.f16.f32 low, %1;\n"
        "  cvt.rn.f16.f32 high, %2;\n"
        "  mov.b32 %0, {low,high};}\n"
        : "=r"(r.__u)
        : "f"(a.x), "f"(a.y));
    return r;
}

static __device__ __forceinline__ __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
    __nv_bfloat16 h = {u};
    return h;
}
static __device__ __forceinline__ unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) {
    return h.__x;
}
static __device__ __forceinline__ float __bfloat162float(__nv_bfloat16 a) {
    float f;
    asm("{ mov.b32 %0, {0,%1};}\n" : "=f"(f) : "h"(a.__x));
    return f;
}
/* cuda_bf16.hpp before sm_80: NaN -> 0x7fff, else round to nearest even on
 * the bits. */
static __device__ __forceinline__ __nv_bfloat16 __float2bfloat16_rn(float a) {
    unsigned int x = __builtin_bit_cast(unsigned int, a);
    __nv_bfloat16 r;
    if ((x & 0x7fffffffU) > 0x7f800000U) {
        r.__x = 0x7fffU;
        return r;
    }
    unsigned int remainder = x << 16U;
    r.__x = (unsigned short)(x >> 16U);
    if ((remainder > 0x80000000U) || ((remainder == 0x80000000U) && ((r.__x & 0x1U) != 0U))) {
        r.__x++;
    }
    return r;
}
static __device__ __forceinline__ __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16_rn(__nvvm_fma_rn_f(__bfloat162float(a), 1.0f, __bfloat162float(b)));
}
static __device__ __forceinline__ __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16_rn(__nvvm_fma_rn_f(__bfloat162float(b), -1.0f, __bfloat162float(a)));
}
static __device__ __forceinline__ __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16_rn(__nvvm_fma_rn_f(__bfloat162float(a), __bfloat162float(b), -0.0f));
}

/* ---- atomics: the overloads atomics.cu uses ----
 * As clang's __clang_cuda_device_functions.h defines CUDA's __iAtomicAdd,
 * __uAtomicAdd, __ullAtomicMax, ...: generic-address __nvvm_atom_*_gen_*
 * builtins (LLVM infers .global / .shared where it can). */

static __device__ __forceinline__ void __threadfence(void) { __nvvm_membar_gl(); }
static __device__ __forceinline__ unsigned int __float_as_uint(float x) {
    return __builtin_bit_cast(unsigned int, x);
}
static __device__ __forceinline__ float __uint_as_float(unsigned int x) {
    return __builtin_bit_cast(float, x);
}
static __device__ __forceinline__ long long __double_as_longlong(double x) {
    return __builtin_bit_cast(long long, x);
}
static __device__ __forceinline__ double __longlong_as_double(long long x) {
    return __builtin_bit_cast(double, x);
}

static __device__ __forceinline__ unsigned int atomicAdd(unsigned int* p, unsigned int v) {
    return __nvvm_atom_add_gen_i((int*)p, v);
}
static __device__ __forceinline__ int atomicAdd(int* p, int v) {
    return __nvvm_atom_add_gen_i((int*)p, v);
}
static __device__ __forceinline__ unsigned long long atomicAdd(unsigned long long* p,
                                                               unsigned long long v) {
    return __nvvm_atom_add_gen_ll((long long*)p, v);
}
static __device__ __forceinline__ float atomicAdd(float* p, float v) {
    return __nvvm_atom_add_gen_f(p, v);
}
static __device__ __forceinline__ double atomicAdd(double* p, double v) {
    return __nvvm_atom_add_gen_d(p, v);
}
/* CUDA's atomicSub is an atomicAdd of the negated value. */
static __device__ __forceinline__ unsigned int atomicSub(unsigned int* p, unsigned int v) {
    return __nvvm_atom_add_gen_i((int*)p, -v);
}
static __device__ __forceinline__ int atomicMax(int* p, int v) {
    return __nvvm_atom_max_gen_i(p, v);
}
static __device__ __forceinline__ unsigned int atomicMax(unsigned int* p, unsigned int v) {
    return __nvvm_atom_max_gen_ui(p, v);
}
static __device__ __forceinline__ unsigned long long atomicMax(unsigned long long* p,
                                                               unsigned long long v) {
    return __nvvm_atom_max_gen_ull(p, v);
}
static __device__ __forceinline__ int atomicMin(int* p, int v) {
    return __nvvm_atom_min_gen_i(p, v);
}
static __device__ __forceinline__ unsigned int atomicMin(unsigned int* p, unsigned int v) {
    return __nvvm_atom_min_gen_ui(p, v);
}
static __device__ __forceinline__ long long atomicMin(long long* p, long long v) {
    return __nvvm_atom_min_gen_ll(p, v);
}
static __device__ __forceinline__ unsigned int atomicAnd(unsigned int* p, unsigned int v) {
    return __nvvm_atom_and_gen_i((int*)p, v);
}
static __device__ __forceinline__ unsigned long long atomicAnd(unsigned long long* p,
                                                               unsigned long long v) {
    return __nvvm_atom_and_gen_ll((long long*)p, v);
}
static __device__ __forceinline__ unsigned int atomicOr(unsigned int* p, unsigned int v) {
    return __nvvm_atom_or_gen_i((int*)p, v);
}
static __device__ __forceinline__ unsigned long long atomicOr(unsigned long long* p,
                                                              unsigned long long v) {
    return __nvvm_atom_or_gen_ll((long long*)p, v);
}
static __device__ __forceinline__ unsigned int atomicXor(unsigned int* p, unsigned int v) {
    return __nvvm_atom_xor_gen_i((int*)p, v);
}
static __device__ __forceinline__ unsigned long long atomicXor(unsigned long long* p,
                                                               unsigned long long v) {
    return __nvvm_atom_xor_gen_ll((long long*)p, v);
}
static __device__ __forceinline__ unsigned int atomicExch(unsigned int* p, unsigned int v) {
    return __nvvm_atom_xchg_gen_i((int*)p, v);
}
static __device__ __forceinline__ unsigned long long atomicExch(unsigned long long* p,
                                                                unsigned long long v) {
    return __nvvm_atom_xchg_gen_ll((long long*)p, v);
}
static __device__ __forceinline__ unsigned int atomicCAS(unsigned int* p, unsigned int cmp,
                                                         unsigned int v) {
    return __nvvm_atom_cas_gen_i((int*)p, cmp, v);
}
static __device__ __forceinline__ unsigned long long atomicCAS(unsigned long long* p,
                                                               unsigned long long cmp,
                                                               unsigned long long v) {
    return __nvvm_atom_cas_gen_ll((long long*)p, cmp, v);
}
/* inc: old >= bound ? 0 : old + 1; dec: (old == 0 || old > bound) ? bound : old - 1. */
static __device__ __forceinline__ unsigned int atomicInc(unsigned int* p, unsigned int bound) {
    return __nvvm_atom_inc_gen_ui(p, bound);
}
static __device__ __forceinline__ unsigned int atomicDec(unsigned int* p, unsigned int bound) {
    return __nvvm_atom_dec_gen_ui(p, bound);
}

/* printf (clang lowers it to vprintf, ABI guide §4) and __trap(). */
extern "C" __device__ int printf(const char* format, ...);
extern "C" __device__ void* malloc(unsigned long size);
extern "C" __device__ void free(void* p);
#define __trap() __builtin_trap()

/* Warp intrinsics of sm_70 (CUDA's sm_30_intrinsics.h / sm_70 headers), through the
 * same __nvvm_* builtins; c packs the segment mask (32 - width) << 8 and the clamp. */
static __device__ __forceinline__ unsigned int __activemask(void) {
    unsigned int m;
    asm volatile("activemask.b32 %0;" : "=r"(m));
    return m;
}
static __device__ __forceinline__ void __syncwarp(unsigned int mask = 0xffffffffu) {
    __nvvm_bar_warp_sync(mask);
}
static __device__ __forceinline__ int __syncthreads_count(int predicate) {
    return __nvvm_bar0_popc(predicate);
}
static __device__ __forceinline__ int __shfl_sync(unsigned int mask, int v, int src, int width = 32) {
    return __nvvm_shfl_sync_idx_i32(mask, v, src, ((32 - width) << 8) | 0x1f);
}
static __device__ __forceinline__ int __shfl_xor_sync(unsigned int mask, int v, int lane_mask, int width = 32) {
    return __nvvm_shfl_sync_bfly_i32(mask, v, lane_mask, ((32 - width) << 8) | 0x1f);
}
static __device__ __forceinline__ int __shfl_up_sync(unsigned int mask, int v, unsigned int delta, int width = 32) {
    return __nvvm_shfl_sync_up_i32(mask, v, delta, (32 - width) << 8);
}
static __device__ __forceinline__ int __shfl_down_sync(unsigned int mask, int v, unsigned int delta, int width = 32) {
    return __nvvm_shfl_sync_down_i32(mask, v, delta, ((32 - width) << 8) | 0x1f);
}
static __device__ __forceinline__ unsigned int __ballot_sync(unsigned int mask, int p) {
    return __nvvm_vote_ballot_sync(mask, p);
}
static __device__ __forceinline__ int __any_sync(unsigned int mask, int p) {
    return __nvvm_vote_any_sync(mask, p);
}
static __device__ __forceinline__ int __all_sync(unsigned int mask, int p) {
    return __nvvm_vote_all_sync(mask, p);
}
static __device__ __forceinline__ unsigned int __match_any_sync(unsigned int mask, int v) {
    return __nvvm_match_any_sync_i32(mask, v);
}
static __device__ __forceinline__ int __popc(unsigned int x) { return __builtin_popcount(x); }

/* SIMD sums of absolute differences: one video instruction each, c = 0 in a
 * register (ptxas rejects an immediate c with signed SIMD types). */
#define PTXVK_VIDEO(name, inst)                                                  \
    static __device__ __forceinline__ unsigned int name(unsigned int a, unsigned int b) { \
        unsigned int d;                                                          \
        asm(inst " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(0u));        \
        return d;                                                                \
    }
PTXVK_VIDEO(__vabsdiffu4, "vabsdiff4.u32.u32.u32")
PTXVK_VIDEO(__vsadu4, "vabsdiff4.u32.u32.u32.add")
PTXVK_VIDEO(__vabsdiffu2, "vabsdiff2.u32.u32.u32")
PTXVK_VIDEO(__vsadu2, "vabsdiff2.u32.u32.u32.add")
PTXVK_VIDEO(__vabsdiffs4, "vabsdiff4.u32.s32.s32")
PTXVK_VIDEO(__vsads4, "vabsdiff4.u32.s32.s32.add")
PTXVK_VIDEO(__vabsdiffs2, "vabsdiff2.u32.s32.s32")
PTXVK_VIDEO(__vsads2, "vabsdiff2.u32.s32.s32.add")
#undef PTXVK_VIDEO

/* Texture and surface objects (CUDA's texture_indirect_functions.h and
 * surface_indirect_functions.h). The handles are plain 64-bit integers passed
 * as `.param .u64`. Every texture fetch returns four components; the scalar
 * forms keep the first. The instruction forms are nvcc's: tex3D repeats z as
 * the (ignored) fourth coordinate, tex2DLayered passes the layer as the first
 * element of the coordinate vector (and repeats y), tex1Dfetch takes an s32
 * element index. Texture fetches are pure (textures are read-only while a
 * kernel runs); surface reads are `volatile` so they stay ordered with surface
 * writes. The surface x coordinate is in bytes. */
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;

enum cudaSurfaceBoundaryMode {
    cudaBoundaryModeZero = 0,
    cudaBoundaryModeClamp = 1,
    cudaBoundaryModeTrap = 2
};

struct __attribute__((aligned(16))) float4 {
    float x, y, z, w;
};
struct __attribute__((aligned(16))) int4 {
    int x, y, z, w;
};
struct __attribute__((aligned(16))) uint4 {
    unsigned int x, y, z, w;
};

/* Only the instantiations the kernels use are defined; any other is a link
 * error rather than wrong code. */
template <class T> static __device__ T tex1D(cudaTextureObject_t tex, float x);
template <class T> static __device__ T tex2D(cudaTextureObject_t tex, float x, float y);
template <class T> static __device__ T tex3D(cudaTextureObject_t tex, float x, float y, float z);
template <class T>
static __device__ T tex2DLayered(cudaTextureObject_t tex, float x, float y, int layer);
template <class T> static __device__ T tex1Dfetch(cudaTextureObject_t tex, int x);
template <class T>
static __device__ T tex2Dgather(cudaTextureObject_t tex, float x, float y, int comp = 0);
template <class T>
static __device__ T texCubemap(cudaTextureObject_t tex, float x, float y, float z);
template <class T>
static __device__ T tex2DLod(cudaTextureObject_t tex, float x, float y, float level);
template <class T>
static __device__ T surf2Dread(cudaSurfaceObject_t surf, int x, int y,
                               cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap);
template <class T>
static __device__ void surf2Dwrite(T data, cudaSurfaceObject_t surf, int x, int y,
                                   cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap);

template <> __device__ __forceinline__ float tex1D<float>(cudaTextureObject_t tex, float x) {
    float r, g, b, a;
    asm("tex.1d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5}];"
        : "=f"(r), "=f"(g), "=f"(b), "=f"(a)
        : "l"(tex), "f"(x));
    return r;
}
template <> __device__ __forceinline__ float4 tex2D<float4>(cudaTextureObject_t tex, float x,
                                                            float y) {
    float4 v;
    asm("tex.2d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6}];"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
        : "l"(tex), "f"(x), "f"(y));
    return v;
}
template <> __device__ __forceinline__ float texCubemap<float>(cudaTextureObject_t tex, float x,
                                                               float y, float z) {
    float r, g, b, a;
    asm("tex.cube.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6, %7, %7}];"
        : "=f"(r), "=f"(g), "=f"(b), "=f"(a)
        : "l"(tex), "f"(x), "f"(y), "f"(z));
    return r;
}
template <> __device__ __forceinline__ float tex2DLod<float>(cudaTextureObject_t tex, float x,
                                                             float y, float level) {
    float r, g, b, a;
    asm("tex.level.2d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6}], %7;"
        : "=f"(r), "=f"(g), "=f"(b), "=f"(a)
        : "l"(tex), "f"(x), "f"(y), "f"(level));
    return r;
}
/* tex2Dgather: tld4 of the component asked for (a constant after inlining). */
template <> __device__ __forceinline__ float4 tex2Dgather<float4>(cudaTextureObject_t tex,
                                                                  float x, float y, int comp) {
    float4 v;
    switch (comp) {
    case 0:
        asm("tld4.r.2d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6}];"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
            : "l"(tex), "f"(x), "f"(y));
        break;
    case 1:
        asm("tld4.g.2d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6}];"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
            : "l"(tex), "f"(x), "f"(y));
        break;
    case 2:
        asm("tld4.b.2d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6}];"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
            : "l"(tex), "f"(x), "f"(y));
        break;
    default:
        asm("tld4.a.2d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6}];"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
            : "l"(tex), "f"(x), "f"(y));
        break;
    }
    return v;
}
template <> __device__ __forceinline__ float tex2D<float>(cudaTextureObject_t tex, float x,
                                                          float y) {
    return tex2D<float4>(tex, x, y).x;
}
template <> __device__ __forceinline__ int4 tex2D<int4>(cudaTextureObject_t tex, float x,
                                                        float y) {
    int4 v;
    asm("tex.2d.v4.s32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6}];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(tex), "f"(x), "f"(y));
    return v;
}
template <> __device__ __forceinline__ float tex3D<float>(cudaTextureObject_t tex, float x,
                                                          float y, float z) {
    float r, g, b, a;
    asm("tex.3d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6, %7, %7}];"
        : "=f"(r), "=f"(g), "=f"(b), "=f"(a)
        : "l"(tex), "f"(x), "f"(y), "f"(z));
    return r;
}
template <> __device__ __forceinline__ float tex2DLayered<float>(cudaTextureObject_t tex, float x,
                                                                 float y, int layer) {
    float r, g, b, a;
    asm("tex.a2d.v4.f32.f32 \t{%0, %1, %2, %3}, [%4, {%5, %6, %7, %7}];"
        : "=f"(r), "=f"(g), "=f"(b), "=f"(a)
        : "l"(tex), "r"(layer), "f"(x), "f"(y));
    return r;
}
template <> __device__ __forceinline__ int tex1Dfetch<int>(cudaTextureObject_t tex, int x) {
    int r, g, b, a;
    asm("tex.1d.v4.s32.s32 \t{%0, %1, %2, %3}, [%4, {%5}];"
        : "=r"(r), "=r"(g), "=r"(b), "=r"(a)
        : "l"(tex), "r"(x));
    return r;
}
template <>
__device__ __forceinline__ float surf2Dread<float>(cudaSurfaceObject_t surf, int x, int y,
                                                   cudaSurfaceBoundaryMode mode) {
    unsigned int r;
    /* mode is a constant at every call: the switch folds away. */
    switch (mode) {
    case cudaBoundaryModeZero:
        asm volatile("suld.b.2d.b32.zero {%0}, [%1, {%2, %3}];" : "=r"(r) : "l"(surf), "r"(x), "r"(y));
        break;
    case cudaBoundaryModeClamp:
        asm volatile("suld.b.2d.b32.clamp {%0}, [%1, {%2, %3}];" : "=r"(r) : "l"(surf), "r"(x), "r"(y));
        break;
    default:
        asm volatile("suld.b.2d.b32.trap {%0}, [%1, {%2, %3}];" : "=r"(r) : "l"(surf), "r"(x), "r"(y));
        break;
    }
    return __uint_as_float(r);
}
template <>
__device__ __forceinline__ void surf2Dwrite<float>(float data, cudaSurfaceObject_t surf, int x,
                                                   int y, cudaSurfaceBoundaryMode mode) {
    unsigned int v = __float_as_uint(data);
    switch (mode) {
    case cudaBoundaryModeZero:
        asm volatile("sust.b.2d.b32.zero \t[%0, {%1, %2}], {%3};" :: "l"(surf), "r"(x), "r"(y), "r"(v) : "memory");
        break;
    case cudaBoundaryModeClamp:
        asm volatile("sust.b.2d.b32.clamp \t[%0, {%1, %2}], {%3};" :: "l"(surf), "r"(x), "r"(y), "r"(v) : "memory");
        break;
    default:
        asm volatile("sust.b.2d.b32.trap \t[%0, {%1, %2}], {%3};" :: "l"(surf), "r"(x), "r"(y), "r"(v) : "memory");
        break;
    }
}

#endif /* !__CUDACC__ */

#endif /* PTXVK_CUDA_SHIM_H */
