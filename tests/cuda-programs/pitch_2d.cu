// Models the 2D memory of cuda-samples (simplePitchLinearTexture's cudaMallocPitch and
// the Programming Guide's pitched 2D/3D examples): a 2D array from cudaMallocPitch filled
// by cudaMemcpy2D from a host array with a different pitch, cudaMemset2D of a
// sub-rectangle, a kernel walking rows through the pitch, cudaMemcpy2D device to device
// into a second pitched array at an offset, and back to a tightly packed host array; then
// a 3D array from cudaMalloc3D with cudaMemset3D and cudaMemcpy3D. Checks every element
// against the host's model of the same operations exactly.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#include "check.h"

__global__ void scaleRows(float *base, size_t pitch, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        float *row = (float *)((char *)base + y * pitch);
        row[x] = row[x] * 2.0f + (float)y;
    }
}

__global__ void add3D(cudaPitchedPtr p, int w, int h, int d) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
    if (x < w && y < h && z < d) {
        char *slice = (char *)p.ptr + z * p.pitch * h;
        int *row = (int *)(slice + y * p.pitch);
        row[x] += x + 10 * y + 100 * z;
    }
}

int main() {
    int errors = 0;
    const int width = 300, height = 200, hostPitchFloats = 320;
    float *host = new float[hostPitchFloats * height];
    for (int y = 0; y < height; y++)
        for (int x = 0; x < hostPitchFloats; x++) host[y * hostPitchFloats + x] = x < width ? (float)(x + y * 1000) : -1.0f;
    float *d, *d2;
    size_t pitch, pitch2;
    CHECK(cudaMallocPitch(&d, &pitch, width * sizeof(float), height));
    CHECK(cudaMallocPitch(&d2, &pitch2, (width + 20) * sizeof(float), height + 10));
    printf("pitches: %zu and %zu bytes for rows of %zu and %zu\n", pitch, pitch2, width * sizeof(float),
           (width + 20) * sizeof(float));
    if (pitch < width * sizeof(float) || pitch2 < (width + 20) * sizeof(float)) errors++;
    CHECK(cudaMemcpy2D(d, pitch, host, hostPitchFloats * sizeof(float), width * sizeof(float), height,
                       cudaMemcpyHostToDevice));
    // Zero a 40x30 rectangle at (10, 20) (bytes).
    CHECK(cudaMemset2D((char *)d + 20 * pitch + 10 * sizeof(float), pitch, 0, 40 * sizeof(float), 30));
    dim3 threads(32, 8), grid((width + 31) / 32, (height + 7) / 8);
    scaleRows<<<grid, threads>>>(d, pitch, width, height);
    CHECK(cudaGetLastError());
    CHECK(cudaMemset2D(d2, pitch2, 0xff, (width + 20) * sizeof(float), height + 10));
    // Into d2 at row 5, column 7.
    CHECK(cudaMemcpy2D((char *)d2 + 5 * pitch2 + 7 * sizeof(float), pitch2, d, pitch, width * sizeof(float), height,
                       cudaMemcpyDeviceToDevice));
    const int w2 = width + 20, h2 = height + 10;
    float *back = new float[w2 * h2];
    CHECK(cudaMemcpy2D(back, w2 * sizeof(float), d2, pitch2, w2 * sizeof(float), h2, cudaMemcpyDeviceToHost));
    for (int y = 0; y < h2; y++)
        for (int x = 0; x < w2; x++) {
            float want;
            int sx = x - 7, sy = y - 5;
            if (sx < 0 || sy < 0 || sx >= width || sy >= height) {
                unsigned ones = 0xffffffffu;
                memcpy(&want, &ones, 4);
                unsigned got;
                memcpy(&got, &back[y * w2 + x], 4);
                if (got != ones && errors++ < 10) fprintf(stderr, "border (%d, %d) = %08x\n", x, y, got);
                continue;
            }
            float v = (sx >= 10 && sx < 50 && sy >= 20 && sy < 50) ? 0.0f : host[sy * hostPitchFloats + sx];
            want = v * 2.0f + (float)sy;
            if (back[y * w2 + x] != want && errors++ < 10)
                fprintf(stderr, "(%d, %d) = %g, want %g\n", x, y, back[y * w2 + x], want);
        }
    printf("cudaMallocPitch / cudaMemcpy2D / cudaMemset2D: %s\n", errors ? "wrong" : "ok");

    const int w = 50, h = 20, depth = 8;
    cudaPitchedPtr p;
    CHECK(cudaMalloc3D(&p, make_cudaExtent(w * sizeof(int), h, depth)));
    CHECK(cudaMemset3D(p, 0, make_cudaExtent(w * sizeof(int), h, depth)));
    int *vol = new int[w * h * depth];
    for (int i = 0; i < w * h * depth; i++) vol[i] = i;
    cudaMemcpy3DParms in = {};
    in.srcPtr = make_cudaPitchedPtr(vol, w * sizeof(int), w, h);
    in.dstPtr = p;
    in.extent = make_cudaExtent(w * sizeof(int), h, depth - 2);  // the last two slices stay zero
    in.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&in));
    add3D<<<dim3((w + 31) / 32, h, depth), 32>>>(p, w, h, depth);
    CHECK(cudaGetLastError());
    int *volBack = new int[w * h * depth];
    cudaMemcpy3DParms out = {};
    out.srcPtr = p;
    out.dstPtr = make_cudaPitchedPtr(volBack, w * sizeof(int), w, h);
    out.extent = make_cudaExtent(w * sizeof(int), h, depth);
    out.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&out));
    int before = errors;
    for (int z = 0; z < depth; z++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int i = (z * h + y) * w + x;
                int want = (z < depth - 2 ? i : 0) + x + 10 * y + 100 * z;
                if (volBack[i] != want && errors++ < 20) fprintf(stderr, "3D (%d, %d, %d) = %d, want %d\n", x, y, z, volBack[i], want);
            }
    printf("cudaMalloc3D / cudaMemset3D / cudaMemcpy3D: %s\n", errors > before ? "wrong" : "ok");
    CHECK(cudaFree(d)); CHECK(cudaFree(d2)); CHECK(cudaFree(p.ptr));
    delete[] host; delete[] back; delete[] vol; delete[] volBack;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
