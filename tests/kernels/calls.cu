/*
 * calls: device functions the compilers keep as real calls (__noinline__), so
 * the PTX has .func definitions, .param argument and result blocks and call
 * sequences: scalar arguments and results, a 24-byte struct passed and
 * returned by value, generic pointers to shared, local and global memory
 * passed to a function, nested calls, and a function with its own static
 * __shared__ array and barriers. One kernel.
 *
 * calls(const unsigned int* in, unsigned long long* out)
 *   Launch: 1-D grid of 1-D blocks, blockDim.x <= 64, every thread has an
 *   input: i = blockIdx.x*blockDim.x + threadIdx.x, x = in[i]. All unsigned
 *   arithmetic wraps at 32 bits; out holds 5 u64 per thread:
 *     mix(a, b)     = a*31 + (b ^ (a >> 3))
 *     out[5i+0]     = mix(x, x >> 7)
 *     out[5i+1]     = mix(x, mix(x + 1, x + 2))
 *     t             = {a = (u64)x * 1000003, b = x ^ 0x5a5a,
 *                      c = (float)(x & 0xffff) * 0.5f, d = (double)x / 3.0}
 *     out[5i+2]     = bits of ((((double)t.a + (double)(t.b * 7u))
 *                              + (double)t.c) + t.d)   (f64, round to nearest)
 *     s[tid] = x (a __shared__ u32[64]); acc = i (a local u32)
 *     s[tid] += x >> 1; acc += x  (both through add_to(u32* p, u32 v))
 *     __syncthreads()
 *     acc += s[(tid + 1) % blockDim.x]
 *     out[5i+3]     = acc
 *     out[5i+4]     = block_max(x): the maximum of x over the block (a static
 *                     __shared__ u32[64] inside the function, two barriers)
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

struct Triple {
    unsigned long long a;
    unsigned int b;
    float c;
    double d;
};

extern "C" __device__ __noinline__ unsigned int mix(unsigned int a, unsigned int b)
{
    return a * 31u + (b ^ (a >> 3));
}

extern "C" __device__ __noinline__ unsigned int nested(unsigned int x)
{
    return mix(x, mix(x + 1u, x + 2u));
}

extern "C" __device__ __noinline__ Triple make_triple(unsigned int x)
{
    Triple t;
    t.a = (unsigned long long)x * 1000003ull;
    t.b = x ^ 0x5a5au;
    t.c = (float)(x & 0xffffu) * 0.5f;
    t.d = (double)x / 3.0;
    return t;
}

extern "C" __device__ __noinline__ double score(Triple t, unsigned int k)
{
    return (double)t.a + (double)(t.b * k) + (double)t.c + t.d;
}

extern "C" __device__ __noinline__ void add_to(unsigned int* p, unsigned int v)
{
    *p += v;
}

extern "C" __device__ __noinline__ unsigned int block_max(unsigned int v)
{
    __shared__ unsigned int part[64];
    part[threadIdx.x] = v;
    __syncthreads();
    unsigned int m = 0;
    for (unsigned int k = 0; k < blockDim.x; ++k) {
        m = part[k] > m ? part[k] : m;
    }
    __syncthreads();
    return m;
}

extern "C" __global__ void calls(const unsigned int* in, unsigned long long* out)
{
    __shared__ unsigned int s[64];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    unsigned int x = in[i];
    unsigned long long* o = out + 5ull * i;
    o[0] = mix(x, x >> 7);
    o[1] = nested(x);
    Triple t = make_triple(x);
    o[2] = __double_as_longlong(score(t, 7u));
    s[tid] = x;
    unsigned int acc = i;
    add_to(&s[tid], x >> 1);
    add_to(&acc, x);
    __syncthreads();
    acc += s[(tid + 1) % blockDim.x];
    o[3] = acc;
    o[4] = block_max(x);
}
