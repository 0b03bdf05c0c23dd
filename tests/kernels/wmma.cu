// nvcuda::wmma (issue #19): CUDA's warp matrix API, which compiles to wmma.load,
// wmma.mma and wmma.store. One warp per block (blockDim.x = 32). Matrices are raw
// bits; "ld" is the leading dimension (elements between rows of a row-major matrix,
// columns of a column-major one). Built by nvcc only (sm_80, sm_89, sm_90).
//
// wmma_f16      m16n16k16: A f16 row-major ld 16, B f16 col-major ld 16, C f32
//               row-major ld 16; D = A B + C stored row-major ld 16.
// wmma_f16_acc  m32n8k16 with f16 accumulators: A f16 col-major ld 40 (a 32 x 16
//               matrix inside 40 rows), B f16 row-major ld 8, C f16 col-major ld 32;
//               D stored col-major ld 32.
// wmma_bf16     m8n32k16: A bf16 row-major ld 16, B bf16 row-major ld 32, C = 0
//               (fill_fragment); D f32 row-major ld 32. Staged through shared memory.
// wmma_tf32     m16n16k8: A f32 row-major ld 8, B f32 col-major ld 8, each element
//               rounded with __float_to_tf32 in the fragment; C f32 row-major ld 16;
//               D = 2 (A B + C) (a fragment-wide scale) stored row-major ld 16.
// wmma_s8       m16n16k16: A s8 row-major ld 16, B s8 col-major ld 16, C s32
//               row-major ld 16; D s32 row-major ld 16.
// wmma_f64      m8n8k4: A f64 row-major ld 4, B f64 row-major ld 8, C f64 row-major
//               ld 8; D f64 row-major ld 8.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

extern "C" __global__ void wmma_f16(const half* A, const half* B, const float* C, float* D) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

extern "C" __global__ void wmma_f16_acc(const half* A, const half* B, const half* C, half* D) {
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::col_major> a;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 32, 8, 16, half> c;
    wmma::load_matrix_sync(a, A, 40);
    wmma::load_matrix_sync(b, B, 8);
    wmma::load_matrix_sync(c, C, 32, wmma::mem_col_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D, c, 32, wmma::mem_col_major);
}

extern "C" __global__ void wmma_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* D) {
    __shared__ __nv_bfloat16 as[8 * 16], bs[16 * 32];
    for (int i = threadIdx.x; i < 8 * 16; i += 32) as[i] = A[i];
    for (int i = threadIdx.x; i < 16 * 32; i += 32) bs[i] = B[i];
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 8, 32, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 8, 32, 16, __nv_bfloat16, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 8, 32, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::load_matrix_sync(a, as, 16);
    wmma::load_matrix_sync(b, bs, 32);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D, c, 32, wmma::mem_row_major);
}

extern "C" __global__ void wmma_tf32(const float* A, const float* B, const float* C, float* D) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
    wmma::load_matrix_sync(a, A, 8);
    wmma::load_matrix_sync(b, B, 8);
    for (int i = 0; i < a.num_elements; i++) a.x[i] = wmma::__float_to_tf32(a.x[i]);
    for (int i = 0; i < b.num_elements; i++) b.x[i] = wmma::__float_to_tf32(b.x[i]);
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    for (int i = 0; i < c.num_elements; i++) c.x[i] = 2.0f * c.x[i];
    wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

extern "C" __global__ void wmma_s8(const signed char* A, const signed char* B, const int* C,
                                   int* D) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> c;
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

extern "C" __global__ void wmma_f64(const double* A, const double* B, const double* C,
                                    double* D) {
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> c;
    wmma::load_matrix_sync(a, A, 4);
    wmma::load_matrix_sync(b, B, 8);
    wmma::load_matrix_sync(c, C, 8, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D, c, 8, wmma::mem_row_major);
}
