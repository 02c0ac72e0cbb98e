"""A run's process tree: every process it ever had, so none can outlive a cancel.

torchrun starts its workers in sessions of their own, so signalling torchrun's process
group misses them; and once torchrun exits, its workers are re-parented to init and no
longer look like its children. The tree therefore remembers every descendant it has seen
(pid and start time, so a recycled pid is never killed by mistake) and kills them all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import psutil


class ProcessTree:
    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.known: dict[int, float] = {}
        self.refresh()

    def refresh(self) -> list[tuple[int, float]]:
        """Record the root and its current descendants; return everything known so far."""
        try:
            root = psutil.Process(self.root_pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        for proc in procs:
            try:
                self.known.setdefault(proc.pid, proc.create_time())
            except psutil.NoSuchProcess:
                continue
        return sorted(self.known.items())

    def alive(self) -> list[psutil.Process]:
        return alive_of(list(self.known.items()))

    def terminate(self, grace_s: float) -> None:
        """SIGTERM the root (torchrun forwards it to its workers), wait up to ``grace_s``, then
        SIGKILL every process of the tree still alive."""
        self.refresh()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.root_pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            self.refresh()
            if not self.alive():
                return
            time.sleep(0.05)
        self.kill()

    def kill(self) -> None:
        self.refresh()
        kill_all(list(self.known.items()))


def alive_of(pids: list[tuple[int, float]]) -> list[psutil.Process]:
    """Processes among (pid, start time) pairs that still run (not recycled, not zombies)."""
    out = []
    for pid, started in pids:
        try:
            proc = psutil.Process(pid)
            if abs(proc.create_time() - started) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.NoSuchProcess:
            continue
    return out


def kill_all(pids: list[tuple[int, float]]) -> None:
    """SIGKILL every live process among ``pids`` and wait for them to go."""
    procs = alive_of(pids)
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(procs, timeout=5)


def processes_of_run(run_id: str) -> list[tuple[int, float]]:
    """(pid, start time) of every live process whose environment names this run
    (GPUDOJO_RUN_ID, which every process of a run inherits): also the ones no list holds, such
    as workers torchrun started just before its supervisor last looked, or died."""
    from ..runfolder import RUN_ID_ENV

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.environ().get(RUN_ID_ENV) == run_id:
                found.append((proc.pid, proc.create_time()))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # gone, or another user's (a run's processes are this user's)
    return found
