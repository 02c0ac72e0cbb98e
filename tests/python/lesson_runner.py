"""Run every code cell of a lesson the way a learner would, on this machine.

Cells tagged `needs-gpu` run only where a CUDA GPU is visible to torch; elsewhere they are
left out (the lesson shows their expected output instead). Used by the test suite and by
lesson authors:

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


def gpu_present() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def runnable_notebook(path: Path, with_gpu: bool) -> nbformat.NotebookNode:
    """The lesson as a notebook, without its GPU cells when there is no GPU."""
    nb = jupytext.read(path)
    if not with_gpu:
        nb.cells = [c for c in nb.cells if GPU_TAG not in c.get("metadata", {}).get("tags", [])]
    return nb


def run_lesson(path: Path, *, with_gpu: bool | None = None, timeout: int = 600) -> nbformat.NotebookNode:
    """Execute the lesson's cells in a fresh kernel started in the lesson's folder; raises on any error."""
    gpu = gpu_present() if with_gpu is None else with_gpu
    nb = runnable_notebook(path, gpu)
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
        print(f"{path}: {n} code cells ran in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
