// Warp-level matrix instructions (issue #19) through inline PTX, as CUTLASS and
// llama.cpp write them: every kernel is one warp (blockDim.x = 32) except `gemm_f16`.
// Matrices travel as raw bits, row-major unless said otherwise; each kernel builds the
// fragments of the ISA's figures ("Matrix Fragments for mma.m16n8k*", PTX ISA 9.2
// §9.7.14.5) with g = lane >> 2 and t = lane % 4, runs the instruction and writes D
// back row-major.
//
// mma_f16_f32   m16n8k16 .f32.f16.f16.f32   A u16[16*16], B u16[16*8] (K x N), C, D f32[16*8]
// mma_bf16_f32  m16n8k16 .f32.bf16.bf16.f32 as mma_f16_f32 with bf16 bits
// mma_f16_f16   m16n8k8  .f16.f16.f16.f16   A u16[16*8], B u16[8*8], C, D u16[16*8]
// mma_tf32      m16n8k8  .f32.tf32.tf32.f32 A u32[16*8], B u32[8*8], C, D f32[16*8]
// mma_f64       m8n8k4   .f64.f64.f64.f64   A f64[8*4], B f64[4*8], C, D f64[8*8]
// mma_s8        m16n8k32 .satfinite.s32.s8.s8.s32  A u8[16*32], B u8[32*8], C, D s32[16*8]
// mma_s4        m8n8k32  .s32.s4.s4.s32     A u8[8*32] (one 4-bit value per byte, low
//               nibble), B u8[32*8] likewise, C, D s32[8*8]
// mma_e4m3      m16n8k32 .f32.e4m3.e4m3.f32 (sm_89 and later; elsewhere D = C)
//               A u8[16*32], B u8[32*8], C, D f32[16*8]
// The forms below use one generic fragment loader (the ISA's formulas in general
// form: a register holds p = 32/bits elements, chunk c of 4p k values is spread over
// the group's lanes, lane t holding k = 4pc + pt ... + p - 1; A's register r holds row
// g + 8 (r % (M/8)) of chunk r / (M/8), B's register r column g of chunk r). Their A
// is u32[M*K] and B u32[K*8], one element's bits per word; C and D are u32[M*8] (f32
// or s32 bits, or f16 bits in the low half).
// mma_bf16_k8    m16n8k8  .f32.bf16.bf16.f32
// mma_f16_k16    m16n8k16 .f16.f16.f16.f16   (D as f16 bits in the low half)
// mma_tf32_k4    m16n8k4  .f32.tf32.tf32.f32
// mma_u8s8       m16n8k16 .s32.u8.s8.s32
// mma_s8_m8      m8n8k16  .s32.s8.s8.s32
// mma_u4_k64     m16n8k64 .satfinite.s32.u4.u4.s32
// mma_fp8_k16    m16n8k16 .f16.e5m2.e4m3.f16 (sm_89 and later; elsewhere D = C)
// mma_b1_and     m16n8k256 .s32.b1.b1.s32.and.popc (one bit per word)
// mma_b1_xor     m8n8k128  .s32.b1.b1.s32.xor.popc
// mma_f64_k16    m16n8k16 .f64 (sm_90; elsewhere D = C): A f64[16*16], B f64[16*8],
//                C, D f64[16*8]
// ldsm          M u16[4*64]: four 8x8 matrices. out u32[32*12]: per lane, the 4
//               registers of ldmatrix .x4, then of .x4.trans, then .x2, then .x1.trans
//               (rows of matrix i at shared &M[64 i + 8 r]).
// movm          M u16[64]: out u32[32], movmatrix.m8n8.trans of M's fragment (sm_75+)
// stsm          M u16[4*64]: out u16[2*4*64], stmatrix .x4 of the fragments of M, then
//               .x4.trans (sm_90; elsewhere out is left as it was)
// gemm_f16      C f32[M*N] = A u16[M*K] (row-major) x B u16[N*K] (column-major, i.e.
//               B^T row-major), M % 32 == 0, N % 8 == 0, K % 16 == 0; grid (N/8, M/32),
//               block 64: warp w of a block computes rows 16 w … of its 32-row tile, one
//               m16n8k16 per 16-wide k step over tiles staged in shared memory and
//               loaded with ldmatrix.
// gemm_f16_async as gemm_f16, with the tiles copied by cp.async (16 bytes per thread)
//               into two shared stages: the next k step's copy is in flight while
//               this one's mma runs (cp.async.commit_group / wait_group 1).

#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

#define LANE (threadIdx.x % 32)

// The m16n8k16 fragments of 16-bit A (16 x 16) and B (16 x 8, K x N) and f32 C.
__device__ void fragments_16bit(const unsigned short* A, const unsigned short* B,
                                const float* C, unsigned a[4], unsigned b[2], float c[4]) {
    unsigned g = LANE >> 2, t = LANE % 4;
    for (int r = 0; r < 4; r++) {
        unsigned row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
        a[r] = A[row * 16 + col] | ((unsigned)A[row * 16 + col + 1] << 16);
    }
    for (int r = 0; r < 2; r++) {
        unsigned k = 2 * t + 8 * r;
        b[r] = B[k * 8 + g] | ((unsigned)B[(k + 1) * 8 + g] << 16);
    }
    for (int i = 0; i < 4; i++) c[i] = C[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
}

// D = A B + C of m16n8k16 with 16-bit inputs of PTX type TYPE, f32 C and D.
#define MMA_16BIT_F32(NAME, TYPE)                                                              \
    extern "C" __global__ void NAME(const unsigned short* A, const unsigned short* B,          \
                                    const float* C, float* D) {                                \
        unsigned a[4], b[2];                                                                   \
        float c[4], d[4];                                                                      \
        fragments_16bit(A, B, C, a, b, c);                                                     \
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE                    \
                     ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"          \
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                          \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),       \
                       "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));                            \
        unsigned g = LANE >> 2, t = LANE % 4;                                                  \
        for (int i = 0; i < 4; i++) D[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];          \
    }

MMA_16BIT_F32(mma_f16_f32, "f16")
MMA_16BIT_F32(mma_bf16_f32, "bf16")

extern "C" __global__ void mma_f16_f16(const unsigned short* A, const unsigned short* B,
                                       const unsigned short* C, unsigned short* D) {
    unsigned g = LANE >> 2, t = LANE % 4;
    unsigned a[2], b, c[2], d[2];
    for (int r = 0; r < 2; r++) {
        unsigned row = g + 8 * r, col = 2 * t;
        a[r] = A[row * 8 + col] | ((unsigned)A[row * 8 + col + 1] << 16);
    }
    b = B[(2 * t) * 8 + g] | ((unsigned)B[(2 * t + 1) * 8 + g] << 16);
    for (int r = 0; r < 2; r++) {
        unsigned at = (g + 8 * r) * 8 + 2 * t;
        c[r] = C[at] | ((unsigned)C[at + 1] << 16);
    }
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, {%5,%6};"
        : "=r"(d[0]), "=r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]));
    for (int r = 0; r < 2; r++) {
        unsigned at = (g + 8 * r) * 8 + 2 * t;
        D[at] = (unsigned short)d[r];
        D[at + 1] = (unsigned short)(d[r] >> 16);
    }
}

extern "C" __global__ void mma_tf32(const unsigned* A, const unsigned* B, const float* C,
                                    float* D) {
    unsigned g = LANE >> 2, t = LANE % 4;
    unsigned a[4], b[2];
    float c[4], d[4];
    for (int r = 0; r < 4; r++) a[r] = A[(g + 8 * (r % 2)) * 8 + t + 4 * (r / 2)];
    for (int r = 0; r < 2; r++) b[r] = B[(t + 4 * r) * 8 + g];
    for (int i = 0; i < 4; i++) c[i] = C[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
          "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; i++) D[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}

extern "C" __global__ void mma_f64(const double* A, const double* B, const double* C,
                                   double* D) {
    unsigned g = LANE >> 2, t = LANE % 4;
    double a = A[g * 4 + t], b = B[t * 8 + g], c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1];
    double d0, d1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};"
                 : "=d"(d0), "=d"(d1)
                 : "d"(a), "d"(b), "d"(c0), "d"(c1));
    D[g * 8 + 2 * t] = d0;
    D[g * 8 + 2 * t + 1] = d1;
}

// The 32-bit word of `per` consecutive `bits`-bit elements of `M` (one per byte, low bits).
__device__ unsigned pack_bytes(const unsigned char* M, unsigned at, unsigned stride,
                               unsigned per, unsigned bits) {
    unsigned w = 0;
    for (unsigned i = 0; i < per; i++)
        w |= ((unsigned)M[at + i * stride] & ((1u << bits) - 1)) << (bits * i);
    return w;
}

extern "C" __global__ void mma_s8(const unsigned char* A, const unsigned char* B, const int* C,
                                  int* D) {
    unsigned g = LANE >> 2, t = LANE % 4;
    unsigned a[4], b[2];
    int c[4], d[4];
    for (int r = 0; r < 4; r++)
        a[r] = pack_bytes(A, (g + 8 * (r % 2)) * 32 + 4 * t + 16 * (r / 2), 1, 4, 8);
    for (int r = 0; r < 2; r++) b[r] = pack_bytes(B, (4 * t + 16 * r) * 8 + g, 8, 4, 8);
    for (int i = 0; i < 4; i++) c[i] = C[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0,%1,%2,%3}, "
        "{%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]),
          "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; i++) D[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}

extern "C" __global__ void mma_s4(const unsigned char* A, const unsigned char* B, const int* C,
                                  int* D) {
    unsigned g = LANE >> 2, t = LANE % 4;
    unsigned a = pack_bytes(A, g * 32 + 8 * t, 1, 8, 4);
    unsigned b = pack_bytes(B, (8 * t) * 8 + g, 8, 8, 4);
    int c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], d0, d1;
    asm volatile("mma.sync.aligned.m8n8k32.row.col.s32.s4.s4.s32 {%0,%1}, {%2}, {%3}, {%4,%5};"
                 : "=r"(d0), "=r"(d1)
                 : "r"(a), "r"(b), "r"(c0), "r"(c1));
    D[g * 8 + 2 * t] = d0;
    D[g * 8 + 2 * t + 1] = d1;
}

extern "C" __global__ void mma_e4m3(const unsigned char* A, const unsigned char* B,
                                    const float* C, float* D) {
    unsigned g = LANE >> 2, t = LANE % 4;
    float c[4], d[4];
    for (int i = 0; i < 4; i++) c[i] = C[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    unsigned a[4], b[2];
    for (int r = 0; r < 4; r++)
        a[r] = pack_bytes(A, (g + 8 * (r % 2)) * 32 + 4 * t + 16 * (r / 2), 1, 4, 8);
    for (int r = 0; r < 2; r++) b[r] = pack_bytes(B, (4 * t + 16 * r) * 8 + g, 8, 4, 8);
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
          "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
    for (int i = 0; i < 4; i++) d[i] = c[i];
#endif
    for (int i = 0; i < 4; i++) D[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}

// Register r of this lane's A fragment (M x K, `bits`-bit elements).
__device__ unsigned frag_a(const unsigned* A, unsigned M, unsigned K, unsigned bits, unsigned r) {
    unsigned g = LANE >> 2, t = LANE % 4, p = bits >= 32 ? 1 : 32 / bits;
    unsigned row = g + 8 * (r % (M / 8)), k = 4 * p * (r / (M / 8)) + p * t, w = 0;
    for (unsigned i = 0; i < p; i++)
        w |= (A[row * K + k + i] & (bits >= 32 ? ~0u : (1u << bits) - 1)) << (bits * i);
    return w;
}

// Register r of this lane's B fragment (K x 8).
__device__ unsigned frag_b(const unsigned* B, unsigned bits, unsigned r) {
    unsigned g = LANE >> 2, t = LANE % 4, p = bits >= 32 ? 1 : 32 / bits;
    unsigned k = 4 * p * r + p * t, w = 0;
    for (unsigned i = 0; i < p; i++)
        w |= (B[(k + i) * 8 + g] & (bits >= 32 ? ~0u : (1u << bits) - 1)) << (bits * i);
    return w;
}

// Element i of this lane's C or D fragment: its index in a row-major M x 8 matrix.
__device__ unsigned frag_c(unsigned i) {
    return ((LANE >> 2) + 8 * (i / 2)) * 8 + 2 * (LANE % 4) + i % 2;
}

#define A4(bits, M, K) "r"(frag_a(A, M, K, bits, 0)), "r"(frag_a(A, M, K, bits, 1)), \
    "r"(frag_a(A, M, K, bits, 2)), "r"(frag_a(A, M, K, bits, 3))
#define C4 "r"(C[frag_c(0)]), "r"(C[frag_c(1)]), "r"(C[frag_c(2)]), "r"(C[frag_c(3)])
#define D4 "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
#define STORE_D4 for (int i = 0; i < 4; i++) D[frag_c(i)] = d[i];

extern "C" __global__ void mma_bf16_k8(const unsigned* A, const unsigned* B, const unsigned* C,
                                       unsigned* D) {
    unsigned d[4];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, "
                 "{%6}, {%7,%8,%9,%10};"
                 : D4
                 : "r"(frag_a(A, 16, 8, 16, 0)), "r"(frag_a(A, 16, 8, 16, 1)),
                   "r"(frag_b(B, 16, 0)), C4);
    STORE_D4
}

extern "C" __global__ void mma_f16_k16(const unsigned* A, const unsigned* B, const unsigned* C,
                                       unsigned* D) {
    unsigned c0 = (C[frag_c(0)] & 0xffff) | (C[frag_c(1)] << 16);
    unsigned c1 = (C[frag_c(2)] & 0xffff) | (C[frag_c(3)] << 16), d0, d1;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, "
                 "{%6,%7}, {%8,%9};"
                 : "=r"(d0), "=r"(d1)
                 : A4(16, 16, 16), "r"(frag_b(B, 16, 0)), "r"(frag_b(B, 16, 1)), "r"(c0),
                   "r"(c1));
    D[frag_c(0)] = d0 & 0xffff;
    D[frag_c(1)] = d0 >> 16;
    D[frag_c(2)] = d1 & 0xffff;
    D[frag_c(3)] = d1 >> 16;
}

extern "C" __global__ void mma_tf32_k4(const unsigned* A, const unsigned* B, const unsigned* C,
                                       unsigned* D) {
    unsigned d[4];
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, "
                 "{%6}, {%7,%8,%9,%10};"
                 : D4
                 : "r"(frag_a(A, 16, 4, 32, 0)), "r"(frag_a(A, 16, 4, 32, 1)),
                   "r"(frag_b(B, 32, 0)), C4);
    STORE_D4
}

extern "C" __global__ void mma_u8s8(const unsigned* A, const unsigned* B, const unsigned* C,
                                    unsigned* D) {
    unsigned d[4];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, "
                 "{%6}, {%7,%8,%9,%10};"
                 : D4
                 : "r"(frag_a(A, 16, 16, 8, 0)), "r"(frag_a(A, 16, 16, 8, 1)),
                   "r"(frag_b(B, 8, 0)), C4);
    STORE_D4
}

extern "C" __global__ void mma_s8_m8(const unsigned* A, const unsigned* B, const unsigned* C,
                                     unsigned* D) {
    unsigned d0, d1;
    asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%0,%1}, {%2}, {%3}, {%4,%5};"
                 : "=r"(d0), "=r"(d1)
                 : "r"(frag_a(A, 8, 16, 8, 0)), "r"(frag_b(B, 8, 0)), "r"(C[frag_c(0)]),
                   "r"(C[frag_c(1)]));
    D[frag_c(0)] = d0;
    D[frag_c(1)] = d1;
}

extern "C" __global__ void mma_u4_k64(const unsigned* A, const unsigned* B, const unsigned* C,
                                      unsigned* D) {
    unsigned d[4];
    asm volatile("mma.sync.aligned.m16n8k64.row.col.satfinite.s32.u4.u4.s32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : D4
                 : A4(4, 16, 64), "r"(frag_b(B, 4, 0)), "r"(frag_b(B, 4, 1)), C4);
    STORE_D4
}

extern "C" __global__ void mma_fp8_k16(const unsigned* A, const unsigned* B, const unsigned* C,
                                       unsigned* D) {
    unsigned c0 = (C[frag_c(0)] & 0xffff) | (C[frag_c(1)] << 16);
    unsigned c1 = (C[frag_c(2)] & 0xffff) | (C[frag_c(3)] << 16), d0 = c0, d1 = c1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.e5m2.e4m3.f16 {%0,%1}, {%2,%3}, {%4}, "
                 "{%5,%6};"
                 : "=r"(d0), "=r"(d1)
                 : "r"(frag_a(A, 16, 16, 8, 0)), "r"(frag_a(A, 16, 16, 8, 1)),
                   "r"(frag_b(B, 8, 0)), "r"(c0), "r"(c1));
#endif
    D[frag_c(0)] = d0 & 0xffff;
    D[frag_c(1)] = d0 >> 16;
    D[frag_c(2)] = d1 & 0xffff;
    D[frag_c(3)] = d1 >> 16;
}

extern "C" __global__ void mma_b1_and(const unsigned* A, const unsigned* B, const unsigned* C,
                                      unsigned* D) {
    unsigned d[4];
    asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : D4
                 : A4(1, 16, 256), "r"(frag_b(B, 1, 0)), "r"(frag_b(B, 1, 1)), C4);
    STORE_D4
}

extern "C" __global__ void mma_b1_xor(const unsigned* A, const unsigned* B, const unsigned* C,
                                      unsigned* D) {
    unsigned d0, d1;
    asm volatile("mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor.popc {%0,%1}, {%2}, {%3}, "
                 "{%4,%5};"
                 : "=r"(d0), "=r"(d1)
                 : "r"(frag_a(A, 8, 128, 1, 0)), "r"(frag_b(B, 1, 0)), "r"(C[frag_c(0)]),
                   "r"(C[frag_c(1)]));
    D[frag_c(0)] = d0;
    D[frag_c(1)] = d1;
}

extern "C" __global__ void mma_f64_k16(const double* A, const double* B, const double* C,
                                       double* D) {
    double d[4];
    for (int i = 0; i < 4; i++) d[i] = C[frag_c(i)];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned g = LANE >> 2, t = LANE % 4;
    double a[8], b[4];
    for (int r = 0; r < 8; r++) a[r] = A[(g + 8 * (r % 2)) * 16 + t + 4 * (r / 2)];
    for (int r = 0; r < 4; r++) b[r] = B[(t + 4 * r) * 8 + g];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]),
                   "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#endif
    for (int i = 0; i < 4; i++) D[frag_c(i)] = d[i];
}

extern "C" __global__ void ldsm(const unsigned short* M, unsigned* out) {
    __shared__ unsigned short s[4 * 64];
    for (int i = LANE; i < 4 * 64; i += 32) s[i] = M[i];
    __syncwarp();
    unsigned lane = LANE;
    unsigned row = (unsigned)__cvta_generic_to_shared(&s[64 * (lane / 8) + 8 * (lane % 8)]);
    unsigned r[12];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7])
                 : "r"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[8]), "=r"(r[9])
                 : "r"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
                 : "=r"(r[10])
                 : "r"(row));
    r[11] = 0;
    for (int i = 0; i < 12; i++) out[lane * 12 + i] = r[i];
}

extern "C" __global__ void movm(const unsigned short* M, unsigned* out) {
    unsigned g = LANE >> 2, t = LANE % 4;
    unsigned a = M[g * 8 + 2 * t] | ((unsigned)M[g * 8 + 2 * t + 1] << 16), d;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(a));
    out[LANE] = d;
}

extern "C" __global__ void stsm(const unsigned short* M, unsigned short* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ unsigned short s[2 * 4 * 64];
    unsigned lane = LANE, g = lane >> 2, t = lane % 4;
    unsigned r[4];
    for (int i = 0; i < 4; i++)
        r[i] = M[64 * i + g * 8 + 2 * t] | ((unsigned)M[64 * i + g * 8 + 2 * t + 1] << 16);
    unsigned row = (unsigned)__cvta_generic_to_shared(&s[64 * (lane / 8) + 8 * (lane % 8)]);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};"
                 :
                 : "r"(row), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};"
                 :
                 : "r"(row + 4 * 64 * 2), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
    __syncwarp();
    for (int i = lane; i < 2 * 4 * 64; i += 32) out[i] = s[i];
#endif
}

// One k step of the GEMMs: this warp's A fragments (four 8x8 matrices: rows 0-7 k 0-7,
// rows 8-15 k 0-7, rows 0-7 k 8-15, rows 8-15 k 8-15 of its 16 rows; lane l gives row
// l % 16, k 8 (l / 16)) and B's (column-major B is B^T row-major: two 8x8 matrices, k
// 0-7 and k 8-15, whose rows are B's columns; lanes 0-15 give column l % 8, k 8 (l / 8))
// by ldmatrix from the shared tiles `as` (32 x 16) and `bs` (8 x 16), then one mma.
__device__ void gemm_step(const unsigned short* as, const unsigned short* bs, float acc[4]) {
    unsigned lane = LANE, warp = threadIdx.x / 32, a[4], b[2];
    unsigned a_row =
        (unsigned)__cvta_generic_to_shared(&as[(16 * warp + lane % 16) * 16 + 8 * (lane / 16)]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(a_row));
    unsigned b_row = (unsigned)__cvta_generic_to_shared(&bs[(lane % 8) * 16 + 8 * ((lane / 8) % 2)]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(b[0]), "=r"(b[1])
                 : "r"(b_row));
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void gemm_f16(const unsigned short* A, const unsigned short* B, float* C,
                                    int M, int N, int K) {
    __shared__ unsigned short as[32 * 16];  // the block's 32 rows of A, 16 k
    __shared__ unsigned short bs[8 * 16];   // its 8 columns of B, 16 k (column-major)
    unsigned lane = LANE, warp = threadIdx.x / 32, g = lane >> 2, t = lane % 4;
    unsigned row0 = blockIdx.y * 32, col0 = blockIdx.x * 8;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = threadIdx.x; i < 32 * 16; i += blockDim.x)
            as[i] = A[(row0 + i / 16) * K + k0 + i % 16];
        for (int i = threadIdx.x; i < 8 * 16; i += blockDim.x)
            bs[i] = B[(col0 + i / 16) * K + k0 + i % 16];
        __syncthreads();
        gemm_step(as, bs, acc);
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        C[(row0 + 16 * warp + g + 8 * (i / 2)) * N + col0 + 2 * t + i % 2] = acc[i];
}

// One k step's tiles of gemm_f16_async into stage `st`: 16-byte cp.async copies, one
// group.
__device__ void load_tiles(unsigned short (*as)[32 * 16], unsigned short (*bs)[8 * 16], int st,
                           const unsigned short* A, const unsigned short* B, unsigned row0,
                           unsigned col0, int K, int k0) {
    unsigned t = threadIdx.x, part = t % 2;
    unsigned a_dst = (unsigned)__cvta_generic_to_shared(&as[st][(t / 2) * 16 + 8 * part]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a_dst),
                 "l"(&A[(row0 + t / 2) * K + k0 + 8 * part])
                 : "memory");
    if (t < 16) {
        unsigned b_dst = (unsigned)__cvta_generic_to_shared(&bs[st][(t / 2) * 16 + 8 * part]);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(b_dst),
                     "l"(&B[(col0 + t / 2) * K + k0 + 8 * part])
                     : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

extern "C" __global__ void gemm_f16_async(const unsigned short* A, const unsigned short* B,
                                          float* C, int M, int N, int K) {
    __shared__ __align__(16) unsigned short as[2][32 * 16];
    __shared__ __align__(16) unsigned short bs[2][8 * 16];
    unsigned lane = LANE, warp = threadIdx.x / 32, g = lane >> 2, t = lane % 4;
    unsigned row0 = blockIdx.y * 32, col0 = blockIdx.x * 8;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    load_tiles(as, bs, 0, A, B, row0, col0, K, 0);
    for (int k0 = 0; k0 < K; k0 += 16) {
        int st = (k0 / 16) % 2;
        if (k0 + 16 < K) {
            load_tiles(as, bs, st ^ 1, A, B, row0, col0, K, k0 + 16);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        gemm_step(as[st], bs[st], acc);
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        C[(row0 + 16 * warp + g + 8 * (i / 2)) * N + col0 + 2 * t + i % 2] = acc[i];
}
