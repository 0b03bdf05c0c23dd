// Bulk and tensor (TMA) copies of sm_90 (issue #19), with the tensor map taken from
// the parameter block (a __grid_constant__ CUtensorMap). Built by nvcc only (sm_90).
//
// bulk_roundtrip in u32[n], out u32[n]; block 128 threads, n = 128 * gridDim.x. Thread 0
//               expects 512 bytes on an mbarrier (arrive.expect_tx) and copies the
//               block's 512 bytes into shared memory with cp.async.bulk in two halves
//               (256 bytes each, the second half's size in a register); the other
//               threads arrive; all wait (try_wait.parity loop). Thread t then stores
//               s[t] * 3 + t into s[t] (fence.proxy.async), a barrier, and thread 0
//               copies the 512 bytes to out with cp.async.bulk.global.shared::cta
//               .bulk_group, then commit_group and wait_group 0.
// tma_load_2d   (tmap: f32 tensor of W x H elements, row-major, box 16 x 8), out f32[...].
//               Block (bx, by) of 128 threads loads the box at x = 16 bx - 4, y = 8 by - 3
//               (out-of-bounds elements are zero, or NaN with the NaN fill) with
//               cp.async.bulk.tensor.2d, thread 0 issuing it after arrive.expect_tx of
//               16 * 8 * 4 bytes; every thread waits, then thread t writes shared element
//               t (row t / 16, column t % 16) to out[((by * gridDim.x + bx) * 128) + t].
// tma_load_3d   (tmap: u16 tensor of X x Y x Z elements, box 8 x 4 x 2, element strides
//               1 x 2 x 1: the box is 8 x 2 x 2 elements, of every other y), out u16[...];
//               block b (64 threads) loads the box at (4 b - 2, 1, b) and thread t < 32
//               writes shared element t to out[32 b + t].
// tma_store_2d  (tmap: u32 tensor of W x H, box 8 x 8), out is the tensor; block (bx, by)
//               of 64 threads fills shared element t with (by << 16) | (bx << 8) | t
//               and thread 0 stores the box at x = 8 bx - 2, y = 8 by - 1 with
//               cp.async.bulk.tensor.2d.global.shared::cta.bulk_group (elements out of
//               the tensor are not written).
// tma_swizzle   (tmap: u32 tensor of 32 x 8, box 32 x 8 with the 128-byte swizzle),
//               out u32[256]; one block of 256 threads loads the box into 1024-byte
//               aligned shared memory and thread t writes shared word t (as swizzled)
//               to out[t].

#include <cuda.h>
#include <cuda/barrier>

__device__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ void init_barrier(unsigned long long* bar, unsigned count) {
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(count)
                     : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
}

__device__ void arrive_expect(unsigned long long* bar, unsigned bytes) {
    asm volatile(
        "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)),
        "r"(bytes)
        : "memory");
}

__device__ void arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem(bar))
                 : "memory");
}

__device__ void wait_parity(unsigned long long* bar, unsigned parity) {
    asm volatile(
        "{\n\t.reg .pred done;\n"
        "WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra WAIT_%=;\n\t}" ::"r"(smem(bar)),
        "r"(parity)
        : "memory");
}

extern "C" __global__ void bulk_roundtrip(const unsigned* in, unsigned* out) {
    __shared__ alignas(16) unsigned s[128];
    __shared__ unsigned long long bar;
    init_barrier(&bar, blockDim.x);
    unsigned t = threadIdx.x;
    const unsigned* from = in + 128 * blockIdx.x;
    if (t == 0) {
        arrive_expect(&bar, 512);
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 256, "
            "[%2];" ::"r"(smem(s)),
            "l"(from), "r"(smem(&bar))
            : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
            "[%3];" ::"r"(smem(s + 64)),
            "l"(from + 64), "r"(256u), "r"(smem(&bar))
            : "memory");
    } else {
        arrive(&bar);
    }
    wait_parity(&bar, 0);
    s[t] = s[t] * 3 + t;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 512;" ::"l"(
                         out + 128 * blockIdx.x),
                     "r"(smem(s))
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

extern "C" __global__ void tma_load_2d(const __grid_constant__ CUtensorMap tmap, float* out) {
    __shared__ alignas(128) float tile[8][16];
    __shared__ unsigned long long bar;
    init_barrier(&bar, blockDim.x);
    unsigned t = threadIdx.x;
    int x = 16 * (int)blockIdx.x - 4, y = 8 * (int)blockIdx.y - 3;
    if (t == 0) {
        arrive_expect(&bar, sizeof(tile));
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
            "[%0], [%1, {%2, %3}], [%4];" ::"r"(smem(tile)),
            "l"(&tmap), "r"(x), "r"(y), "r"(smem(&bar))
            : "memory");
    } else {
        arrive(&bar);
    }
    wait_parity(&bar, 0);
    // A restricted acquire fence (PTX 8.6), as CUTLASS's cluster barriers have them.
    asm volatile("fence.acquire.sync_restrict::shared::cluster.cluster;" ::: "memory");
    out[(blockIdx.y * gridDim.x + blockIdx.x) * 128 + t] = tile[t / 16][t % 16];
}

extern "C" __global__ void tma_load_3d(const __grid_constant__ CUtensorMap tmap,
                                       unsigned short* out) {
    __shared__ alignas(128) unsigned short box[2][2][8];
    __shared__ unsigned long long bar;
    init_barrier(&bar, blockDim.x);
    unsigned t = threadIdx.x, b = blockIdx.x;
    if (t == 0) {
        arrive_expect(&bar, sizeof(box));
        asm volatile(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
            "[%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem(box)),
            "l"(&tmap), "r"(4 * (int)b - 2), "r"(1), "r"((int)b), "r"(smem(&bar))
            : "memory");
    } else {
        arrive(&bar);
    }
    wait_parity(&bar, 0);
    if (t < 32) out[32 * b + t] = (&box[0][0][0])[t];
}

extern "C" __global__ void tma_store_2d(const __grid_constant__ CUtensorMap tmap) {
    __shared__ alignas(128) unsigned tile[8][8];
    unsigned t = threadIdx.x;
    (&tile[0][0])[t] = (blockIdx.y << 16) | (blockIdx.x << 8) | t;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) {
        asm volatile(
            "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                &tmap),
            "r"(8 * (int)blockIdx.x - 2), "r"(8 * (int)blockIdx.y - 1), "r"(smem(tile))
            : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}

extern "C" __global__ void tma_swizzle(const __grid_constant__ CUtensorMap tmap, unsigned* out) {
    __shared__ alignas(1024) unsigned tile[256];
    __shared__ unsigned long long bar;
    init_barrier(&bar, blockDim.x);
    unsigned t = threadIdx.x;
    if (t == 0) {
        arrive_expect(&bar, sizeof(tile));
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
            "[%0], [%1, {%2, %3}], [%4];" ::"r"(smem(tile)),
            "l"(&tmap), "r"(0), "r"(0), "r"(smem(&bar))
            : "memory");
    } else {
        arrive(&bar);
    }
    wait_parity(&bar, 0);
    out[t] = tile[t];
}
