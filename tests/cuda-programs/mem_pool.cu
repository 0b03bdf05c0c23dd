// Models cuda-samples 2_Concepts_and_Techniques/streamOrderedAllocation: stream-ordered
// allocations (cudaMallocAsync / cudaFreeAsync) in a loop of kernels on one stream, the
// device's default pool with a release threshold (cudaMemPoolAttrReleaseThreshold) and
// its usage attributes, an explicitly created pool (cudaMemPoolCreate,
// cudaMallocFromPoolAsync, cudaMemPoolTrimTo, cudaMemPoolDestroy), and memory freed in
// one stream after an event and reused in another. Checks the results against the
// host's arithmetic exactly.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

#include "check.h"

__global__ void vectorAddGPU(const float *a, const float *b, float *c, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) c[idx] = a[idx] + b[idx];
}

int main() {
    int supported = 0;
    CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
    printf("memoryPoolsSupported %d\n", supported);
    if (!supported) { printf("FAIL: the device has no memory pools\n"); return 1; }
    int errors = 0;
    const int n = 1 << 16;
    const size_t bytes = n * sizeof(float);
    float *a, *b, *c;
    CHECK(cudaMallocHost(&a, bytes));
    CHECK(cudaMallocHost(&b, bytes));
    CHECK(cudaMallocHost(&c, bytes));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    uint64_t threshold = UINT64_MAX;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    uint64_t thresholdBack = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thresholdBack));
    if (thresholdBack != threshold) { fprintf(stderr, "release threshold %llu\n", (unsigned long long)thresholdBack); errors++; }

    for (int iter = 0; iter < 10; iter++) {
        for (int i = 0; i < n; i++) {
            a[i] = (float)(i + iter);
            b[i] = (float)(2 * i - iter);
        }
        float *da, *db, *dc;
        CHECK(cudaMallocAsync(&da, bytes, stream));
        CHECK(cudaMallocAsync(&db, bytes, stream));
        CHECK(cudaMallocAsync(&dc, bytes, stream));
        CHECK(cudaMemcpyAsync(da, a, bytes, cudaMemcpyHostToDevice, stream));
        CHECK(cudaMemcpyAsync(db, b, bytes, cudaMemcpyHostToDevice, stream));
        vectorAddGPU<<<n / 256, 256, 0, stream>>>(da, db, dc, n);
        CHECK(cudaGetLastError());
        CHECK(cudaFreeAsync(da, stream));
        CHECK(cudaFreeAsync(db, stream));
        CHECK(cudaMemcpyAsync(c, dc, bytes, cudaMemcpyDeviceToHost, stream));
        CHECK(cudaFreeAsync(dc, stream));
        CHECK(cudaStreamSynchronize(stream));
        for (int i = 0; i < n; i++)
            if (c[i] != a[i] + b[i] && errors++ < 10) fprintf(stderr, "iteration %d: c[%d] = %g\n", iter, i, c[i]);
    }
    uint64_t reserved = 0, used = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    printf("default pool after the loop: reserved %llu, used %llu\n", (unsigned long long)reserved, (unsigned long long)used);
    if (used != 0) { fprintf(stderr, "used %llu after every block was freed\n", (unsigned long long)used); errors++; }

    // An explicit pool.
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t own;
    CHECK(cudaMemPoolCreate(&own, &props));
    float *p;
    CHECK(cudaMallocFromPoolAsync(&p, bytes, own, stream));
    CHECK(cudaMemsetAsync(p, 0, bytes, stream));
    vectorAddGPU<<<n / 256, 256, 0, stream>>>(p, p, p, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(c, p, bytes, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemPoolGetAttribute(own, cudaMemPoolAttrUsedMemCurrent, &used));
    if (used < bytes) { fprintf(stderr, "own pool uses %llu with one block of %zu\n", (unsigned long long)used, bytes); errors++; }
    for (int i = 0; i < n; i++)
        if (c[i] != 0.0f && errors++ < 20) fprintf(stderr, "own pool c[%d] = %g\n", i, c[i]);

    // Freed in `stream` after its work, reused by another stream ordered by an event.
    cudaStream_t other;
    CHECK(cudaStreamCreate(&other));
    cudaEvent_t freed;
    CHECK(cudaEventCreate(&freed));
    CHECK(cudaFreeAsync(p, stream));
    CHECK(cudaEventRecord(freed, stream));
    CHECK(cudaStreamWaitEvent(other, freed, 0));
    float *q;
    CHECK(cudaMallocFromPoolAsync(&q, bytes, own, other));
    CHECK(cudaMemcpyAsync(q, a, bytes, cudaMemcpyHostToDevice, other));
    vectorAddGPU<<<n / 256, 256, 0, other>>>(q, q, q, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(c, q, bytes, cudaMemcpyDeviceToHost, other));
    CHECK(cudaFreeAsync(q, other));
    CHECK(cudaStreamSynchronize(other));
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + a[i] && errors++ < 30) fprintf(stderr, "reused c[%d] = %g\n", i, c[i]);
    CHECK(cudaMemPoolTrimTo(own, 0));
    CHECK(cudaMemPoolGetAttribute(own, cudaMemPoolAttrReservedMemCurrent, &reserved));
    printf("own pool after trimming: reserved %llu\n", (unsigned long long)reserved);
    if (reserved != 0) { fprintf(stderr, "own pool keeps %llu after cudaMemPoolTrimTo(0)\n", (unsigned long long)reserved); errors++; }
    CHECK(cudaMemPoolDestroy(own));
    CHECK(cudaEventDestroy(freed));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaStreamDestroy(other));
    CHECK(cudaFreeHost(a)); CHECK(cudaFreeHost(b)); CHECK(cudaFreeHost(c));
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
