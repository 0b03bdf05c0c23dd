// Cooperative groups' multi-warp tiles (CUDA 13's <cooperative_groups.h>, issue #33):
// thread_block_tile<64>, <128> and <256> made by tiled_partition, with sync(), cg::reduce
// (plus and max), shfl, thread_rank, meta_group_rank and meta_group_size; and a block
// reduction of the shape of cuda-samples' multi_warp_cg_reduce<int, 256, 128>.
//
// A multi-warp tile synchronises its warps through a word of shared memory: each warp
// sets its bit with an atomic and spins (ld.acquire.cta, or a volatile load before
// sm_70) until the last warp clears the bits. On sm_80 and later that word lives in the
// reserved shared memory (%reserved_smem_offset_1); before sm_80 in the user's
// block_tile_memory, which is why every kernel passes one to this_thread_block. These
// kernels therefore only finish if the warps of a block make progress independently.
//
// i = blockIdx.x * blockDim.x + threadIdx.x; v = i < n ? in[i] : 0 (threads at or past
// n take part with v = 0 but write nothing). t = threadIdx.x.
//
// tiles64, tiles128, tiles256 (const int* in, int* out, int n); blockDim.x a multiple of
//   the tile size S (64, 128, 256), at most 1024. The tile of t holds threads
//   S*(t/S) .. S*(t/S)+S-1 of the block; its rank m = t/S. For i < n, out[6*i + k] is:
//     k = 0: the sum of v over the tile (cg::reduce, cg::plus<int>);
//     k = 1: the maximum of v over the tile (cg::reduce, cg::greater<int>);
//     k = 2: tile.thread_rank() + 1000 * tile.meta_group_rank(), i.e. t % S + 1000 * m;
//     k = 3: tile.shfl(v, src) with src = (37 * m + 5) % S: the v of the tile's thread
//            of rank src (the same src for the whole tile);
//     k = 4: after every thread stored 3 * v + 1 into s[t] and tile.sync():
//            s[S*m + (t % S + 1) % S], the value of the next thread of the tile (the
//            first one for the last), all arithmetic wrapping;
//     k = 5: tile.meta_group_size(), i.e. blockDim.x / S.
//   tiles64 and tiles256 keep the tile as cg::thread_block_tile<S> (no parent type, its
//   meta_group_rank stored); tiles128 as the tiled_partition's own type (auto).
//
// mw_reduce (const int* in, int* out, unsigned n); blockDim.x 128 or 256, any gridDim.x.
//   The shape of cuda-samples' multi_warp_cg_reduce<int, 256, 128> (reduction sample,
//   kernel 9), written for this project: each thread adds in[j] for
//   j = blockIdx.x * blockDim.x + t, then + blockDim.x * gridDim.x, ... while j < n
//   (wrapping); tiles of 128 threads reduce with cg::reduce(plus); rank 0 of tile m
//   stores it in shared memory; cg::sync(block); thread 0 adds the tiles' sums in tile
//   order. With M = blockDim.x / 128 and b = blockIdx.x:
//     out[b*(M+1) + m] = the sum of tile m (m < M), out[b*(M+1) + M] = their sum.
//   out holds gridDim.x * (M + 1) ints.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

template <unsigned S, typename Tile>
__device__ void tile_results(const Tile& tile, const int* in, int* out, int n, int* s) {
    unsigned t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    int v = i < n ? in[i] : 0;
    int sum = cg::reduce(tile, v, cg::plus<int>());
    int max = cg::reduce(tile, v, cg::greater<int>());
    unsigned m = tile.meta_group_rank();
    int ranks = (int)(tile.thread_rank() + 1000 * m);
    int shuffled = tile.shfl(v, (37 * m + 5) % S);
    s[t] = 3 * v + 1;
    tile.sync();
    int next = s[S * m + (tile.thread_rank() + 1) % S];
    if (i < n) {
        out[6 * i] = sum;
        out[6 * i + 1] = max;
        out[6 * i + 2] = ranks;
        out[6 * i + 3] = shuffled;
        out[6 * i + 4] = next;
        out[6 * i + 5] = (int)tile.meta_group_size();
    }
}

extern "C" __global__ void tiles64(const int* in, int* out, int n) {
    __shared__ cg::block_tile_memory<1024> scratch;
    __shared__ int s[1024];
    cg::thread_block block = cg::this_thread_block(scratch);
    cg::thread_block_tile<64> tile = cg::tiled_partition<64>(block);
    tile_results<64>(tile, in, out, n, s);
}

extern "C" __global__ void tiles128(const int* in, int* out, int n) {
    __shared__ cg::block_tile_memory<1024> scratch;
    __shared__ int s[1024];
    cg::thread_block block = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<128>(block);
    tile_results<128>(tile, in, out, n, s);
}

extern "C" __global__ void tiles256(const int* in, int* out, int n) {
    __shared__ cg::block_tile_memory<1024> scratch;
    __shared__ int s[1024];
    cg::thread_block block = cg::this_thread_block(scratch);
    cg::thread_block_tile<256> tile = cg::tiled_partition<256>(block);
    tile_results<256>(tile, in, out, n, s);
}

extern "C" __global__ void mw_reduce(const int* in, int* out, unsigned n) {
    __shared__ cg::block_tile_memory<256> scratch;
    __shared__ int sums[2];
    cg::thread_block cta = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<128>(cta);
    unsigned stride = blockDim.x * gridDim.x;
    int value = 0;
    for (unsigned j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
        value = (int)((unsigned)value + (unsigned)in[j]);
    }
    value = cg::reduce(tile, value, cg::plus<int>());
    if (tile.thread_rank() == 0) sums[tile.meta_group_rank()] = value;
    cg::sync(cta);
    if (threadIdx.x == 0) {
        unsigned tiles = tile.meta_group_size();
        int total = 0;
        for (unsigned m = 0; m < tiles; m++) {
            out[blockIdx.x * (tiles + 1) + m] = sums[m];
            total = (int)((unsigned)total + (unsigned)sums[m]);
        }
        out[blockIdx.x * (tiles + 1) + tiles] = total;
    }
}
