"""The ``%%needs_gpu`` cell magic of a lesson's notebook copy (``%load_ext gpudojo``).

A lesson's GPU cells start with ``%%needs_gpu`` (``%%needs_gpu 2`` for two GPUs). Where this
kernel sees enough GPUs the cell runs as written; elsewhere it prints one line saying so and
points at the expected output under the cell, instead of a CUDA traceback. ``--run`` on the
magic's line runs the cell whatever this machine has.

Runs in the learner's kernel, never in the Jupyter server: counting GPUs may import NVML or
torch here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
from dataclasses import dataclass
from typing import Any

MAGIC = "needs_gpu"
RUN_ANYWAY = "--run"


@dataclass(frozen=True)
class GpuCount:
    """GPUs this kernel can use (count), and why it can use fewer than the machine has (limit)."""

    count: int
    limit: str | None = None


def magic_line(gpus: int) -> str:
    """The first line a GPU cell of a notebook copy starts with."""
    return f"%%{MAGIC}" if gpus <= 1 else f"%%{MAGIC} {gpus}"


def visible_gpus(cell: str = "") -> GpuCount:
    """GPUs this process can use: NVML's count (or torch's without NVML), cut to CUDA_VISIBLE_DEVICES;
    none for a cell that uses torch where torch is a CPU build."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return GpuCount(0, "CUDA_VISIBLE_DEVICES hides every GPU")
    count = _nvml_count()
    if count is None:
        count = _torch_count()
    limit = None
    if visible and count:
        shown = len([d for d in visible.split(",") if d.strip()])
        if shown < count:
            count, limit = shown, "CUDA_VISIBLE_DEVICES"
    if count and "torch" in cell and _torch_is_cpu_build():
        return GpuCount(0, f"torch here is a CPU build: it cannot use this machine's {_gpus(count)}")
    return GpuCount(count, limit)


def skip_note(needed: int, here: GpuCount) -> str | None:
    """The one line printed instead of running a cell that needs `needed` GPUs; None when it can run."""
    if here.count >= needed:
        return None
    needs = "a GPU" if needed <= 1 else f"{needed} GPUs"
    has = here.limit if here.limit and here.count == 0 else f"this machine has {_gpus(here.count, none='none')}"
    if here.limit and here.count:
        has += f" ({here.limit})"
    return f"Skipped: needs {needs} ({has}). Expected output below. Run anyway: {magic_line(needed)} {RUN_ANYWAY}"


def needs_gpu(line: str, cell: str, *, shell: Any, count_gpus=visible_gpus) -> Any:
    """Run `cell` when this kernel sees the GPUs the line asks for (or --run), else print a note."""
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    needed = next((int(w) for w in words if w.isdigit()), 1)
    if RUN_ANYWAY not in words:
        note = skip_note(needed, count_gpus(cell))
        if note is not None:
            print(note)
            return None
    # The cell's own errors show their traceback there, as in a plain cell.
    shell.run_cell(cell)
    return None


def machine_note(here: GpuCount) -> str:
    """One line on what this machine's GPUs mean for the GPU cells (``%needs_gpu`` as a line)."""
    if here.count == 0:
        why = f" ({here.limit})" if here.limit else ""
        return (
            f"This machine has no GPU{why}: cells that need one print a note instead of running; "
            "their expected output is under them."
        )
    return (
        f"This machine has {_gpus(here.count)}: cells that need up to {here.count} run; "
        "cells that need more print a note instead."
    )


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%needs_gpu [N] [--run]`` (and ``%needs_gpu``, what this machine has) in `ipython`."""

    def magic(line: str, cell: str | None = None) -> None:
        if cell is None:
            print(machine_note(visible_gpus("torch")))
            return None
        return needs_gpu(line, cell, shell=ipython)

    ipython.register_magic_function(magic, magic_kind="line_cell", magic_name=MAGIC)


def _gpus(count: int, none: str = "no GPU") -> str:
    if count == 0:
        return none
    return "1 GPU" if count == 1 else f"{count} GPUs"


def _nvml_count() -> int | None:
    """NVML's GPU count; 0 without a driver; None where nvidia-ml-py is not installed."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver (NVMLError_LibraryNotFound, DriverNotLoaded, ...)
        return 0
    try:
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return 0
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _torch_count() -> int:
    if importlib.util.find_spec("torch") is None:
        return 0
    try:
        import torch

        return int(torch.cuda.device_count())
    except Exception:
        return 0


def _torch_is_cpu_build() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        import torch

        return torch.version.cuda is None and getattr(torch.version, "hip", None) is None
    except Exception:
        return False
