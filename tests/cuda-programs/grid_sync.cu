// Models cuda-samples 2_Concepts_and_Techniques/reductionMultiBlockCG: a grid-wide
// reduction launched with cudaLaunchCooperativeKernel (after checking
// cudaDevAttrCooperativeLaunch), sized by cudaOccupancyMaxActiveBlocksPerMultiprocessor
// so every block is resident, whose blocks write partial sums, synchronise the whole grid
// with cooperative_groups::this_grid().sync(), and let one thread add the partials.
// Checks the sum against the host's exactly (integers).
#include <cstdio>
#include <cstdlib>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

#include "check.h"

__global__ void gridReduce(const int *in, int *partials, int *result, int n) {
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ int s[256];
    int sum = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) sum += in[i];
    s[block.thread_rank()] = sum;
    block.sync();
    for (int i = block.size() / 2; i > 0; i /= 2) {
        if (block.thread_rank() < i) s[block.thread_rank()] += s[block.thread_rank() + i];
        block.sync();
    }
    if (block.thread_rank() == 0) partials[blockIdx.x] = s[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        int total = 0;
        for (int b = 0; b < gridDim.x; b++) total += partials[b];
        *result = total;
    }
}

int main() {
    int errors = 0;
    int cooperative = 0, sms = 0, blocksPerSm = 0;
    CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocksPerSm, gridReduce, 256, 0));
    printf("cooperativeLaunch %d, %d SMs, %d blocks of 256 per SM\n", cooperative, sms, blocksPerSm);
    if (!cooperative) { printf("FAIL: no cooperative launch\n"); return 1; }
    const int n = 1 << 18;
    int *h = new int[n];
    long long sum = 0;
    for (int i = 0; i < n; i++) sum += h[i] = (i % 19) - 9;
    int *dIn, *dPartials, *dResult;
    int blocks = sms * blocksPerSm;
    CHECK(cudaMalloc(&dIn, n * sizeof(int)));
    CHECK(cudaMalloc(&dPartials, blocks * sizeof(int)));
    CHECK(cudaMalloc(&dResult, sizeof(int)));
    CHECK(cudaMemcpy(dIn, h, n * sizeof(int), cudaMemcpyHostToDevice));
    int length = n;
    void *args[] = {&dIn, &dPartials, &dResult, &length};
    CHECK(cudaLaunchCooperativeKernel((void *)gridReduce, blocks, 256, args, 0, 0));
    int result;
    CHECK(cudaMemcpy(&result, dResult, sizeof result, cudaMemcpyDeviceToHost));
    printf("grid-wide reduction over %d blocks: %d\n", blocks, result);
    if (result != sum) { fprintf(stderr, "grid reduction %d, want %lld\n", result, sum); errors++; }
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dPartials)); CHECK(cudaFree(dResult));
    delete[] h;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
