// Models cuda-samples 6_Performance/transpose: a 512x384 float matrix copied and
// transposed by the sample's kernels: copy, naive (uncoalesced writes), coalesced
// (through a 32x32 shared tile) and no-bank-conflicts (a 32x33 tile), each with 32x8
// thread blocks looping over the tile's rows. Checks every element exactly against the
// host's transpose (and the copy against the input).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void copy(float *odata, const float *idata, int width, int height) {
    int x = blockIdx.x * TILE_DIM + threadIdx.x, y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) odata[(y + j) * width + x] = idata[(y + j) * width + x];
}

__global__ void transposeNaive(float *odata, const float *idata, int width, int height) {
    int x = blockIdx.x * TILE_DIM + threadIdx.x, y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) odata[x * height + (y + j)] = idata[(y + j) * width + x];
}

__global__ void transposeCoalesced(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM];
    int x = blockIdx.x * TILE_DIM + threadIdx.x, y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transposeNoBankConflicts(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x, y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

typedef void (*Kernel)(float *, const float *, int, int);

int main() {
    const int width = 512, height = 384, size = width * height;
    float *h = new float[size], *got = new float[size], *want = new float[size];
    for (int i = 0; i < size; i++) h[i] = (float)i * 0.5f - 1000.0f;
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) want[x * height + y] = h[y * width + x];
    float *dIn, *dOut;
    CHECK(cudaMalloc(&dIn, size * sizeof(float)));
    CHECK(cudaMalloc(&dOut, size * sizeof(float)));
    CHECK(cudaMemcpy(dIn, h, size * sizeof(float), cudaMemcpyHostToDevice));
    dim3 grid(width / TILE_DIM, height / TILE_DIM), threads(TILE_DIM, BLOCK_ROWS);
    struct { const char *name; Kernel kernel; bool transposes; } kernels[] = {
        {"copy", copy, false},
        {"naive transpose", transposeNaive, true},
        {"coalesced transpose", transposeCoalesced, true},
        {"no-bank-conflict transpose", transposeNoBankConflicts, true},
    };
    int errors = 0;
    for (auto &k : kernels) {
        CHECK(cudaMemset(dOut, 0, size * sizeof(float)));
        k.kernel<<<grid, threads>>>(dOut, dIn, width, height);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got, dOut, size * sizeof(float), cudaMemcpyDeviceToHost));
        const float *ref = k.transposes ? want : h;
        int bad = 0;
        for (int i = 0; i < size; i++)
            if (got[i] != ref[i] && bad++ < 5) fprintf(stderr, "%s: [%d] = %g, want %g\n", k.name, i, got[i], ref[i]);
        printf("%-28s %s\n", k.name, bad ? "wrong" : "ok");
        errors += bad;
    }
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dOut));
    delete[] h; delete[] got; delete[] want;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
