"""gpudojo: a JupyterLab workbench and course for GPU computing and distributed training."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "gpudojo"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .app import GPUDojo

    return [{"module": "gpudojo", "app": GPUDojo}]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gpudojo``: the ``%%cuda`` and ``%%needs_gpu`` cell magics."""
    from .kernels.notebook import load_ipython_extension as load
    from .labkit.gpu_cells import load_ipython_extension as load_gpu_cells

    load(ipython)
    load_gpu_cells(ipython)
