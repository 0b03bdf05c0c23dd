/*
 * texture: reads through CUDA texture objects and reads/writes through CUDA
 * surface objects (the bindless API: cudaTextureObject_t and
 * cudaSurfaceObject_t are 64-bit handles passed as kernel parameters). Twelve
 * kernels.
 *
 * Unless said otherwise: launch is a 1-D grid of 1-D blocks, any sizes;
 * i = blockIdx.x*blockDim.x + threadIdx.x (32-bit, signed compare against n),
 * and threads with i >= n do nothing.
 *
 * tex1d_float(cudaTextureObject_t tex, const float* xs, float* out, int n)
 *     out[i] = tex1D<float>(tex, xs[i])
 * tex2d_float(cudaTextureObject_t tex, const float* xs, const float* ys,
 *             float* out, int n)
 *     out[i] = tex2D<float>(tex, xs[i], ys[i])
 * tex2d_float4(cudaTextureObject_t tex, const float* xs, const float* ys,
 *              float4* out, int n)
 *     out[i] = tex2D<float4>(tex, xs[i], ys[i])
 *     (used with float4 textures, and with uchar4 textures read in
 *     cudaReadModeNormalizedFloat mode)
 * tex3d_float(cudaTextureObject_t tex, const float* xs, const float* ys,
 *             const float* zs, float* out, int n)
 *     out[i] = tex3D<float>(tex, xs[i], ys[i], zs[i])
 * tex2d_layered_float(cudaTextureObject_t tex, const float* xs,
 *                     const float* ys, const int* layers, float* out, int n)
 *     out[i] = tex2DLayered<float>(tex, xs[i], ys[i], layers[i])
 * tex1d_fetch_int(cudaTextureObject_t tex, const int* idx, int* out, int n)
 *     out[i] = tex1Dfetch<int>(tex, idx[i])
 *     (a texture over linear memory: integer element index, no filtering)
 * tex2d_lod(cudaTextureObject_t tex, const float* xs, const float* ys,
 *           const float* lods, float* out, int n)
 *     out[i] = tex2DLod<float>(tex, xs[i], ys[i], lods[i])
 *     (a mipmapped texture at an explicit level of detail)
 * texcube_float(cudaTextureObject_t tex, const float* xs, const float* ys,
 *               const float* zs, float* out, int n)
 *     out[i] = texCubemap<float>(tex, xs[i], ys[i], zs[i])
 *     (a cube map: the direction picks a face, a layer of six)
 * tex2d_gather(cudaTextureObject_t tex, const float* xs, const float* ys,
 *              float4* out, int n)
 *     out[i] = tex2Dgather<float4>(tex, xs[i], ys[i], 1)
 *     (tld4.g: the second channel of the four texels bilinear filtering would
 *     use, in the order (i, j+1), (i+1, j+1), (i+1, j), (i, j))
 * tex2d_int4(cudaTextureObject_t tex, const float* xs, const float* ys,
 *            int4* out, int n)
 *     out[i] = tex2D<int4>(tex, xs[i], ys[i])
 *     (an integer texture, cudaReadModeElementType, point sampling)
 *
 * The value a texture fetch returns is not a function of the kernel alone: it
 * depends on the texture object's state - filter mode (point or linear),
 * address mode per dimension (wrap, clamp, mirror, border), normalized or
 * unnormalized coordinates, and read mode (element type or normalized
 * float). The host test chooses that state and models the expected values
 * per the CUDA C++ Programming Guide's appendix on texture fetching (nearest
 * point sampling, linear filtering with 9-bit fixed-point weights, the
 * addressing modes).
 *
 * surf2d_scale(cudaSurfaceObject_t in, cudaSurfaceObject_t out, int w, int h)
 *     Launch: 2-D grid of 2-D blocks, any sizes;
 *     x = blockIdx.x*blockDim.x + threadIdx.x, y = blockIdx.y*blockDim.y +
 *     threadIdx.y. Over 2-D float surfaces of w x h elements:
 *         if (x < w && y < h) {
 *             float v = surf2Dread<float>(in, x * 4, y);
 *             surf2Dwrite(v * 2.0f + 1.0f, out, x * 4, y);
 *         }
 *     (the x coordinate of the surface functions is in BYTES; default
 *     boundary mode cudaBoundaryModeTrap, never hit. Whether v * 2.0f + 1.0f
 *     is contracted into one fma.rn.f32 is up to the compiler; with
 *     v * 2.0f exact both give the same bits.)
 *
 * surf2d_boundary(cudaSurfaceObject_t in, const int* xs, const int* ys,
 *                 float* zero_out, float* clamp_out, int n)
 *     zero_out[i]  = surf2Dread<float>(in, xs[i] * 4, ys[i], cudaBoundaryModeZero)
 *     clamp_out[i] = surf2Dread<float>(in, xs[i] * 4, ys[i], cudaBoundaryModeClamp)
 *     (xs/ys may lie outside the surface: the zero mode returns 0.0f there,
 *     the clamp mode the element at the nearest in-range coordinate; the x
 *     coordinate is in bytes.)
 */
#ifndef __CUDACC__
#include "cuda_shim.h"
#endif

extern "C" __global__ void tex1d_float(cudaTextureObject_t tex, const float* xs, float* out,
                                       int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex1D<float>(tex, xs[i]);
    }
}

extern "C" __global__ void tex2d_float(cudaTextureObject_t tex, const float* xs, const float* ys,
                                       float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2D<float>(tex, xs[i], ys[i]);
    }
}

extern "C" __global__ void tex2d_float4(cudaTextureObject_t tex, const float* xs,
                                        const float* ys, float4* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2D<float4>(tex, xs[i], ys[i]);
    }
}

extern "C" __global__ void tex3d_float(cudaTextureObject_t tex, const float* xs, const float* ys,
                                       const float* zs, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex3D<float>(tex, xs[i], ys[i], zs[i]);
    }
}

extern "C" __global__ void tex2d_layered_float(cudaTextureObject_t tex, const float* xs,
                                               const float* ys, const int* layers, float* out,
                                               int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2DLayered<float>(tex, xs[i], ys[i], layers[i]);
    }
}

extern "C" __global__ void tex1d_fetch_int(cudaTextureObject_t tex, const int* idx, int* out,
                                           int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex1Dfetch<int>(tex, idx[i]);
    }
}

extern "C" __global__ void tex2d_int4(cudaTextureObject_t tex, const float* xs, const float* ys,
                                      int4* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2D<int4>(tex, xs[i], ys[i]);
    }
}

extern "C" __global__ void surf2d_scale(cudaSurfaceObject_t in, cudaSurfaceObject_t out, int w,
                                        int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float v = surf2Dread<float>(in, x * 4, y);
        surf2Dwrite(v * 2.0f + 1.0f, out, x * 4, y);
    }
}

extern "C" __global__ void surf2d_boundary(cudaSurfaceObject_t in, const int* xs, const int* ys,
                                           float* zero_out, float* clamp_out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        zero_out[i] = surf2Dread<float>(in, xs[i] * 4, ys[i], cudaBoundaryModeZero);
        clamp_out[i] = surf2Dread<float>(in, xs[i] * 4, ys[i], cudaBoundaryModeClamp);
    }
}

extern "C" __global__ void tex2d_gather(cudaTextureObject_t tex, const float* xs,
                                        const float* ys, float4* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2Dgather<float4>(tex, xs[i], ys[i], 1);
    }
}

extern "C" __global__ void texcube_float(cudaTextureObject_t tex, const float* xs,
                                         const float* ys, const float* zs, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = texCubemap<float>(tex, xs[i], ys[i], zs[i]);
    }
}

extern "C" __global__ void tex2d_lod(cudaTextureObject_t tex, const float* xs, const float* ys,
                                     const float* lods, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2DLod<float>(tex, xs[i], ys[i], lods[i]);
    }
}
