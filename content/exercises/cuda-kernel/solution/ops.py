"""cuda-kernel: the fused bias + GELU of kernel.cu, callable from Python on torch tensors.

    import torch, ops
    x = torch.randn(4096, 1024, device="cuda")
    b = torch.randn(1024, device="cuda")
    y = ops.fused(x, b, 0.5)          # == torch.nn.functional.gelu(0.5 * x + b)

CuPy compiles kernel.cu with NVRTC the first time fused() is called and caches the module.
The tensors cross from PyTorch to CuPy through DLPack, which shares the device memory
instead of copying it. CuPy is imported only inside the functions that need a GPU, so
launch_config can be imported and used on a machine without one.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

KERNEL_FILE = Path(__file__).with_name("kernel.cu")
KERNEL_NAME = "fused_bias_gelu"
DEFAULT_BLOCK = 256  # 8 warps: a common choice for a memory-bound element-wise kernel
MAX_ELEMENTS = 2**31 - 1  # the kernel indexes with a signed 32-bit int


def launch_config(n: int, block: int = DEFAULT_BLOCK) -> tuple[int, int]:
    """(grid, block) for one thread per element of an n-element array.

    The block is a whole number of warps (32 threads) and at most 1024 threads, the CUDA
    limit per block. The grid is rounded up, so grid * block >= n; the kernel's bounds
    check idles the spare threads of the last block."""
    if n < 1:
        raise ValueError(f"n must be at least 1 (got {n})")
    if block % 32 or not 32 <= block <= 1024:
        raise ValueError(f"block must be a multiple of 32 between 32 and 1024 (got {block})")
    grid = (n + block - 1) // block
    return grid, block


@functools.cache
def _kernel():
    """The compiled kernel (compiled once per process; CuPy also caches it on disk)."""
    import cupy as cp

    module = cp.RawModule(code=KERNEL_FILE.read_text(encoding="utf-8"), options=("-std=c++17",))
    return module.get_function(KERNEL_NAME)


def fused(x, b, a: float = 1.0):
    """GELU(a * x + b) in one kernel, with b broadcast along the last dimension of x.

    x: a float32 CUDA tensor of any shape (..., cols); b: a float32 CUDA tensor of shape
    (cols,) on the same device; a: a Python number. Returns a new tensor shaped like x.
    """
    import cupy as cp
    import torch

    if not (isinstance(x, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise TypeError("fused takes torch tensors")
    if not x.is_cuda or x.device != b.device:
        raise ValueError(f"x and b must be on the same CUDA device (x: {x.device}, b: {b.device})")
    if x.dtype != torch.float32 or b.dtype != torch.float32:
        raise TypeError(f"fused is written for float32 (x: {x.dtype}, b: {b.dtype})")
    if x.dim() == 0 or b.dim() != 1 or b.shape[0] != x.shape[-1]:
        raise ValueError(f"b must have shape ({x.shape[-1] if x.dim() else '?'},), one value per column of x")
    if x.numel() > MAX_ELEMENTS:
        raise ValueError(f"x has {x.numel()} elements; the kernel's 32-bit index stops at {MAX_ELEMENTS}")

    x = x.contiguous()  # the kernel walks x as a flat row-major vector
    b = b.contiguous()
    y = torch.empty_like(x)
    n, cols = x.numel(), x.shape[-1]
    if n == 0:
        return y

    grid, block = launch_config(n)
    with torch.cuda.device(x.device), cp.cuda.Device(x.device.index):
        # Launch on the stream PyTorch is using, so the kernel is ordered after whatever
        # produced x and b and before whatever reads y, with no synchronisation needed.
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream(x.device).cuda_stream)
        with stream:
            _kernel()(
                (grid,),
                (block,),
                (
                    cp.from_dlpack(x),  # zero-copy views of the torch tensors
                    cp.from_dlpack(b),
                    cp.from_dlpack(y),
                    np.float32(a),  # scalars must have the C types of the kernel's parameters
                    np.int32(n),
                    np.int32(cols),
                ),
            )
    return y
