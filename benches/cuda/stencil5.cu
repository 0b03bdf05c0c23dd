// A 5-point stencil on a w x h f32 grid: out = 4*c - (left + right + up + down) inside,
// the border copied. 2-D grid of 16x16 blocks.
extern "C" __global__ void stencil5(const float* in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        out[i] = in[i];
    } else {
        out[i] = 4.0f * in[i] - (in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
    }
}
