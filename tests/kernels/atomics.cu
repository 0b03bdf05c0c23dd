/*
 * atomics: the common CUDA atomic patterns, every result exactly checkable
 * whatever order the threads run in. Two kernels.
 *
 * histogram(const unsigned int* data, int n, unsigned int* hist,
 *           unsigned int* stats)
 *   Launch: 1-D grid of 1-D blocks, any sizes (grid-stride loop, stride
 *   blockDim.x*gridDim.x). hist holds 256 u32 bins, stats 5 u32 words; both
 *   keep their initial contents and are added to. Each block clears 256
 *   __shared__ bins and shared smax = 0, smin = 0xFFFFFFFF, ssum = 0.0f, then
 *   for every element v = data[i] of the block:
 *       atomicAdd(&bins[v & 255], 1)              (atom.shared.add.u32)
 *       atomicMax(&smax, v); atomicMin(&smin, v)  (shared, u32)
 *       atomicAdd(&ssum, (float)(v >> 29))        (shared f32, values 0..7,
 *                                                  exact below 2^24)
 *   then adds each non-zero bin to hist[b] (global atomicAdd), and thread 0
 *   does atomicMax(&stats[0], smax), atomicMin(&stats[1], smin),
 *   atomicAdd((float*)&stats[2], ssum). Last-block-done pattern: after
 *   __threadfence() and a barrier, thread 0 takes a ticket
 *   atomicInc(&stats[3], gridDim.x - 1); the block that draws gridDim.x - 1
 *   (the last one) adds the sum of all 256 final hist[] words (volatile loads)
 *   to stats[4]. So afterwards, with h0/s0 the initial contents:
 *       hist[b]  = h0[b] + #{i < n : (data[i] & 255) == b}
 *       stats[0] = max(s0[0], max data),  stats[1] = min(s0[1], min data)
 *       stats[2] = s0[2] + sum (data[i] >> 29)   (as f32; exact if < 2^24)
 *       stats[3] = 0 when s0[3] == 0 (the ticket counter wraps to 0)
 *       stats[4] = s0[4] + sum over b of hist[b]
 *
 * atomic_ops(const unsigned int* a, const float* f,
 *            const unsigned long long* q, unsigned int* c,
 *            unsigned long long* c64, unsigned int* olds,
 *            unsigned long long* olds64, unsigned int* perm, int n)
 *   Launch: 1-D grid of 1-D blocks, any sizes; i = blockIdx.x*blockDim.x +
 *   threadIdx.x, threads with i >= n do nothing. Each thread i < n, with
 *   u = a[i], x = q[i], applies once (c: 17 u32 words, c64: 10 u64 words):
 *       slot = atomicAdd(&c[0], 1); perm[slot] = i       (unique slots)
 *       atomicAdd(&c[1], u)                               (result unused)
 *       atomicSub(&c[2], i)
 *       atomicMax((int*)&c[3], (int)u); atomicMin((int*)&c[4], (int)u)
 *       atomicMax(&c[5], u); atomicMin(&c[6], u)
 *       atomicAnd(&c[7], u | 0x0F0F0F0F)
 *       atomicOr(&c[8], 1u << (u % 31))
 *       atomicXor(&c[9], u)
 *       olds[5i+0] = atomicExch(&c[10], i)
 *       olds[5i+3] = atomicInc(&c[11], 999)
 *       olds[5i+4] = atomicDec(&c[12], 999)
 *       atomicAdd((float*)&c[13], (float)(u & 7) * 0.25f)  (exact sums)
 *       olds[5i+1] = bits of atomicAdd((float*)&c[14], 1.0f)
 *       olds[5i+2] = atomicCAS(&c[15], 0xFFFFFFFF, i)      (first one wins)
 *       float max of f[i] into (float*)&c[16], by an atomicCAS loop
 *       atomicAdd(&c64[0], x)
 *       atomicAdd((double*)&c64[1], (double)(int)u * 0.5)  (exact sums; an
 *           atomicCAS loop on the bits before sm_60, which has no f64 add)
 *       atomicMax(&c64[2], x); atomicMin((long long*)&c64[3], (long long)x)
 *       atomicXor(&c64[4], x); atomicAnd(&c64[5], x | 0xFF00FF00FF00FF00)
 *       atomicOr(&c64[6], 1ull << (x % 61))
 *       olds64[2i+0] = atomicAdd(&c64[7], 0xC0000001)  (carries into the high
 *                                                        word)
 *       olds64[2i+1] = atomicExch(&c64[8], x)
 *       double max of (double)(int)u * 0.25 into (double*)&c64[9], by a
 *           64-bit atomicCAS loop
 *   Every final value is order-independent except c[10], c64[8] (exchanges:
 *   the returned old values plus the final value are the initial value plus
 *   every value written, each once) and c[15] (some thread's i; exactly that
 *   thread got 0xFFFFFFFF back, all others got the winner's i). The old
 *   values of inc/dec/add-1.0f/add-0xC0000001 are, as a multiset, those of
 *   the same n operations applied one after another. The float maxima assume
 *   no NaN and no zero inputs (-0.0 and +0.0 compare equal).
 *
 * shared_atomics64(const unsigned long long* q, int n,
 *                  unsigned long long* out, unsigned long long* olds)
 *   Launch: 1-D grid of 1-D blocks whose size is a multiple of 32, any grid
 *   (grid-stride loop, stride blockDim.x*gridDim.x). 64-bit atomics on
 *   __shared__ memory next to 32- and 16-bit accesses of the same 64-bit
 *   words. Thread 0 of each block sets s[0..6] = {0, 0, INT64_MAX, 0, ~0,
 *   0xA5A5...A5}, d = 0.0, the u64 word p = 0 (seen as two u32 halves p0, p1)
 *   and h = 0 (four u16 halves); then for every element x = q[i] of the block:
 *       atomicAdd(&s[0], x); atomicMax(&s[1], x)
 *       atomicMin((long long*)&s[2], (long long)x); atomicXor(&s[3], x)
 *       atomicAnd(&s[4], x | 0x00FF00FF00FF00FF)
 *       olds[i] = atomicExch(&s[5], x)
 *       atomicAdd(&d, (double)(x & 0xFFFF) * 0.5)   (exact sums; a 64-bit
 *           atomicCAS loop before sm_60)
 *       atomicAdd(&p0, (unsigned)x); atomicMax(&p1, (unsigned)(x >> 32))
 *   and thread t < 4 writes h[t] = t * 0x1111 + blockIdx.x (plain u16 stores
 *   into one 64-bit word). After a barrier, every thread takes part in
 *   c = __syncthreads_count(t % 3 == 0) and w = __shfl_sync(~0, t * 7, 5),
 *   and thread 0 of block b writes out[12b .. 12b+12] = {s[0..6], bits of d,
 *   p0, p1, h as one u64, c, w}. So, for the elements E of block b (those
 *   with (i / blockDim.x) % gridDim.x == b): sum, max, signed min, xor and
 *   and-fold of E from the initial values; the exchange chain (olds of E
 *   plus the final s[5] are 0xA5A5...A5 plus every x of E, each once);
 *   d = sum of (x & 0xFFFF) / 2; p0 = sum of (u32)x mod 2^32; p1 = max of
 *   x >> 32 (or 0); h = the four halves; c = #{t < blockDim.x : t % 3 == 0};
 *   w = 35 (lane 5 of the first warp).
 *
 * The first two kernels have only 32-bit atomics on __shared__ memory;
 * shared_atomics64 has 64-bit ones.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void histogram(const unsigned int* data, int n, unsigned int* hist,
                                     unsigned int* stats)
{
    __shared__ unsigned int bins[256];
    __shared__ unsigned int smax;
    __shared__ unsigned int smin;
    __shared__ float ssum;
    __shared__ unsigned int is_last;

    unsigned int t = threadIdx.x;
    for (unsigned int b = t; b < 256; b += blockDim.x) {
        bins[b] = 0;
    }
    if (t == 0) {
        smax = 0;
        smin = 0xFFFFFFFFu;
        ssum = 0.0f;
    }
    __syncthreads();

    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += stride) {
        unsigned int v = data[i];
        atomicAdd(&bins[v & 255u], 1u);
        atomicMax(&smax, v);
        atomicMin(&smin, v);
        atomicAdd(&ssum, (float)(v >> 29));
    }
    __syncthreads();

    for (unsigned int b = t; b < 256; b += blockDim.x) {
        unsigned int count = bins[b];
        if (count != 0) {
            atomicAdd(&hist[b], count);
        }
    }
    if (t == 0) {
        atomicMax(&stats[0], smax);
        atomicMin(&stats[1], smin);
        atomicAdd((float*)&stats[2], ssum);
    }

    // The last block to finish sees every block's additions to hist.
    __threadfence();
    __syncthreads();
    if (t == 0) {
        unsigned int ticket = atomicInc(&stats[3], gridDim.x - 1);
        is_last = (ticket == gridDim.x - 1) ? 1u : 0u;
    }
    __syncthreads();
    if (is_last) {
        const volatile unsigned int* vh = hist;
        unsigned int part = 0;
        for (unsigned int b = t; b < 256; b += blockDim.x) {
            part += vh[b];
        }
        if (part != 0) {
            atomicAdd(&stats[4], part);
        }
    }
}

/* A float max by compare-and-swap (there is no atomicMax for float). */
static __device__ __forceinline__ float atomic_max_float(float* p, float v)
{
    unsigned int* w = (unsigned int*)p;
    unsigned int old = *w;
    while (__uint_as_float(old) < v) {
        unsigned int assumed = old;
        old = atomicCAS(w, assumed, __float_as_uint(v));
        if (old == assumed) {
            break;
        }
    }
    return __uint_as_float(old);
}

/* A double max by 64-bit compare-and-swap. */
static __device__ __forceinline__ double atomic_max_double(double* p, double v)
{
    unsigned long long* w = (unsigned long long*)p;
    unsigned long long old = *w;
    while (__longlong_as_double((long long)old) < v) {
        unsigned long long assumed = old;
        old = atomicCAS(w, assumed, (unsigned long long)__double_as_longlong(v));
        if (old == assumed) {
            break;
        }
    }
    return __longlong_as_double((long long)old);
}

/* atomicAdd on double needs sm_60; before that, the CUDA programming guide's
 * compare-and-swap loop. */
static __device__ __forceinline__ double atomic_add_double(double* p, double v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 600
    return atomicAdd(p, v);
#else
    unsigned long long* w = (unsigned long long*)p;
    unsigned long long old = *w;
    unsigned long long assumed;
    do {
        assumed = old;
        old = atomicCAS(w, assumed,
                        (unsigned long long)__double_as_longlong(
                            v + __longlong_as_double((long long)assumed)));
    } while (assumed != old);
    return __longlong_as_double((long long)old);
#endif
}

extern "C" __global__ void atomic_ops(const unsigned int* a, const float* f,
                                      const unsigned long long* q, unsigned int* c,
                                      unsigned long long* c64, unsigned int* olds,
                                      unsigned long long* olds64, unsigned int* perm, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    unsigned int ui = (unsigned int)i;
    unsigned int u = a[i];
    unsigned long long x = q[i];
    unsigned int* o = olds + 5 * (long long)i;
    unsigned long long* o64 = olds64 + 2 * (long long)i;

    unsigned int slot = atomicAdd(&c[0], 1u);
    perm[slot] = ui;
    atomicAdd(&c[1], u);
    atomicSub(&c[2], ui);
    atomicMax((int*)&c[3], (int)u);
    atomicMin((int*)&c[4], (int)u);
    atomicMax(&c[5], u);
    atomicMin(&c[6], u);
    atomicAnd(&c[7], u | 0x0F0F0F0Fu);
    atomicOr(&c[8], 1u << (u % 31u));
    atomicXor(&c[9], u);
    o[0] = atomicExch(&c[10], ui);
    o[3] = atomicInc(&c[11], 999u);
    o[4] = atomicDec(&c[12], 999u);
    atomicAdd((float*)&c[13], (float)(u & 7u) * 0.25f);
    o[1] = __float_as_uint(atomicAdd((float*)&c[14], 1.0f));
    o[2] = atomicCAS(&c[15], 0xFFFFFFFFu, ui);
    atomic_max_float((float*)&c[16], f[i]);

    atomicAdd(&c64[0], x);
    atomic_add_double((double*)&c64[1], (double)(int)u * 0.5);
    atomicMax(&c64[2], x);
    atomicMin((long long*)&c64[3], (long long)x);
    atomicXor(&c64[4], x);
    atomicAnd(&c64[5], x | 0xFF00FF00FF00FF00ull);
    atomicOr(&c64[6], 1ull << (x % 61ull));
    o64[0] = atomicAdd(&c64[7], 0xC0000001ull);
    o64[1] = atomicExch(&c64[8], x);
    atomic_max_double((double*)&c64[9], (double)(int)u * 0.25);
}

extern "C" __global__ void shared_atomics64(const unsigned long long* q, int n,
                                            unsigned long long* out,
                                            unsigned long long* olds)
{
    __shared__ unsigned long long s[6];
    __shared__ double d;
    __shared__ unsigned long long pair;
    __shared__ unsigned long long quad;
    unsigned int* p = (unsigned int*)&pair;
    unsigned short* h = (unsigned short*)&quad;

    unsigned int t = threadIdx.x;
    if (t == 0) {
        s[0] = 0;
        s[1] = 0;
        s[2] = 0x7FFFFFFFFFFFFFFFull;
        s[3] = 0;
        s[4] = ~0ull;
        s[5] = 0xA5A5A5A5A5A5A5A5ull;
        d = 0.0;
        pair = 0;
        quad = 0;
    }
    __syncthreads();

    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += stride) {
        unsigned long long x = q[i];
        atomicAdd(&s[0], x);
        atomicMax(&s[1], x);
        atomicMin((long long*)&s[2], (long long)x);
        atomicXor(&s[3], x);
        atomicAnd(&s[4], x | 0x00FF00FF00FF00FFull);
        olds[i] = atomicExch(&s[5], x);
        atomic_add_double(&d, (double)(x & 0xFFFFull) * 0.5);
        atomicAdd(&p[0], (unsigned int)x);
        atomicMax(&p[1], (unsigned int)(x >> 32));
    }
    if (t < 4) {
        h[t] = (unsigned short)(t * 0x1111u + blockIdx.x);
    }
    __syncthreads();
    int c = __syncthreads_count(t % 3u == 0);
    int w = __shfl_sync(0xFFFFFFFFu, (int)(t * 7u), 5);
    if (t == 0) {
        unsigned long long* o = out + 12 * (long long)blockIdx.x;
        for (int k = 0; k < 6; ++k) {
            o[k] = s[k];
        }
        o[6] = (unsigned long long)__double_as_longlong(d);
        o[7] = p[0];
        o[8] = p[1];
        o[9] = quad;
        o[10] = (unsigned long long)c;
        o[11] = (unsigned long long)w;
    }
}
