// Models cuda-samples 0_Introduction/simpleZeroCopy and simpleHostRegister (with the
// pinned buffers of bandwidthTest): page-locked memory from cudaMallocHost and
// cudaHostAlloc (portable, mapped, write-combined), malloc'd memory pinned by
// cudaHostRegister (mapped), kernels that read and write host memory directly through
// cudaHostGetDevicePointer (zero copy), cudaPointerGetAttributes on each kind, and
// copies between pinned and device memory. Checks the data against the host's
// arithmetic exactly.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <cuda_runtime.h>

#include "check.h"

__global__ void vectorAddGPU(const float *a, const float *b, float *c, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) c[idx] = a[idx] + b[idx];
}

static int errors = 0;

static void checkType(const char *what, const void *p, cudaMemoryType want) {
    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, p));
    printf("%-34s type %d\n", what, (int)attr.type);
    if (attr.type != want) { fprintf(stderr, "%s: type %d, want %d\n", what, (int)attr.type, (int)want); errors++; }
}

int main() {
    const int n = 1 << 18;
    const size_t bytes = n * sizeof(float);
    int canMap = 0;
    CHECK(cudaDeviceGetAttribute(&canMap, cudaDevAttrCanMapHostMemory, 0));
    printf("canMapHostMemory %d\n", canMap);
    if (!canMap) { printf("FAIL: the device cannot map host memory\n"); return 1; }

    // Zero copy through cudaHostAlloc(mapped) and cudaHostRegister(mapped).
    float *a, *b, *c;
    CHECK(cudaHostAlloc(&a, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    CHECK(cudaHostAlloc(&b, bytes, cudaHostAllocMapped | cudaHostAllocWriteCombined));
    long page = sysconf(_SC_PAGESIZE);
    void *raw = nullptr;
    if (posix_memalign(&raw, page, bytes) != 0) { printf("FAIL: posix_memalign\n"); return 1; }
    c = (float *)raw;
    memset(c, 0, bytes);
    CHECK(cudaHostRegister(c, bytes, cudaHostRegisterMapped));
    for (int i = 0; i < n; i++) {
        a[i] = i * 0.25f;
        b[i] = (float)(n - i);
    }
    float *da, *db, *dc;
    CHECK(cudaHostGetDevicePointer((void **)&da, a, 0));
    CHECK(cudaHostGetDevicePointer((void **)&db, b, 0));
    CHECK(cudaHostGetDevicePointer((void **)&dc, c, 0));
    vectorAddGPU<<<n / 256, 256>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + b[i] && errors++ < 10) fprintf(stderr, "zero copy c[%d] = %g, want %g\n", i, c[i], a[i] + b[i]);
    printf("zero-copy vector add: %s\n", errors ? "wrong" : "ok");

    checkType("cudaHostAlloc(mapped)", a, cudaMemoryTypeHost);
    checkType("cudaHostRegister(mapped)", c, cudaMemoryTypeHost);

    // Pinned staging buffers for device copies.
    float *pinned, *back, *dev;
    CHECK(cudaMallocHost(&pinned, bytes));
    CHECK(cudaHostAlloc(&back, bytes, cudaHostAllocDefault));
    CHECK(cudaMalloc(&dev, bytes));
    checkType("cudaMallocHost", pinned, cudaMemoryTypeHost);
    checkType("cudaMalloc", dev, cudaMemoryTypeDevice);
    unsigned flags = 0;
    CHECK(cudaHostGetFlags(&flags, a));
    if (!(flags & cudaHostAllocMapped)) { fprintf(stderr, "cudaHostGetFlags %x\n", flags); errors++; }
    for (int i = 0; i < n; i++) pinned[i] = (float)(i % 1000) - 0.5f;
    CHECK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, 0));
    vectorAddGPU<<<n / 256, 256>>>(dev, da, dev, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(back, dev, bytes, cudaMemcpyDeviceToHost, 0));
    CHECK(cudaStreamSynchronize(0));
    int before = errors;
    for (int i = 0; i < n; i++)
        if (back[i] != pinned[i] + a[i] && errors++ < 20) fprintf(stderr, "pinned back[%d] = %g\n", i, back[i]);
    printf("pinned copies: %s\n", errors > before ? "wrong" : "ok");

    CHECK(cudaHostUnregister(c));
    free(raw);
    CHECK(cudaFreeHost(a)); CHECK(cudaFreeHost(b)); CHECK(cudaFreeHost(pinned)); CHECK(cudaFreeHost(back));
    CHECK(cudaFree(dev));
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
