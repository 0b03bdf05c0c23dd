/*
 * simd_video: CUDA's SIMD-within-a-word intrinsics for sums of absolute
 * differences, which nvcc lowers to the PTX video instructions
 * vabsdiff4/vabsdiff2 (with `.add` for the sums), 8 results per element.
 *
 * For each i < n (i = blockIdx.x*blockDim.x + threadIdx.x), with x = A[i] and
 * y = B[i] (u32), bytes / half words taken lane by lane:
 *   out[8*i+0] = __vabsdiffu4(x, y)   |x_k - y_k| per unsigned byte
 *   out[8*i+1] = __vsadu4(x, y)       sum over the 4 unsigned bytes of |x_k - y_k|
 *   out[8*i+2] = __vabsdiffu2(x, y)   |x_k - y_k| per unsigned half word
 *   out[8*i+3] = __vsadu2(x, y)       sum over the 2 unsigned half words
 *   out[8*i+4] = __vabsdiffs4(x, y)   |x_k - y_k| per signed byte (mod 256)
 *   out[8*i+5] = __vsads4(x, y)       sum over the 4 signed bytes
 *   out[8*i+6] = __vabsdiffs2(x, y)   |x_k - y_k| per signed half word (mod 2^16)
 *   out[8*i+7] = __vsads2(x, y)       sum over the 2 signed half words
 *
 * clang (-nocudainc): cuda_shim.h writes each intrinsic as the vabsdiff2/4
 * instruction that computes it.
 *
 * Launch: 1-D grid of 1-D blocks, any sizes; threads with i >= n do nothing.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void simd_video(const unsigned int* A, const unsigned int* B,
                                      unsigned int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    unsigned int x = A[i];
    unsigned int y = B[i];
    unsigned int* o = out + 8 * i;
    o[0] = __vabsdiffu4(x, y);
    o[1] = __vsadu4(x, y);
    o[2] = __vabsdiffu2(x, y);
    o[3] = __vsadu2(x, y);
    o[4] = __vabsdiffs4(x, y);
    o[5] = __vsads4(x, y);
    o[6] = __vabsdiffs2(x, y);
    o[7] = __vsads2(x, y);
}
