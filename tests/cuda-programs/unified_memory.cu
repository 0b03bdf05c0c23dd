// Models cuda-samples 0_Introduction/UnifiedMemoryStreams (and the Programming Guide's
// cudaMallocManaged examples): managed allocations written on the host, updated by
// kernels, read on the host after cudaDeviceSynchronize without any cudaMemcpy; a
// managed linked structure followed on the device; cudaPointerGetAttributes reporting
// cudaMemoryTypeManaged. (__managed__ variables are managed_globals.cu.) First prints
// cudaDevAttrManagedMemory and cudaDevAttrConcurrentManagedAccess. Checks every value
// against the host's arithmetic exactly.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

struct Node {
    int value;
    Node *next;
};

__global__ void scaleAdd(float *x, const float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + y[i];
}

__global__ void walk(const Node *head, int *total) {
    int sum = 0;
    for (const Node *p = head; p; p = p->next) sum += p->value;
    *total = sum;
}

int main() {
    int managed = 0, concurrent = 0;
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
    CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
    printf("managedMemory %d, concurrentManagedAccess %d\n", managed, concurrent);
    if (!managed) { printf("FAIL: the device does not support managed memory\n"); return 1; }
    int errors = 0;
    const int n = 1 << 16;
    float *x, *y;
    CHECK(cudaMallocManaged(&x, n * sizeof(float)));
    CHECK(cudaMallocManaged(&y, n * sizeof(float), cudaMemAttachGlobal));
    for (int i = 0; i < n; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    scaleAdd<<<n / 256, 256>>>(x, y, 2.0f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++)
        if (x[i] != 2.0f * i + 1.0f && errors++ < 10) fprintf(stderr, "x[%d] = %g\n", i, x[i]);
    // The host updates, the device again.
    for (int i = 0; i < n; i++) y[i] = -x[i];
    scaleAdd<<<n / 256, 256>>>(x, y, 3.0f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++)
        if (x[i] != 2.0f * (2.0f * i + 1.0f) && errors++ < 10) fprintf(stderr, "x[%d] = %g after the second kernel\n", i, x[i]);
    printf("managed arrays: %s\n", errors ? "wrong" : "ok");

    const int nodes = 100;
    Node *list;
    CHECK(cudaMallocManaged(&list, nodes * sizeof(Node)));
    int want = 0;
    for (int i = 0; i < nodes; i++) {
        list[i].value = i * 3 + 1;
        list[i].next = i + 1 < nodes ? &list[i + 1] : nullptr;
        want += i * 3 + 1;
    }
    int *total;
    CHECK(cudaMallocManaged(&total, sizeof(int)));
    *total = -1;
    walk<<<1, 1>>>(list, total);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    if (*total != want) { fprintf(stderr, "list sum %d, want %d\n", *total, want); errors++; }
    printf("managed list walked on the device: sum %d\n", *total);

    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, x));
    if (attr.type != cudaMemoryTypeManaged) { fprintf(stderr, "pointer type %d\n", (int)attr.type); errors++; }
    CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(list)); CHECK(cudaFree(total));
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
