// Byte transposition through shared memory: thread t of a 256-thread block stores the
// four bytes of its word 256 bytes apart (byte j at s[j*256 + t]), then reads back four
// consecutive bytes (s[4t .. 4t+3]) as its output word. Sub-word shared stores.
extern "C" __global__ void subword_shared(const unsigned int* in, unsigned int* out, int n) {
    __shared__ unsigned char s[1024];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    unsigned int v = i < n ? in[i] : 0u;
    for (int j = 0; j < 4; ++j) s[j * 256 + t] = (unsigned char)(v >> (8 * j));
    __syncthreads();
    unsigned int w = s[4 * t] | (s[4 * t + 1] << 8) | (s[4 * t + 2] << 16) |
                     ((unsigned int)s[4 * t + 3] << 24);
    if (i < n) out[i] = w;
}
