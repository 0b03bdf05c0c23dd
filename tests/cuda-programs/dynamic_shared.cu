// Models the dynamic shared memory of cuda-samples (the Programming Guide's
// dynamicReverse, and globalToShmemAsyncCopy's cudaFuncSetAttribute): kernels whose
// extern __shared__ arrays are sized at launch: reversing each block's slice, and a
// block-wide sum over a buffer of several arrays carved from one extern allocation.
// Then, as the samples do before launching with more than 48 KiB, it asks
// cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) for the device's
// opt-in maximum (cudaDevAttrMaxSharedMemoryPerBlockOptin), checks cudaFuncGetAttributes
// reports it, and launches with all of it; asking for more than the maximum must fail
// with cudaErrorInvalidValue. Checks the results against the host's.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

__global__ void dynamicReverse(int *d, int n) {
    extern __shared__ int s[];
    int base = blockIdx.x * n, t = threadIdx.x, tr = n - t - 1;
    s[t] = d[base + t];
    __syncthreads();
    d[base + t] = s[tr];
}

// Two arrays in one dynamic allocation: n ints, then n shorts.
__global__ void carved(const int *in, int *out, int n) {
    extern __shared__ int pool[];
    int *ints = pool;
    short *shorts = (short *)&ints[n];
    int t = threadIdx.x;
    ints[t] = in[blockIdx.x * n + t];
    shorts[t] = (short)(t * 3);
    __syncthreads();
    int sum = 0;
    for (int i = 0; i < n; i++) sum += ints[i] * shorts[(i + t) % n];
    out[blockIdx.x * n + t] = sum;
}

// Fills `words` ints of dynamic shared memory and sums them back.
__global__ void fillAll(int *out, int words) {
    extern __shared__ int big[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) big[i] = i ^ 0x5a5a;
    __syncthreads();
    int sum = 0;
    for (int i = threadIdx.x; i < words; i += blockDim.x) sum += big[(i + 7) % words];
    atomicAdd(out, sum);
}

int main() {
    int errors = 0;
    const int n = 64, blocks = 10;
    int h[n * blocks], got[n * blocks];
    for (int i = 0; i < n * blocks; i++) h[i] = i * 7 - 100;
    int *d, *dOut;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMalloc(&dOut, sizeof h));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    dynamicReverse<<<blocks, n, n * sizeof(int)>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < n; t++)
            if (got[b * n + t] != h[b * n + n - 1 - t] && errors++ < 10)
                fprintf(stderr, "reverse[%d][%d] = %d\n", b, t, got[b * n + t]);

    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    carved<<<blocks, n, n * sizeof(int) + n * sizeof(short)>>>(d, dOut, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dOut, sizeof h, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < n; t++) {
            int want = 0;
            for (int i = 0; i < n; i++) want += h[b * n + i] * (short)(((i + t) % n) * 3);
            if (got[b * n + t] != want && errors++ < 10) fprintf(stderr, "carved[%d][%d] = %d, want %d\n", b, t, got[b * n + t], want);
        }
    printf("dynamic reverse and carved arrays: %s\n", errors ? "wrong" : "ok");

    int perBlock = 0, optin = 0;
    CHECK(cudaDeviceGetAttribute(&perBlock, cudaDevAttrMaxSharedMemoryPerBlock, 0));
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, fillAll));
    printf("shared memory per block %d, opt-in %d, fillAll static %zu, max dynamic %d\n", perBlock, optin,
           attr.sharedSizeBytes, attr.maxDynamicSharedSizeBytes);
    int maxDynamic = optin - (int)attr.sharedSizeBytes;
    CHECK(cudaFuncSetAttribute(fillAll, cudaFuncAttributeMaxDynamicSharedMemorySize, maxDynamic));
    CHECK(cudaFuncGetAttributes(&attr, fillAll));
    if (attr.maxDynamicSharedSizeBytes != maxDynamic) {
        fprintf(stderr, "maxDynamicSharedSizeBytes %d after setting %d\n", attr.maxDynamicSharedSizeBytes, maxDynamic);
        errors++;
    }
    int words = maxDynamic / 4;
    CHECK(cudaMemset(dOut, 0, sizeof(int)));
    fillAll<<<2, 256, words * sizeof(int)>>>(dOut, words);
    CHECK(cudaGetLastError());
    int sum;
    CHECK(cudaMemcpy(&sum, dOut, sizeof sum, cudaMemcpyDeviceToHost));
    int want = 0;
    for (int i = 0; i < words; i++) want += i ^ 0x5a5a;
    want *= 2;
    if (sum != want) { fprintf(stderr, "fillAll of %d words: %d, want %d\n", words, sum, want); errors++; }
    printf("launch with %d bytes of dynamic shared memory: %s\n", maxDynamic, sum == want ? "ok" : "wrong");

    cudaError_t tooMuch = cudaFuncSetAttribute(fillAll, cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1);
    printf("asking for %d bytes: %s\n", optin + 1, cudaGetErrorName(tooMuch));
    if (tooMuch != cudaErrorInvalidValue) errors++;
    cudaGetLastError();
    CHECK(cudaFree(d)); CHECK(cudaFree(dOut));
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
