"""The machine `make gpu-check` runs on: versions, and whether torch sees a CUDA GPU."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from gpucheck.step import run_cmd


def detect_environment(work: Path, rehearse: bool) -> dict[str, Any]:
    """Versions, and whether torch sees a CUDA GPU (a child process: importing torch and
    initialising CUDA stays out of the orchestrating process)."""
    code = r"""
import json, platform, importlib.metadata as md, ctypes.util
doc = {"python": platform.python_version(), "machine": platform.machine(), "packages": {}}
for name in ("torch", "cupy-cuda13x", "cupy-cuda12x", "numba", "numba-cuda", "cuda-bindings", "nvidia-ml-py",
             "nvidia-cuda-nvrtc", "nvidia-nvjitlink", "nvidia-nvvm", "jupyter_server", "pydantic", "jupytext",
             "nbclient", "ipykernel", "pytest"):
    try:
        doc["packages"][name] = md.version(name)
    except md.PackageNotFoundError:
        pass
doc["nvml_library"] = ctypes.util.find_library("nvidia-ml") is not None
try:
    import torch
    doc["torch_cuda"] = torch.version.cuda
    doc["gpus"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if doc["gpus"]:
        p = torch.cuda.get_device_properties(0)
        doc["gpu_name"] = p.name
        doc["arch"] = f"sm_{p.major}{p.minor}"
        doc["gpu_memory_bytes"] = p.total_memory
except Exception as err:
    doc["gpus"] = 0
    doc["torch_error"] = f"{type(err).__name__}: {err}"
print(json.dumps(doc))
"""
    rc, out = run_cmd([sys.executable, "-c", code], timeout=120, log=work / "logs" / "environment.log")
    try:
        doc = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        doc = {"gpus": 0, "error": f"the environment probe failed (exit {rc}): {out[-500:]}"}
    doc["rehearse"] = rehearse
    doc["gpu"] = bool(doc.get("gpus")) and not rehearse
    doc["host"] = platform.node()
    doc["cpus"] = os.cpu_count()
    doc["started_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return doc
