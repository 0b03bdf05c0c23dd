// y = fma(a, b, c) / d in f64 (fma.rn.f64 and div.rn.f64).
extern "C" __global__ void f64_fma_div(const double* a, const double* b, const double* c,
                                       const double* d, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fma(a[i], b[i], c[i]) / d[i];
}
