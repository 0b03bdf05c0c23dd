"""CuPy through ptxvk's libcuda.so.1 (run under `ptxvk exec`, which sets
CUPY_COMPILE_WITH_PTX=1): CuPy's static CUDA 12 runtime, its NVRTC-compiled
elementwise and reduction kernels, the CUB reductions of its `cupy.cuda.cub` module
(a 383-kernel module loaded lazily), a RawKernel, and Thrust's radix sort, each
checked against numpy.

CuPy ships CUB and Thrust as compute_100 PTX only; the sort's kernels declare more
shared memory per block than lavapipe has (32 KiB), which ptxvk keeps in device memory
(lower/src/pass/shared_in_memory.rs). The sort is small: its onesweep kernel polls
other blocks and runs slowly on lavapipe."""

import os

# `ptxvk exec` turns CUB off (CUPY_ACCELERATORS=, see src/exec.rs: its look-back scans
# are slow on ptxvk); its reductions are exercised here on purpose.
os.environ["CUPY_ACCELERATORS"] = "cub"

import numpy as np  # noqa: E402
import cupy as cp  # noqa: E402

rng = np.random.default_rng(35)
x = rng.standard_normal(100_000).astype(np.float32)
d = cp.asarray(x)

# Elementwise (NVRTC).
np.testing.assert_allclose((d * 2 + 1).get(), x * 2 + 1, rtol=0, atol=0)
# Reductions: CUB's device reduce (cupy.cuda.cub) and CuPy's own.
np.testing.assert_allclose(float(d.sum()), float(x.astype(np.float64).sum()), rtol=1e-4)
np.testing.assert_allclose(float(d.max()), float(x.max()), rtol=0)
m = d.reshape(400, 250)
np.testing.assert_allclose(m.sum(axis=1).get(), x.reshape(400, 250).sum(axis=1), rtol=1e-4)
assert int(cp.argmax(d)) == int(np.argmax(x))

# A RawKernel.
saxpy = cp.RawKernel(
    r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
""",
    "saxpy",
)
y = cp.ones_like(d)
n = x.size
saxpy(((n + 255) // 256,), (256,), (np.float32(3.0), d, y, np.int32(n)))
# NVRTC contracts a * x + y into one fma (its default, -fmad=true); numpy rounds twice.
expected = np.float32(3.0) * x + 1
np.testing.assert_allclose(y.get(), expected, rtol=1e-6, atol=1e-6)

# Thrust's radix sort (cupy.sort): keys of both signs, repeated keys; and argsort.
keys = rng.integers(-(10**6), 10**6, 3000).astype(np.int32)
np.testing.assert_array_equal(cp.sort(cp.asarray(keys)).get(), np.sort(keys))
order = cp.argsort(cp.asarray(x[:2000])).get()
np.testing.assert_array_equal(x[:2000][order], np.sort(x[:2000]))
print("cupy_smoke: ok")
