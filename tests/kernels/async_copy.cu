// Asynchronous copies of sm_80 (issue #19): inline `cp.async`, the CUDA pipeline
// primitives of <cuda_pipeline.h> and libcu++'s cuda::memcpy_async with a
// thread-scope cuda::pipeline. Built by nvcc only (sm_80, sm_89, sm_90).
//
// cp_forms      src u32[32*16], out u32[32*16]; one warp (block 32). Lane l copies
//               into its own 16 words of shared memory, zeroed first:
//               words 0-3:   cp.async.cg 16 bytes of src[16l ..]
//               words 4-5:   cp.async.ca 8 bytes of src[16l + 4 ..]
//               word  6:     cp.async.ca 4 bytes of src[16l + 6]
//               words 8-11:  cp.async.ca 16 bytes of src[16l + 8 ..] with
//                            src-size = l % 17 (bytes past it are zero)
//               words 12-15: cp.async.cg 16 bytes of src[16l + 12 ..] with
//                            ignore-src = (l % 3 == 0) (then all zero)
//               word 7 stays 0; then wait_all and out[16l ..] = the 16 words.
// primitives    in f32[n], out f32[n]; __pipeline_memcpy_async of 4 bytes per
//               thread into shared, __pipeline_commit, __pipeline_wait_prior(0),
//               __syncthreads, out[i] = 2 * shared[threadIdx.x ^ 1] (the neighbour's
//               element); n = gridDim.x * blockDim.x, blockDim.x <= 256 and even.
// pipeline_sum  in f32[n], out f32[gridDim.x]; block 128, n a multiple of 128 * 4
//               per block (each block sums its 4 chunks of 128 in order): two-stage
//               double buffering with cuda::pipeline<cuda::thread_scope_thread> and
//               cuda::memcpy_async; thread t adds element t of each chunk in chunk
//               order into its own f32 sum, then thread 0 adds the 128 sums in
//               thread order: out[b] = sum over t of (sum over c of in[512 b + 128 c + t]).

#include <cuda/pipeline>
#include <cuda_pipeline.h>

extern "C" __global__ void cp_forms(const unsigned* src, unsigned* out) {
    __shared__ unsigned s[32 * 16];
    unsigned l = threadIdx.x % 32;
    for (int i = 0; i < 16; i++) s[16 * l + i] = 0;
    __syncwarp();
    unsigned dst = (unsigned)__cvta_generic_to_shared(&s[16 * l]);
    const unsigned* from = src + 16 * l;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(from) : "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(dst + 16), "l"(from + 4)
                 : "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst + 24), "l"(from + 6)
                 : "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(dst + 32), "l"(from + 8),
                 "r"(l % 17)
                 : "memory");
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %2, 0;\n\t"
        "cp.async.cg.shared.global [%0], [%1], 16, p;\n\t}" ::"r"(dst + 48),
        "l"(from + 12), "r"(l % 3)
        : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    for (int i = 0; i < 16; i++) out[16 * l + i] = s[16 * l + i];
}

extern "C" __global__ void primitives(const float* in, float* out) {
    __shared__ float s[256];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    __pipeline_memcpy_async(&s[threadIdx.x], &in[i], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    out[i] = 2.0f * s[threadIdx.x ^ 1];
}

extern "C" __global__ void pipeline_sum(const float* in, float* out) {
    __shared__ float stage[2][128];
    __shared__ float sums[128];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    const float* base = in + 512 * blockIdx.x;
    unsigned t = threadIdx.x;
    float sum = 0.0f;
    pipe.producer_acquire();
    cuda::memcpy_async(&stage[0][t], &base[t], sizeof(float), pipe);
    pipe.producer_commit();
    for (int c = 0; c < 4; c++) {
        if (c + 1 < 4) {
            pipe.producer_acquire();
            cuda::memcpy_async(&stage[(c + 1) % 2][t], &base[128 * (c + 1) + t], sizeof(float),
                               pipe);
            pipe.producer_commit();
        }
        cuda::pipeline_consumer_wait_prior<1>(pipe);
        if (c + 1 == 4) cuda::pipeline_consumer_wait_prior<0>(pipe);
        sum += stage[c % 2][t];
        pipe.consumer_release();
    }
    sums[t] = sum;
    __syncthreads();
    if (t == 0) {
        float total = 0.0f;
        for (int k = 0; k < 128; k++) total += sums[k];
        out[blockIdx.x] = total;
    }
}
