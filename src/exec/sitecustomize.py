"""ptxvk exec's Python start-up hook (ptxvk writes this file; do not edit it there).

NVIDIA Warp has no environment variable for the form its kernels are compiled to.
This hook sets `warp.config.cuda_output` to the value of PTXVK_WARP_CUDA_OUTPUT
("ptx") as soon as `warp.config` is imported, unless the program set it already.

Warp also hands the driver PTX only when the driver's version is at least the CUDA
version Warp was built with; below it, Warp compiles the PTX to a cubin itself. So
when PTXVK_CUDA_DRIVER_VERSION is unset, the hook raises the version ptxvk's driver
reports to Warp's (`wp_cuda_toolkit_version()` of its native library), which the
driver reads when Warp initializes CUDA. Warp asks for every driver function at a
fixed version of its own (`cuGetProcAddress`), none newer than ptxvk implements.

Any `sitecustomize` this one hides is run afterwards. With PTXVK_EXEC_VERBOSE set,
what the hook does is printed to standard error.
"""

import importlib.abc
import importlib.util
import os
import runpy
import sys

_WANTED = os.environ.get("PTXVK_WARP_CUDA_OUTPUT", "")
_VERBOSE = bool(os.environ.get("PTXVK_EXEC_VERBOSE"))


def _say(what):
    if _VERBOSE:
        print(f"ptxvk exec (Python hook): {what}", file=sys.stderr)


def _match_warps_cuda_version(config):
    """Reports Warp's CUDA version as the driver's, unless the user chose one."""
    if os.environ.get("PTXVK_CUDA_DRIVER_VERSION"):
        return
    native = os.path.join(os.path.dirname(os.path.abspath(config.__file__)), "bin", "warp.so")
    try:
        import ctypes

        version = int(ctypes.CDLL(native).wp_cuda_toolkit_version())
    except (OSError, AttributeError, ValueError):
        return
    if version > 0:
        os.environ["PTXVK_CUDA_DRIVER_VERSION"] = str(version)
        _say(f"PTXVK_CUDA_DRIVER_VERSION={version}, the CUDA version Warp was built with")


class _SetWarpOutput(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "warp.config" or not _WANTED:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_set(module):
            exec_module(module)
            if getattr(module, "cuda_output", None) is None:
                module.cuda_output = _WANTED
                _say(f"warp.config.cuda_output = {_WANTED!r}")
            _match_warps_cuda_version(module)

        loader.exec_module = exec_then_set
        return spec


sys.meta_path.insert(0, _SetWarpOutput())

# Run the sitecustomize this file hides, if there is one further down the path.
_here = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    if os.path.abspath(_entry or ".") == _here:
        continue
    _candidate = os.path.join(_entry or ".", "sitecustomize.py")
    if os.path.isfile(_candidate):
        runpy.run_path(_candidate, run_name="sitecustomize")
        break
