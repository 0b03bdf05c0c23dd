// Normalizes 3-vectors stored as three arrays: len = sqrtf(x*x + y*y + z*z), each
// component divided by it (div.rn.f32 and sqrt.rn.f32; nvcc contracts the sum).
extern "C" __global__ void normalize(const float* x, const float* y, const float* z,
                                     float* ox, float* oy, float* oz, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float len = sqrtf(x[i] * x[i] + y[i] * y[i] + z[i] * z[i]);
        ox[i] = x[i] / len;
        oy[i] = y[i] / len;
        oz[i] = z[i] / len;
    }
}
