"""cuda-kernel: the fused bias + GELU of kernel.cu, callable from Python on torch tensors.

    import torch, ops
    x = torch.randn(4096, 1024, device="cuda")
    b = torch.randn(1024, device="cuda")
    y = ops.fused(x, b, 0.5)          # should equal torch.nn.functional.gelu(0.5 * x + b)

Keep `import cupy` inside the functions that need a GPU: the checks import this module on
machines without one to test launch_config.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np  # noqa: F401  (you will want np.float32 / np.int32 for the kernel's scalars)

KERNEL_FILE = Path(__file__).with_name("kernel.cu")
KERNEL_NAME = "fused_bias_gelu"


def launch_config(n: int) -> tuple[int, int]:
    """(grid, block) for one thread per element of an n-element array."""
    # TODO: this is wrong twice over. A block should be a whole number of warps (a
    #       multiple of 32) and at most 1024 threads, and grid * block must cover all n
    #       elements (round up, do not round down).
    block = 1000
    grid = n // block
    return grid, block


@functools.cache
def _kernel():
    """The compiled kernel (CuPy compiles kernel.cu with NVRTC once and caches it)."""
    import cupy as cp

    module = cp.RawModule(code=KERNEL_FILE.read_text(encoding="utf-8"), options=("-std=c++17",))
    return module.get_function(KERNEL_NAME)


def fused(x, b, a: float = 1.0):
    """GELU(a * x + b) in one kernel, b broadcast along the last dimension of x.

    x: a float32 CUDA tensor of shape (..., cols); b: a float32 CUDA tensor of shape
    (cols,); a: a Python number. Returns a new tensor shaped like x.
    """
    # TODO: expose the kernel to Python.
    #   - check the inputs (CUDA, float32, b has one value per column of x) and make x
    #     contiguous: the kernel walks it as a flat row-major vector;
    #   - allocate the output with torch.empty_like(x);
    #   - hand the tensors to CuPy without copying them: cupy.from_dlpack(tensor);
    #   - launch _kernel() with launch_config(n), on PyTorch's current stream
    #     (cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)), passing the
    #     scalars as np.float32 / np.int32 so they match the kernel's C parameter types;
    #   - return the output tensor.
    raise NotImplementedError("ops.fused is not written yet (TODO in ops.py)")
