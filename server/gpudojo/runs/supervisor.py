"""Watching one started run: its launcher's output split per rank, every rank's metrics
file tailed, the timeout and cross-process cancel requests enforced, and, once the
launcher exits, every process of the tree reaped before the run service is told.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..runfolder import RunFolder
from .events import EventLog
from .launch import LaunchPlan
from .manifest import Lab
from .models import LogEvent, MetricEvent, Run, TruncatedEvent
from .procs import ProcessTree
from .store import RunStore

# torchrun --tee prefixes each worker line with "[<role><local rank>]:".
_TEE_PREFIX = re.compile(r"^\[default(\d+)\]:(.*)$", re.DOTALL)


class ActiveRun:
    """Bookkeeping of one run while it is queued or running."""

    def __init__(self, run: Run, plan: LaunchPlan, folder: RunFolder, lab: Lab | None) -> None:
        self.run = run
        self.plan = plan
        self.folder = folder
        self.lab = lab
        self.proc: subprocess.Popen | None = None
        self.tree: ProcessTree | None = None
        self.cancel_reason: str | None = None
        self.done = threading.Event()
        self.metrics: dict[int, list[dict[str, Any]]] = {}
        self.reported: dict[str, dict[str, Any]] = {}
        self.metric_offsets: dict[Path, int] = {}
        self.log_bytes = 0
        self.truncated = False
        # The launcher's own stderr (torchrun's summary; a python lab's traceback), kept apart
        # from stdout so lines printed meanwhile cannot split a traceback.
        self.launcher_stderr: deque[str] = deque(maxlen=2000)


class Supervisor:
    """Threads that follow one run from its start to the reaping of its last process."""

    def __init__(
        self,
        active: ActiveRun,
        *,
        events: EventLog,
        store: RunStore,
        max_log_bytes: int,
        run_timeout_s: float,
        cancel_grace_s: float,
        on_metrics: Callable[[ActiveRun], None],
        on_exit: Callable[[ActiveRun], None],
    ) -> None:
        self.active = active
        self.events = events
        self.store = store
        self.max_log_bytes = max_log_bytes
        self.run_timeout_s = run_timeout_s
        self.cancel_grace_s = cancel_grace_s
        self.on_metrics = on_metrics
        self.on_exit = on_exit
        self._lock = threading.Lock()

    def start(self) -> None:
        """Follow the started run (active.proc, active.tree) on threads of its own."""
        active = self.active
        proc = active.proc
        assert proc is not None
        launcher_log = open(active.folder.launcher_log, "ab")  # noqa: SIM115 - closed in _watch
        readers = [
            threading.Thread(target=self._read_stream, args=(proc.stdout, "stdout", launcher_log), daemon=True),
            threading.Thread(target=self._read_stream, args=(proc.stderr, "stderr", launcher_log), daemon=True),
        ]
        for t in readers:
            t.start()
        threading.Thread(
            target=self._watch, args=(readers, launcher_log), daemon=True, name=f"gpudojo-run-{active.run.id}"
        ).start()

    # --- output ---------------------------------------------------------------------------

    def _read_stream(self, pipe: Any, stream: str, launcher_log: Any) -> None:
        active = self.active
        single = active.run.launcher == "python"
        for raw in iter(pipe.readline, b""):
            text = raw.decode(errors="replace").rstrip("\n")
            rank: int | None = 0 if single else None
            if not single and (m := _TEE_PREFIX.match(text)):
                rank, text = int(m[1]), m[2]
            else:
                with self._lock:
                    launcher_log.write(raw)
                    if stream == "stderr":
                        active.launcher_stderr.append(text)
            self._log(rank, stream, text)
        pipe.close()

    def _log(self, rank: int | None, stream: str, text: str) -> None:
        active = self.active
        with self._lock:
            if active.truncated:
                return
            active.log_bytes += len(text) + 1
            if active.log_bytes > self.max_log_bytes:
                active.truncated = True
                self.events.emit(
                    active.run.id,
                    TruncatedEvent,
                    message=f"Output past {self.max_log_bytes // (1024 * 1024)} MiB is not streamed; "
                    "each rank's full log stays in the run folder.",
                )
                return
            self.events.emit(active.run.id, LogEvent, rank=rank, stream=stream, text=text, t=time.time())

    def read_metrics(self) -> bool:
        """New lines of every rank's metrics file; True when something arrived."""
        active = self.active
        changed = False
        for path in active.folder.metrics_files():
            offset = active.metric_offsets.get(path, 0)
            with open(path, "rb") as f:
                f.seek(offset)
                chunk = f.read()
            end = chunk.rfind(b"\n") + 1
            if not end:
                continue
            active.metric_offsets[path] = offset + end
            for line in chunk[:end].splitlines():
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                rank = int(doc.pop("rank", path.stem.removeprefix("rank") or 0))
                t = float(doc.pop("t", time.time()))
                if "check" in doc:
                    active.reported[str(doc["check"])] = doc
                    continue
                step = doc.pop("step", None)
                values = {k: v for k, v in doc.items() if isinstance(v, int | float | str | bool) or v is None}
                active.metrics.setdefault(rank, []).append({"step": step, **values})
                self.events.emit(active.run.id, MetricEvent, rank=rank, step=step, values=values, t=t)
                changed = True
            changed = changed or bool(active.reported)
        return changed

    # --- the watch loop -------------------------------------------------------------------

    def _terminate_soon(self, reason: str) -> None:
        active = self.active
        active.cancel_reason = reason
        assert active.tree is not None
        threading.Thread(target=active.tree.terminate, args=(self.cancel_grace_s,), daemon=True).start()

    def _watch(self, readers: list[threading.Thread], launcher_log: Any) -> None:
        active = self.active
        run, proc, tree = active.run, active.proc, active.tree
        assert proc is not None and tree is not None
        deadline = time.monotonic() + self.run_timeout_s
        last_pids: list[tuple[int, float]] = []
        while proc.poll() is None:
            if active.cancel_reason is None and active.folder.cancel_file.exists():
                self._terminate_soon("cancelled")
            if time.monotonic() > deadline and active.cancel_reason is None:
                self._terminate_soon("timed_out")
            pids = tree.refresh()
            if pids != last_pids:
                self.store.set_pids(run.id, pids)
                last_pids = pids
            if self.read_metrics():
                self.on_metrics(active)
            time.sleep(0.2)
        # The launcher has exited; no worker of it may outlive it.
        tree.kill()
        for t in readers:
            t.join(timeout=10)
        launcher_log.close()
        self.read_metrics()
        run.exit_code = proc.returncode
        run.ended_at = time.time()
        self.on_exit(active)
