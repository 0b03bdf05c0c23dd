// Inclusive prefix sums of u32 within each 256-thread block (Hillis-Steele in shared
// memory, double-buffered).
extern "C" __global__ void scan(const unsigned int* in, unsigned int* out, int n) {
    __shared__ unsigned int buf[2][256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    int cur = 0;
    buf[0][t] = i < n ? in[i] : 0u;
    __syncthreads();
    for (int off = 1; off < 256; off *= 2) {
        unsigned int v = buf[cur][t];
        if (t >= off) v += buf[cur][t - off];
        buf[1 - cur][t] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    if (i < n) out[i] = buf[cur][t];
}
