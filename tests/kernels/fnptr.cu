/*
 * fnptr: indirect calls through device function pointers (a table in local
 * memory, so the compilers keep real indirect calls with a .callprototype).
 *
 * fnptr(const int* a, const int* b, const int* sel, int* out, int n)
 *   Launch: 1-D grid of 1-D blocks, any sizes. Each thread i < n:
 *     ops = {op_add, op_mul, op_mix}, with op_add(x, y) = x + y,
 *     op_mul(x, y) = x * y, op_mix(x, y) = x ^ (y << 1) (int arithmetic, wrapping);
 *     k = sel[i] mod 3 (sel[i] >= 0), out[i] = ops[k](a[i], b[i]).
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

typedef int (*op_t)(int, int);

extern "C" __device__ __noinline__ int op_add(int x, int y) { return x + y; }
extern "C" __device__ __noinline__ int op_mul(int x, int y) { return x * y; }
extern "C" __device__ __noinline__ int op_mix(int x, int y) { return x ^ (y << 1); }

extern "C" __global__ void fnptr(const int* a, const int* b, const int* sel, int* out, int n)
{
    op_t ops[3] = {op_add, op_mul, op_mix};
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = ops[sel[i] % 3](a[i], b[i]);
    }
}
