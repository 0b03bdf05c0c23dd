// A 256-bin histogram of bytes: each block counts in shared memory with shared
// atomics (grid-stride loop), then adds its bins to the global ones. Blocks of 256.
extern "C" __global__ void histogram_u8(const unsigned char* data, unsigned int* bins, int n) {
    __shared__ unsigned int h[256];
    int t = threadIdx.x;
    h[t] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&h[data[i]], 1u);
    __syncthreads();
    atomicAdd(&bins[t], h[t]);
}
