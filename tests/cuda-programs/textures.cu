// Models cuda-samples 0_Introduction/simpleTexture and simplePitchLinearTexture (texture
// objects): a float image in a cudaArray (cudaMallocArray, cudaMemcpy2DToArray) read by
// a texture object with point filtering, unnormalised coordinates and clamp addressing
// (tex2D at shifted and out-of-range coordinates), the same array with linear filtering
// and normalised coordinates in wrap mode; an int buffer in linear memory read with
// tex1Dfetch; a pitched 2D allocation bound as cudaResourceTypePitch2D; and uchar4
// elements read as normalised floats (cudaReadModeNormalizedFloat). Checks point samples
// and fetches exactly and filtered samples within the 1/256 weight precision CUDA
// documents for linear filtering (Programming Guide, "Linear Filtering").
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

__global__ void samplePoints(cudaTextureObject_t tex, float *out, int w, int h, float dx, float dy) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + dx + 0.5f, y + dy + 0.5f);
}

__global__ void sampleNormalized(cudaTextureObject_t tex, float *out, int w, int h, float u0, float v0) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, u0 + (float)x / w, v0 + (float)y / h);
}

__global__ void fetchLinear(cudaTextureObject_t tex, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int>(tex, (i * 7) % n);
}

__global__ void sampleRgba(cudaTextureObject_t tex, float4 *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float4>(tex, x + 0.5f, y + 0.5f);
}

static int errors = 0;

static float texel(const float *img, int w, int h, int x, int y) {
    x = x < 0 ? 0 : (x >= w ? w - 1 : x);
    y = y < 0 ? 0 : (y >= h ? h - 1 : y);
    return img[y * w + x];
}

int main() {
    const int w = 64, h = 48;
    float *img = new float[w * h], *out = new float[w * h];
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) img[y * w + x] = (float)((x * 13 + y * 7) % 32) + 0.25f * (x % 4);
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    cudaArray_t array;
    CHECK(cudaMallocArray(&array, &desc, w, h));
    CHECK(cudaMemcpy2DToArray(array, 0, 0, img, w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = array;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.filterMode = cudaFilterModePoint;
    td.readMode = cudaReadModeElementType;
    td.normalizedCoords = 0;
    cudaTextureObject_t pointTex;
    CHECK(cudaCreateTextureObject(&pointTex, &res, &td, nullptr));
    float *dOut;
    CHECK(cudaMalloc(&dOut, w * h * sizeof(float)));
    dim3 threads(16, 8), grid(w / 16, h / 8);
    const int shifts[][2] = {{0, 0}, {5, -3}, {-10, 60}};
    for (auto &s : shifts) {
        samplePoints<<<grid, threads>>>(pointTex, dOut, w, h, (float)s[0], (float)s[1]);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(out, dOut, w * h * sizeof(float), cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                float want = texel(img, w, h, x + s[0], y + s[1]);
                if (out[y * w + x] != want && bad++ < 5)
                    fprintf(stderr, "point (%d, %d) shifted (%d, %d) = %g, want %g\n", x, y, s[0], s[1], out[y * w + x], want);
            }
        printf("array, point, clamp, shift (%d, %d): %s\n", s[0], s[1], bad ? "wrong" : "ok");
        errors += bad;
    }

    // Linear filtering, normalised coordinates, wrap.
    td.filterMode = cudaFilterModeLinear;
    td.normalizedCoords = 1;
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeWrap;
    cudaTextureObject_t linearTex;
    CHECK(cudaCreateTextureObject(&linearTex, &res, &td, nullptr));
    const float u0 = 0.3f / w + 0.5f, v0 = 0.7f / h + 0.25f;
    sampleNormalized<<<grid, threads>>>(linearTex, dOut, w, h, u0, v0);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out, dOut, w * h * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            // Programming Guide, linear filtering: xB = x*w - 0.5, i = floor(xB), alpha = frac(xB).
            double u = u0 + (double)x / w, v = v0 + (double)y / h;
            double xb = u * w - 0.5, yb = v * h - 0.5;
            int i = (int)floor(xb), j = (int)floor(yb);
            double a = xb - i, b = yb - j;
            auto at = [&](int xi, int yi) { return (double)img[((yi % h + h) % h) * w + (xi % w + w) % w]; };
            double want = (1 - a) * (1 - b) * at(i, j) + a * (1 - b) * at(i + 1, j) + (1 - a) * b * at(i, j + 1) +
                          a * b * at(i + 1, j + 1);
            double range = 32;  // texel values lie in [0, 32]
            if (!(fabs(out[y * w + x] - want) <= range / 256 + 1e-4) && bad++ < 5)
                fprintf(stderr, "linear (%d, %d) = %g, want %g\n", x, y, out[y * w + x], want);
        }
    printf("array, linear, normalised, wrap: %s\n", bad ? "wrong" : "ok");
    errors += bad;

    // Linear memory, tex1Dfetch.
    const int n = 1000;
    int *ints = new int[n], *intsOut = new int[n];
    for (int i = 0; i < n; i++) ints[i] = i * i - 500;
    int *dInts, *dIntsOut;
    CHECK(cudaMalloc(&dInts, n * sizeof(int)));
    CHECK(cudaMalloc(&dIntsOut, n * sizeof(int)));
    CHECK(cudaMemcpy(dInts, ints, n * sizeof(int), cudaMemcpyHostToDevice));
    cudaResourceDesc linearRes = {};
    linearRes.resType = cudaResourceTypeLinear;
    linearRes.res.linear.devPtr = dInts;
    linearRes.res.linear.desc = cudaCreateChannelDesc<int>();
    linearRes.res.linear.sizeInBytes = n * sizeof(int);
    cudaTextureDesc fetchDesc = {};
    fetchDesc.readMode = cudaReadModeElementType;
    cudaTextureObject_t fetchTex;
    CHECK(cudaCreateTextureObject(&fetchTex, &linearRes, &fetchDesc, nullptr));
    fetchLinear<<<(n + 127) / 128, 128>>>(fetchTex, dIntsOut, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(intsOut, dIntsOut, n * sizeof(int), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < n; i++)
        if (intsOut[i] != ints[(i * 7) % n] && bad++ < 5) fprintf(stderr, "tex1Dfetch %d = %d\n", i, intsOut[i]);
    printf("linear memory, tex1Dfetch: %s\n", bad ? "wrong" : "ok");
    errors += bad;

    // Pitched 2D memory.
    float *pitched;
    size_t pitch;
    CHECK(cudaMallocPitch(&pitched, &pitch, w * sizeof(float), h));
    CHECK(cudaMemcpy2D(pitched, pitch, img, w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice));
    cudaResourceDesc pitchRes = {};
    pitchRes.resType = cudaResourceTypePitch2D;
    pitchRes.res.pitch2D.devPtr = pitched;
    pitchRes.res.pitch2D.desc = desc;
    pitchRes.res.pitch2D.width = w;
    pitchRes.res.pitch2D.height = h;
    pitchRes.res.pitch2D.pitchInBytes = pitch;
    td.filterMode = cudaFilterModePoint;
    td.normalizedCoords = 0;
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    cudaTextureObject_t pitchTex;
    CHECK(cudaCreateTextureObject(&pitchTex, &pitchRes, &td, nullptr));
    samplePoints<<<grid, threads>>>(pitchTex, dOut, w, h, 3.0f, 2.0f);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out, dOut, w * h * sizeof(float), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (out[y * w + x] != texel(img, w, h, x + 3, y + 2) && bad++ < 5) fprintf(stderr, "pitch2D (%d, %d) wrong\n", x, y);
    printf("pitched 2D memory, point, clamp: %s\n", bad ? "wrong" : "ok");
    errors += bad;

    // uchar4 read as normalised floats.
    uchar4 *rgba = new uchar4[w * h];
    for (int i = 0; i < w * h; i++) rgba[i] = make_uchar4(i % 256, (i * 3) % 256, 255, 0);
    cudaChannelFormatDesc rgbaDesc = cudaCreateChannelDesc<uchar4>();
    cudaArray_t rgbaArray;
    CHECK(cudaMallocArray(&rgbaArray, &rgbaDesc, w, h));
    CHECK(cudaMemcpy2DToArray(rgbaArray, 0, 0, rgba, w * sizeof(uchar4), w * sizeof(uchar4), h, cudaMemcpyHostToDevice));
    cudaResourceDesc rgbaRes = {};
    rgbaRes.resType = cudaResourceTypeArray;
    rgbaRes.res.array.array = rgbaArray;
    cudaTextureDesc rgbaTd = {};
    rgbaTd.filterMode = cudaFilterModePoint;
    rgbaTd.readMode = cudaReadModeNormalizedFloat;
    cudaTextureObject_t rgbaTex;
    CHECK(cudaCreateTextureObject(&rgbaTex, &rgbaRes, &rgbaTd, nullptr));
    float4 *dRgbaOut, *rgbaOut = new float4[w * h];
    CHECK(cudaMalloc(&dRgbaOut, w * h * sizeof(float4)));
    sampleRgba<<<grid, threads>>>(rgbaTex, dRgbaOut, w, h);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(rgbaOut, dRgbaOut, w * h * sizeof(float4), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < w * h; i++) {
        float4 g = rgbaOut[i];
        if ((fabsf(g.x - rgba[i].x / 255.0f) > 1e-6f || fabsf(g.y - rgba[i].y / 255.0f) > 1e-6f || g.z != 1.0f || g.w != 0.0f) &&
            bad++ < 5)
            fprintf(stderr, "rgba %d = (%g, %g, %g, %g)\n", i, g.x, g.y, g.z, g.w);
    }
    printf("uchar4 array, normalised float reads: %s\n", bad ? "wrong" : "ok");
    errors += bad;

    CHECK(cudaDestroyTextureObject(pointTex)); CHECK(cudaDestroyTextureObject(linearTex));
    CHECK(cudaDestroyTextureObject(fetchTex)); CHECK(cudaDestroyTextureObject(pitchTex));
    CHECK(cudaDestroyTextureObject(rgbaTex));
    CHECK(cudaFreeArray(array)); CHECK(cudaFreeArray(rgbaArray));
    CHECK(cudaFree(dOut)); CHECK(cudaFree(dInts)); CHECK(cudaFree(dIntsOut)); CHECK(cudaFree(pitched));
    CHECK(cudaFree(dRgbaOut));
    delete[] img; delete[] out; delete[] ints; delete[] intsOut; delete[] rgba; delete[] rgbaOut;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
