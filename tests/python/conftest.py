from __future__ import annotations

import ctypes.util
import sys
from pathlib import Path

import pytest
from jupyter_server.auth.authorizer import Authorizer
from traitlets.config import Config

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# exercise_toy: the toy exercise's fixtures (content, service), for the exercise engine's tests.
pytest_plugins = ["pytest_jupyter.jupyter_server", "exercise_toy"]

RECORDINGS = HERE.parent / "data" / "gpu"


def nvml_driver_present() -> bool:
    """True where libnvidia-ml can be loaded, i.e. a machine with an NVIDIA driver."""
    return ctypes.util.find_library("nvidia-ml") is not None


needs_no_driver = pytest.mark.skipif(
    nvml_driver_present(), reason="checks the no-driver path; this machine has an NVIDIA driver"
)


@pytest.fixture
def gpu_replay() -> str | None:
    """Recording the server replays; None means live NVML. Override per test module or test."""
    return "2gpu-h100-nvlink"


class NoExecuteAuthorizer(Authorizer):
    """A read-only user of a shared server: may read anything, may not execute code."""

    def is_authorized(self, handler, user, action, resource):
        return action != "execute"


@pytest.fixture
def read_only() -> bool:
    """Serve as NoExecuteAuthorizer; parametrize with [True] where a test needs it."""
    return False


@pytest.fixture
def jp_server_config(gpu_replay, tmp_path, read_only):
    config = Config(
        {
            "ServerApp": {"jpserver_extensions": {"gpudojo": True}},
            "GPUDojo": {
                "gpu_replay_file": str(RECORDINGS / f"{gpu_replay}.jsonl") if gpu_replay else "",
                "data_dir": str(tmp_path / "gpudojo-data"),
                "telemetry_default_hz": 10.0,
                "telemetry_max_hz": 20.0,
                # Tests that analyse memory start the worker when they need it.
                "memory_warm_worker": False,
            },
        }
    )
    if read_only:
        config.ServerApp.authorizer_class = NoExecuteAuthorizer
    return config
