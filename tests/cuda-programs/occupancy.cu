// Models cuda-samples 0_Introduction/simpleOccupancy: the launch configurator
// (cudaOccupancyMaxPotentialBlockSize, and its VariableSMem form with a per-block
// shared-memory function) picks a block size, the occupancy calculator
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor) reports how many such blocks fit on a
// multiprocessor, and a kernel runs with the suggested configuration. Checks the
// suggestions are consistent with the device's limits and cudaFuncGetAttributes, and
// the kernel's results against the host's arithmetic exactly.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

__global__ void square(int *array, int arrayCount) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx < arrayCount) array[idx] *= array[idx];
}

__global__ void stencil(const int *in, int *out, int n) {
    extern __shared__ int tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    if (i < n) out[i] = tile[threadIdx.x] + (threadIdx.x > 0 ? tile[threadIdx.x - 1] : 0);
}

struct SharedPerBlock {
    __host__ __device__ size_t operator()(int blockSize) const { return blockSize * sizeof(int); }
};

int main() {
    int errors = 0;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int minGridSize = 0, blockSize = 0;
    CHECK(cudaOccupancyMaxPotentialBlockSize(&minGridSize, &blockSize, square, 0, 0));
    int activeBlocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&activeBlocks, square, blockSize, 0));
    float occupancy = (float)(activeBlocks * blockSize / prop.warpSize) /
                      (float)(prop.maxThreadsPerMultiProcessor / prop.warpSize);
    printf("square: block size %d, min grid %d, %d active blocks per SM, occupancy %.2f\n", blockSize, minGridSize,
           activeBlocks, occupancy);
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, square));
    if (blockSize <= 0 || blockSize > prop.maxThreadsPerBlock || blockSize > attr.maxThreadsPerBlock ||
        blockSize % prop.warpSize != 0 || minGridSize < prop.multiProcessorCount || activeBlocks < 1 ||
        occupancy <= 0 || occupancy > 1) {
        fprintf(stderr, "inconsistent suggestion for square\n");
        errors++;
    }
    const int n = 100000;
    int *h = new int[n];
    for (int i = 0; i < n; i++) h[i] = i % 4000 - 2000;
    int *d, *d2;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMalloc(&d2, n * sizeof(int)));
    CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    int gridSize = (n + blockSize - 1) / blockSize;
    square<<<gridSize, blockSize>>>(d, n);
    CHECK(cudaGetLastError());
    int *got = new int[n];
    CHECK(cudaMemcpy(got, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (got[i] != h[i] * h[i] && errors++ < 10) fprintf(stderr, "square[%d] = %d\n", i, got[i]);

    int stencilGrid = 0, stencilBlock = 0;
    CHECK(cudaOccupancyMaxPotentialBlockSizeVariableSMem(&stencilGrid, &stencilBlock, stencil, SharedPerBlock(), 0));
    int stencilActive = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&stencilActive, stencil, stencilBlock,
                                                        SharedPerBlock()(stencilBlock)));
    printf("stencil: block size %d, min grid %d, %d active blocks per SM\n", stencilBlock, stencilGrid, stencilActive);
    if (stencilBlock <= 0 || stencilBlock > prop.maxThreadsPerBlock || stencilActive < 1 ||
        SharedPerBlock()(stencilBlock) * stencilActive > prop.sharedMemPerMultiprocessor) {
        fprintf(stderr, "inconsistent suggestion for stencil\n");
        errors++;
    }
    CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    stencil<<<(n + stencilBlock - 1) / stencilBlock, stencilBlock, SharedPerBlock()(stencilBlock)>>>(d, d2, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d2, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        int want = h[i] + (i % stencilBlock > 0 ? h[i - 1] : 0);
        if (got[i] != want && errors++ < 20) fprintf(stderr, "stencil[%d] = %d, want %d\n", i, got[i], want);
    }
    // A bigger block never fits more blocks per multiprocessor.
    int prev = 1 << 30;
    for (int b = 32; b <= prop.maxThreadsPerBlock; b *= 2) {
        int active = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, square, b, 0));
        if (active > prev) { fprintf(stderr, "%d blocks of %d fit, more than with smaller blocks\n", active, b); errors++; }
        prev = active;
    }
    CHECK(cudaFree(d)); CHECK(cudaFree(d2));
    delete[] h; delete[] got;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
