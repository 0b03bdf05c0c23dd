// Models the error checking every cuda-sample does through helper_cuda.h's
// checkCudaErrors and getLastCudaError, applied to calls that must fail: launches with
// more than maxThreadsPerBlock threads, a block dimension z over the device's maximum, a
// grid dimension y over 65535 and an empty grid (cudaErrorInvalidConfiguration from
// cudaGetLastError, with cudaPeekAtLastError not clearing it); more dynamic shared
// memory than a block can have (must fail); an allocation larger than the device
// (cudaErrorMemoryAllocation); cudaSetDevice of a device that does not exist
// (cudaErrorInvalidDevice); cudaFree of a host pointer (cudaErrorInvalidValue); cudaMemcpy
// with an invalid kind (cudaErrorInvalidMemcpyDirection). Checks each code, that the
// errors are not sticky (a correct launch afterwards computes the right values) and
// cudaGetErrorString/Name of a few codes.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#include "check.h"

__global__ void fill(int *p, int value) { p[blockIdx.x * blockDim.x + threadIdx.x] = value + threadIdx.x; }

static int errors = 0;

static void expectError(const char *what, cudaError_t got, cudaError_t want) {
    printf("%-46s %s (%d)\n", what, cudaGetErrorName(got), (int)got);
    if (got != want) {
        fprintf(stderr, "%s: %s, want %s\n", what, cudaGetErrorName(got), cudaGetErrorName(want));
        errors++;
    }
}

int main() {
    int *d;
    CHECK(cudaMalloc(&d, 2048 * sizeof(int)));
    int maxThreads = 0;
    CHECK(cudaDeviceGetAttribute(&maxThreads, cudaDevAttrMaxThreadsPerBlock, 0));

    fill<<<1, maxThreads + 1>>>(d, 0);
    expectError("launch with too many threads (peek)", cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
    expectError("launch with too many threads (get)", cudaGetLastError(), cudaErrorInvalidConfiguration);
    expectError("the error is cleared", cudaGetLastError(), cudaSuccess);

    int maxZ = 0;
    CHECK(cudaDeviceGetAttribute(&maxZ, cudaDevAttrMaxBlockDimZ, 0));
    fill<<<1, dim3(1, 1, maxZ + 1)>>>(d, 0);
    expectError("block dimension z over cudaDevAttrMaxBlockDimZ", cudaGetLastError(), cudaErrorInvalidConfiguration);
    fill<<<dim3(1, 65536), 1>>>(d, 0);
    expectError("grid dimension y of 65536", cudaGetLastError(), cudaErrorInvalidConfiguration);
    fill<<<0, 32>>>(d, 0);
    expectError("an empty grid", cudaGetLastError(), cudaErrorInvalidConfiguration);

    int optin = 0;
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    fill<<<1, 32, optin + 1024>>>(d, 0);
    cudaError_t shared = cudaGetLastError();
    printf("%-46s %s (%d)\n", "more dynamic shared memory than the maximum", cudaGetErrorName(shared), (int)shared);
    if (shared == cudaSuccess) { fprintf(stderr, "a launch with too much shared memory succeeded\n"); errors++; }

    void *huge = nullptr;
    expectError("cudaMalloc of 1 PiB", cudaMalloc(&huge, (size_t)1 << 50), cudaErrorMemoryAllocation);
    cudaGetLastError();
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    expectError("cudaSetDevice of a missing device", cudaSetDevice(count), cudaErrorInvalidDevice);
    cudaGetLastError();
    int onStack = 0;
    expectError("cudaFree of a host pointer", cudaFree(&onStack), cudaErrorInvalidValue);
    cudaGetLastError();
    int host[4];
    expectError("cudaMemcpy with an invalid kind", cudaMemcpy(host, d, sizeof host, (cudaMemcpyKind)7),
                cudaErrorInvalidMemcpyDirection);
    cudaGetLastError();
    expectError("cudaFree(nullptr)", cudaFree(nullptr), cudaSuccess);

    if (strcmp(cudaGetErrorName(cudaErrorInvalidConfiguration), "cudaErrorInvalidConfiguration") != 0 ||
        strcmp(cudaGetErrorString(cudaSuccess), "no error") != 0) {
        fprintf(stderr, "error names: %s / %s\n", cudaGetErrorName(cudaErrorInvalidConfiguration),
                cudaGetErrorString(cudaSuccess));
        errors++;
    }

    // Not sticky: a correct launch works.
    fill<<<2, 1024 <= maxThreads ? 1024 : maxThreads>>>(d, 7);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int block = 1024 <= maxThreads ? 1024 : maxThreads;
    int *got = new int[2 * block];
    CHECK(cudaMemcpy(got, d, 2 * block * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 2 * block; i++)
        if (got[i] != 7 + i % block && errors++ < 10) fprintf(stderr, "after the errors: d[%d] = %d\n", i, got[i]);
    CHECK(cudaFree(d));
    delete[] got;
    if (errors) {
        printf("FAIL: %d unexpected results\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
