// Models cuda-samples 0_Introduction/simpleCooperativeGroups (and the tile reductions
// of 2_Concepts_and_Techniques/reductionMultiBlockCG): cooperative groups' thread_block
// (sync, thread_rank), tiled_partition into static tiles of 32, 16 and 4 threads
// (shfl_down, any/all, ballot) and a dynamic tiled_partition of 16; cg::reduce over
// tiles with cg::plus and cg::greater; coalesced_threads in a divergent branch. (Grid-wide
// synchronisation is grid_sync.cu.) Checks every value against the host's arithmetic
// exactly.
#include <cstdio>
#include <cstdlib>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

#include "check.h"

// The sample's sumReduction over a thread group through shared memory.
__device__ int sumReduction(cg::thread_group g, int *x, int val) {
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        x[lane] = val;
        g.sync();
        if (lane < i) val += x[lane + i];
        g.sync();
    }
    return g.thread_rank() == 0 ? val : -1;
}

// out[0]: block sum; out[1..]: per-tile-of-16 sums via a dynamic partition; then static
// tiles' results.
__global__ void groupKernel(int *out) {
    extern __shared__ int workspace[];
    cg::thread_block block = cg::this_thread_block();
    int rank = block.thread_rank();
    int blockSum = sumReduction(block, workspace, rank);
    if (rank == 0) out[0] = blockSum;
    block.sync();

    cg::thread_group tile16 = cg::tiled_partition(block, 16);
    int offset = rank - tile16.thread_rank();
    int tileSum = sumReduction(tile16, workspace + offset, rank);
    if (tile16.thread_rank() == 0) out[1 + rank / 16] = tileSum;
    block.sync();

    const int tiles16 = 64 / 16;
    int *staticOut = out + 1 + tiles16;  // 64 threads: 2 warps of 32
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int v = rank * 3 + 1;
    for (int i = warp.size() / 2; i > 0; i /= 2) v += warp.shfl_down(v, i);
    if (warp.thread_rank() == 0) staticOut[rank / 32] = v;
    // cg::reduce with plus and greater on tiles of 16 and 4.
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(block);
    cg::thread_block_tile<4> t4 = cg::tiled_partition<4>(t16);
    int s16 = cg::reduce(t16, rank * rank, cg::plus<int>());
    int m4 = cg::reduce(t4, (rank * 37) % 64, cg::greater<int>());
    if (t16.thread_rank() == 0) staticOut[2 + rank / 16] = s16;
    if (t4.thread_rank() == 0) staticOut[6 + rank / 4] = m4;
    // Votes: any/all/ballot on warp tiles.
    unsigned ballot = warp.ballot(rank % 3 == 0);
    bool any = warp.any(rank == 40);
    bool all = warp.all(rank < 64);
    if (warp.thread_rank() == 0) {
        staticOut[22 + rank / 32] = (int)ballot;
        staticOut[24 + rank / 32] = any * 2 + all;
    }
    // coalesced_threads: the odd threads count themselves.
    if (rank & 1) {
        cg::coalesced_group active = cg::coalesced_threads();
        if (active.thread_rank() == 0) atomicAdd(&staticOut[26], (int)active.size());
    }
}

int main() {
    int errors = 0;
    const int threads = 64, outs = 1 + 4 + 27;
    int *dOut;
    CHECK(cudaMalloc(&dOut, outs * sizeof(int)));
    CHECK(cudaMemset(dOut, 0, outs * sizeof(int)));
    groupKernel<<<1, threads, threads * sizeof(int)>>>(dOut);
    CHECK(cudaGetLastError());
    int got[outs], want[outs] = {0};
    CHECK(cudaMemcpy(got, dOut, sizeof got, cudaMemcpyDeviceToHost));
    for (int r = 0; r < threads; r++) {
        want[0] += r;
        want[1 + r / 16] += r;
        int *w = want + 5;
        w[r / 32] += r * 3 + 1;
        w[2 + r / 16] += r * r;
        int m = (r * 37) % 64;
        if (r % 4 == 0 || m > w[6 + r / 4]) w[6 + r / 4] = m;
        if (r % 3 == 0) w[22 + r / 32] |= 1 << (r % 32);
        if (r & 1) w[26]++;
    }
    want[5 + 24] = 0 * 2 + 1;  // rank 40 is in the second warp
    want[5 + 25] = 1 * 2 + 1;
    const char *names[] = {"block sum", "tile16 sum", "warp shfl_down sum", "reduce plus (16)", "reduce greater (4)",
                           "ballot", "any/all", "coalesced size"};
    int firsts[] = {0, 1, 5, 7, 11, 27, 29, 31, 32};
    for (int g = 0; g < 8; g++) {
        bool ok = true;
        for (int i = firsts[g]; i < firsts[g + 1]; i++)
            if (got[i] != want[i]) {
                ok = false;
                fprintf(stderr, "%s: [%d] = %d, want %d\n", names[g], i, got[i], want[i]);
            }
        printf("%-22s %s\n", names[g], ok ? "ok" : "wrong");
        errors += !ok;
    }

    CHECK(cudaFree(dOut));
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
