// Forward progress between the warps of a block (issue #33): loops whose exit depends on
// memory that another warp of the block writes later in program order. Each of them
// finishes on NVIDIA GPUs with independent thread scheduling (sm_70 and later); an
// implementation that runs one warp until it reaches a barrier spins forever.
// Built by nvcc -O3 (sm_75, sm_80, sm_90), nvcc -G (sm_80) and NVRTC (compute_70 only:
// __nanosleep and .acquire/.release need sm_70).
//
// t = threadIdx.x, w = t / 32, lane = t % 32, b = blockIdx.x, B = blockDim.x. All
// arithmetic is on unsigned 32-bit words and wraps.
//
// flag_volatile (const unsigned* in, unsigned* out, unsigned rounds); B >= 64, any grid.
//   A volatile __shared__ flag handed from warp 1 to warp 0 and back, `rounds` times,
//   with __threadfence_block() around the data and __syncwarp() before lane 0 posts.
//   Warp 1, lane L: x = in[32*b + L]; for r < rounds: box[L] = x + r; post 2r+1; wait
//   for 2r+2; x = box[L]. Warp 0 (whose wait comes first in program order), lane L:
//   acc = 0; for r < rounds: wait for 2r+1; y = box[L]; acc += y; box[L] = 2*y + L;
//   post 2r+2. So per round x <- 2*(x + r) + L, and acc sums the x + r it was sent.
//   out[64*b + L] = acc (warp 0), out[64*b + 32 + L] = final x (warp 1); warps 2.. idle.
//
// flag_atomic (const unsigned* in, unsigned* out, unsigned rounds); 33 <= B <= 64 (warp
//   1 may be partial: m = B - 32 threads), any grid. The same hand-off with
//   cuda::atomic_ref<unsigned, cuda::thread_scope_block> counters instead of the flag:
//   every warp-1 thread fetch_add(1, release)s `posted` after writing box[L], and warp 0
//   waits until posted.load(acquire) == m * (r + 1); every warp-0 thread (lane < m
//   answers box[L]) fetch_add(1, release)s `answered`, and warp 1 waits for
//   answered.load(acquire) == 32 * (r + 1). Results as flag_volatile, for L < m:
//   out[64*b + L] = acc, out[64*b + 32 + L] = x; out[64*b + L] = 0 for m <= L < 32
//   (warp-0 lanes without a partner answer nothing); other words untouched.
//
// nanosleep_wait (const unsigned* in, unsigned* out); B >= 33, any grid. The last warp
//   (k = (B - 1) / 32, its c = B - 32k threads) stores data[lane] = 5 * in[g] + lane,
//   __threadfence_block(), atomicAdd(&ready, 1). Warp 0 polls the volatile `ready` until
//   it is c, backing off with __nanosleep(ns), ns = 32, 64, ... capped at 1024; then lane
//   L: out[g] = L + the sum of data[0 .. c-1]. The last warp: out[g] = in[g] ^ 0x5a5a;
//   warps between: out[g] = g. (g = b * B + t.)
//
// spin_lock (const unsigned* in, unsigned* out, unsigned* totals); any B, any grid.
//   Every thread takes a lock (while (atomicCAS(&lock, 0, 1) != 0) {}), reads and
//   increments a plain (volatile) counter and adds in[g] to a plain (volatile) sum, then
//   releases it (__threadfence_block(), atomicExch(&lock, 0)). out[g] = the counter
//   value it read (its ticket); after __syncthreads thread 0 writes totals[2*b] = the
//   counter (= B) and totals[2*b + 1] = the sum of the block's in[g]. The tickets of a
//   block are a permutation of 0 .. B-1. The lanes of one warp contend too, so this form
//   needs independent progress within a warp as well.
// spin_lock_try: the same results, with the critical section inside the loop that tries
//   the lock (do { if (atomicCAS(...) == 0) { ...; release; done } } while (!done)), the
//   form that also finishes where a warp's lanes run in lock-step.
//
// late_arrivals (const unsigned* in, unsigned* out); B >= 33, any grid. A
//   cuda::barrier<cuda::thread_scope_block> of B threads. Warp 0 first (in program
//   order) does bar.wait(bar.arrive()); the other warps then store s[t] = 3 * in[g] + t
//   and arrive, out[g] = in[g]. Warp 0, lane L: out[g] = the sum over k = 32 .. B-1 of
//   s[k] * (k ^ L).
//
// producer_consumer (const unsigned* in, unsigned* out, unsigned rounds); B >= 33, any
//   grid, in holds P = B - 32 words per block. Warp specialization with two block-scope
//   cuda::barriers of B threads, `full` and `empty`. Producer j = t - 32 (warps 1..):
//   for r < rounds: if r > 0, empty.arrive_and_wait(); buf[j] = in[P*b + j] * (r + 1)
//   + r; full.arrive(). Consumer (warp 0), lane L: acc = 0; for r < rounds:
//   full.arrive_and_wait(); acc = 3 * acc + r + the sum of buf[j] for j < P with
//   j % 32 == L; if r + 1 < rounds, empty.arrive(). out[32*b + L] = acc.
//
// cross_block (unsigned* flag, unsigned* out); grid of 2 blocks, any B. Thread 0 of
//   block 0 spins on the volatile global *flag until it is not 0, then writes
//   out[0] = *flag + 1; thread 0 of block 1 writes out[1] = 7, __threadfence(), and
//   *flag = 41. So out = {42, 7} when flag starts 0. (A wait for a later block: see
//   tests/forward_progress_e2e.rs for what ptxvk must do.)

#pragma nv_diag_suppress static_var_with_dynamic_init

#include <cuda/atomic>
#include <cuda/barrier>

extern "C" __global__ void flag_volatile(const unsigned* in, unsigned* out, unsigned rounds) {
    __shared__ volatile unsigned flag;
    __shared__ volatile unsigned box[32];
    unsigned t = threadIdx.x, w = t / 32, lane = t % 32, b = blockIdx.x;
    if (t == 0) flag = 0;
    __syncthreads();
    if (w == 0) {
        unsigned acc = 0;
        for (unsigned r = 0; r < rounds; r++) {
            while (flag != 2 * r + 1) {
            }
            __threadfence_block();
            unsigned y = box[lane];
            acc += y;
            box[lane] = 2 * y + lane;
            __threadfence_block();
            __syncwarp();
            if (lane == 0) flag = 2 * r + 2;
        }
        out[64 * b + lane] = acc;
    } else if (w == 1) {
        unsigned x = in[32 * b + lane];
        for (unsigned r = 0; r < rounds; r++) {
            box[lane] = x + r;
            __threadfence_block();
            __syncwarp();
            if (lane == 0) flag = 2 * r + 1;
            while (flag != 2 * r + 2) {
            }
            __threadfence_block();
            x = box[lane];
        }
        out[64 * b + 32 + lane] = x;
    }
}

extern "C" __global__ void flag_atomic(const unsigned* in, unsigned* out, unsigned rounds) {
    __shared__ unsigned posted, answered;
    __shared__ unsigned box[32];
    unsigned t = threadIdx.x, w = t / 32, lane = t % 32, b = blockIdx.x;
    unsigned m = blockDim.x - 32;
    if (t == 0) {
        posted = 0;
        answered = 0;
    }
    __syncthreads();
    cuda::atomic_ref<unsigned, cuda::thread_scope_block> post(posted), answer(answered);
    if (w == 0) {
        unsigned acc = 0;
        for (unsigned r = 0; r < rounds; r++) {
            while (post.load(cuda::memory_order_acquire) != m * (r + 1)) {
            }
            if (lane < m) {
                unsigned y = box[lane];
                acc += y;
                box[lane] = 2 * y + lane;
            }
            answer.fetch_add(1, cuda::memory_order_release);
        }
        out[64 * b + lane] = acc;
    } else {
        unsigned x = in[32 * b + lane];
        for (unsigned r = 0; r < rounds; r++) {
            box[lane] = x + r;
            post.fetch_add(1, cuda::memory_order_release);
            while (answer.load(cuda::memory_order_acquire) != 32 * (r + 1)) {
            }
            x = box[lane];
        }
        out[64 * b + 32 + lane] = x;
    }
}

extern "C" __global__ void nanosleep_wait(const unsigned* in, unsigned* out) {
    __shared__ unsigned ready;
    __shared__ unsigned data[32];
    unsigned t = threadIdx.x, w = t / 32, lane = t % 32, g = blockIdx.x * blockDim.x + t;
    unsigned last = (blockDim.x - 1) / 32, count = blockDim.x - 32 * last;
    if (t == 0) ready = 0;
    __syncthreads();
    if (w == 0) {
        unsigned ns = 32;
        while (*(volatile unsigned*)&ready != count) {
            __nanosleep(ns);
            ns = ns < 1024 ? 2 * ns : 1024;
        }
        __threadfence_block();
        unsigned sum = lane;
        for (unsigned k = 0; k < count; k++) sum += ((volatile unsigned*)data)[k];
        out[g] = sum;
    } else if (w == last) {
        data[lane] = 5 * in[g] + lane;
        __threadfence_block();
        atomicAdd(&ready, 1);
        out[g] = in[g] ^ 0x5a5a;
    } else {
        out[g] = g;
    }
}

extern "C" __global__ void spin_lock(const unsigned* in, unsigned* out, unsigned* totals) {
    __shared__ int lock;
    __shared__ unsigned counter, sum;
    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    if (t == 0) {
        lock = 0;
        counter = 0;
        sum = 0;
    }
    __syncthreads();
    while (atomicCAS(&lock, 0, 1) != 0) {
    }
    __threadfence_block();
    unsigned ticket = *(volatile unsigned*)&counter;
    *(volatile unsigned*)&counter = ticket + 1;
    *(volatile unsigned*)&sum = *(volatile unsigned*)&sum + in[g];
    __threadfence_block();
    atomicExch(&lock, 0);
    out[g] = ticket;
    __syncthreads();
    if (t == 0) {
        totals[2 * blockIdx.x] = counter;
        totals[2 * blockIdx.x + 1] = sum;
    }
}

extern "C" __global__ void spin_lock_try(const unsigned* in, unsigned* out, unsigned* totals) {
    __shared__ int lock;
    __shared__ unsigned counter, sum;
    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    if (t == 0) {
        lock = 0;
        counter = 0;
        sum = 0;
    }
    __syncthreads();
    unsigned ticket = 0;
    bool done = false;
    do {
        if (atomicCAS(&lock, 0, 1) == 0) {
            __threadfence_block();
            ticket = *(volatile unsigned*)&counter;
            *(volatile unsigned*)&counter = ticket + 1;
            *(volatile unsigned*)&sum = *(volatile unsigned*)&sum + in[g];
            __threadfence_block();
            atomicExch(&lock, 0);
            done = true;
        }
    } while (!done);
    out[g] = ticket;
    __syncthreads();
    if (t == 0) {
        totals[2 * blockIdx.x] = counter;
        totals[2 * blockIdx.x + 1] = sum;
    }
}

extern "C" __global__ void late_arrivals(const unsigned* in, unsigned* out) {
    __shared__ unsigned s[1024];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    unsigned t = threadIdx.x, n = blockDim.x, g = blockIdx.x * n + t;
    if (t == 0) init(&bar, n);
    __syncthreads();
    if (t < 32) {
        bar.wait(bar.arrive());
        unsigned acc = 0;
        for (unsigned k = 32; k < n; k++) acc += s[k] * (k ^ t);
        out[g] = acc;
    } else {
        s[t] = 3 * in[g] + t;
        auto token = bar.arrive();
        (void)token;
        out[g] = in[g];
    }
}

extern "C" __global__ void producer_consumer(const unsigned* in, unsigned* out,
                                             unsigned rounds) {
    __shared__ unsigned buf[1024];
    __shared__ cuda::barrier<cuda::thread_scope_block> full, empty;
    unsigned t = threadIdx.x, n = blockDim.x, p = n - 32;
    if (t == 0) {
        init(&full, n);
        init(&empty, n);
    }
    __syncthreads();
    if (t < 32) {
        unsigned acc = 0;
        for (unsigned r = 0; r < rounds; r++) {
            full.arrive_and_wait();
            acc = 3 * acc + r;
            for (unsigned j = t; j < p; j += 32) acc += buf[j];
            if (r + 1 < rounds) {
                auto token = empty.arrive();
                (void)token;
            }
        }
        out[32 * blockIdx.x + t] = acc;
    } else {
        unsigned j = t - 32, x = in[p * blockIdx.x + j];
        for (unsigned r = 0; r < rounds; r++) {
            if (r > 0) empty.arrive_and_wait();
            buf[j] = x * (r + 1) + r;
            auto token = full.arrive();
            (void)token;
        }
    }
}

extern "C" __global__ void cross_block(unsigned* flag, unsigned* out) {
    if (threadIdx.x != 0) return;
    volatile unsigned* f = flag;
    if (blockIdx.x == 0) {
        while (*f == 0) {
        }
        out[0] = *f + 1;
    } else if (blockIdx.x == 1) {
        out[1] = 7;
        __threadfence();
        *f = 41;
    }
}
