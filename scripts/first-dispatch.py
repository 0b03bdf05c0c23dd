#!/usr/bin/env python3
"""What a numba-cuda user waits for at a kernel's first launch, step by step.

    target/release/ptxvk exec -- target/python-venv/bin/python \\
        scripts/first-dispatch.py [FUNCTION [f32|f64]]

Compiles `out[i] = math.FUNCTION(x[i])` (default `gamma`, f64) with numba-cuda's
`compile_ptx` (sm_80), then, through the driver API as numba calls it, times
`cuModuleLoadData`, `cuModuleGetFunction`, and two launches of 256 threads each to
completion. On lavapipe the first launch's enqueue is `vkCreateComputePipelines` (NIR),
and the wait after it is LLVM's compile of the shader at its first dispatch, which Mesa's
shader cache keeps across processes: run it twice, and once with
`MESA_SHADER_CACHE_DISABLE=true`, to see both (docs/benchmarks.md, *First-launch latency*).
"""
import ctypes
import math
import re
import sys
import time

from cuda.bindings import driver
from numba import cuda, float32, float64


def check(result):
    error, *rest = result if isinstance(result, tuple) else (result,)
    if error != driver.CUresult.CUDA_SUCCESS:
        sys.exit(f"first-dispatch: {error}")
    return rest[0] if len(rest) == 1 else rest


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "gamma"
    ty = {"f32": float32, "f64": float64}[sys.argv[2] if len(sys.argv) > 2 else "f64"]
    scope = {"cuda": cuda, "math": math}
    exec(f"def kernel(out, x):\n    i = cuda.grid(1)\n    out[i] = math.{name}(x[i])", scope)
    ptx, _ = cuda.compile_ptx(scope["kernel"], (ty[:], ty[:]), cc=(8, 0))
    ptx = ptx.encode() + b"\0"

    check(driver.cuInit(0))
    device = check(driver.cuDeviceGet(0))
    context = check(driver.cuDevicePrimaryCtxRetain(device))
    check(driver.cuCtxSetCurrent(context))
    start = time.perf_counter()
    module = check(driver.cuModuleLoadData(ptx))
    loaded = time.perf_counter()
    entry = re.search(rb"\.entry\s+(\S+)\(", ptx).group(1)
    function = check(driver.cuModuleGetFunction(module, entry))
    found = time.perf_counter()
    print(f"cuModuleLoadData {1e3 * (loaded - start):.1f} ms, "
          f"cuModuleGetFunction {1e3 * (found - loaded):.1f} ms")

    # numba's array arguments: meminfo, parent, nitems, itemsize, data, shape, stride.
    n, size = 256, 8 if ty is float64 else 4
    values = []
    for _ in range(2):
        data = check(driver.cuMemAlloc(n * size))
        values += [ctypes.c_void_p(0), ctypes.c_void_p(0), ctypes.c_int64(n),
                   ctypes.c_int64(size), ctypes.c_void_p(int(data)), ctypes.c_int64(n),
                   ctypes.c_int64(size)]
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    for launch in ("first", "second"):
        start = time.perf_counter()
        check(driver.cuLaunchKernel(function, 1, 1, 1, n, 1, 1, 0, 0,
                                    ctypes.addressof(pointers), 0))
        enqueued = time.perf_counter()
        check(driver.cuCtxSynchronize())
        done = time.perf_counter()
        print(f"{launch} launch: enqueued in {1e3 * (enqueued - start):.1f} ms, "
              f"complete after {1e3 * (done - start):.1f} ms")


main()
