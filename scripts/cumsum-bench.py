"""`cupy.cumsum` through ptxvk's libcuda.so.1, timed (run by scripts/lookback-bench
under `ptxvk exec`, one process per accelerator setting).

    python scripts/cumsum-bench.py cub|own DTYPE N...

`cub`: CUPY_ACCELERATORS=cub (CUB's DeviceScan, a single-pass scan with decoupled
look-back); `own`: CUPY_ACCELERATORS= (CuPy's own scan kernels, which need no polling).
Per N: the first call (kernels compiled, shader cache as it is) and the median of three
further calls, each synchronized, in seconds; every result is checked against
numpy.cumsum."""
import os
import statistics
import sys
import time

mode, dtype, sizes = sys.argv[1], sys.argv[2], [int(float(a)) for a in sys.argv[3:]]
os.environ["CUPY_ACCELERATORS"] = {"cub": "cub", "own": ""}[mode]

import numpy as np  # noqa: E402
import cupy as cp  # noqa: E402

rng = np.random.default_rng(38)
for n in sizes:
    x = rng.integers(-1000, 1000, n).astype(dtype)
    want = np.cumsum(x)
    d = cp.asarray(x)
    times = []
    for _ in range(4):
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        got = cp.cumsum(d)
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - start)
        if not np.array_equal(got.get(), want):
            sys.exit(f"cumsum {mode} {dtype} n={n}: wrong result")
    print(f"{mode} {dtype} n={n}: first {times[0]:.3f} s, then {statistics.median(times[1:]):.3f} s",
          flush=True)
