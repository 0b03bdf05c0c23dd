// Grid synchronization (cooperative groups' this_grid().sync(), issue #39): kernels
// whose grids are larger than any device runs at once, so ptxvk cuts them into phases
// at their grid barriers (lower/src/pass/split_grid.rs). tests/grid_sync_e2e.rs checks
// them against CPU models.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define THREADS 128

// Three grid barriers; a register (r), a shared array (s) and values read before a
// barrier (v, s1) live across them; each round reads another block's output.
extern "C" __global__ void phases3(const int *in, int *out, int *tmp) {
    cg::grid_group g = cg::this_grid();
    __shared__ int s[THREADS];
    int t = threadIdx.x, b = blockIdx.x, nb = gridDim.x;
    int gid = b * THREADS + t;
    int r = in[gid] * 3 + t;
    s[t] = in[gid] ^ b;
    tmp[gid] = r;
    g.sync();
    int v = tmp[((b + 1) % nb) * THREADS + (THREADS - 1 - t)];
    int s1 = s[(t + 1) % THREADS];
    g.sync();
    tmp[gid] = v + s1;
    s[t] = s1 * 2 + r;
    g.sync();
    out[gid] = tmp[((b + nb - 1) % nb) * THREADS + t] - s[(t + 3) % THREADS] + r;
}

// The block's sum of x[i] * y[i] by a tree in shared memory, in a fixed order, to
// partial[blockIdx.x]; after the grid barrier every thread adds the partials in order.
__device__ float dot(cg::grid_group &g, float *sh, float *partial, float x, float y) {
    int t = threadIdx.x;
    sh[t] = __fmul_rn(x, y);
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] = __fadd_rn(sh[t], sh[t + s]);
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = sh[0];
    g.sync();
    float sum = 0.0f;
    for (int i = 0; i < gridDim.x; i++) sum = __fadd_rn(sum, partial[i]);
    // Every block has read the partials before any writes the next dot's.
    g.sync();
    return sum;
}

// Conjugate-gradient iterations on a diagonal system d[i] x[i] = b[i] (x starts at 0,
// so r = p = b): dot products across the grid and axpys, `iters` times, without
// contraction (the intrinsics), so a CPU model in the same order matches bit for bit.
extern "C" __global__ void cg_diag(const float *d, const float *bvec, float *x,
                                   float *partial, int iters) {
    cg::grid_group g = cg::this_grid();
    __shared__ float sh[THREADS];
    int i = blockIdx.x * THREADS + threadIdx.x;
    float xi = 0.0f, ri = bvec[i], pi = bvec[i], di = d[i];
    float rr = dot(g, sh, partial, ri, ri);
    for (int k = 0; k < iters; k++) {
        float api = __fmul_rn(di, pi);
        float pap = dot(g, sh, partial, pi, api);
        float alpha = __fdiv_rn(rr, pap);
        xi = __fadd_rn(xi, __fmul_rn(alpha, pi));
        ri = __fsub_rn(ri, __fmul_rn(alpha, api));
        float rr_new = dot(g, sh, partial, ri, ri);
        float beta = __fdiv_rn(rr_new, rr);
        pi = __fadd_rn(ri, __fmul_rn(beta, pi));
        rr = rr_new;
    }
    x[i] = xi;
}

// The upper half of each block exits before the grid barrier (after the block
// barrier, so its shared words are written); the lower half reads them after it. CUDA
// counts exited threads as arrived at `bar.sync` (PTX ISA 9.2 §9.7.13.1) and its grid
// barrier is thread 0's, so the lower half synchronizes alone; ptxvk must still save
// and restore the whole shared window across the barrier.
extern "C" __global__ void early_exit(const int *in, int *out) {
    cg::grid_group g = cg::this_grid();
    __shared__ int s[THREADS];
    int t = threadIdx.x, b = blockIdx.x;
    int gid = b * THREADS + t;
    s[t] = in[gid] * 5 + b;
    __syncthreads();
    if (t >= THREADS / 2) return;
    g.sync();
    out[gid] = s[t + THREADS / 2] - s[t];
}
