"""What every step of `make gpu-check` uses: the repository's paths, the environment of the
processes it starts, commands run with a time limit, the step's context and its result."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
REPO = BENCH.parent
SERVER = REPO / "server"
TESTS = REPO / "tests" / "python"
KERNEL_DATA = REPO / "tests" / "data" / "kernels"
LESSONS = REPO / "content" / "lessons"
LABS = REPO / "labs"
# The entry point: steps and lessons run as child processes of it.
ENTRY = BENCH / "gpu_check.py"


def child_env(**extra: str) -> dict[str, str]:
    """The environment of every process started here: this tree's gpudojo first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SERVER), str(TESTS), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.update(extra)
    return env


def run_cmd(argv: list[str], timeout: float, log: Path | None = None, grace: float = 8, **kw: Any) -> tuple[int, str]:
    """Run a command in its own session. At the timeout its group gets SIGINT (gpudojo's CLI then
    cancels its runs, pytest still writes its report), SIGKILL ``grace`` seconds later. Returns
    (exit code, output); 124 means timed out. The output is also appended to ``log``."""
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=kw.pop("env", None) or child_env(),
        **kw,
    )
    try:
        out, _ = proc.communicate(timeout=max(timeout, 1))
        code = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            out, _ = proc.communicate()
        code = 124
    text = out.decode(errors="replace")
    if log is not None:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"$ {' '.join(argv)}\n{text}\n[exit {code}]\n")
    return code, text


def kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


class Ctx:
    """What a step child knows: the mode, the work folder, its deadline."""

    def __init__(self, work: Path, gpu: bool, limit_s: float) -> None:
        self.work = work
        self.gpu = gpu
        self.deadline = time.monotonic() + limit_s
        self.log = work / "logs"
        self.log.mkdir(parents=True, exist_ok=True)

    def left(self, reserve: float = 12.0) -> float:
        return max(self.deadline - time.monotonic() - reserve, 1.0)

    @property
    def arch(self) -> str:
        env = json.loads((self.work / "environment.json").read_text())
        return env.get("arch") or "sm_90"


Result = tuple[str, str, dict[str, Any]]  # status, note, details


def skipped(cpu_note: str, details: dict[str, Any], cpu_ok: bool = True) -> Result:
    """A step without a GPU: skipped when its CPU part went as it must, else failed."""
    if cpu_ok:
        return "skipped", f"no GPU; CPU part: {cpu_note}", details
    return "failed", f"no GPU, and the CPU part failed: {cpu_note}", details
