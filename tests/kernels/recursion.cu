/*
 * recursion: recursive device functions the compilers keep as real calls
 * (__noinline__ .func definitions that call themselves or each other): binary
 * recursion with a value live across the first call, mutual recursion, a
 * recursive quicksort of a local array through a pointer, a recursive
 * function with its own dynamically indexed local array, and a recursion that
 * calls another one through a non-recursive function. One kernel.
 *
 * recursion(const unsigned int* in, unsigned int* out, int n)
 *   Launch: 1-D grid of 1-D blocks, any size. i = blockIdx.x*blockDim.x +
 *   threadIdx.x; for i < n: x = in[i] (the tests keep x < 64). All unsigned
 *   arithmetic wraps at 32 bits; out holds 5 u32 per thread:
 *     fib(k)       = k < 2 ? k : fib(k - 1) + fib(k - 2)
 *     out[5i+0]    = fib(x % 18)
 *     is_even(k)   = k == 0 ? 1 : is_odd(k - 1)
 *     is_odd(k)    = k == 0 ? 0 : is_even(k - 1)
 *     out[5i+1]    = is_even(x) * 1000 + is_odd(x / 2)
 *     a[j]         = (x * 2654435761 + j * 40503) >> 7 for j < 12 (a local
 *                    u32[12]), sorted ascending by quicksort(a, 0, 11): Lomuto
 *                    partition around a[hi], recursing on both sides
 *     out[5i+2]    = sum over j < 12 of a[j] * (j + 1)
 *     mix_down(v, d): buf[j] = v * (j + 1) + d for j < 8 (a local u32[8]);
 *                    r = d > 0 ? mix_down(v ^ (v >> 3), d - 1) : 0;
 *                    returns r + buf[(v + d) & 7]
 *     out[5i+3]    = mix_down(x * 77 + i, x % 16)
 *     scramble(k)  = fib(k) ^ (k << 4)               (not recursive itself)
 *     outer(k)     = k == 0 ? 1 : outer(k - 1) * 3 + scramble(k)
 *     out[5i+4]    = outer(x % 13)
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __device__ __noinline__ unsigned int fib(unsigned int k)
{
    return k < 2u ? k : fib(k - 1u) + fib(k - 2u);
}

extern "C" __device__ __noinline__ unsigned int is_odd(unsigned int k);

extern "C" __device__ __noinline__ unsigned int is_even(unsigned int k)
{
    return k == 0u ? 1u : is_odd(k - 1u);
}

extern "C" __device__ __noinline__ unsigned int is_odd(unsigned int k)
{
    return k == 0u ? 0u : is_even(k - 1u);
}

extern "C" __device__ __noinline__ void quicksort(unsigned int* a, int lo, int hi)
{
    if (lo >= hi) {
        return;
    }
    unsigned int pivot = a[hi];
    int p = lo;
    for (int j = lo; j < hi; ++j) {
        if (a[j] < pivot) {
            unsigned int t = a[j];
            a[j] = a[p];
            a[p] = t;
            ++p;
        }
    }
    unsigned int t = a[hi];
    a[hi] = a[p];
    a[p] = t;
    quicksort(a, lo, p - 1);
    quicksort(a, p + 1, hi);
}

extern "C" __device__ __noinline__ unsigned int mix_down(unsigned int v, int d)
{
    unsigned int buf[8];
    for (int j = 0; j < 8; ++j) {
        buf[j] = v * (unsigned int)(j + 1) + (unsigned int)d;
    }
    unsigned int r = d > 0 ? mix_down(v ^ (v >> 3), d - 1) : 0u;
    return r + buf[(v + (unsigned int)d) & 7u];
}

extern "C" __device__ __noinline__ unsigned int scramble(unsigned int k)
{
    return fib(k) ^ (k << 4);
}

extern "C" __device__ __noinline__ unsigned int outer(unsigned int k)
{
    return k == 0u ? 1u : outer(k - 1u) * 3u + scramble(k);
}

extern "C" __global__ void recursion(const unsigned int* in, unsigned int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    unsigned int x = in[i];
    unsigned int* o = out + 5 * i;
    o[0] = fib(x % 18u);
    o[1] = is_even(x) * 1000u + is_odd(x / 2u);
    unsigned int a[12];
    for (int j = 0; j < 12; ++j) {
        a[j] = (x * 2654435761u + (unsigned int)j * 40503u) >> 7;
    }
    quicksort(a, 0, 11);
    unsigned int s = 0;
    for (int j = 0; j < 12; ++j) {
        s += a[j] * (unsigned int)(j + 1);
    }
    o[2] = s;
    o[3] = mix_down(x * 77u + (unsigned int)i, (int)(x % 16u));
    o[4] = outer(x % 13u);
}
