"""Run every code cell of a lesson the way a learner would, on this machine.

Cells tagged `needs-gpu` run only where torch sees at least the GPUs they ask for (`gpudojo:
gpus:`, default 1); elsewhere they are left out (the lesson shows their expected output
instead). Used by the test suite and by lesson authors:

    .venv/bin/python tests/python/lesson_runner.py content/lessons/01-gpu-intro.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

GPU_TAG = "needs-gpu"


def gpu_count() -> int:
    """CUDA GPUs torch sees here (0 without torch's CUDA build or a driver)."""
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def gpus_needed(cell: nbformat.NotebookNode) -> int:
    """0 for a CPU cell; else the GPUs a needs-gpu cell asks for (`gpudojo: gpus:`, default 1)."""
    meta = cell.get("metadata", {})
    if GPU_TAG not in (meta.get("tags") or []):
        return 0
    extra = meta.get("gpudojo") if isinstance(meta.get("gpudojo"), dict) else {}
    gpus = extra.get("gpus", 1)
    return gpus if isinstance(gpus, int) and gpus >= 1 else 1


def runnable_notebook(path: Path, gpus: int) -> nbformat.NotebookNode:
    """The lesson as a notebook, without the GPU cells that need more than `gpus` GPUs."""
    nb = jupytext.read(path)
    nb.cells = [c for c in nb.cells if gpus_needed(c) <= gpus]
    return nb


def run_lesson(path: Path, *, gpus: int | None = None, timeout: int = 600) -> nbformat.NotebookNode:
    """Execute the lesson's cells in a fresh kernel started in the lesson's folder; raises on any error.

    GPU cells run only where at least their `gpus` GPUs exist (`gpus` defaults to what torch sees).
    """
    nb = runnable_notebook(path, gpu_count() if gpus is None else gpus)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,
    )
    client.execute()
    return nb


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("lessons", nargs="+", type=Path)
    args = ap.parse_args()
    for path in args.lessons:
        t0 = time.perf_counter()
        nb = run_lesson(path)
        n = sum(1 for c in nb.cells if c.cell_type == "code")
        skipped = sum(1 for c in jupytext.read(path).cells if c.cell_type == "code") - n
        print(f"{path}: {n} code cells ran in {time.perf_counter() - t0:.1f} s ({skipped} GPU cells left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
