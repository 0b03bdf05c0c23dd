// Models cuda-samples 2_Concepts_and_Techniques/shfl_scan (and the Blelloch scan of
// 6_Advanced/scan): an inclusive prefix sum of 1<<18 integers in three kernels: each
// block scans its 256 elements with __shfl_up_sync within warps and a shared array of
// warp totals; one block scans the block totals the same way; a third kernel adds each
// block's offset. Also a work-efficient (up-sweep/down-sweep) exclusive scan of 1024
// elements in shared memory. Checks both against a sequential scan on the host
// (exact: integers).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

// Inclusive scan of one value per thread over the block (blockDim.x <= 1024).
__device__ int blockInclusiveScan(int value) {
    __shared__ int warpTotals[32];
    int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    for (int offset = 1; offset < warpSize; offset *= 2) {
        int up = __shfl_up_sync(0xffffffff, value, offset);
        if (lane >= offset) value += up;
    }
    if (lane == warpSize - 1) warpTotals[warp] = value;
    __syncthreads();
    if (warp == 0) {
        int warps = (blockDim.x + warpSize - 1) / warpSize;
        int total = lane < warps ? warpTotals[lane] : 0;
        for (int offset = 1; offset < warpSize; offset *= 2) {
            int up = __shfl_up_sync(0xffffffff, total, offset);
            if (lane >= offset) total += up;
        }
        warpTotals[lane] = total;
    }
    __syncthreads();
    if (warp > 0) value += warpTotals[warp - 1];
    return value;
}

__global__ void scanBlocks(const int *in, int *out, int *blockSums, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = blockInclusiveScan(i < n ? in[i] : 0);
    if (i < n) out[i] = v;
    if (threadIdx.x == blockDim.x - 1) blockSums[blockIdx.x] = v;
}

__global__ void scanSums(int *sums, int n) {
    int i = threadIdx.x;
    int v = blockInclusiveScan(i < n ? sums[i] : 0);
    if (i < n) sums[i] = v;
}

__global__ void addOffsets(int *out, const int *scannedSums, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x > 0 && i < n) out[i] += scannedSums[blockIdx.x - 1];
}

// Blelloch's exclusive scan of 2 * blockDim.x elements in shared memory.
__global__ void prescan(const int *in, int *out, int n) {
    extern __shared__ int temp[];
    int thid = threadIdx.x, offset = 1;
    temp[2 * thid] = in[2 * thid];
    temp[2 * thid + 1] = in[2 * thid + 1];
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (thid < d) {
            int ai = offset * (2 * thid + 1) - 1, bi = offset * (2 * thid + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    if (thid == 0) temp[n - 1] = 0;
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (thid < d) {
            int ai = offset * (2 * thid + 1) - 1, bi = offset * (2 * thid + 2) - 1;
            int t = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += t;
        }
    }
    __syncthreads();
    out[2 * thid] = temp[2 * thid];
    out[2 * thid + 1] = temp[2 * thid + 1];
}

int main() {
    const int n = 1 << 18, threads = 256, blocks = n / threads;
    int *h = new int[n], *got = new int[n], *want = new int[n];
    unsigned seed = 3;
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = (int)((seed >> 20) % 100) - 30;
    }
    int running = 0;
    for (int i = 0; i < n; i++) want[i] = running += h[i];
    int *dIn, *dOut, *dSums;
    CHECK(cudaMalloc(&dIn, n * sizeof(int)));
    CHECK(cudaMalloc(&dOut, n * sizeof(int)));
    CHECK(cudaMalloc(&dSums, blocks * sizeof(int)));
    CHECK(cudaMemcpy(dIn, h, n * sizeof(int), cudaMemcpyHostToDevice));
    scanBlocks<<<blocks, threads>>>(dIn, dOut, dSums, n);
    CHECK(cudaGetLastError());
    scanSums<<<1, blocks>>>(dSums, blocks);
    CHECK(cudaGetLastError());
    addOffsets<<<blocks, threads>>>(dOut, dSums, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dOut, n * sizeof(int), cudaMemcpyDeviceToHost));
    int errors = 0;
    for (int i = 0; i < n; i++)
        if (got[i] != want[i] && errors++ < 10) fprintf(stderr, "inclusive[%d] = %d, want %d\n", i, got[i], want[i]);
    printf("inclusive scan of %d elements (shuffles): %s\n", n, errors ? "wrong" : "ok");

    const int m = 1024;
    prescan<<<1, m / 2, m * sizeof(int)>>>(dIn, dOut, m);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dOut, m * sizeof(int), cudaMemcpyDeviceToHost));
    int before = errors;
    for (int i = 0; i < m; i++) {
        int w = i == 0 ? 0 : want[i - 1];
        if (got[i] != w && errors++ < 20) fprintf(stderr, "exclusive[%d] = %d, want %d\n", i, got[i], w);
    }
    printf("exclusive scan of %d elements (Blelloch): %s\n", m, errors > before ? "wrong" : "ok");
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dOut)); CHECK(cudaFree(dSums));
    delete[] h; delete[] got; delete[] want;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
