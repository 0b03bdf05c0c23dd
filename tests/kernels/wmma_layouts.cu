// nvcuda::wmma with every pair of A and B layouts (PTX ISA 9.2 §9.7.14.4: wmma.load's
// .row/.col, and wmma.mma's .alayout.blayout, which must be the layouts A and B were
// loaded with). One warp per block (blockDim.x = 32). Matrices are raw bits.
//
// NAME_LL(A, B, C, D, lda, ldb, ldc), LL the layouts of A and B (r: row-major, c:
// column-major): D = A B + C for the M x K matrix A, the K x N matrix B and the M x N
// matrices C and D; "ld" is the leading dimension (elements between rows of a
// row-major matrix, columns of a column-major one). C is loaded and D stored in B's
// layout, so that C and D take both layouts too.
//
// NAME        shape       A, B                  C, D
// f16         m16n16k16   f16                   f32
// f16_m32     m32n8k16    f16                   f32
// f16_m8      m8n32k16    f16                   f32
// f16_acc     m16n16k16   f16                   f16
// bf16        m16n16k16   bf16                  f32
// tf32        m16n16k8    f32 read as tf32      f32 (inputs already tf32 values)
// s8          m16n16k16   s8                    s32
// u8          m32n8k16    u8                    s32
// f64         m8n8k4      f64                   f64
//
// Built by nvcc only (sm_80).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

using namespace nvcuda;

template <int M, int N, int K, typename In, typename Frag, typename Acc, typename ALayout,
          typename BLayout>
__device__ void product(const In* A, const In* B, const Acc* C, Acc* D, unsigned lda,
                        unsigned ldb, unsigned ldc) {
    const wmma::layout_t c_layout =
        std::is_same<BLayout, wmma::row_major>::value ? wmma::mem_row_major : wmma::mem_col_major;
    wmma::fragment<wmma::matrix_a, M, N, K, Frag, ALayout> a;
    wmma::fragment<wmma::matrix_b, M, N, K, Frag, BLayout> b;
    wmma::fragment<wmma::accumulator, M, N, K, Acc> c;
    wmma::load_matrix_sync(a, A, lda);
    wmma::load_matrix_sync(b, B, ldb);
    wmma::load_matrix_sync(c, C, ldc, c_layout);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D, c, ldc, c_layout);
}

#define KERNEL(NAME, M, N, K, IN, FRAG, ACC, AL, BL)                                        \
    extern "C" __global__ void NAME(const IN* A, const IN* B, const ACC* C, ACC* D,         \
                                    unsigned lda, unsigned ldb, unsigned ldc) {             \
        product<M, N, K, IN, FRAG, ACC, wmma::AL, wmma::BL>(A, B, C, D, lda, ldb, ldc);     \
    }

#define LAYOUTS(NAME, M, N, K, IN, FRAG, ACC)                                               \
    KERNEL(NAME##_rr, M, N, K, IN, FRAG, ACC, row_major, row_major)                         \
    KERNEL(NAME##_rc, M, N, K, IN, FRAG, ACC, row_major, col_major)                         \
    KERNEL(NAME##_cr, M, N, K, IN, FRAG, ACC, col_major, row_major)                         \
    KERNEL(NAME##_cc, M, N, K, IN, FRAG, ACC, col_major, col_major)

LAYOUTS(f16, 16, 16, 16, half, half, float)
LAYOUTS(f16_m32, 32, 8, 16, half, half, float)
LAYOUTS(f16_m8, 8, 32, 16, half, half, float)
LAYOUTS(f16_acc, 16, 16, 16, half, half, half)
LAYOUTS(bf16, 16, 16, 16, __nv_bfloat16, __nv_bfloat16, float)
LAYOUTS(tf32, 16, 16, 8, float, wmma::precision::tf32, float)
LAYOUTS(s8, 16, 16, 16, signed char, signed char, int)
LAYOUTS(u8, 32, 8, 16, unsigned char, unsigned char, int)
LAYOUTS(f64, 8, 8, 4, double, double, double)
