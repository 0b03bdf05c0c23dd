// mbarrier objects of sm_80 and sm_90 (issue #19): inline `mbarrier` instructions,
// libcu++'s block-scope cuda::barrier and cuda::pipeline, and cuda::memcpy_async
// completing on a barrier. Built by nvcc only (sm_80, sm_89, sm_90).
//
// mbarrier_ops  out u32[32]; one thread (block 1) walks one barrier through its states,
//               writing what it observes (w: test_wait, p: pending_count of a state):
//                 init(3); s0 = arrive;               out[0] = w(s0), out[1] = p(s0)
//                 s1 = arrive(count 2)  (phase 0 completes)
//                                                     out[2] = w(s0), out[3] = p(s1)
//                 out[4] = test_wait.parity 0, out[5] = test_wait.parity 1
//                 s2 = arrive_drop  (expected 3 -> 2) out[6] = w(s2), out[7] = p(s2)
//                 s3 = arrive(2)    (phase 1 completes)
//                                                     out[8] = w(s2), out[9] = p(s3)
//                 expect_tx(64); s4 = arrive(2)       out[10] = w(s4)  (tx pending)
//                 complete_tx(40)                     out[11] = w(s4)
//                 complete_tx(24)                     out[12] = w(s4)  (phase 2 done)
//                 s5 = arrive.expect_tx(16)           out[13] = w(s5), out[14] = p(s5)
//                 complete_tx(16)                     out[15] = w(s5)
//                 s6 = arrive                         out[16] = w(s6)  (phase 3 done)
//                 try_wait.parity 0 (phase 4, even: not complete) out[17]
//                 try_wait.parity 1                   out[18]
//                 s7 = arrive.noComplete(1)           out[19] = w(s7), out[20] = p(s7)
//                 inval, init(1); s8 = arrive         out[21] = w(s8), out[22] = p(s8)
//                 out[23] = 0xb00f (end marker)
// block_barrier in u32[n], out u32[n]; n = gridDim.x * blockDim.x. A block-scope
//               cuda::barrier of blockDim.x threads, 4 rounds: round r, thread t
//               stores v = v * 3 + in[g] + r into s[t], arrive_and_wait, then
//               v += s[(t + r + 1) % blockDim.x], arrive_and_wait; v starts 0 and
//               out[g] = v (g = the global thread index, all u32 arithmetic).
// split_barrier in u32[n], out u32[n]; like one round of block_barrier, with the split
//               form: s[t] = in[g]; token = arrive(); local = in[g] * 7 (work
//               between arrive and wait); wait(token); out[g] = local + s[blockDim.x - 1 - t].
// dropping      out u32[n]; block of 64 threads; barrier of 64. Threads 32..63 arrive
//               and drop in round 0 (then leave the loop); threads 0..31 run 3 rounds
//               of s[t] = r * 100 + t; arrive_and_wait; acc += s[31 - t];
//               arrive_and_wait. out[g] = acc for t < 32, else 0xdead.
// block_pipeline in f32[n], out f32[gridDim.x]; block 128, 4 chunks of 128 floats per
//               block (n = 512 * gridDim.x): a two-stage cuda::pipeline of block
//               scope in which every thread is producer and consumer; the block copies
//               chunk c with cuda::memcpy_async(group, ...) and thread t adds element t
//               of each chunk in chunk order, then thread 0 adds the 128 sums in
//               thread order (as async_copy.cu's pipeline_sum).
// barrier_copy  in u32[n], out u32[n]; block 64. cuda::memcpy_async(group, s, in + 64 b,
//               64 * 4 bytes, barrier) then arrive_and_wait; out[g] = s[63 - t] + t.

#pragma nv_diag_suppress static_var_with_dynamic_init

#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>

namespace cg = cooperative_groups;

__device__ unsigned bar_addr(unsigned long long* bar) {
    return (unsigned)__cvta_generic_to_shared(bar);
}

__device__ unsigned long long arrive(unsigned long long* bar) {
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(bar_addr(bar)) : "memory");
    return state;
}

// An arrive-on of count n. The count operand without .noComplete needs sm_90 (PTX ISA
// 9.2 §9.7.13.15, Target ISA Notes); before, n arrive-ons of one, whose last returns
// the same state (the phase they arrive on).
__device__ unsigned long long arrive_n(unsigned long long* bar, unsigned n) {
    unsigned long long state;
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;"
                 : "=l"(state)
                 : "r"(bar_addr(bar)), "r"(n)
                 : "memory");
#else
    for (unsigned i = 0; i < n; ++i) state = arrive(bar);
#endif
    return state;
}

__device__ unsigned test_wait(unsigned long long* bar, unsigned long long state) {
    unsigned done;
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.test_wait.shared.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar_addr(bar)), "l"(state)
        : "memory");
    return done;
}

__device__ unsigned pending(unsigned long long state) {
    unsigned n;
    asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(n) : "l"(state));
    return n;
}

extern "C" __global__ void mbarrier_ops(unsigned* out) {
    __shared__ unsigned long long bar;
    unsigned a = bar_addr(&bar);
    asm volatile("mbarrier.init.shared.b64 [%0], 3;" ::"r"(a) : "memory");
    unsigned long long s0 = arrive(&bar);
    out[0] = test_wait(&bar, s0);
    out[1] = pending(s0);
    unsigned long long s1 = arrive_n(&bar, 2);
    out[2] = test_wait(&bar, s0);
    out[3] = pending(s1);
    unsigned even, odd;
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.test_wait.parity.shared.b64 p, [%2], 0;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t"
        "mbarrier.test_wait.parity.shared.b64 p, [%2], 1;\n\tselp.u32 %1, 1, 0, p;\n\t}"
        : "=r"(even), "=r"(odd)
        : "r"(a)
        : "memory");
    out[4] = even;
    out[5] = odd;
    unsigned long long s2;
    asm volatile("mbarrier.arrive_drop.shared.b64 %0, [%1];" : "=l"(s2) : "r"(a) : "memory");
    out[6] = test_wait(&bar, s2);
    out[7] = pending(s2);
    unsigned long long s3 = arrive_n(&bar, 2);
    out[8] = test_wait(&bar, s2);
    out[9] = pending(s3);
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], 64;" ::"r"(a) : "memory");
    unsigned long long s4 = arrive_n(&bar, 2);
    out[10] = test_wait(&bar, s4);
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 40;" ::"r"(a) : "memory");
    out[11] = test_wait(&bar, s4);
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 24;" ::"r"(a) : "memory");
    out[12] = test_wait(&bar, s4);
    unsigned long long s5;
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %0, [%1], 16;"
                 : "=l"(s5)
                 : "r"(a)
                 : "memory");
    out[13] = test_wait(&bar, s5);
    out[14] = pending(s5);
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 16;" ::"r"(a) : "memory");
    out[15] = test_wait(&bar, s5);
    unsigned long long s6 = arrive(&bar);
    out[16] = test_wait(&bar, s6);
    unsigned p0, p1;
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%2], 0;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%2], 1;\n\tselp.u32 %1, 1, 0, p;\n\t}"
        : "=r"(p0), "=r"(p1)
        : "r"(a)
        : "memory");
    out[17] = p0;
    out[18] = p1;
#else
    // sm_80 has no tx-count: phases 2 and 3 by plain arrivals (2 each).
    unsigned long long s4 = arrive_n(&bar, 2);
    out[10] = 1;
    out[11] = 1;
    out[12] = test_wait(&bar, s4);
    unsigned long long s5 = arrive(&bar);
    out[13] = test_wait(&bar, s5);
    out[14] = pending(s5);
    out[15] = 0;
    unsigned long long s6 = arrive(&bar);
    out[16] = test_wait(&bar, s6);
    unsigned p0, p1;
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.test_wait.parity.shared.b64 p, [%2], 0;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t"
        "mbarrier.test_wait.parity.shared.b64 p, [%2], 1;\n\tselp.u32 %1, 1, 0, p;\n\t}"
        : "=r"(p0), "=r"(p1)
        : "r"(a)
        : "memory");
    out[17] = p0;
    out[18] = p1;
#endif
    unsigned long long s7;
    asm volatile("mbarrier.arrive.noComplete.shared.b64 %0, [%1], 1;"
                 : "=l"(s7)
                 : "r"(a)
                 : "memory");
    out[19] = test_wait(&bar, s7);
    out[20] = pending(s7);
    asm volatile("mbarrier.inval.shared.b64 [%0];" ::"r"(a) : "memory");
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(a) : "memory");
    unsigned long long s8 = arrive(&bar);
    out[21] = test_wait(&bar, s8);
    out[22] = pending(s8);
    out[23] = 0xb00f;
}

extern "C" __global__ void block_barrier(const unsigned* in, unsigned* out) {
    __shared__ unsigned s[256];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    unsigned t = threadIdx.x, n = blockDim.x, g = blockIdx.x * n + t;
    if (t == 0) init(&bar, n);
    __syncthreads();
    unsigned v = 0;
    for (unsigned r = 0; r < 4; r++) {
        v = v * 3 + in[g] + r;
        s[t] = v;
        bar.arrive_and_wait();
        v += s[(t + r + 1) % n];
        bar.arrive_and_wait();
    }
    out[g] = v;
}

extern "C" __global__ void split_barrier(const unsigned* in, unsigned* out) {
    __shared__ unsigned s[256];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    unsigned t = threadIdx.x, n = blockDim.x, g = blockIdx.x * n + t;
    if (t == 0) init(&bar, n);
    __syncthreads();
    s[t] = in[g];
    auto token = bar.arrive();
    unsigned local = in[g] * 7;
    bar.wait(std::move(token));
    out[g] = local + s[n - 1 - t];
}

extern "C" __global__ void dropping(unsigned* out) {
    __shared__ unsigned s[32];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    if (t == 0) init(&bar, blockDim.x);
    __syncthreads();
    if (t >= 32) {
        (void)bar.arrive_and_drop();
        out[g] = 0xdead;
        return;
    }
    unsigned acc = 0;
    for (unsigned r = 0; r < 3; r++) {
        s[t] = r * 100 + t;
        bar.arrive_and_wait();
        acc += s[31 - t];
        bar.arrive_and_wait();
    }
    out[g] = acc;
}

extern "C" __global__ void block_pipeline(const float* in, float* out) {
    constexpr int stages = 2;
    __shared__ float stage[stages][128];
    __shared__ float sums[128];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
    auto block = cg::this_thread_block();
    auto pipe = cuda::make_pipeline(block, &state);
    const float* base = in + 512 * blockIdx.x;
    unsigned t = threadIdx.x;
    float sum = 0.0f;
    for (int c = 0; c < stages; c++) {
        pipe.producer_acquire();
        cuda::memcpy_async(block, stage[c], base + 128 * c, sizeof(float) * 128, pipe);
        pipe.producer_commit();
    }
    for (int c = 0; c < 4; c++) {
        pipe.consumer_wait();
        sum += stage[c % stages][t];
        pipe.consumer_release();
        if (c + stages < 4) {
            pipe.producer_acquire();
            cuda::memcpy_async(block, stage[c % stages], base + 128 * (c + stages),
                               sizeof(float) * 128, pipe);
            pipe.producer_commit();
        }
    }
    sums[t] = sum;
    __syncthreads();
    if (t == 0) {
        float total = 0.0f;
        for (int k = 0; k < 128; k++) total += sums[k];
        out[blockIdx.x] = total;
    }
}

extern "C" __global__ void barrier_copy(const unsigned* in, unsigned* out) {
    __shared__ alignas(16) unsigned s[64];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cg::this_thread_block();
    unsigned t = threadIdx.x, g = blockIdx.x * 64 + t;
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(block, s, in + 64 * blockIdx.x, cuda::aligned_size_t<16>(64 * 4), bar);
    bar.arrive_and_wait();
    out[g] = s[63 - t] + t;
}
