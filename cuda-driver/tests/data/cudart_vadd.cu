// A CUDA runtime program as nvcc builds it by default (the static runtime), for
// `cuda-driver/tests/cudart.rs`: c = 2a + b over N floats, printed as bit patterns.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void axpy2(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = 2.0f * a[i] + b[i];
}

#define CHECK(x)                                                                       \
    do {                                                                               \
        cudaError_t e = (x);                                                           \
        if (e != cudaSuccess) {                                                        \
            printf("error %s: %s (%d)\n", #x, cudaGetErrorString(e), (int)e);        \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main() {
    const int n = 1000;
    static float a[n], b[n], c[n];
    for (int i = 0; i < n; i++) {
        a[i] = i * 0.37f - 20.0f;
        b[i] = 1.0f / (i + 1);
    }
    int count = 0, version = 0;
    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaDriverGetVersion(&version));
    printf("devices %d driver %d\n", count, version);
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, sizeof a));
    CHECK(cudaMalloc(&db, sizeof b));
    CHECK(cudaMalloc(&dc, sizeof c));
    CHECK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
    axpy2<<<(n + 127) / 128, 128>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        unsigned bits;
        memcpy(&bits, &c[i], 4);
        printf("%08x\n", bits);
    }
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    printf("done\n");
    return 0;
}
