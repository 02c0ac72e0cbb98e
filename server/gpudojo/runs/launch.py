"""How a run's processes are started: a launch spec in, the argv, environment and working
folder out, behind the Launcher interface.

LocalLauncher (torchrun or plain python on this machine) is the first implementation. An
engine that hands jobs to a scheduler (Slurm's srun/sbatch, a Kubernetes PyTorchJob) gets
the same LaunchSpec, builds its own argv (its submit command) in plan() and starts it in
start(); the supervisor then watches whatever process start() returned.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import psutil

from ..runfolder import BACKEND_ENV, RECORD_MEMORY_ENV, RECORD_PROFILE_ENV, RUN_DIR_ENV, RUN_ID_ENV, RunFolder


@dataclass
class LaunchSpec:
    """What to run, as the run service decided it (no argv yet)."""

    run_id: str
    folder: RunFolder
    entry: Path
    args: list[str]
    launcher: Literal["python", "torchrun"]
    nproc: int
    # The torch.distributed backend the script should use: "nccl" with GPUs, "gloo" without.
    dist_backend: Literal["nccl", "gloo"]
    record_memory: bool = False
    record_profile: bool = False


@dataclass
class LaunchPlan:
    """The command a launcher will start: argv list (never a shell), environment, folder."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = Path(".")


class Launcher(Protocol):
    """Turns a LaunchSpec into a command and starts it."""

    def plan(self, spec: LaunchSpec) -> LaunchPlan:
        """The command for ``spec``; cheap and side-effect free (the run may wait queued)."""
        ...

    def start(self, plan: LaunchPlan) -> subprocess.Popen:
        """Start the planned command now, in a session of its own, stdout and stderr piped.
        May fill in what can only be chosen at start (a free port); updates plan.argv."""
        ...


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_env(spec: LaunchSpec, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every process of a run: the caller's, plus the run-folder contract."""
    env = {
        **(os.environ if base is None else base),
        "PYTHONUNBUFFERED": "1",
        RUN_ID_ENV: spec.run_id,
        RUN_DIR_ENV: str(spec.folder.path),
        BACKEND_ENV: spec.dist_backend,
    }
    # A learner's shell may have turned numba's simulator on; a run decides for itself.
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    # Set only when asked, and removed otherwise: a variable left in the server's own
    # environment must not make every run record.
    for asked, name in ((spec.record_memory, RECORD_MEMORY_ENV), (spec.record_profile, RECORD_PROFILE_ENV)):
        if asked:
            env[name] = "1"
        else:
            env.pop(name, None)
    return env


def loopback_env(env: dict[str, str]) -> dict[str, str]:
    """A one-machine torchrun's environment: its stores, gloo and NCCL on loopback only
    (gloo and NCCL otherwise listen on the address the host name resolves to)."""
    from ..worker.torch_agent import STORE_BIND_ENV

    lo = interface_of("127.0.0.1")
    env = {**env, STORE_BIND_ENV: "127.0.0.1"}
    if lo:
        env["GLOO_SOCKET_IFNAME"] = lo
        env["NCCL_SOCKET_IFNAME"] = lo
    return env


def interface_of(address: str) -> str | None:
    """The network interface that has ``address`` (gloo's GLOO_SOCKET_IFNAME), if any."""
    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == address for a in addrs):
            return name
    return None


class LocalLauncher:
    """torchrun (gpudojo's torchrun agent, gpudojo.worker.torch_agent: one rendezvous on
    127.0.0.1, per-rank logs under the run folder) or a plain ``python -u`` on this machine.

    Everything a local run listens on is on loopback: torch's stores (which would otherwise
    bind every interface) and the workers' gloo and NCCL sockets."""

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python

    def plan(self, spec: LaunchSpec) -> LaunchPlan:
        if spec.launcher == "torchrun":
            argv = [
                self.python,
                "-m",
                "gpudojo.worker.torch_agent",
                "--nproc-per-node",
                str(spec.nproc),
                "--master-addr",
                "127.0.0.1",
                "--master-port",
                "0",  # replaced with a free port at start
                "--log-dir",
                str(spec.folder.torchrun_dir),
                "--tee",
                "3",
                str(spec.entry),
                *spec.args,
            ]
            env = loopback_env(run_env(spec))
        else:
            argv = [self.python, "-u", str(spec.entry), *spec.args]
            env = run_env(spec)
        return LaunchPlan(argv=argv, env=env, cwd=spec.entry.parent)

    def start(self, plan: LaunchPlan) -> subprocess.Popen:
        if "--master-port" in plan.argv:
            # Chosen as late as possible: a port picked at submit could be taken while queued.
            plan.argv[plan.argv.index("--master-port") + 1] = str(free_port())
        return subprocess.Popen(
            plan.argv,
            cwd=plan.cwd,
            env=plan.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
