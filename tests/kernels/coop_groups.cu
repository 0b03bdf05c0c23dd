// Cooperative groups (CUDA 13's <cooperative_groups.h>), as real programs use them:
// this_thread_block, tiled_partition<16>/<32>, cg::reduce, a tile's shfl_down and
// thread_rank, coalesced_threads in divergent code, and block.sync(). nvcc builds it
// with -O3 and -G (where this_thread_block() reads the reserved shared memory,
// %reserved_smem_offset_1, and every operation is an out-of-line function), NVRTC too.
//
// Tiles of more than 32 threads (tiled_partition<64> and up), whose sync is a
// spin-wait of each warp on the others' atomics in shared memory, are in
// multi_warp_cg.cu: they need forward progress between the warps of a block
// (issue #33, tests/forward_progress_e2e.rs).
//
// i = blockIdx.x * blockDim.x + threadIdx.x; v = i < n ? in[i] : 0; blockDim.x is a
// multiple of 32. For i < n, out[5*i + k] is:
//   k = 0: the sum of v over the 16-thread tile of i (threads 16*(t/16) .. +15 of the
//          block, t = threadIdx.x), including threads past n (their v is 0);
//   k = 1: the maximum of v over its 32-thread tile;
//   k = 2: the sum of v over its 32-thread tile;
//   k = 3: t32.shfl_down(v, 1) + t32.thread_rank(): the v of the next thread of the
//          32-thread tile (its own v for the last one), plus t % 32;
//   k = 4: for odd v, 64 * (the sum of the odd v of its 32-thread tile) + (the number
//          of threads of the tile with odd v below it); -1 for even v.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void coop_groups(const int* in, int* out, int n) {
    cg::thread_block block = cg::this_thread_block();
    int i = blockIdx.x * blockDim.x + block.thread_rank();
    int v = i < n ? in[i] : 0;
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(block);
    cg::thread_block_tile<32> t32 = cg::tiled_partition<32>(block);
    int s16 = cg::reduce(t16, v, cg::plus<int>());
    int m32 = cg::reduce(t32, v, cg::greater<int>());
    int s32 = cg::reduce(t32, v, cg::plus<int>());
    int next = t32.shfl_down(v, 1) + (int)t32.thread_rank();
    block.sync();
    int odd = -1;
    if (v & 1) {
        cg::coalesced_group g = cg::coalesced_threads();
        odd = cg::reduce(g, v, cg::plus<int>()) * 64 + (int)g.thread_rank();
    }
    if (i < n) {
        out[5 * i] = s16;
        out[5 * i + 1] = m32;
        out[5 * i + 2] = s32;
        out[5 * i + 3] = next;
        out[5 * i + 4] = odd;
    }
}
