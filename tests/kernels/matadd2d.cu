/*
 * matadd2d: element-wise sum of two row-major rows x cols float matrices.
 *
 *   col = blockIdx.x * blockDim.x + threadIdx.x
 *   row = blockIdx.y * blockDim.y + threadIdx.y
 *   if (row < rows && col < cols)
 *       C[row*cols + col] = A[row*cols + col] + B[row*cols + col]   (f32 add, RNE)
 *
 * Deliberately NOT extern "C": the entry point has C++ linkage so its PTX
 * name is the Itanium-mangled `_Z8matadd2dPKfS0_Pfii`.
 * Launch: 2-D grid of 2-D blocks (x covers columns, y covers rows), any sizes.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

__global__ void matadd2d(const float* A, const float* B, float* C, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        int idx = row * cols + col;
        C[idx] = A[idx] + B[idx];
    }
}
