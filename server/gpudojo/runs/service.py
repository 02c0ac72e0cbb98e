"""The run service: launches labs and learners' scripts (torchrun or python), queues them
under a concurrency cap, streams their per-rank logs and metrics, cancels whole process
trees, explains failures and decides the lab's checks.

Plain Python with threads, no HTTP and no event loop: the REST/websocket handlers and the
CLI use the same service and the same store. Each run has a folder under data_dir/runs/<id>:

    events.jsonl       every event of the run's stream, in order (the websocket replays it)
    launcher.log       torchrun's (or the script's) own output, as it printed it
    torchrun/          torchrun's --log-dir: per-rank stdout.log, stderr.log, error.json
    metrics/rankN.jsonl  what labkit.report and labkit.check wrote
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from .checks import evaluate
from .manifest import Lab, ParamError, load_labs, script_args, validate_params
from .models import (
    FINAL_STATUSES,
    LabList,
    LabRunRequest,
    LabSummary,
    RootCause,
    Run,
    ScriptRunRequest,
)
from .procs import ProcessTree, alive_of, kill_all
from .rootcause import root_cause, single_process_cause
from .store import RunStore

# torchrun --tee prefixes each worker line with "[<role><local rank>]:".
_TEE_PREFIX = re.compile(r"^\[default(\d+)\]:(.*)$", re.DOTALL)
Subscriber = Callable[[dict[str, Any]], None]
# Left in a run's folder by `gpudojo runs cancel` for a run the server supervises.
CANCEL_FILE = "cancel-requested"


class RunRequestError(ValueError):
    """A run request refused: 400 (bad values, with ``errors``), 403 or 404."""

    def __init__(self, message: str, status: int = 400, code: str = "invalid_request", errors: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.errors = errors


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mode_note(device_mode: str, backend: str, launcher: str, kind: str = "lab") -> str:
    if device_mode == "gpu":
        comm = " Processes talk through NCCL." if backend == "nccl" else ""
        return f"Runs on this machine's GPUs.{comm}"
    comm = (
        " Processes talk through gloo over TCP on this machine: collectives work as on GPUs, but timings show "
        "CPU and loopback speed, not NVLink or InfiniBand."
        if launcher == "torchrun"
        else ""
    )
    what = "the lab skips its CUDA-only steps and says so" if kind == "lab" else "torch.cuda is not available to it"
    return f"CPU mode: no GPU here, so {what}.{comm}"


class _Active:
    """Bookkeeping of one run while it is queued or running."""

    def __init__(self, run: Run, argv: list[str], cwd: Path, env: dict[str, str], lab: Lab | None) -> None:
        self.run = run
        self.argv = argv
        self.cwd = cwd
        self.env = env
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


class RunService:
    def __init__(
        self,
        labs_root: Path,
        data_dir: Path,
        root_dir: Path,
        *,
        max_concurrent: int = 2,
        run_timeout_s: float = 3600.0,
        max_log_bytes: int = 64 * 1024 * 1024,
        cancel_grace_s: float = 5.0,
        python: str = sys.executable,
        on_finish: Callable[[Run], None] | None = None,
    ) -> None:
        self.labs_root = labs_root
        # Told about every run that ends (the server marks course progress with it).
        self.on_finish = on_finish
        self.runs_dir = data_dir / "runs"
        self.root_dir = root_dir.resolve()
        self.max_concurrent = max_concurrent
        self.run_timeout_s = run_timeout_s
        self.max_log_bytes = max_log_bytes
        self.cancel_grace_s = cancel_grace_s
        self.python = python
        self.store = RunStore(data_dir / "runs.sqlite3")
        self._lock = threading.RLock()
        self._queue: deque[str] = deque()
        self._active: dict[str, _Active] = {}
        self._subscribers: dict[str, list[Subscriber]] = {}
        self._seq: dict[str, int] = {}
        self._event_files: dict[str, Any] = {}
        self._closed = False
        me = psutil.Process()
        self._owner = (me.pid, me.create_time())
        self.recover()

    # --- labs -----------------------------------------------------------------------------

    def labs(self) -> LabList:
        labs, problems = load_labs(self.labs_root)
        summaries = [
            LabSummary(
                id=m.id,
                title=m.title,
                needs=m.needs,
                cpu_path=m.cpu_path,
                launcher=m.launcher,
                parameters=m.parameters,
                metrics=m.metrics,
                checks=m.checks,
            )
            for m in sorted((lab.manifest for lab in labs.values()), key=lambda m: (m.order, m.id))
        ]
        return LabList(labs=summaries, problems=problems)

    # --- submit ---------------------------------------------------------------------------

    def submit(self, req: LabRunRequest | ScriptRunRequest, *, user: str = "", gpus: int = 0) -> list[Run]:
        """Queue a lab run (or a sweep of runs), or a learner's script; return the runs."""
        if self._closed:
            raise RunRequestError("The run service is shutting down.", status=503, code="closing")
        if isinstance(req, ScriptRunRequest):
            runs = [self._script_run(req, user, gpus)]
        else:
            runs = self._lab_runs(req, user, gpus)
        for run, active in runs:
            if req.record_memory:
                # labkit.memory_capture() in the script records when this is set.
                run.record_memory = True
                active.env["GPUDOJO_RECORD_MEMORY"] = "1"
        with self._lock:
            for run, active in runs:
                self._active[run.id] = active
                self._queue.append(run.id)
                self.store.save(run, owner=self._owner)
                self._emit(run.id, {"type": "status", "run": run.model_dump(mode="json")})
            self._schedule()
            return [run.model_copy(deep=True) for run, _ in runs]

    def _lab_runs(self, req: LabRunRequest, user: str, gpus: int) -> list[tuple[Run, _Active]]:
        labs, problems = load_labs(self.labs_root)
        lab = labs.get(req.lab)
        if lab is None:
            why = next((p.message for p in problems if p.lab == req.lab), None)
            raise RunRequestError(f"No runnable lab {req.lab!r}" + (f": {why}" if why else "."), 404, "not_found")
        sets: list[dict[str, Any]] = [dict(req.params)]
        group = None
        if req.sweep:
            if req.sweep.param not in {p.name for p in lab.manifest.parameters}:
                raise RunRequestError(
                    f"{lab.manifest.id} has no parameter {req.sweep.param!r} to sweep",
                    errors=[{"param": req.sweep.param, "message": "unknown parameter"}],
                )
            sets = [{**req.params, req.sweep.param: value} for value in req.sweep.values]
            group = "sweep-" + uuid.uuid4().hex[:10]
        validated = []
        for values in sets:
            try:
                validated.append(validate_params(lab.manifest, values))
            except ParamError as err:
                raise RunRequestError(f"Bad parameters for {lab.manifest.id}: {err}", errors=err.errors) from err
        return [
            self._new_lab_run(lab, params, user, gpus, group, req.sweep.param if req.sweep else None)
            for params in validated
        ]

    def _new_lab_run(
        self, lab: Lab, params: dict[str, Any], user: str, gpus: int, group: str | None, group_param: str | None
    ) -> tuple[Run, _Active]:
        m = lab.manifest
        nproc = int(params.get("nproc", 1)) if m.launcher == "torchrun" else 1
        if gpus and m.launcher == "torchrun" and nproc > gpus:
            # NCCL gives each rank a GPU of its own; two ranks cannot share one.
            message = f"{nproc} processes but {gpus} GPU(s) here: with NCCL each rank needs a GPU of its own"
            raise RunRequestError(
                f"Bad parameters for {m.id}: nproc: {message}", errors=[{"param": "nproc", "message": message}]
            )
        return self._prepare(
            kind="lab",
            lab=lab,
            title=m.title,
            entry=lab.entry,
            args=script_args(m, params),
            params=params,
            launcher=m.launcher,
            nproc=nproc,
            user=user,
            gpus=gpus,
            group=group,
            group_param=group_param,
        )

    def _script_run(self, req: ScriptRunRequest, user: str, gpus: int) -> tuple[Run, _Active]:
        target = (self.root_dir / req.path).resolve()
        if not target.is_relative_to(self.root_dir):
            raise RunRequestError(f"{req.path} is outside the server's root folder.", 403, "outside_root")
        if not target.is_file() or target.suffix != ".py":
            raise RunRequestError(f"{req.path} is not a Python file in the server's root folder.", 404, "not_found")
        relative = str(target.relative_to(self.root_dir))
        run, active = self._prepare(
            kind="script",
            lab=None,
            title=relative,
            entry=target,
            args=req.args,
            params={},
            launcher=req.launcher,
            nproc=req.nproc,
            user=user,
            gpus=gpus,
            group=None,
            group_param=None,
        )
        run.script_path, run.script_args = relative, list(req.args)
        return run, active

    def _prepare(self, *, kind, lab, title, entry, args, params, launcher, nproc, user, gpus, group, group_param):
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        folder = self.runs_dir / run_id
        folder.mkdir(parents=True)
        device_mode = "gpu" if gpus > 0 else "cpu"
        backend = "none" if launcher == "python" else ("nccl" if gpus > 0 else "gloo")
        if launcher == "torchrun":
            argv = [
                self.python,
                "-m",
                "torch.distributed.run",
                "--nproc-per-node",
                str(nproc),
                "--master-addr",
                "127.0.0.1",
                "--master-port",
                "0",  # replaced with a free port at start
                "--log-dir",
                str(folder / "torchrun"),
                "--tee",
                "3",
                str(entry),
                *args,
            ]
        else:
            argv = [self.python, "-u", str(entry), *args]
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "GPUDOJO_RUN_ID": run_id,
            "GPUDOJO_RUN_DIR": str(folder),
            "GPUDOJO_BACKEND": backend if backend != "none" else ("nccl" if gpus > 0 else "gloo"),
        }
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        run = Run(
            id=run_id,
            kind=kind,
            lab=lab.manifest.id if lab else None,
            title=title,
            params=params,
            launcher=launcher,
            nproc=nproc,
            status="queued",
            backend=backend,
            device_mode=device_mode,
            mode_note=mode_note(device_mode, backend, launcher, kind),
            argv=argv,
            created_at=time.time(),
            group=group,
            group_param=group_param,
            user=user,
        )
        if lab is not None:
            run.checks = evaluate(
                lab.manifest.checks, params, {}, {}, has_gpu=gpus > 0, gpus=gpus, finished=False, succeeded=False
            )
        return run, _Active(run, argv, entry.parent, env, lab)

    # --- queue ----------------------------------------------------------------------------

    def _schedule(self) -> None:
        with self._lock:
            running = [a for a in self._active.values() if a.run.status == "running"]
            busy_groups = {a.run.group for a in running if a.run.group}
            for run_id in list(self._queue):
                if len(running) >= self.max_concurrent:
                    break
                active = self._active[run_id]
                # A sweep's runs go one at a time, so their timings are comparable.
                if active.run.group and active.run.group in busy_groups:
                    continue
                self._queue.remove(run_id)
                self._start(active)
                running.append(active)
                if active.run.group:
                    busy_groups.add(active.run.group)

    def _start(self, active: _Active) -> None:
        run = active.run
        if run.launcher == "torchrun":
            port_at = active.argv.index("--master-port") + 1
            active.argv[port_at] = str(free_port())
            run.argv = list(active.argv)
        folder = self.runs_dir / run.id
        launcher_log = open(folder / "launcher.log", "ab")  # noqa: SIM115 - closed by the supervisor
        try:
            proc = subprocess.Popen(
                active.argv,
                cwd=active.cwd,
                env=active.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as err:
            launcher_log.close()
            run.status, run.ended_at = "failed", time.time()
            run.root_cause = RootCause(exception=f"could not start: {err}")
            self._finish_bookkeeping(active)
            return
        active.proc = proc
        active.tree = ProcessTree(proc.pid)
        run.status, run.started_at = "running", time.time()
        self.store.save(run)
        self.store.set_pids(run.id, active.tree.refresh())
        self._emit(run.id, {"type": "status", "run": run.model_dump(mode="json")})
        readers = [
            threading.Thread(target=self._read_stream, args=(active, proc.stdout, "stdout", launcher_log), daemon=True),
            threading.Thread(target=self._read_stream, args=(active, proc.stderr, "stderr", launcher_log), daemon=True),
        ]
        for t in readers:
            t.start()
        threading.Thread(
            target=self._supervise, args=(active, readers, launcher_log), daemon=True, name=f"gpudojo-run-{run.id}"
        ).start()

    # --- supervision ----------------------------------------------------------------------

    def _read_stream(self, active: _Active, pipe: Any, stream: str, launcher_log: Any) -> None:
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
            self._log(active, rank, stream, text)
        pipe.close()

    def _log(self, active: _Active, rank: int | None, stream: str, text: str) -> None:
        with self._lock:
            if active.truncated:
                return
            active.log_bytes += len(text) + 1
            if active.log_bytes > self.max_log_bytes:
                active.truncated = True
                self._emit(
                    active.run.id,
                    {
                        "type": "truncated",
                        "message": f"Output past {self.max_log_bytes // (1024 * 1024)} MiB is not streamed; "
                        "each rank's full log stays in the run folder.",
                    },
                )
                return
            self._emit(active.run.id, {"type": "log", "rank": rank, "stream": stream, "text": text, "t": time.time()})

    def _read_metrics(self, active: _Active) -> bool:
        """New lines of every rank's metrics file; True when something arrived."""
        folder = self.runs_dir / active.run.id / "metrics"
        if not folder.is_dir():
            return False
        changed = False
        for path in sorted(folder.glob("rank*.jsonl")):
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
                self._emit(active.run.id, {"type": "metric", "rank": rank, "step": step, "values": values, "t": t})
                changed = True
            changed = changed or bool(active.reported)
        return changed

    def _update_checks(self, active: _Active, finished: bool) -> None:
        run = active.run
        if active.lab is None:
            return
        checks = evaluate(
            active.lab.manifest.checks,
            run.params,
            active.metrics,
            active.reported,
            has_gpu=run.device_mode == "gpu",
            gpus=run.nproc if run.device_mode == "gpu" else 0,
            finished=finished,
            succeeded=run.status == "succeeded",
        )
        if checks != run.checks:
            run.checks = checks
            if not finished:
                self.store.save(run)
                self._emit(run.id, {"type": "status", "run": run.model_dump(mode="json")})

    def _supervise(self, active: _Active, readers: list[threading.Thread], launcher_log: Any) -> None:
        run, proc = active.run, active.proc
        assert proc is not None and active.tree is not None
        deadline = time.monotonic() + self.run_timeout_s
        last_pids: list[tuple[int, float]] = []
        cancel_file = self.runs_dir / run.id / CANCEL_FILE
        while proc.poll() is None:
            if active.cancel_reason is None and cancel_file.exists():
                active.cancel_reason = "cancelled"
                threading.Thread(target=active.tree.terminate, args=(self.cancel_grace_s,), daemon=True).start()
            if time.monotonic() > deadline and active.cancel_reason is None:
                active.cancel_reason = "timed_out"
                threading.Thread(target=active.tree.terminate, args=(self.cancel_grace_s,), daemon=True).start()
            pids = active.tree.refresh()
            if pids != last_pids:
                self.store.set_pids(run.id, pids)
                last_pids = pids
            if self._read_metrics(active):
                self._update_checks(active, finished=False)
            time.sleep(0.2)
        # torchrun has exited; no worker of it may outlive it.
        active.tree.kill()
        for t in readers:
            t.join(timeout=10)
        launcher_log.close()
        self._read_metrics(active)
        code = proc.returncode
        run.exit_code = code
        run.ended_at = time.time()
        if active.cancel_reason == "timed_out":
            run.status = "timed_out"
        elif active.cancel_reason:
            run.status = "cancelled"
        else:
            run.status = "succeeded" if code == 0 else "failed"
        if run.status in ("failed", "timed_out") or (code and run.status != "cancelled"):
            run.root_cause = self._root_cause(run, code, "\n".join(active.launcher_stderr))
        self._update_checks(active, finished=True)
        self._finish_bookkeeping(active)

    def _root_cause(self, run: Run, code: int | None, launcher_text: str) -> RootCause | None:
        folder = self.runs_dir / run.id
        if run.launcher == "torchrun":
            return root_cause(folder / "torchrun", launcher_text, code)
        if run.status == "timed_out":
            return RootCause(rank=0, exit_code=code, exception=f"stopped after {self.run_timeout_s:g} s (timeout)")
        return single_process_cause(launcher_text, code or 0)

    def _finish_bookkeeping(self, active: _Active) -> None:
        run = active.run
        with self._lock:
            self.store.save(run)
            self._emit(run.id, {"type": "status", "run": run.model_dump(mode="json")})
            self._active.pop(run.id, None)
            self._schedule()
        if self.on_finish is not None:
            # Progress is a nicety; a failing hook must not keep the run from ending.
            with contextlib.suppress(Exception):
                self.on_finish(run.model_copy(deep=True))
        active.done.set()

    # --- cancel, queries ------------------------------------------------------------------

    def cancel(self, run_id: str) -> Run:
        with self._lock:
            active = self._active.get(run_id)
            if active is None:
                run = self.store.get(run_id)
                if run is None:
                    raise RunRequestError(f"No run {run_id!r}.", 404, "not_found")
                if run.status in FINAL_STATUSES:
                    return run
        if active is None:
            return self._cancel_elsewhere(run)
        with self._lock:
            tree = active.tree
            if active.run.status == "queued":
                self._queue.remove(run_id)
                active.run.status, active.run.ended_at = "cancelled", time.time()
                self._finish_bookkeeping(active)
                return active.run
            if active.cancel_reason is None:
                active.cancel_reason = "cancelled"
        if tree is not None:
            tree.terminate(self.cancel_grace_s)
        active.done.wait(timeout=self.cancel_grace_s + 15)
        return active.run

    def _cancel_elsewhere(self, run: Run) -> Run:
        """A run another process supervises (the server, when this is the CLI): leave a cancel
        request in its folder, which its supervisor acts on; if nobody does, kill it here."""
        (self.runs_dir / run.id / CANCEL_FILE).touch()
        deadline = time.monotonic() + self.cancel_grace_s + 10
        while time.monotonic() < deadline:
            current = self.store.get(run.id)
            if current is not None and current.status in FINAL_STATUSES:
                return current
            time.sleep(0.2)
        kill_all(self.store.pids(run.id))
        run.status, run.ended_at = "cancelled", time.time()
        self.store.save(run)
        return run

    def get(self, run_id: str) -> Run:
        with self._lock:
            active = self._active.get(run_id)
            if active is not None:
                return active.run.model_copy(deep=True)
        run = self.store.get(run_id)
        if run is None:
            raise RunRequestError(f"No run {run_id!r}.", 404, "not_found")
        return run

    def list(self, **filters: Any) -> list[Run]:
        with self._lock:
            live = {rid: a.run.model_copy(deep=True) for rid, a in self._active.items()}
        return [live.get(r.id, r) for r in self.store.list(**filters)]

    def wait(self, run_id: str, timeout: float | None = None) -> Run:
        with self._lock:
            active = self._active.get(run_id)
        if active is not None:
            active.done.wait(timeout)
        return self.get(run_id)

    # --- the event stream -----------------------------------------------------------------

    def _emit(self, run_id: str, event: dict[str, Any]) -> None:
        """Number the event, append it to the run's events.jsonl, hand it to subscribers."""
        with self._lock:
            seq = self._seq.get(run_id)
            if seq is None:
                seq = self._count_events(run_id)
            event = {**event, "seq": seq}
            self._seq[run_id] = seq + 1
            f = self._event_files.get(run_id)
            if f is None:
                f = open(self.runs_dir / run_id / "events.jsonl", "a", encoding="utf-8")  # noqa: SIM115
                self._event_files[run_id] = f
            # Flushed when someone reads the file (subscribe) and when the run ends, not per line.
            f.write(json.dumps(event) + "\n")
            if event["type"] == "status" and event["run"]["status"] in FINAL_STATUSES:
                f.close()
                del self._event_files[run_id]
            for callback in list(self._subscribers.get(run_id, [])):
                try:
                    callback(event)
                except Exception:  # a broken subscriber must not stop the run
                    self._subscribers[run_id].remove(callback)

    def _count_events(self, run_id: str) -> int:
        path = self.runs_dir / run_id / "events.jsonl"
        if not path.is_file():
            return 0
        with open(path, "rb") as f:
            return sum(1 for _ in f)

    def subscribe(self, run_id: str, after: int, callback: Subscriber) -> tuple[list[dict[str, Any]], bool, Callable]:
        """Events with seq > ``after`` so far, whether the run has ended, and an unsubscribe
        function; later events go to ``callback`` (from the run's threads). Taken under the
        lock, so no event falls between the replay and the live feed."""
        with self._lock:
            if self.store.get(run_id) is None:
                raise RunRequestError(f"No run {run_id!r}.", 404, "not_found")
            path = self.runs_dir / run_id / "events.jsonl"
            if run_id in self._event_files:
                self._event_files[run_id].flush()
            past: list[dict[str, Any]] = []
            if path.is_file():
                with open(path, encoding="utf-8") as f:
                    for i, line in enumerate(f):
                        if i > after:
                            past.append(json.loads(line))
            ended = run_id not in self._active
            if not ended:
                self._subscribers.setdefault(run_id, []).append(callback)

        def unsubscribe() -> None:
            with self._lock:
                subs = self._subscribers.get(run_id, [])
                if callback in subs:
                    subs.remove(callback)

        return past, ended, unsubscribe

    # --- restart and shutdown -------------------------------------------------------------

    def recover(self) -> None:
        """Runs left queued or running by a process that stopped (a server, a CLI): kill what
        is left of them, mark them lost. Runs whose supervising process still lives (another
        server, a CLI following its run) are theirs, and left alone."""
        for run in self.store.unfinished():
            owner = self.store.owner(run.id)
            if owner and owner != self._owner and alive_of([owner]):
                continue
            kill_all(self.store.pids(run.id))
            run.status, run.ended_at = "lost", time.time()
            run.root_cause = RootCause(exception="The server stopped while this run was queued or running.")
            self.store.save(run)
            (self.runs_dir / run.id).mkdir(parents=True, exist_ok=True)
            self._emit(run.id, {"type": "status", "run": run.model_dump(mode="json")})

    def close(self) -> None:
        """Cancel everything (no process of any run survives), then close the store."""
        with self._lock:
            self._closed = True
            ids = list(self._active)
        for run_id in ids:
            with contextlib.suppress(RunRequestError):
                self.cancel(run_id)
        self.store.close()


def is_final(run: Run) -> bool:
    return run.status in FINAL_STATUSES
