"""numba-cuda on ptxvk's libcuda.so.1: a kernel that synchronizes its grid
(`cuda.cg.this_grid().sync()`, which numba launches cooperatively) on 64 blocks of 128
threads, more than could be resident at once. cuda.core refuses a cooperative grid
beyond occupancy x multiprocessors, so this runs only if the driver library counts
such kernels by the blocks a grid barrier saves (docs/status.md, *Driver library*).
Checked against numpy. Run under `ptxvk exec`."""
import numpy as np
from numba import cuda


@cuda.jit
def rotate(a, out):
    grid = cuda.cg.this_grid()
    i = cuda.grid(1)
    a[i] = 3 * i + 7
    grid.sync()
    # Another block's value, written before the barrier.
    out[i] = a[(i + 129) % a.size]


blocks, threads = 64, 128
n = blocks * threads
a = cuda.device_array(n, dtype=np.int32)
out = cuda.device_array(n, dtype=np.int32)
rotate[blocks, threads](a, out)
limit = next(iter(rotate.overloads.values())).max_cooperative_grid_blocks(threads)
assert limit >= blocks, f"cooperative limit {limit}"
want = (3 * ((np.arange(n) + 129) % n) + 7).astype(np.int32)
np.testing.assert_array_equal(out.copy_to_host(), want)
print(f"numba cooperative grid of {blocks} blocks (limit {limit}): PASS")
