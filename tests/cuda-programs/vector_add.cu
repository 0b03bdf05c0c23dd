// Models cuda-samples 0_Introduction/vectorAdd (with cudaMemset from simpleMultiCopy):
// C = A + B over 50,000 floats, one thread per element, bounds-checked for a partial
// last block. Checks every element against the host's sum (exact: both sides round the
// same single addition), and that cudaMemset fills bytes (the whole buffer, then a
// sub-range) before the kernel overwrites them.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#include "check.h"

__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < numElements) C[i] = A[i] + B[i];
}

int main() {
    const int n = 50000;
    const size_t bytes = n * sizeof(float);
    float *hA = (float *)malloc(bytes), *hB = (float *)malloc(bytes), *hC = (float *)malloc(bytes);
    unsigned seed = 12345;
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        hA[i] = (seed >> 8) / 16777216.0f;
        seed = seed * 1664525u + 1013904223u;
        hB[i] = (seed >> 8) / 16777216.0f - 0.5f;
    }
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, bytes));
    CHECK(cudaMalloc(&dB, bytes));
    CHECK(cudaMalloc(&dC, bytes));

    // cudaMemset: every byte 0xAB, then bytes [400, 440) zero.
    CHECK(cudaMemset(dC, 0xAB, bytes));
    CHECK(cudaMemset((char *)dC + 400, 0, 40));
    unsigned char *bytesBack = (unsigned char *)malloc(bytes);
    CHECK(cudaMemcpy(bytesBack, dC, bytes, cudaMemcpyDeviceToHost));
    int errors = 0;
    for (size_t i = 0; i < bytes; i++) {
        unsigned char want = (i >= 400 && i < 440) ? 0 : 0xAB;
        if (bytesBack[i] != want && errors++ < 5)
            fprintf(stderr, "memset byte %zu: %02x, want %02x\n", i, bytesBack[i], want);
    }

    CHECK(cudaMemcpy(dA, hA, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, hB, bytes, cudaMemcpyHostToDevice));
    int threads = 256, blocks = (n + threads - 1) / threads;
    vectorAdd<<<blocks, threads>>>(dA, dB, dC, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(hC, dC, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        float want = hA[i] + hB[i];
        if (memcmp(&hC[i], &want, sizeof want) != 0 && errors++ < 10)
            fprintf(stderr, "C[%d] = %.9g, want %.9g\n", i, hC[i], want);
    }
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    free(hA); free(hB); free(hC); free(bytesBack);
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("vectorAdd of %d elements in %d blocks of %d threads\nPASS\n", n, blocks, threads);
    return 0;
}
