"""Watching one started run: its launcher's output split per rank, every rank's metrics
file tailed, the timeout and cross-process cancel requests enforced, and, once the
launcher exits, every process of the tree reaped before the run service is told.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ServiceError
from ..runfolder import METRIC_LINE_PREFIX, RunFolder, rank_line
from .engines.base import read_engine_state
from .events import EventLog
from .launch import LaunchPlan
from .manifest import Lab
from .models import LogEvent, MetricEvent, NodeStatus, Rendezvous, Run, StatusEvent, TruncatedEvent
from .procs import ProcessTree, kill_all, processes_of_run
from .store import RunStore

# The longest piece of a line read at once (bytes): a rank printing gigabytes without a newline
# must not make the server hold them; the rest of such a line comes as further pieces.
MAX_LINE_BYTES = 64 * 1024


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
        # Why the run's folder refused its output (no space left on the disk), once it did: the
        # supervisor then stops the run (cancel_reason "disk_full") and it ends failed, saying so.
        self.disk_error: str | None = None
        # The launcher's own stderr (torchrun's summary; a python lab's traceback), kept apart
        # from stdout so lines printed meanwhile cannot split a traceback.
        self.launcher_stderr: deque[str] = deque(maxlen=2000)
        # engine.json's last modification seen (engines beyond this machine report through it).
        self.engine_state_mtime = 0.0


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
        for raw in iter(lambda: pipe.readline(MAX_LINE_BYTES), b""):
            text = raw.decode(errors="replace").rstrip("\n")
            rank: int | None = 0 if single else None
            if not single and (ranked := rank_line(text)):
                rank, text = ranked
                if text.startswith(METRIC_LINE_PREFIX + " "):
                    # A rank on another machine (a node, a pod) prints its metrics: file them.
                    self._metric_line(rank, text[len(METRIC_LINE_PREFIX) + 1 :])
                    continue
            else:
                with self._lock:
                    if active.disk_error is None:
                        try:
                            launcher_log.write(raw)
                        except OSError as err:  # the pipe is still drained, or the run would block
                            active.disk_error = f"{err.strerror or err}: {active.folder.launcher_log}"
                    if stream == "stderr":
                        active.launcher_stderr.append(text)
            self._log(rank, stream, text)
        pipe.close()

    def _metric_line(self, rank: int, line: str) -> None:
        """Append a metric line a rank printed to metrics/rank<N>.jsonl, where read_metrics
        (the watch loop) picks it up as it does the lines labkit writes itself."""
        path = self.active.folder.metrics_file(rank)
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(line.rstrip("\n") + "\n")

    def read_engine_state(self, *, final: bool = False) -> bool:
        """Take the job id, state, nodes and rendezvous from engine.json when it changed; with
        ``final`` (the follower has exited) whatever it holds: two writes within one tick of the
        file system's clock have the same mtime, and the follower's last is how the run ended."""
        active = self.active
        path = active.folder.engine_state
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            return False
        if mtime == active.engine_state_mtime and not final:
            return False
        active.engine_state_mtime = mtime
        doc = read_engine_state(active.folder)
        if doc is None:
            return False
        run = active.run
        before = (run.job_id, run.job_state, run.nodes, run.rendezvous)
        try:
            run.job_id = str(doc["job_id"]) if doc.get("job_id") is not None else run.job_id
            run.job_state = str(doc["job_state"]) if doc.get("job_state") is not None else run.job_state
            if isinstance(doc.get("nodes"), list):
                run.nodes = [NodeStatus.model_validate(n) for n in doc["nodes"]]
            if isinstance(doc.get("rendezvous"), dict):
                run.rendezvous = Rendezvous.model_validate(doc["rendezvous"])
        except (ValueError, TypeError, KeyError):
            return False  # a follower's bad document must not stop the watch
        return (run.job_id, run.job_state, run.nodes, run.rendezvous) != before

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
            disk_error = active.disk_error or self.events.write_errors.get(run.id)
            if disk_error and active.cancel_reason is None:
                active.disk_error = disk_error
                self._terminate_soon("disk_full")
            try:
                pids = tree.refresh()
                if pids != last_pids:
                    self.store.set_pids(run.id, pids)
                    last_pids = pids
                if self.read_metrics():
                    self.on_metrics(active)
                if run.engine != "local" and self.read_engine_state():
                    self.store.save(run)
                    self.events.emit(run.id, StatusEvent, run=run)
            except ServiceError:
                pass  # the run database is locked or on a full disk: the next round tries again
            time.sleep(0.2)
        # The launcher has exited; no worker of it may outlive it, seen by the tree or not
        # (torchrun SIGKILLed just after starting one).
        tree.kill()
        kill_all(processes_of_run(run.id))
        for t in readers:
            t.join(timeout=10)
        with contextlib.suppress(OSError):  # a full disk: what is still buffered is lost
            launcher_log.close()
        self.read_metrics()
        if run.engine != "local":
            self.read_engine_state(final=True)
        run.exit_code = proc.returncode
        run.ended_at = time.time()
        self.on_exit(active)
