"""The server's side of a warm worker: one long-lived ``python -m MODULE`` child in its own
session, JSON lines over pipes, replaced when it hangs or dies.

The compile worker and the memory-analysis worker both speak it: the child prints one
line when it is ready, then answers each request line with one reply line, optionally
preceded by progress lines (``{"progress": ...}``), which are handed to a callback.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# How often (s) a busy worker's memory is looked at, when it has a cap.
MEMORY_POLL_S = 0.25


class WorkerFailure(RuntimeError):
    """The worker hung (kind "timeout"), died ("crashed"), outgrew its memory cap ("memory"),
    wrote a line longer than it may ("reply_too_large") or could not start."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def peak_rss(pid: int) -> int | None:
    """The process's peak resident memory since its start or its last reset_peak_rss (bytes):
    Linux's VmHWM. None where /proc does not say."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def reset_peak_rss(pid: int) -> bool:
    """Start the process's peak resident memory afresh from what it holds now (Linux 4.0 on);
    False where that cannot be done."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's whole session (it was started in its own)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


class WarmWorker:
    """One warm ``python -m MODULE`` process; ``name`` is how errors call it ("compiler")."""

    def __init__(
        self,
        module: str,
        log_path: Path,
        python: str = sys.executable,
        *,
        name: str = "worker",
        failure: type[WorkerFailure] = WorkerFailure,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        max_rss_bytes: int | None = None,
        max_line_bytes: int | None = None,
    ) -> None:
        self.module = module
        self.log_path = log_path
        self.python = python
        self.name = name
        self.failure = failure
        self.args = args
        self.env = env
        # Resident memory (bytes) past which the worker is stopped while it works on a request:
        # a compile bomb (templates that instantiate without end) grows by ~150 MB/s.
        self.max_rss_bytes = max_rss_bytes
        # Longest line the server reads from the worker (bytes): past it the worker is stopped
        # rather than its output held in the server's memory.
        self.max_line_bytes = max_line_bytes
        self.proc: subprocess.Popen | None = None
        self.info: dict[str, Any] = {}
        self._buffer = b""
        # Whether the peak of the request in flight is measured (VmHWM, reset when it was sent):
        # a poll every MEMORY_POLL_S misses memory taken and given back in between.
        self._peak_measured = False
        self._next_memory_check = 0.0

    def start(self, timeout_s: float) -> dict[str, Any]:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.python, "-m", self.module, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                env=self.env,
            )
        self._buffer = b""
        self._peak_measured = False  # starting counts what it holds now, not a request's peak
        self.info = self._read_line(timeout_s)
        return self.info

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def call(
        self,
        message: dict[str, Any],
        timeout_s: float,
        on_progress: Callable[[Any], None] | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its reply; progress lines go to ``on_progress``."""
        assert self.proc is not None and self.proc.stdin is not None
        self._peak_measured = self.max_rss_bytes is not None and reset_peak_rss(self.proc.pid)
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError as err:
            raise self.failure("crashed", f"The {self.name} process had stopped; it has been restarted.") from err
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._read_line(deadline - time.monotonic(), timeout_s)
            if "progress" not in reply:
                # A request whose peak passed the cap fails whether or not it got done in time:
                # the same file gets the same answer however fast the machine.
                self._check_memory()
                return reply
            if on_progress is not None:
                on_progress(reply["progress"])

    def _read_line(self, left_s: float, timeout_s: float | None = None) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + left_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.stop()
                    limit = timeout_s if timeout_s is not None else left_s
                    raise self.failure("timeout", f"The {self.name} took longer than {limit:g} s and was stopped.")
                ready = sel.select(min(left, MEMORY_POLL_S))
                # Also while it talks: a worker sending progress lines is never quiet for a poll.
                if time.monotonic() >= self._next_memory_check:
                    self._check_memory()
                if not ready:
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    code = self.proc.wait()
                    self.proc = None
                    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
                    raise self.failure("crashed", f"The {self.name} process died ({how}); it has been restarted.")
                self._buffer += chunk
                cap = self.max_line_bytes
                if cap is not None and len(self._buffer) > cap and b"\n" not in self._buffer[: cap + 1]:
                    self.stop()
                    raise self.failure(
                        "reply_too_large", f"The {self.name} wrote a line over {cap} bytes and was stopped."
                    )
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _check_memory(self) -> None:
        """Stop the worker and raise a failure of kind "memory" when it holds, or held since the
        request was sent, more than max_rss_bytes."""
        self._next_memory_check = time.monotonic() + MEMORY_POLL_S
        if self.max_rss_bytes is None or self.proc is None:
            return
        rss = peak_rss(self.proc.pid) if self._peak_measured else None
        if rss is None:
            import psutil

            try:
                rss = psutil.Process(self.proc.pid).memory_info().rss
            except psutil.Error:
                return  # gone: the next read sees its end
        if rss > self.max_rss_bytes:
            self.stop()
            raise self.failure(
                "memory",
                f"The {self.name} used more than {self.max_rss_bytes // 2**20} MiB of memory "
                f"({rss // 2**20} MiB) and was stopped.",
            )

    def stop(self) -> None:
        if self.proc is not None:
            kill_group(self.proc)
            self.proc = None
