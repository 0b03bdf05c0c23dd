"""numba-cuda on ptxvk's libcuda.so.1 (nvJitLink absent, so numba hands its PTX to
cuLinkAddData): a @cuda.jit kernel with device arrays, a reduction through shared memory,
and results checked against numpy. Run under `ptxvk exec`."""
import numpy as np
from numba import cuda, float32


@cuda.jit
def add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def block_sums(x, out):
    shared = cuda.shared.array(256, dtype=float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    shared[t] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    step = 128
    while step > 0:
        if t < step:
            shared[t] += shared[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = shared[0]


n = 10_000
a = np.arange(n, dtype=np.float32)
b = np.full(n, 0.5, dtype=np.float32)
d_out = cuda.device_array(n, dtype=np.float32)
add[(n + 255) // 256, 256](cuda.to_device(a), cuda.to_device(b), d_out)
assert np.array_equal(d_out.copy_to_host(), a + b)

x = (np.arange(4096, dtype=np.float32) % 7) - 3
sums = cuda.device_array(16, dtype=np.float32)
block_sums[16, 256](cuda.to_device(x), sums)
# Small integers: every partial sum is exact in float32, so any order gives these.
expected = x.reshape(16, 256).sum(axis=1)
assert np.array_equal(sums.copy_to_host(), expected)
print(f"numba-cuda on {cuda.get_current_device().name}: ok")
