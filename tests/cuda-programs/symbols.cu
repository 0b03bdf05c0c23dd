// Models the symbol handling of cuda-samples (convolutionSeparable's __constant__ kernel,
// simpleTemplates' and the Programming Guide's __device__ variables): __constant__
// arrays and scalars filled by cudaMemcpyToSymbol (whole, at an offset, and async) and
// read back by cudaMemcpyFromSymbol; a 1D convolution reading its taps from constant
// memory; statically initialised __device__ globals (read back unchanged, then updated by
// kernels with atomics and plain stores); cudaGetSymbolAddress / cudaGetSymbolSize and a
// cudaMemcpy through the address. Checks each against the host's values (the
// convolution within a float tolerance; everything else exactly).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

#define RADIUS 8
__constant__ float c_taps[2 * RADIUS + 1];
__constant__ int c_scale;
__constant__ int c_table[64];

__device__ int d_counter;
__device__ unsigned d_initialised[4] = {0xdeadbeef, 1, 2, 3};
__device__ float d_results[256];

__global__ void convolve(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sum = 0;
    for (int k = -RADIUS; k <= RADIUS; k++) {
        int j = min(max(i + k, 0), n - 1);
        sum += in[j] * c_taps[RADIUS - k];
    }
    out[i] = sum * c_scale;
}

__global__ void useGlobals() {
    int i = threadIdx.x;
    atomicAdd(&d_counter, c_table[i % 64]);
    d_results[i] = (float)(i * c_scale) + (float)d_initialised[i % 4];
    if (i == 0) d_initialised[0] += 1;
}

int main() {
    int errors = 0;
    // The statically initialised global, before any kernel ran.
    unsigned initial[4];
    CHECK(cudaMemcpyFromSymbol(initial, d_initialised, sizeof initial));
    const unsigned initialWant[4] = {0xdeadbeef, 1, 2, 3};
    for (int i = 0; i < 4; i++)
        if (initial[i] != initialWant[i] && errors++ < 10) fprintf(stderr, "d_initialised[%d] = %x\n", i, initial[i]);

    float taps[2 * RADIUS + 1];
    for (int k = 0; k <= 2 * RADIUS; k++) taps[k] = 1.0f / (1 + abs(k - RADIUS));
    const int scale = 3;
    int table[64];
    for (int i = 0; i < 64; i++) table[i] = i * i - 7;
    CHECK(cudaMemcpyToSymbol(c_taps, taps, sizeof taps));
    CHECK(cudaMemcpyToSymbol(c_scale, &scale, sizeof scale));
    // The table in two halves: the second at an offset, asynchronously.
    CHECK(cudaMemcpyToSymbol(c_table, table, 32 * sizeof(int)));
    CHECK(cudaMemcpyToSymbolAsync(c_table, table + 32, 32 * sizeof(int), 32 * sizeof(int),
                                  cudaMemcpyHostToDevice, 0));
    int tableBack[64];
    CHECK(cudaMemcpyFromSymbol(tableBack, c_table, sizeof tableBack));
    for (int i = 0; i < 64; i++)
        if (tableBack[i] != table[i] && errors++ < 10) fprintf(stderr, "c_table[%d] = %d\n", i, tableBack[i]);
    int scaleBack = 0;
    CHECK(cudaMemcpyFromSymbolAsync(&scaleBack, c_scale, sizeof(int), 0, cudaMemcpyDeviceToHost, 0));
    CHECK(cudaStreamSynchronize(0));
    if (scaleBack != scale) { fprintf(stderr, "c_scale = %d\n", scaleBack); errors++; }

    const int n = 10000;
    float *h = new float[n], *got = new float[n];
    for (int i = 0; i < n; i++) h[i] = sinf(i * 0.01f) + (i % 13) * 0.1f;
    float *dIn, *dOut;
    CHECK(cudaMalloc(&dIn, n * sizeof(float)));
    CHECK(cudaMalloc(&dOut, n * sizeof(float)));
    CHECK(cudaMemcpy(dIn, h, n * sizeof(float), cudaMemcpyHostToDevice));
    convolve<<<(n + 127) / 128, 128>>>(dIn, dOut, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dOut, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        double sum = 0, mag = 0;
        for (int k = -RADIUS; k <= RADIUS; k++) {
            int j = i + k < 0 ? 0 : (i + k > n - 1 ? n - 1 : i + k);
            sum += (double)h[j] * taps[RADIUS - k];
            mag += fabs((double)h[j] * taps[RADIUS - k]);
        }
        if (!(fabs(got[i] - sum * scale) <= 1e-5 * mag * scale) && errors++ < 10)
            fprintf(stderr, "convolution[%d] = %g, want %g\n", i, got[i], sum * scale);
    }
    printf("convolution with __constant__ taps: %s\n", errors ? "wrong" : "ok");

    const int zero = 0;
    CHECK(cudaMemcpyToSymbol(d_counter, &zero, sizeof zero));
    useGlobals<<<1, 256>>>();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int counter;
    CHECK(cudaMemcpyFromSymbol(&counter, d_counter, sizeof counter));
    int counterWant = 0;
    for (int i = 0; i < 256; i++) counterWant += table[i % 64];
    if (counter != counterWant) { fprintf(stderr, "d_counter = %d, want %d\n", counter, counterWant); errors++; }

    // The results through the symbol's address.
    float *resultsAddress;
    size_t resultsSize;
    CHECK(cudaGetSymbolAddress((void **)&resultsAddress, d_results));
    CHECK(cudaGetSymbolSize(&resultsSize, d_results));
    if (resultsSize != 256 * sizeof(float)) { fprintf(stderr, "size of d_results %zu\n", resultsSize); errors++; }
    float results[256];
    CHECK(cudaMemcpy(results, resultsAddress, sizeof results, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 256; i++) {
        float want = (float)(i * scale) + (float)initialWant[i % 4];
        if (results[i] != want && errors++ < 10) fprintf(stderr, "d_results[%d] = %g, want %g\n", i, results[i], want);
    }
    unsigned after;
    CHECK(cudaMemcpyFromSymbol(&after, d_initialised, sizeof after));
    if (after != 0xdeadbeef + 1) { fprintf(stderr, "d_initialised[0] = %x after the kernel\n", after); errors++; }
    printf("__device__ globals: counter %d, %s\n", counter, errors ? "wrong" : "ok");
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dOut));
    delete[] h; delete[] got;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
