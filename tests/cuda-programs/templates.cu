// Models cuda-samples 0_Introduction/simpleTemplates (with the SharedMemory<T> trick of
// the reduction sample): one templated kernel instantiated for int, unsigned, float and
// double, using a typed view of extern __shared__ memory; a family of elementwise kernels
// from one template over functors (add, multiply, maximum, saxpy, clamp); a kernel
// templated on a compile-time unroll count; and a templated device function calling
// another. Many kernels live in one module. Checks every result against the same
// arithmetic on the host (integers exactly, floats and doubles within a tolerance).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

template <class T> struct SharedMemory {
    __device__ inline operator T *() {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
};
template <> struct SharedMemory<double> {
    __device__ inline operator double *() {
        extern __shared__ double __smem_d[];
        return (double *)__smem_d;
    }
};

// The sample's testKernel: each thread scales its element through shared memory,
// reading its neighbour's.
template <class T>
__global__ void testKernel(const T *g_idata, T *g_odata) {
    T *sdata = SharedMemory<T>();
    const unsigned tid = threadIdx.x, num = blockDim.x;
    sdata[tid] = g_idata[tid];
    __syncthreads();
    T neighbour = sdata[(tid + 1) % num];
    __syncthreads();
    sdata[tid] = (T)num * neighbour;
    __syncthreads();
    g_odata[tid] = sdata[tid];
}

struct Add { template <class T> __host__ __device__ T operator()(T a, T b) const { return a + b; } };
struct Mul { template <class T> __host__ __device__ T operator()(T a, T b) const { return a * b; } };
struct Max { template <class T> __host__ __device__ T operator()(T a, T b) const { return a > b ? a : b; } };
struct Saxpy { float a; __host__ __device__ float operator()(float x, float y) const { return a * x + y; } };
struct Clamp {
    int lo, hi;
    __host__ __device__ int operator()(int x, int y) const { int v = x + y; return v < lo ? lo : (v > hi ? hi : v); }
};

template <class T, class Op>
__global__ void elementwise(const T *a, const T *b, T *c, int n, Op op) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = op(a[i], b[i]);
}

template <class T> __device__ T square(T x) { return x * x; }
template <class T> __device__ T sumOfSquares(const T *p, int count) {
    T s = 0;
    for (int i = 0; i < count; i++) s += square(p[i]);
    return s;
}

template <int UNROLL, class T>
__global__ void unrolledSums(const T *in, T *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i * UNROLL + UNROLL <= n) {
        T s = 0;
#pragma unroll
        for (int k = 0; k < UNROLL; k++) s += in[i * UNROLL + k];
        out[i] = s + sumOfSquares(in + i * UNROLL, UNROLL);
    }
}

static int errors = 0;

template <class T> static bool close(T got, T want) {
    double g = (double)got, w = (double)want;
    return fabs(g - w) <= 1e-5 * (fabs(w) + 1);
}
template <> bool close<int>(int got, int want) { return got == want; }
template <> bool close<unsigned>(unsigned got, unsigned want) { return got == want; }

template <class T> static void runTest(const char *name, int num) {
    T *h = new T[num], *got = new T[num];
    for (int i = 0; i < num; i++) h[i] = (T)(i + 1);
    T *dIn, *dOut;
    CHECK(cudaMalloc(&dIn, num * sizeof(T)));
    CHECK(cudaMalloc(&dOut, num * sizeof(T)));
    CHECK(cudaMemcpy(dIn, h, num * sizeof(T), cudaMemcpyHostToDevice));
    testKernel<T><<<1, num, num * sizeof(T)>>>(dIn, dOut);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dOut, num * sizeof(T), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < num; i++)
        if (!close(got[i], (T)num * h[(i + 1) % num]) && bad++ < 5) fprintf(stderr, "testKernel<%s>[%d] wrong\n", name, i);
    printf("testKernel<%s>: %s\n", name, bad ? "wrong" : "ok");
    errors += bad;
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dOut));
    delete[] h; delete[] got;
}

template <class T, class Op> static void runElementwise(const char *name, Op op, int n) {
    T *a = new T[n], *b = new T[n], *c = new T[n];
    for (int i = 0; i < n; i++) {
        a[i] = (T)((i * 7) % 23) - (T)5;
        b[i] = (T)((i * 3) % 17);
    }
    T *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, n * sizeof(T)));
    CHECK(cudaMalloc(&dB, n * sizeof(T)));
    CHECK(cudaMalloc(&dC, n * sizeof(T)));
    CHECK(cudaMemcpy(dA, a, n * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, b, n * sizeof(T), cudaMemcpyHostToDevice));
    elementwise<<<16, 128>>>(dA, dB, dC, n, op);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(c, dC, n * sizeof(T), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (!close(c[i], op(a[i], b[i])) && bad++ < 5) fprintf(stderr, "%s[%d] wrong\n", name, i);
    printf("elementwise %-14s %s\n", name, bad ? "wrong" : "ok");
    errors += bad;
    CHECK(cudaFree(dA)); CHECK(cudaFree(dB)); CHECK(cudaFree(dC));
    delete[] a; delete[] b; delete[] c;
}

template <int UNROLL, class T> static void runUnrolled(const char *name) {
    const int n = 4096, outs = n / UNROLL;
    T *in = new T[n], *out = new T[outs];
    for (int i = 0; i < n; i++) in[i] = (T)(i % 11) - (T)3;
    T *dIn, *dOut;
    CHECK(cudaMalloc(&dIn, n * sizeof(T)));
    CHECK(cudaMalloc(&dOut, outs * sizeof(T)));
    CHECK(cudaMemcpy(dIn, in, n * sizeof(T), cudaMemcpyHostToDevice));
    unrolledSums<UNROLL><<<(outs + 63) / 64, 64>>>(dIn, dOut, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out, dOut, outs * sizeof(T), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < outs; i++) {
        T s = 0, q = 0;
        for (int k = 0; k < UNROLL; k++) {
            s += in[i * UNROLL + k];
            q += in[i * UNROLL + k] * in[i * UNROLL + k];
        }
        if (!close(out[i], s + q) && bad++ < 5) fprintf(stderr, "unrolled<%d, %s>[%d] wrong\n", UNROLL, name, i);
    }
    printf("unrolledSums<%d, %s>: %s\n", UNROLL, name, bad ? "wrong" : "ok");
    errors += bad;
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dOut));
    delete[] in; delete[] out;
}

int main() {
    runTest<int>("int", 64);
    runTest<unsigned>("unsigned", 128);
    runTest<float>("float", 256);
    runTest<double>("double", 100);
    runElementwise<int>("add<int>", Add(), 5000);
    runElementwise<float>("mul<float>", Mul(), 5000);
    runElementwise<double>("max<double>", Max(), 5000);
    runElementwise<float>("saxpy", Saxpy{2.5f}, 5000);
    runElementwise<int>("clamp", Clamp{-3, 12}, 5000);
    runUnrolled<4, int>("int");
    runUnrolled<8, float>("float");
    runUnrolled<16, double>("double");
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
