// The kernel of the fatbin fixtures (scripts/gen-fatbins): x[i] *= a for i < n.
extern "C" __global__ void scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] *= a;
    }
}
