/*
 * sub_word.cu - char and short data in shared, global and local memory and through
 * generic pointers (issue #34): the sub-word stores and loads compilers emit, among
 * them clang's `st.shared.u16 [%r], %r32` from a 32-bit register.
 *
 * sub_word(in, bytes_out, halves_out, words_out, n): 1-D grid of 1-D blocks of at most
 * 256 threads. t = threadIdx.x, B = blockDim.x, i = blockIdx.x * B + t,
 * x(t) = in[blockIdx.x * B + t] when that index is below n, else 0. Every thread of a
 * block stores into the shared arrays before the barrier; then threads with i >= n
 * return, and the others write (u = (t + 1) % B, v = (t + 5) % B, w = (t + 3) % B):
 *   bytes_out[i]      = (signed char)(x(u) >> 3)           via a generic byte store
 *   halves_out[i]     = (unsigned short)(x(v) * 7)         via a generic half store
 *   words_out[6i + 0] = (signed char)(x(u) >> 3)           sign-extended
 *   words_out[6i + 1] = (short)(x(v) * 7)                  sign-extended
 *   words_out[6i + 2] = (signed char)(x >> (x % 16))       a local byte array
 *   words_out[6i + 3] = (short)(x >> (4 * ((x >> 4) % 4))) a local half array, generic
 *   words_out[6i + 4] = (short)(x(w) + 1)                  stored and loaded generically
 *   words_out[6i + 5] = (short)halves_out[i]               read back generically
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

__device__ __noinline__ void put16(unsigned short *p, unsigned v) { *p = (unsigned short)v; }
__device__ __noinline__ void put8(signed char *p, unsigned v) { *p = (signed char)v; }
__device__ __noinline__ int get16(const short *p) { return *p; }

extern "C" __global__ void sub_word(const unsigned *in, signed char *bytes_out,
                                    unsigned short *halves_out, int *words_out, int n) {
    __shared__ unsigned char sb[256];
    __shared__ unsigned short sh[256];
    __shared__ unsigned short sg[256];
    unsigned t = threadIdx.x, B = blockDim.x;
    int i = blockIdx.x * B + t;
    unsigned x = i < n ? in[i] : 0u;
    sb[t] = (unsigned char)(x >> 3);
    sh[t] = (unsigned short)(x * 7u);
    put16(&sg[t], x + 1u);
    __syncthreads();
    if (i >= n) return;
    signed char local_bytes[16];
    unsigned short local_halves[4];
    for (int k = 0; k < 16; k++) local_bytes[k] = (signed char)(x >> k);
    for (int k = 0; k < 4; k++) put16(&local_halves[k], x >> (4 * k));
    put8(&bytes_out[i], sb[(t + 1) % B]);
    put16(&halves_out[i], sh[(t + 5) % B]);
    words_out[6 * i + 0] = (signed char)sb[(t + 1) % B];
    words_out[6 * i + 1] = (short)sh[(t + 5) % B];
    words_out[6 * i + 2] = local_bytes[x % 16];
    words_out[6 * i + 3] = get16((const short *)&local_halves[(x >> 4) % 4]);
    words_out[6 * i + 4] = get16((const short *)&sg[(t + 3) % B]);
    words_out[6 * i + 5] = get16((const short *)&halves_out[i]);
}
