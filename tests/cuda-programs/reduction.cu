// Models cuda-samples 2_Concepts_and_Techniques/reduction (and threadFenceReduction's
// atomics): sums of 1<<20 integers by four kernels: interleaved addressing in shared
// memory (reduce0), sequential addressing with the first add during load (reduce3), a
// template on the block size that finishes each warp with __shfl_down_sync (reduce5-style),
// and a grid-stride loop whose warps combine with shuffles and one atomicAdd each.
// Block partial sums are summed again on the device by a second pass. Also a float sum
// by warp shuffles plus atomicAdd(float*) and an atomicMax/atomicMin pass. Checks each
// against the host's sum (integers exactly, floats within a relative tolerance).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

__global__ void reduce0(const int *in, int *out, unsigned n) {
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = i < n ? in[i] : 0;
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

__global__ void reduce3(const int *in, int *out, unsigned n) {
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x, i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    int sum = i < n ? in[i] : 0;
    if (i + blockDim.x < n) sum += in[i + blockDim.x];
    sdata[tid] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = sum = sum + sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sum;
}

template <unsigned blockSize>
__global__ void reduce5(const int *in, int *out, unsigned n) {
    __shared__ int sdata[blockSize];
    unsigned tid = threadIdx.x, i = blockIdx.x * (blockSize * 2) + threadIdx.x;
    int sum = i < n ? in[i] : 0;
    if (i + blockSize < n) sum += in[i + blockSize];
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 512 && tid < 256) sdata[tid] = sum = sum + sdata[tid + 256];
    __syncthreads();
    if (blockSize >= 256 && tid < 128) sdata[tid] = sum = sum + sdata[tid + 128];
    __syncthreads();
    if (blockSize >= 128 && tid < 64) sdata[tid] = sum = sum + sdata[tid + 64];
    __syncthreads();
    if (tid < 32) {
        if (blockSize >= 64) sum += sdata[tid + 32];
        for (int offset = warpSize / 2; offset > 0; offset /= 2)
            sum += __shfl_down_sync(0xffffffff, sum, offset);
    }
    if (tid == 0) out[blockIdx.x] = sum;
}

__global__ void reduceAtomic(const int *in, int *total, unsigned n) {
    int sum = 0;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += in[i];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffff, sum, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, sum);
}

__global__ void reduceFloat(const float *in, float *total, unsigned n) {
    float sum = 0;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += in[i];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, sum);
}

__global__ void minMax(const int *in, int *lo, int *hi, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMin(lo, in[i]);
        atomicMax(hi, in[i]);
    }
}

static int errors = 0;

static void expect(const char *what, long long got, long long want) {
    printf("%-28s %lld\n", what, got);
    if (got != want) {
        fprintf(stderr, "%s: %lld, want %lld\n", what, got, want);
        errors++;
    }
}

// Sums `n` values with `kernel` (blocks of `threads`, each covering `perBlock` inputs)
// until one value is left.
template <typename Kernel>
static int sumByPasses(Kernel kernel, const int *dIn, unsigned n, unsigned threads, unsigned perBlock,
                       size_t shared, int *dA, int *dB) {
    const int *src = dIn;
    int *dst = dA;
    while (n > 1) {
        unsigned blocks = (n + perBlock - 1) / perBlock;
        kernel<<<blocks, threads, shared>>>(src, dst, n);
        CHECK(cudaGetLastError());
        src = dst;
        dst = dst == dA ? dB : dA;
        n = blocks;
    }
    int result;
    CHECK(cudaMemcpy(&result, src, sizeof result, cudaMemcpyDeviceToHost));
    return result;
}

int main() {
    const unsigned n = 1 << 20;
    int *h = new int[n];
    float *hf = new float[n];
    long long want = 0;
    double wantF = 0;
    int lo = 1 << 30, hi = -(1 << 30);
    unsigned seed = 99;
    for (unsigned i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = (int)(seed >> 16) % 2001 - 1000;
        hf[i] = h[i] / 256.0f;
        want += h[i];
        wantF += hf[i];
        lo = h[i] < lo ? h[i] : lo;
        hi = h[i] > hi ? h[i] : hi;
    }
    int *dIn, *dA, *dB, *dOne, *dTwo;
    float *dF, *dFSum;
    CHECK(cudaMalloc(&dIn, n * sizeof(int)));
    CHECK(cudaMalloc(&dA, n * sizeof(int)));
    CHECK(cudaMalloc(&dB, n * sizeof(int)));
    CHECK(cudaMalloc(&dOne, sizeof(int)));
    CHECK(cudaMalloc(&dTwo, sizeof(int)));
    CHECK(cudaMalloc(&dF, n * sizeof(float)));
    CHECK(cudaMalloc(&dFSum, sizeof(float)));
    CHECK(cudaMemcpy(dIn, h, n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dF, hf, n * sizeof(float), cudaMemcpyHostToDevice));

    expect("reduce0 (interleaved)", sumByPasses(reduce0, dIn, n, 256, 256, 256 * sizeof(int), dA, dB), want);
    expect("reduce3 (sequential)", sumByPasses(reduce3, dIn, n, 128, 256, 128 * sizeof(int), dA, dB), want);
    expect("reduce5<256> (shuffles)", sumByPasses(reduce5<256>, dIn, n, 256, 512, 0, dA, dB), want);
    expect("reduce5<64> (shuffles)", sumByPasses(reduce5<64>, dIn, n, 64, 128, 0, dA, dB), want);

    CHECK(cudaMemset(dOne, 0, sizeof(int)));
    reduceAtomic<<<64, 256>>>(dIn, dOne, n);
    CHECK(cudaGetLastError());
    int atomicSum;
    CHECK(cudaMemcpy(&atomicSum, dOne, sizeof(int), cudaMemcpyDeviceToHost));
    expect("grid-stride + atomicAdd", atomicSum, want);

    int init[2] = {1 << 30, -(1 << 30)};
    CHECK(cudaMemcpy(dOne, &init[0], sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dTwo, &init[1], sizeof(int), cudaMemcpyHostToDevice));
    minMax<<<(n + 255) / 256, 256>>>(dIn, dOne, dTwo, n);
    CHECK(cudaGetLastError());
    int gotLo, gotHi;
    CHECK(cudaMemcpy(&gotLo, dOne, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&gotHi, dTwo, sizeof(int), cudaMemcpyDeviceToHost));
    expect("atomicMin", gotLo, lo);
    expect("atomicMax", gotHi, hi);

    CHECK(cudaMemset(dFSum, 0, sizeof(float)));
    reduceFloat<<<32, 256>>>(dF, dFSum, n);
    CHECK(cudaGetLastError());
    float gotF;
    CHECK(cudaMemcpy(&gotF, dFSum, sizeof(float), cudaMemcpyDeviceToHost));
    printf("%-28s %.6f (host %.6f)\n", "float shuffles + atomicAdd", gotF, wantF);
    double magnitude = 0;
    for (unsigned i = 0; i < n; i++) magnitude += fabs(hf[i]);
    if (!(fabs(gotF - wantF) <= 1e-6 * magnitude)) {
        fprintf(stderr, "float sum %.6f, want %.6f\n", gotF, wantF);
        errors++;
    }
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dA)); CHECK(cudaFree(dB));
    CHECK(cudaFree(dOne)); CHECK(cudaFree(dTwo)); CHECK(cudaFree(dF)); CHECK(cudaFree(dFSum));
    delete[] h; delete[] hf;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
