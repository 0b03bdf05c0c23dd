"""CuPy on ptxvk's libcuda.so.1: a `RawKernel` with `enable_cooperative_groups=True`
whose 64 blocks of 256 threads synchronize the grid (`cg::this_grid().sync()`). CuPy
shrinks a cooperative grid beyond occupancy x multiprocessors to that figure with a
warning, and the result would then not cover the array: the warning is an error here.
Checked against numpy. Run under `ptxvk exec`."""
import warnings

import cupy as cp
import numpy as np

SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void rotate(int* a, int* out, int n) {
    cg::grid_group grid = cg::this_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] = 3 * i + 7;
    grid.sync();
    out[i] = a[(i + 257) % n];  // another block's value, written before the barrier
}
"""
kernel = cp.RawKernel(SOURCE, "rotate", enable_cooperative_groups=True)
blocks, threads = 64, 256
n = blocks * threads
a = cp.zeros(n, dtype=cp.int32)
out = cp.zeros(n, dtype=cp.int32)
with warnings.catch_warnings():
    warnings.simplefilter("error")
    kernel((blocks,), (threads,), (a, out, cp.int32(n)))
want = (3 * ((np.arange(n) + 257) % n) + 7).astype(np.int32)
np.testing.assert_array_equal(out.get(), want)
print(f"CuPy cooperative RawKernel of {blocks} blocks: PASS")
