// Models cuda-samples 2_Concepts_and_Techniques/histogram: 256-bin histograms of 4 MiB of
// bytes read as 32-bit words. histogram256: each block counts into a shared histogram
// with shared-memory atomicAdd, then adds it to the global one with global atomics.
// histogram64: per-warp sub-histograms in shared memory merged per block into partial
// histograms that a second kernel sums (no global atomics). Checks both against the
// host's counts exactly.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#include "check.h"

__global__ void histogram256(const unsigned *data, unsigned words, unsigned *hist) {
    __shared__ unsigned s[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) s[i] = 0;
    __syncthreads();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x) {
        unsigned w = data[i];
        atomicAdd(&s[w & 0xff], 1);
        atomicAdd(&s[(w >> 8) & 0xff], 1);
        atomicAdd(&s[(w >> 16) & 0xff], 1);
        atomicAdd(&s[w >> 24], 1);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        if (s[i]) atomicAdd(&hist[i], s[i]);
}

#define WARPS_PER_BLOCK 4
// 64 bins (the top 6 bits of each byte), one sub-histogram per warp.
__global__ void histogram64(const unsigned *data, unsigned words, unsigned *partials) {
    __shared__ unsigned s[WARPS_PER_BLOCK][64];
    unsigned *mine = s[threadIdx.x / 32];
    for (int i = threadIdx.x; i < WARPS_PER_BLOCK * 64; i += blockDim.x) (&s[0][0])[i] = 0;
    __syncthreads();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x) {
        unsigned w = data[i];
        for (int b = 0; b < 4; b++) atomicAdd(&mine[((w >> (8 * b)) & 0xff) >> 2], 1);
    }
    __syncthreads();
    for (int bin = threadIdx.x; bin < 64; bin += blockDim.x) {
        unsigned sum = 0;
        for (int w = 0; w < WARPS_PER_BLOCK; w++) sum += s[w][bin];
        partials[blockIdx.x * 64 + bin] = sum;
    }
}

__global__ void mergeHistogram64(const unsigned *partials, int count, unsigned *hist) {
    unsigned bin = threadIdx.x, sum = 0;
    for (int i = 0; i < count; i++) sum += partials[i * 64 + bin];
    hist[bin] = sum;
}

int main() {
    const unsigned bytes = 4 << 20, words = bytes / 4;
    unsigned char *h = (unsigned char *)malloc(bytes);
    unsigned seed = 2024;
    for (unsigned i = 0; i < bytes; i++) {
        seed = seed * 1664525u + 1013904223u;
        // Skewed so that some bins collide much more than others.
        unsigned r = seed >> 24;
        h[i] = (i % 7 == 0) ? 42 : (unsigned char)(r * r >> 8);
    }
    unsigned want256[256] = {0}, want64[64] = {0};
    for (unsigned i = 0; i < bytes; i++) {
        want256[h[i]]++;
        want64[h[i] >> 2]++;
    }
    unsigned *dData, *dHist, *dPartials;
    const int blocks64 = 120;
    CHECK(cudaMalloc(&dData, bytes));
    CHECK(cudaMalloc(&dHist, 256 * sizeof(unsigned)));
    CHECK(cudaMalloc(&dPartials, blocks64 * 64 * sizeof(unsigned)));
    CHECK(cudaMemcpy(dData, h, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dHist, 0, 256 * sizeof(unsigned)));
    histogram256<<<240, 192>>>(dData, words, dHist);
    CHECK(cudaGetLastError());
    unsigned got[256];
    CHECK(cudaMemcpy(got, dHist, sizeof got, cudaMemcpyDeviceToHost));
    int errors = 0;
    for (int i = 0; i < 256; i++)
        if (got[i] != want256[i] && errors++ < 10) fprintf(stderr, "hist256[%d] = %u, want %u\n", i, got[i], want256[i]);
    printf("histogram256: %s\n", errors ? "wrong" : "ok");

    histogram64<<<blocks64, WARPS_PER_BLOCK * 32>>>(dData, words, dPartials);
    CHECK(cudaGetLastError());
    mergeHistogram64<<<1, 64>>>(dPartials, blocks64, dHist);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dHist, 64 * sizeof(unsigned), cudaMemcpyDeviceToHost));
    int before = errors;
    for (int i = 0; i < 64; i++)
        if (got[i] != want64[i] && errors++ < 20) fprintf(stderr, "hist64[%d] = %u, want %u\n", i, got[i], want64[i]);
    printf("histogram64: %s\n", errors > before ? "wrong" : "ok");
    CHECK(cudaFree(dData)); CHECK(cudaFree(dHist)); CHECK(cudaFree(dPartials));
    free(h);
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
