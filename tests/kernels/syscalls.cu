/*
 * syscalls: CUDA's system calls from kernels (printf, a failed assertion, trap).
 * Three kernels; i = blockIdx.x*blockDim.x + threadIdx.x, v = in[i].
 *
 * print_values(const int* in, int n)
 *   Each thread with i < n prints one line (CUDA printf, C conversions):
 *     printf("i=%d blk=%u v=%d hex=%#x half=%.3f sci=%e str=%s big=%lld ch=%c%%\n",
 *            i, blockIdx.x, v, v, v * 0.5f, (double)v * 1e10, name, v * 1000000007LL,
 *            'a' + i % 26)
 *   with name = "even" for even v and "odd" for odd v; half is a float (promoted
 *   to double by printf). Threads with i < n and v < 0 print a second line:
 *     printf("negative %5d|%-5d|%05d\n", v, v, -v)
 *
 * check_positive(const int* in, int n)
 *   Each thread with i < n asserts v > 0 (ASSERT below, which calls CUDA's
 *   __assertfail with the message "v > 0", this file, the line and the function
 *   name). The launch fails if any v <= 0.
 *
 * trap_on(const int* in, int n, int* out)
 *   Each thread with i < n: if v == 13 it executes __trap(); else out[i] = v + 1.
 *
 * heap(const int* in, int n, long long* out)
 *   Each thread with i < n allocates k = 1 + i % 7 ints with malloc, stores
 *   v + j in element j, and writes out[2i] = the sum of the k elements (as
 *   long long) and out[2i+1] = 1 if the pointer is non-null and 16-byte aligned
 *   (else 0); then frees it. Thread 0 also writes out[2n] = the pointer
 *   malloc(1 << 40) returns (NULL: the heap is much smaller).
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

/* What <assert.h>'s assert calls on the device (ABI guide §4). */
extern "C" __device__ void __assertfail(const char* message, const char* file, unsigned int line,
                                        const char* function, unsigned long char_size);
#define ASSERT(c) ((c) ? (void)0 : __assertfail(#c, __FILE__, __LINE__, __func__, 1))

extern "C" __global__ void print_values(const int* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    int v = in[i];
    const char* name = (v & 1) ? "odd" : "even";
    printf("i=%d blk=%u v=%d hex=%#x half=%.3f sci=%e str=%s big=%lld ch=%c%%\n", i,
           blockIdx.x, v, v, v * 0.5f, (double)v * 1e10, name, v * 1000000007LL,
           'a' + i % 26);
    if (v < 0) {
        printf("negative %5d|%-5d|%05d\n", v, v, -v);
    }
}

extern "C" __global__ void check_positive(const int* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = in[i];
        ASSERT(v > 0);
    }
}

extern "C" __global__ void trap_on(const int* in, int n, int* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = in[i];
        if (v == 13) {
            __trap();
        }
        out[i] = v + 1;
    }
}

extern "C" __global__ void heap(const int* in, int n, long long* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = in[i];
        int k = 1 + i % 7;
        int* p = (int*)malloc(k * sizeof(int));
        long long sum = 0;
        if (p != 0) {
            for (int j = 0; j < k; ++j) {
                p[j] = v + j;
            }
            for (int j = 0; j < k; ++j) {
                sum += p[j];
            }
        }
        out[2 * i] = sum;
        out[2 * i + 1] = (p != 0 && ((unsigned long long)p & 15) == 0) ? 1 : 0;
        free(p);
        if (i == 0) {
            // The pointer itself is stored, so compilers cannot fold the test away.
            out[2 * n] = (long long)malloc(1ull << 40);
        }
    }
}
