/*
 * collatz: number of Collatz steps to reach 1, capped at 1000.
 *
 * For each i < n (i = blockIdx.x*blockDim.x + threadIdx.x):
 *   x = start[i]                                (u32)
 *   if (x == 0) {
 *       steps[i] = 0xFFFFFFFF;                   (0 never reaches 1)
 *   } else {
 *       s = 0;
 *       while (x != 1 && s < 1000) {
 *           if (x & 1) x = 3 * x + 1;            (u32, wraps modulo 2^32)
 *           else       x = x >> 1;
 *           s++;
 *       }
 *       steps[i] = s;                            (so 0 <= s <= 1000)
 *   }
 *
 * The loop trip count is data dependent and differs between neighbouring
 * threads (divergent control flow).
 * Launch: 1-D grid of 1-D blocks, any sizes; threads with i >= n do nothing.
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void collatz(const unsigned int* start, unsigned int* steps, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    unsigned int x = start[i];
    if (x == 0) {
        steps[i] = 0xFFFFFFFFu;
    } else {
        unsigned int s = 0;
        while (x != 1 && s < 1000) {
            if (x & 1) {
                x = 3 * x + 1;
            } else {
                x = x >> 1;
            }
            s++;
        }
        steps[i] = s;
    }
}
