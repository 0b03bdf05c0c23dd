// C = A * B for n x n row-major f32 matrices, one thread per element (2-D grid of
// 16x16 blocks); nvcc contracts the dot product into fma.rn.f32.
extern "C" __global__ void matmul_naive(const float* A, const float* B, float* C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}
