"""ptxvk exec's Python start-up hook (ptxvk writes this file; do not edit it there).

NVIDIA Warp has no environment variable for the form its kernels are compiled to,
and picks cubins (SASS for NVIDIA GPUs, which ptxvk cannot run) when the driver is
as new as its NVRTC. This hook sets `warp.config.cuda_output` to the value of
PTXVK_WARP_CUDA_OUTPUT ("ptx") as soon as `warp.config` is imported, unless the
program set it already. Any `sitecustomize` this one hides is run afterwards.
"""

import importlib.abc
import importlib.util
import os
import runpy
import sys

_WANTED = os.environ.get("PTXVK_WARP_CUDA_OUTPUT", "")


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
