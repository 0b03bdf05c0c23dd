"""The driver library under abuse through cuda.bindings, as Python clients call it:
seeded random sequences of valid and invalid driver calls from four threads, each
thread checking every result against a numpy model of its allocations, and every
invalid call against the error code CUDA gives for it. Run under
`ptxvk exec -- python3 tests/python/driver_abuse.py [CALLS_PER_THREAD]`."""
import random
import sys
import threading

import numpy as np
from cuda.bindings import driver

R = driver.CUresult
SUCCESS = R.CUDA_SUCCESS
# A non-canonical x86-64 address: no allocation can have it.
NOWHERE = 0x7FF0_0000_0000_0000
CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 300


def ok(result, what):
    err = result[0] if isinstance(result, tuple) else result
    assert err == SUCCESS, f"{what}: {err}"
    return result[1] if isinstance(result, tuple) and len(result) == 2 else None


def refused(result, want, what):
    err = result[0] if isinstance(result, tuple) else result
    assert err in want, f"{what}: {err}, expected one of {want}"


class Actor:
    def __init__(self, ctx, seed):
        self.ctx = ctx
        self.rng = random.Random(seed)
        self.buffers = {}  # device pointer -> numpy bytes the model says it holds
        self.streams = []

    def alloc(self):
        n = self.rng.randrange(1, 8192)
        ptr = ok(driver.cuMemAlloc(n), "alloc")
        data = np.frombuffer(self.rng.randbytes(n), dtype=np.uint8).copy()
        ok(driver.cuMemcpyHtoD(ptr, data.ctypes.data, n), "write")
        self.buffers[int(ptr)] = data

    def pick(self):
        ptr = self.rng.choice(list(self.buffers))
        data = self.buffers[ptr]
        start = self.rng.randrange(len(data))
        return ptr, data, start, self.rng.randrange(1, len(data) - start + 1)

    def step(self):
        kind = self.rng.randrange(8)
        if kind == 0 or not self.buffers:
            self.alloc()
        elif kind == 1:
            ptr = self.rng.choice(list(self.buffers))
            ok(driver.cuMemFree(ptr), "free")
            del self.buffers[ptr]
        elif kind == 2:
            ptr, data, start, n = self.pick()
            fresh = np.frombuffer(self.rng.randbytes(n), dtype=np.uint8)
            ok(driver.cuMemcpyHtoD(ptr + start, fresh.ctypes.data, n), "write")
            data[start:start + n] = fresh
        elif kind == 3:
            ptr, data, start, n = self.pick()
            got = np.empty(n, dtype=np.uint8)
            if self.streams and self.rng.random() < 0.5:
                s = self.rng.choice(self.streams)
                ok(driver.cuMemcpyDtoHAsync(got.ctypes.data, ptr + start, n, s), "async read")
                ok(driver.cuStreamSynchronize(s), "sync")
            else:
                ok(driver.cuMemcpyDtoH(got.ctypes.data, ptr + start, n), "read")
            assert np.array_equal(got, data[start:start + n]), "read back other bytes"
        elif kind == 4:
            ptr, data, start, n = self.pick()
            value = self.rng.randrange(256)
            ok(driver.cuMemsetD8(ptr + start, value, n), "memset")
            data[start:start + n] = value
        elif kind == 5:
            if len(self.streams) < 4 and self.rng.random() < 0.6:
                self.streams.append(ok(driver.cuStreamCreate(0), "stream"))
            elif self.streams:
                s = self.streams.pop(self.rng.randrange(len(self.streams)))
                ok(driver.cuStreamDestroy(s), "destroy")
        elif kind == 6:
            self.bad_calls()
        else:
            refused(driver.cuMemAlloc(1 << 50), [R.CUDA_ERROR_OUT_OF_MEMORY], "1 PiB")

    def bad_calls(self):
        nowhere = NOWHERE + (self.rng.getrandbits(32) & ~0xFF)
        host = np.zeros(64, dtype=np.uint8)
        invalid = [R.CUDA_ERROR_INVALID_VALUE]
        refused(driver.cuMemcpyDtoH(host.ctypes.data, nowhere, 64), invalid, "read nowhere")
        refused(driver.cuMemcpyHtoD(nowhere, host.ctypes.data, 64), invalid, "write nowhere")
        refused(driver.cuMemFree(nowhere), invalid, "free nowhere")
        refused(driver.cuMemsetD8(nowhere, 1, 64), invalid, "memset nowhere")
        ptr, data, _, _ = self.pick()
        big = np.empty(len(data) + 1, dtype=np.uint8)
        refused(driver.cuMemcpyDtoH(big.ctypes.data, ptr, len(data) + 1), invalid, "past the end")
        bogus = driver.CUstream(0x1000 + 16 * self.rng.randrange(4096) + 8)
        handle = [R.CUDA_ERROR_INVALID_HANDLE]
        refused(driver.cuStreamSynchronize(bogus), handle, "sync of no stream")
        refused(driver.cuStreamDestroy(bogus), handle, "destroy of no stream")

    def run(self, calls):
        ok(driver.cuCtxSetCurrent(self.ctx), "set current")
        for _ in range(calls):
            self.step()
        for s in self.streams:
            ok(driver.cuStreamDestroy(s), "destroy")
        ok(driver.cuCtxSynchronize(), "ctx sync")
        for ptr in self.buffers:
            ok(driver.cuMemFree(ptr), "free")


ok(driver.cuInit(0), "cuInit")
device = ok(driver.cuDeviceGet(0), "device")
ctx = ok(driver.cuDevicePrimaryCtxRetain(device), "primary context")
ok(driver.cuCtxSetCurrent(ctx), "set current")

# Dangling pointers and streams, one thread: a freed address is no allocation.
p = ok(driver.cuMemAlloc(4096), "alloc")
ok(driver.cuMemFree(p), "free")
refused(driver.cuMemFree(p), [R.CUDA_ERROR_INVALID_VALUE], "double free")
s = ok(driver.cuStreamCreate(0), "stream")
ok(driver.cuStreamDestroy(s), "destroy")
refused(driver.cuStreamSynchronize(s), [R.CUDA_ERROR_INVALID_HANDLE], "destroyed stream")

errors = []


def worker(seed):
    try:
        Actor(ctx, seed).run(CALLS)
    except Exception as e:  # reported by the main thread
        errors.append(f"thread {seed}: {e!r}")


threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
print(f"driver_abuse: 4 threads x {CALLS} calls, every result as the model's")
