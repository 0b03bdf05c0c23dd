"""cuda.core + NVRTC on ptxvk's libcuda.so.1: compile a CUDA C++ kernel to PTX with
NVRTC, load it with cuLibraryLoadData, launch it on a stream, and check the result
against numpy. Run under `ptxvk exec -- python3 tests/python/cuda_core_saxpy.py`."""
import numpy as np
from cuda.bindings import driver
from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch


def check(result):
    err = result[0] if isinstance(result, tuple) else result
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return result[1:] if isinstance(result, tuple) else None

CODE = r"""
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out, size_t n) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""

dev = Device()
dev.set_current()
stream = dev.create_stream()
program = Program(CODE, code_type="c++", options=ProgramOptions(arch="sm_80"))
module = program.compile("ptx")
kernel = module.get_kernel("saxpy")

n = 1000
rng = np.random.default_rng(7)
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
a = np.float32(2.5)
buf_x = dev.allocate(x.nbytes, stream=stream)
buf_y = dev.allocate(y.nbytes, stream=stream)
buf_out = dev.allocate(x.nbytes, stream=stream)
# Host-to-device copies through cuda.bindings' driver API.
for buf, host in ((buf_x, x), (buf_y, y)):
    check(driver.cuMemcpyHtoDAsync(buf.handle, host.ctypes.data, host.nbytes, stream.handle))
config = LaunchConfig(grid=(n + 255) // 256, block=256)
launch(stream, config, kernel, a, buf_x, buf_y, buf_out, np.uint64(n))
out = np.empty_like(x)
check(driver.cuMemcpyDtoHAsync(out.ctypes.data, buf_out.handle, out.nbytes, stream.handle))
stream.sync()
# NVRTC contracts a*x+y into fma.rn.f32, which ptxvk computes exactly: the exact a*x+y
# rounded once. The model computes a*x exactly in float64 and rounds the sum twice
# (float64, then float32); the two differ in about one case in 2^28, and not for these
# fixed inputs.
expected = (np.float64(a) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
assert np.array_equal(out, expected), (out[:4], expected[:4])
print(f"cuda.core saxpy on {dev.name}: ok ({n} elements)")
