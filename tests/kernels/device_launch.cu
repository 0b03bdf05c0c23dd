// Device-side launches (CUDA Dynamic Parallelism, CUDA 12 semantics; issue #34 item 6).
// Dynamic parallelism needs relocatable device code: built by nvcc -rdc=true only
// (`RDC` and `NVCC_ONLY` in scripts/gen-ptx), for sm_75, sm_80 and sm_90. CUDA 13's
// nvcc lowers `k<<<g, b, s, stream>>>(...)` in device code to
// `__cudaCDP2GetParameterBufferV2` + `__cudaCDP2LaunchDeviceV2`, and the explicit
// `cudaGetParameterBuffer`/`cudaLaunchDevice` to their `__cudaCDP2` V1 forms.
//
// Kernels (references in tests/device_launch_e2e.rs):
//
// * cnp_parent(out, per_thread): GPU Ocelot's CNP test shape. Every thread t of the
//   parent launches cnp_child<<<ceil(per_thread / 32), 32, 128 bytes>>> on its slice
//   out + t * per_thread; the child stages values in dynamic shared memory and each
//   thread stores another thread's: out[t * per_thread + k] =
//   (t * 100000 + 3 * k) ^ 0x5a5a for every k < per_thread.
// * tree(depth, id, sum, grids): a kernel that launches itself. Thread 0 adds id to
//   *sum and 1 to *grids; while depth > 0, threads 0 and 1 each launch
//   tree<<<1, 2>>>(depth - 1, 2 * id + threadIdx.x, ...). From id 1 the grids are the
//   heap-numbered nodes of a complete binary tree of depth `depth`.
// * chain(depth, reached, codes): launches itself one level deeper until a launch
//   fails: reached[depth] = 1 and codes[depth] = the launch's error
//   (cudaGetLastError), until the nesting limit.
// * tail_parent(data, n, result): one block of n threads. Thread 0 first launches
//   tail_check into cudaStreamTailLaunch, then every thread writes data[i] = i,
//   __syncthreads, and thread 0 launches add_k(data, n, 1000) into
//   cudaStreamFireAndForget, whose thread 0 launches scale (data[i] *= 3) into the
//   NULL stream. The tail launch runs after the parent and all that work:
//   result[0] = sum of data[i] (64-bit), result[1] = data[n - 1].
// * flood(count, per_thread, ok, last): every thread launches bump<<<1, 1>>>(count)
//   per_thread times and counts the launches cudaGetLastError calls successful in
//   ok[t]; last[t] is the last failure's code (0 if none). Past the pending-launch
//   limit launches fail with cudaErrorLaunchPendingCountExceeded (69).
// * api_calls(out, codes): one thread. The PTX-level API and device streams, codes in
//   order: 0 cudaLaunchDevice of fill (out[0..8] = 7); 1 cudaStreamCreateWithFlags
//   (NonBlocking); 2 cudaGetLastError after fill<<<1, 8, 0, s>>> (out[8..16] = 9);
//   3 cudaStreamDestroy; 4 cudaLaunchDevice of a __device__ function (not a kernel:
//   cudaErrorInvalidDeviceFunction, 98); 5, 6 cudaGetLastError twice (98, then 0);
//   7 a grid of 0 blocks and 8 a block of 2048 threads (cudaErrorInvalidConfiguration,
//   9); 9 cudaPeekAtLastError, 10 cudaGetLastError (9, 9); 11 cudaLaunchDevice of a
//   buffer not from cudaGetParameterBuffer (cudaErrorInvalidValue, 1); 12
//   cudaGetDevice (0), 13 the device (0). out[16..24] stay as they were.

extern "C" __global__ void cnp_child(int *slice, int parent_thread, int n) {
    extern __shared__ int stage[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    stage[threadIdx.x] = parent_thread * 100000 + 3 * i;
    __syncthreads();
    int j = blockDim.x - 1 - threadIdx.x;
    int k = blockIdx.x * blockDim.x + j;
    if (k < n) slice[k] = stage[j] ^ 0x5a5a;
}

extern "C" __global__ void cnp_parent(int *out, int per_thread) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int blocks = (per_thread + 31) / 32;
    cnp_child<<<blocks, 32, 32 * sizeof(int)>>>(out + t * per_thread, t, per_thread);
}

extern "C" __global__ void tree(int depth, unsigned long long id, unsigned long long *sum,
                                unsigned int *grids) {
    if (threadIdx.x == 0) {
        atomicAdd(sum, id);
        atomicAdd(grids, 1u);
    }
    if (depth > 0 && threadIdx.x < 2) {
        tree<<<1, 2>>>(depth - 1, 2 * id + threadIdx.x, sum, grids);
    }
}

extern "C" __global__ void chain(int depth, int *reached, int *codes) {
    reached[depth] = 1;
    chain<<<1, 1>>>(depth + 1, reached, codes);
    codes[depth] = cudaGetLastError();
}

extern "C" __global__ void tail_check(const int *data, int n, long long *result) {
    long long s = 0;
    for (int i = 0; i < n; ++i) s += data[i];
    result[0] = s;
    result[1] = data[n - 1];
}

extern "C" __global__ void scale(int *data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= 3;
}

extern "C" __global__ void add_k(int *data, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += k;
    if (i == 0) scale<<<(n + 63) / 64, 64>>>(data, n);
}

extern "C" __global__ void tail_parent(int *data, int n, long long *result) {
    int i = threadIdx.x;
    if (i == 0) tail_check<<<1, 1, 0, cudaStreamTailLaunch>>>(data, n, result);
    if (i < n) data[i] = i;
    __syncthreads();
    if (i == 0) add_k<<<(n + 63) / 64, 64, 0, cudaStreamFireAndForget>>>(data, n, 1000);
}

extern "C" __global__ void bump(unsigned int *count) { atomicAdd(count, 1u); }

extern "C" __global__ void flood(unsigned int *count, int per_thread, int *ok, int *last) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int good = 0, failed = 0;
    for (int k = 0; k < per_thread; ++k) {
        bump<<<1, 1>>>(count);
        int e = cudaGetLastError();
        if (e == cudaSuccess) {
            ++good;
        } else {
            failed = e;
        }
    }
    ok[t] = good;
    last[t] = failed;
}

extern "C" __global__ void fill(int *out, int v) { out[threadIdx.x] = v; }

__device__ __noinline__ int not_a_kernel(int x) { return x + 1; }

extern "C" __global__ void api_calls(int *out, int *codes) {
    void *buf = cudaGetParameterBuffer(8, 16);
    *(int **)buf = out;
    ((int *)buf)[2] = 7;
    codes[0] = cudaLaunchDevice((void *)fill, buf, dim3(1), dim3(8), 0, 0);
    cudaStream_t s;
    codes[1] = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    fill<<<1, 8, 0, s>>>(out + 8, 9);
    codes[2] = cudaGetLastError();
    codes[3] = cudaStreamDestroy(s);
    void *b2 = cudaGetParameterBuffer(8, 16);
    *(int **)b2 = out + 16;
    ((int *)b2)[2] = 11;
    codes[4] = cudaLaunchDevice((void *)not_a_kernel, b2, dim3(1), dim3(8), 0, 0);
    codes[5] = cudaGetLastError();
    codes[6] = cudaGetLastError();
    void *b3 = cudaGetParameterBuffer(8, 16);
    *(int **)b3 = out + 16;
    ((int *)b3)[2] = 13;
    codes[7] = cudaLaunchDevice((void *)fill, b3, dim3(0), dim3(8), 0, 0);
    codes[8] = cudaLaunchDevice((void *)fill, b3, dim3(1), dim3(2048), 0, 0);
    codes[9] = cudaPeekAtLastError();
    codes[10] = cudaGetLastError();
    codes[11] = cudaLaunchDevice((void *)fill, (void *)out, dim3(1), dim3(8), 0, 0);
    int dev = -1;
    codes[12] = cudaGetDevice(&dev);
    codes[13] = dev;
}
