// Models cuda-samples 0_Introduction/matrixMul: C = A * B with square shared-memory
// tiles (a template on the tile size, 16 and 32), each block loading one tile of A and
// one of B per step and synchronising around the multiply-accumulate. Checks every
// element against a double-precision product on the host, within a tolerance scaled by
// the sum of |a*b| terms (the GPU sums in float, in another order, with fused
// multiply-adds).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

template <int BLOCK_SIZE>
__global__ void matrixMulCUDA(float *C, const float *A, const float *B, int wA, int wB) {
    int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    int aBegin = wA * BLOCK_SIZE * by, aEnd = aBegin + wA - 1, aStep = BLOCK_SIZE;
    int bBegin = BLOCK_SIZE * bx, bStep = BLOCK_SIZE * wB;
    float Csub = 0;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
    C[c + wB * ty + tx] = Csub;
}

static int errors = 0;

template <int BLOCK_SIZE>
void run(int hA, int wA, int wB) {
    size_t sizeA = (size_t)hA * wA, sizeB = (size_t)wA * wB, sizeC = (size_t)hA * wB;
    float *a = new float[sizeA], *b = new float[sizeB], *c = new float[sizeC];
    unsigned seed = 7 + BLOCK_SIZE;
    for (size_t i = 0; i < sizeA; i++) { seed = seed * 1103515245u + 12345u; a[i] = ((seed >> 9) % 2001) / 1000.0f - 1.0f; }
    for (size_t i = 0; i < sizeB; i++) { seed = seed * 1103515245u + 12345u; b[i] = ((seed >> 9) % 2001) / 1000.0f - 1.0f; }
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, sizeA * 4));
    CHECK(cudaMalloc(&dB, sizeB * 4));
    CHECK(cudaMalloc(&dC, sizeC * 4));
    CHECK(cudaMemcpy(dA, a, sizeA * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, b, sizeB * 4, cudaMemcpyHostToDevice));
    dim3 threads(BLOCK_SIZE, BLOCK_SIZE), grid(wB / BLOCK_SIZE, hA / BLOCK_SIZE);
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaEventRecord(start));
    matrixMulCUDA<BLOCK_SIZE><<<grid, threads>>>(dC, dA, dB, wA, wB);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    CHECK(cudaMemcpy(c, dC, sizeC * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < hA; i++)
        for (int j = 0; j < wB; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < wA; k++) {
                double t = (double)a[i * wA + k] * b[k * wB + j];
                ref += t;
                mag += fabs(t);
            }
            double got = c[i * wB + j];
            if (!(fabs(got - ref) <= 1e-5 * mag + 1e-6) && errors++ < 10)
                fprintf(stderr, "tile %d: C[%d][%d] = %.8g, want %.8g\n", BLOCK_SIZE, i, j, got, ref);
        }
    printf("tile %2d: A %dx%d * B %dx%d in %.3f ms\n", BLOCK_SIZE, hA, wA, wA, wB, ms);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    delete[] a; delete[] b; delete[] c;
}

int main() {
    run<16>(128, 160, 96);
    run<32>(96, 128, 160);
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
