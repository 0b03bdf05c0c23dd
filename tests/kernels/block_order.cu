// Blocks that wait for other blocks (issue #39, item 2), without cooperative launches:
// what libraries rely on because NVIDIA GPUs start blocks in order and run them to
// completion. Built by nvcc -O3 (sm_75, sm_80, sm_90), nvcc -G (sm_80) and NVRTC
// (compute_52, compute_70).
//
// t = threadIdx.x, b = blockIdx.x, B = blockDim.x, G = gridDim.x. All arithmetic is
// on unsigned 32-bit words and wraps.
//
// ticket (unsigned* counter, unsigned* order); any B, any grid. Thread 0 of block b:
//   order[b] = atomicAdd(counter, 1), the block's place in the order blocks started.
//
// lookback_scan (const unsigned* in, unsigned* out, unsigned long long* status,
//   unsigned n); B = 256 exactly, G = ceil(n / 1024), status holds G zeroed words.
//   A single-pass inclusive prefix sum with decoupled look-back (Merrill & Garland
//   2016, the algorithm of CUB's DeviceScan): block b scans tile b (items
//   1024b .. 1024b + 1023, 4 consecutive items per thread, items past n count as 0) in
//   shared memory, then thread 0 publishes the tile's status word, flag << 32 | value:
//   flag 2 with the tile's sum for b = 0, otherwise flag 1 with the tile's sum (its
//   aggregate), then looks back over tiles b-1, b-2, ...: it polls a tile's word until
//   its flag is not 0, adds its value, and stops at a flag 2 (an inclusive prefix);
//   then it publishes flag 2 with that prefix plus the aggregate. out[i] = in[0] + ...
//   + in[i] for i < n; other words untouched.
//
// last_block_sum (const unsigned* in, unsigned* partial, unsigned* count,
//   unsigned* result, unsigned n); B = 256 exactly, any grid, *count = 0. Each block
//   sums in[i] for i = b*B + t, stepping by G*B (i < n), writes partial[b],
//   __threadfence(), and takes a ticket atomicInc(count, G - 1); the block that takes
//   ticket G - 1 (the last to finish its part) sums partial[0 .. G-1] and writes
//   result[0] = the sum of in[0 .. n-1]. atomicInc wraps *count back to 0.
//
// chain (unsigned* flags, unsigned* out, unsigned work); any B, any grid, flags holds G
//   zeroed words. Thread 0 of each block computes a value v and then writes out[b] = v,
//   __threadfence(), flags[b] = v (volatile). Block 0: v = 1 + (x & 0xffff) after
//   `work` steps of x = x * 1664525 + 1013904223 from x = 1 (long work, during which
//   the later blocks wait); block b > 0 first waits until the volatile flags[b-1] is
//   not 0, then v = 1 + b + flags[b-1]. So every block waits for the one before it.
//
// wait_unwritten (unsigned* flag, unsigned* out); any B, any grid. Thread 0 of every
//   block spins while the volatile *flag is 0, which nothing writes: a wait that can
//   never end. Then out[b] = *flag.
//
// wait_cycle (unsigned* flags, unsigned* out); any B, G = 2. Thread 0 of block b waits
//   until flags[1 - b] (volatile) is not 0, then sets flags[b] = 1 and out[b] = 1: each
//   block waits for the other, so neither can go on.

extern "C" __global__ void ticket(unsigned* counter, unsigned* order) {
    if (threadIdx.x == 0) order[blockIdx.x] = atomicAdd(counter, 1u);
}

#define SCAN_THREADS 256
#define SCAN_ITEMS 4
#define FLAG_AGGREGATE 1ull
#define FLAG_PREFIX 2ull

__device__ void publish(unsigned long long* status, unsigned tile, unsigned long long flag,
                        unsigned value) {
    // The tile's data is written before its status word is (CUB orders them the same way).
    __threadfence();
    atomicExch(&status[tile], flag << 32 | value);
}

extern "C" __global__ void lookback_scan(const unsigned* in, unsigned* out,
                                         unsigned long long* status, unsigned n) {
    __shared__ unsigned sums[SCAN_THREADS];
    __shared__ unsigned exclusive;
    unsigned t = threadIdx.x, tile = blockIdx.x;
    unsigned first = (tile * SCAN_THREADS + t) * SCAN_ITEMS;
    unsigned items[SCAN_ITEMS];
    unsigned own = 0;
    for (unsigned k = 0; k < SCAN_ITEMS; k++) {
        items[k] = first + k < n ? in[first + k] : 0;
        own += items[k];
    }
    // Inclusive scan of the threads' sums (Hillis-Steele).
    sums[t] = own;
    __syncthreads();
    for (unsigned step = 1; step < SCAN_THREADS; step *= 2) {
        unsigned x = t >= step ? sums[t - step] : 0;
        __syncthreads();
        sums[t] += x;
        __syncthreads();
    }
    if (t == 0) {
        unsigned aggregate = sums[SCAN_THREADS - 1];
        unsigned prefix = 0;
        if (tile == 0) {
            publish(status, 0, FLAG_PREFIX, aggregate);
        } else {
            publish(status, tile, FLAG_AGGREGATE, aggregate);
            volatile unsigned long long* look = status;
            for (unsigned j = tile - 1;; j--) {
                unsigned long long word;
                do {
                    word = look[j];
                } while ((word >> 32) == 0);
                prefix += (unsigned)word;
                if ((word >> 32) == FLAG_PREFIX) break;
            }
            publish(status, tile, FLAG_PREFIX, prefix + aggregate);
        }
        exclusive = prefix;
    }
    __syncthreads();
    unsigned running = exclusive + sums[t] - own;
    for (unsigned k = 0; k < SCAN_ITEMS; k++) {
        running += items[k];
        if (first + k < n) out[first + k] = running;
    }
}

extern "C" __global__ void last_block_sum(const unsigned* in, unsigned* partial,
                                          unsigned* count, unsigned* result, unsigned n) {
    __shared__ unsigned sums[SCAN_THREADS];
    __shared__ bool last;
    unsigned t = threadIdx.x;
    unsigned own = 0;
    for (unsigned i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        own += in[i];
    sums[t] = own;
    __syncthreads();
    for (unsigned half = SCAN_THREADS / 2; half > 0; half /= 2) {
        if (t < half) sums[t] += sums[t + half];
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = sums[0];
        __threadfence();
        unsigned ticket = atomicInc(count, gridDim.x - 1);
        last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    volatile unsigned* parts = partial;
    own = 0;
    for (unsigned i = t; i < gridDim.x; i += blockDim.x) own += parts[i];
    sums[t] = own;
    __syncthreads();
    for (unsigned half = SCAN_THREADS / 2; half > 0; half /= 2) {
        if (t < half) sums[t] += sums[t + half];
        __syncthreads();
    }
    if (t == 0) result[0] = sums[0];
}

extern "C" __global__ void chain(unsigned* flags, unsigned* out, unsigned work) {
    if (threadIdx.x != 0) return;
    unsigned b = blockIdx.x;
    volatile unsigned* f = flags;
    unsigned value;
    if (b == 0) {
        unsigned x = 1;
        for (unsigned i = 0; i < work; i++) x = x * 1664525u + 1013904223u;
        value = 1 + (x & 0xffff);
    } else {
        unsigned before;
        while ((before = f[b - 1]) == 0) {
        }
        value = 1 + b + before;
    }
    out[b] = value;
    __threadfence();
    f[b] = value;
}

extern "C" __global__ void wait_unwritten(unsigned* flag, unsigned* out) {
    if (threadIdx.x != 0) return;
    volatile unsigned* f = flag;
    while (*f == 0) {
    }
    out[blockIdx.x] = *f;
}

extern "C" __global__ void wait_cycle(unsigned* flags, unsigned* out) {
    if (threadIdx.x != 0) return;
    unsigned b = blockIdx.x;
    volatile unsigned* f = flags;
    while (f[1 - b] == 0) {
    }
    f[b] = 1;
    out[b] = 1;
}
