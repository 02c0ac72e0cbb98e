"""The run service: launches labs and learners' scripts (torchrun or python), queues them
under a concurrency cap, streams their per-rank logs and metrics, cancels whole process
trees, explains failures and decides the lab's checks.

Plain Python with threads, no HTTP and no event loop: the REST/websocket handlers and the
CLI use the same service and the same store. Its parts: launch.py (argv and environment
behind the Launcher interface), supervisor.py (one run from start to reaped), events.py
(the typed, numbered event log), recovery.py (orphans of a stopped process, at start).
The run folder's layout and environment variables are gpudojo.runfolder's.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from ..errors import Forbidden, Invalid, NotFound, ServiceError, TooLarge, Unavailable
from ..nofollow import LinkInPath, open_file_beneath
from ..runfolder import ARTIFACTS_DIR, RunFolder, runs_dir
from .checks import evaluate
from .engines import ENGINE_NAMES, engine, probe
from .engines.base import EngineContext, GeneratedFile, read_engine_state, start_follower
from .events import EventLog, LineSubscriber, as_dict_subscriber
from .launch import Launcher, LaunchPlan, LaunchSpec, LocalLauncher, run_env
from .manifest import Lab, ParamError, load_labs, script_args, validate_params
from .models import (
    FINAL_STATUSES,
    Artifact,
    CheckResult,
    EngineInfo,
    LabList,
    LabRunRequest,
    LabSummary,
    LocalWhere,
    RootCause,
    Run,
    ScriptRunRequest,
    StatusEvent,
    Where,
    control_character,
)
from .procs import ProcessTree, kill_all
from .recovery import recover_orphans
from .rootcause import root_cause, single_process_cause
from .store import RunStore
from .supervisor import ActiveRun, Supervisor

Subscriber = Callable[[dict[str, Any]], None]
# How long an engine's availability is kept before it is probed again (s): the run form asks for
# the list each time it opens, and Slurm's probe is a process and a round trip to the controller.
ENGINE_CACHE_S = 30.0
# Generated files are scripts and manifests of a few kB; past this a file is not what we wrote.
MAX_ARTIFACT_BYTES = 4 * 2**20


ENGINE_NOTES = {
    "torchrun-nodes": "torchrun on {n} node(s) joined by a c10d rendezvous on this machine; ",
    "slurm": "a Slurm batch job on {n} node(s); ",
    "kubernetes": "a Kubernetes job of {n} pod(s); ",
}


def mode_note(
    device_mode: str, backend: str, launcher: str, kind: str = "lab", engine_name: str = "local", nnodes: int = 1
) -> str:
    if engine_name != "local":
        where = ENGINE_NOTES[engine_name].format(n=nnodes)
        if device_mode == "gpu":
            return f"Runs as {where}ranks talk through NCCL."
        return (
            f"Runs as {where}no GPUs asked for, so ranks talk through gloo over TCP: collectives work as on "
            "GPUs, but timings show CPU and network speed, not NVLink or InfiniBand."
        )
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
        launcher: Launcher | None = None,
        on_finish: Callable[[Run], None] | None = None,
        engine_cache_s: float = ENGINE_CACHE_S,
    ) -> None:
        """Opens the store; start() (recovery of orphaned runs) is a separate, explicit step.
        ``engine_cache_s``: how long an engine's availability is kept (s)."""
        self.labs_root = labs_root
        # Told about every run that ends (course progress is marked with it).
        self.on_finish = on_finish
        self.runs_dir = runs_dir(data_dir)
        self.root_dir = root_dir.resolve()
        self.max_concurrent = max_concurrent
        self.run_timeout_s = run_timeout_s
        self.max_log_bytes = max_log_bytes
        self.cancel_grace_s = cancel_grace_s
        self.launcher: Launcher = launcher or LocalLauncher(python)
        self.store = RunStore(data_dir / "runs.sqlite3")
        self.events = EventLog(self.runs_dir)
        self._lock = threading.RLock()
        self._queue: deque[str] = deque()
        self._active: dict[str, ActiveRun] = {}
        # Runs that ended while the database refused writes (locked, full disk): shown from here,
        # saved by the next submit.
        self._unsaved: dict[str, Run] = {}
        self._closed = False
        self.engine_cache_s = engine_cache_s
        # name -> (time.monotonic() of the probe, what it found); one lock per engine, so that
        # requests that come together wait for one probe instead of running one each.
        self._engine_infos: dict[str, tuple[float, EngineInfo]] = {}
        self._engine_locks = {name: threading.Lock() for name in ENGINE_NAMES}
        me = psutil.Process()
        self._owner = (me.pid, me.create_time())

    def folder(self, run_id: str) -> RunFolder:
        return RunFolder(self.runs_dir / run_id)

    def start(self) -> list[str]:
        """Mark runs a stopped process left queued or running lost (their processes killed);
        the ids of those runs."""

        def announce(run: Run) -> None:
            self.folder(run.id).path.mkdir(parents=True, exist_ok=True)
            self.events.emit(run.id, StatusEvent, run=run)

        return recover_orphans(self.store, self._owner, announce)

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
                records=m.records,
            )
            for m in sorted((lab.manifest for lab in labs.values()), key=lambda m: (m.order, m.id))
        ]
        return LabList(labs=summaries, problems=problems)

    # --- submit ---------------------------------------------------------------------------

    def submit(self, req: LabRunRequest | ScriptRunRequest, *, user: str = "", gpus: int = 0) -> list[Run]:
        """Queue a lab run (or a sweep of runs), or a learner's script; return the runs."""
        if self._closed:
            raise Unavailable("The run service is shutting down.", "closing")
        if isinstance(req, ScriptRunRequest):
            runs = [self._script_run(req, user, gpus)]
        else:
            runs = self._lab_runs(req, user, gpus)
        with self._lock:
            for run_id in list(self._unsaved):
                self.store.save(self._unsaved[run_id])
                del self._unsaved[run_id]
            for run, _ in runs:
                # Saved before it is queued: a database that refuses it (locked, on a full disk)
                # is a 503 that leaves no run behind to start later.
                self.store.save(run, owner=self._owner)
            for run, active in runs:
                self._active[run.id] = active
                self._queue.append(run.id)
                self.events.emit(run.id, StatusEvent, run=run)
            self._schedule()
            return [run.model_copy(deep=True) for run, _ in runs]

    def _lab_runs(self, req: LabRunRequest, user: str, gpus: int) -> list[tuple[Run, ActiveRun]]:
        labs, problems = load_labs(self.labs_root)
        lab = labs.get(req.lab)
        if lab is None:
            why = next((p.message for p in problems if p.lab == req.lab), None)
            raise NotFound(f"No runnable lab {req.lab!r}" + (f": {why}" if why else "."))
        sets: list[dict[str, Any]] = [dict(req.params)]
        group = None
        if req.sweep:
            if req.sweep.param not in {p.name for p in lab.manifest.parameters}:
                raise Invalid(
                    f"{lab.manifest.id} has no parameter {req.sweep.param!r} to sweep",
                    detail=[{"param": req.sweep.param, "message": "unknown parameter"}],
                )
            sets = [{**req.params, req.sweep.param: value} for value in req.sweep.values]
            group = "sweep-" + uuid.uuid4().hex[:10]
        validated = []
        for values in sets:
            try:
                validated.append(validate_params(lab.manifest, values))
            except ParamError as err:
                raise Invalid(f"Bad parameters for {lab.manifest.id}: {err}", detail=err.errors) from err
        group_param = req.sweep.param if req.sweep else None
        recording = {"record_memory": req.record_memory, "record_profile": req.record_profile}
        return [
            self._new_lab_run(lab, params, user, gpus, group, group_param, req.where, **recording)
            for params in validated
        ]

    def _new_lab_run(
        self,
        lab: Lab,
        params: dict[str, Any],
        user: str,
        gpus: int,
        group: str | None,
        group_param: str | None,
        where: Where,
        record_memory: bool,
        record_profile: bool,
    ) -> tuple[Run, ActiveRun]:
        m = lab.manifest
        nproc = int(params.get("nproc", 1)) if m.launcher == "torchrun" else 1
        gpus = self._engine_gpus(where, gpus)
        if gpus and m.launcher == "torchrun" and nproc > gpus:
            # NCCL gives each rank a GPU of its own; two ranks cannot share one.
            message = f"{nproc} processes but {gpus} GPU(s) here: with NCCL each rank needs a GPU of its own"
            raise Invalid(
                f"Bad parameters for {m.id}: nproc: {message}", detail=[{"param": "nproc", "message": message}]
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
            record_memory=record_memory,
            record_profile=record_profile,
            where=where,
        )

    @staticmethod
    def _engine_gpus(where: Where, gpus: int) -> int:
        """GPUs per node as the run will have them: this machine's for local runs and for node 0
        of a torchrun-nodes job; what the request asks each node for with a scheduler."""
        return getattr(where, "gpus_per_node", gpus)

    def _script_run(self, req: ScriptRunRequest, user: str, gpus: int) -> tuple[Run, ActiveRun]:
        target = (self.root_dir / req.path).resolve()
        if not target.is_relative_to(self.root_dir):
            raise Forbidden(f"{req.path} is outside the server's root folder.", "outside_root")
        try:
            is_file = target.is_file()
        except OSError:  # e.g. a name longer than the file system allows: no such file either
            is_file = False
        if not is_file or target.suffix != ".py":
            raise NotFound(f"{req.path} is not a Python file in the server's root folder.")
        relative = str(target.relative_to(self.root_dir))
        bad = control_character(relative)
        if bad is not None:
            # The request's path had none, but a link on the way leads to a folder whose name does.
            message = f"a path cannot hold control characters; {relative!r}, where it leads, has {bad}"
            raise Invalid(f"{req.path}: {message}", detail=[{"loc": ["path"], "msg": message}])
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
            gpus=self._engine_gpus(req.where, gpus),
            group=None,
            group_param=None,
            record_memory=req.record_memory,
            record_profile=req.record_profile,
            where=req.where,
        )
        run.script_path, run.script_args = relative, list(req.args)
        return run, active

    def _prepare(
        self,
        *,
        kind,
        lab,
        title,
        entry,
        args,
        params,
        launcher,
        nproc,
        user,
        gpus,
        group,
        group_param,
        record_memory,
        record_profile,
        where: Where | None = None,
    ) -> tuple[Run, ActiveRun]:
        where = where or LocalWhere()
        if where.engine != "local" and launcher != "torchrun":
            raise Invalid(
                f"{title} runs as one plain Python process; {where.engine} runs torchrun jobs "
                '(labs with launcher = "torchrun" such as lab-03-ddp, or a script with launcher torchrun).',
                "engine_needs_torchrun",
            )
        if where.engine != "local":
            info = self.engine_info(where.engine)
            if not info.available:
                # Kept answers are for showing; a refusal is decided on a fresh look, so that a
                # cluster set up a moment ago is found at once.
                info = self.engine_info(where.engine, fresh=True)
            if not info.available:
                raise Unavailable(
                    f"{where.engine} cannot run jobs from this machine: {info.reason}",
                    "engine_unavailable",
                    detail=info.detail or None,
                )
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        folder = self.folder(run_id)
        folder.path.mkdir(parents=True)
        device_mode = "gpu" if gpus > 0 else "cpu"
        dist_backend = "nccl" if gpus > 0 else "gloo"
        backend = "none" if launcher == "python" else dist_backend
        spec = LaunchSpec(
            run_id=run_id,
            folder=folder,
            entry=entry,
            args=list(args),
            launcher=launcher,
            nproc=nproc,
            dist_backend=dist_backend,
            record_memory=record_memory,
            record_profile=record_profile,
        )
        artifacts: list[Artifact] = []
        if where.engine == "local":
            plan = self.launcher.plan(spec)
        else:
            ctx = self._engine_context(spec, title, lab)
            files = engine(where.engine).generate(ctx, where)
            artifacts = write_artifacts(folder.artifacts_dir, files)
            argv, env = engine(where.engine).command(ctx, where, folder.artifacts_dir)
            plan = LaunchPlan(argv=argv, env=env, cwd=folder.path)
        nnodes = getattr(where, "nnodes", None) or getattr(where, "nodes", 1)
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
            mode_note=mode_note(device_mode, backend, launcher, kind, where.engine, nnodes),
            argv=list(plan.argv),
            created_at=time.time(),
            group=group,
            group_param=group_param,
            user=user,
            record_memory=record_memory,
            record_profile=record_profile,
            engine=where.engine,
            where=where.model_dump(),
            nnodes=nnodes,
            artifacts=artifacts,
        )
        if lab is not None:
            run.checks = evaluate(
                lab.manifest.checks, params, {}, {}, has_gpu=gpus > 0, gpus=gpus, finished=False, succeeded=False
            )
        return run, ActiveRun(run, plan, folder, lab)

    def preview(self, req: LabRunRequest, gpus: int = 0) -> list[GeneratedFile]:
        """What ``req.where``'s engine would submit for this lab (manifests, a batch script,
        commands), made without a run, a folder or a cluster (`gpudojo lab manifest`)."""
        if req.where.engine == "local":
            raise Invalid("Choose an engine beyond this machine: torchrun-nodes, slurm or kubernetes.", "no_engine")
        labs, problems = load_labs(self.labs_root)
        lab = labs.get(req.lab)
        if lab is None:
            why = next((p.message for p in problems if p.lab == req.lab), None)
            raise NotFound(f"No runnable lab {req.lab!r}" + (f": {why}" if why else "."))
        m = lab.manifest
        if m.launcher != "torchrun":
            raise Invalid(
                f"{m.id} runs as one plain Python process; engines run torchrun labs.", "engine_needs_torchrun"
            )
        try:
            params = validate_params(m, dict(req.params))
        except ParamError as err:
            raise Invalid(f"Bad parameters for {m.id}: {err}", detail=err.errors) from err
        gpus = self._engine_gpus(req.where, gpus)
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        spec = LaunchSpec(
            run_id=run_id,
            folder=self.folder(run_id),
            entry=lab.entry,
            args=script_args(m, params),
            launcher=m.launcher,
            nproc=int(params.get("nproc", 1)),
            dist_backend="nccl" if gpus > 0 else "gloo",
            record_memory=req.record_memory,
            record_profile=req.record_profile,
        )
        return engine(req.where.engine).generate(self._engine_context(spec, m.title, lab), req.where)

    def _engine_context(self, spec: LaunchSpec, title: str, lab: Lab | None) -> EngineContext:
        python = getattr(self.launcher, "python", sys.executable)
        return EngineContext(
            run_id=spec.run_id,
            folder=spec.folder,
            entry=spec.entry,
            args=spec.args,
            launcher=spec.launcher,
            nproc=spec.nproc,
            dist_backend=spec.dist_backend,
            title=title,
            lab_id=lab.manifest.id if lab else None,
            lab_folder=lab.folder if lab else None,
            record_memory=spec.record_memory,
            record_profile=spec.record_profile,
            python=python,
            env=run_env(spec),
        )

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

    def _start(self, active: ActiveRun) -> None:
        run = active.run
        try:
            if run.engine == "local":
                proc = self.launcher.start(active.plan)
            else:
                proc = start_follower(active.plan.argv, active.plan.env, active.plan.cwd)
        except OSError as err:
            run.status, run.ended_at = "failed", time.time()
            run.root_cause = RootCause(exception=f"could not start: {err}")
            self._finish_bookkeeping(active)
            return
        run.argv = list(active.plan.argv)
        active.proc, active.tree = proc, ProcessTree(proc.pid)
        run.status, run.started_at = "running", time.time()
        self.store.save(run)
        self.store.set_pids(run.id, active.tree.refresh())
        self.events.emit(run.id, StatusEvent, run=run)
        Supervisor(
            active,
            events=self.events,
            store=self.store,
            max_log_bytes=self.max_log_bytes,
            run_timeout_s=self.run_timeout_s,
            cancel_grace_s=self.cancel_grace_s,
            on_metrics=self._update_checks,
            on_exit=self._exited,
        ).start()

    # --- how a run ended ------------------------------------------------------------------

    def _checks(self, active: ActiveRun, finished: bool, succeeded: bool) -> list[CheckResult] | None:
        """The lab's checks on what the run has reported so far; None for a script."""
        if active.lab is None:
            return None
        run = active.run
        return evaluate(
            active.lab.manifest.checks,
            run.params,
            active.metrics,
            active.reported,
            has_gpu=run.device_mode == "gpu",
            gpus=run.nproc if run.device_mode == "gpu" else 0,
            finished=finished,
            succeeded=succeeded,
        )

    def _update_checks(self, active: ActiveRun) -> None:
        """While the run goes: its checks as its metrics come in."""
        run = active.run
        checks = self._checks(active, finished=False, succeeded=False)
        if checks is not None and checks != run.checks:
            with self._lock:
                run.checks = checks
            self.store.save(run)
            self.events.emit(run.id, StatusEvent, run=run)

    def _exited(self, active: ActiveRun) -> None:
        """The supervisor reaped the run's processes: decide its status, cause and checks, and
        show them together. A reader (GET runs/<id>, on another thread) sees the run still going
        or ended with its cause and checks, never ended without them while the cause is read."""
        run = active.run
        code = run.exit_code
        if active.cancel_reason == "timed_out":
            status = "timed_out"
        elif active.cancel_reason == "disk_full":
            status = "failed"
        elif active.cancel_reason:
            status = "cancelled"
        else:
            status = "succeeded" if code == 0 else "failed"
        cause = run.root_cause
        if active.cancel_reason == "disk_full":
            cause = RootCause(
                exception=f"The run's output could not be saved ({active.disk_error}), so the run was stopped. "
                "Free space on that disk, then start it again."
            )
        elif status in ("failed", "timed_out") or (code and status != "cancelled"):
            cause = self._root_cause(run, status, code, "\n".join(active.launcher_stderr))
        checks = self._checks(active, finished=True, succeeded=status == "succeeded")
        with self._lock:
            run.status, run.root_cause = status, cause
            if checks is not None:
                run.checks = checks
        self._finish_bookkeeping(active)

    def _root_cause(self, run: Run, status: str, code: int | None, launcher_text: str) -> RootCause | None:
        state = read_engine_state(self.folder(run.id)) if run.engine != "local" else None
        if state and isinstance(state.get("root_cause"), dict):
            # The follower saw what the ranks could not: a node lost, a job ended by its scheduler.
            with contextlib.suppress(ValueError):
                return RootCause.model_validate(state["root_cause"])
        if status == "timed_out":
            # What the ranks said as they were stopped (torchrun's SignalException) is not the cause.
            rank = 0 if run.launcher == "python" else None
            return RootCause(rank=rank, exit_code=code, exception=f"stopped after {self.run_timeout_s:g} s (timeout)")
        if run.launcher == "torchrun":
            return root_cause(self.folder(run.id).torchrun_dir, launcher_text, code)
        return single_process_cause(launcher_text, code or 0)

    def _finish_bookkeeping(self, active: ActiveRun) -> None:
        run = active.run
        with self._lock:
            try:
                self.store.save(run)
            except ServiceError as err:
                # The run has ended all the same: its stream says how; the database (locked, on a
                # full disk) keeps its last state until a restart marks it lost.
                logging.getLogger(__name__).warning("gpudojo: run %s ended %s, not saved: %s", run.id, run.status, err)
                self._unsaved[run.id] = run
            self.events.emit(run.id, StatusEvent, run=run)
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
                    raise NotFound(f"No run {run_id!r}.")
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
        self.folder(run.id).cancel_file.touch()
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

    def engines(self) -> list[EngineInfo]:
        """Every engine, whether it can run from this machine and why not, as probed at most
        ``engine_cache_s`` ago: a GET of the list starts no process and asks no network then."""
        return [self.engine_info(name) for name in ENGINE_NAMES]

    def engine_info(self, name: str, *, fresh: bool = False) -> EngineInfo:
        """One engine's availability, probed again when the kept answer is older than
        ``engine_cache_s`` (or ``fresh``)."""
        with self._engine_locks[name]:
            kept = self._engine_infos.get(name)
            if fresh or kept is None or time.monotonic() - kept[0] >= self.engine_cache_s:
                kept = (time.monotonic(), probe(name))
                self._engine_infos[name] = kept
            return kept[1].model_copy()

    def artifacts(self, run_id: str) -> list[Artifact]:
        return self.get(run_id).artifacts

    def artifact(self, run_id: str, name: str) -> Artifact:
        """One generated file of a run, with its text."""
        listed = {a.name: a for a in self.artifacts(run_id)}
        if name not in listed:
            raise NotFound(f"Run {run_id} has no artifact {name!r} (it has: {', '.join(listed) or 'none'}).")
        # The run's own processes can write into its folder: a file, the artifacts folder or the
        # run's folder itself swapped for a link to elsewhere, or a file grown huge, is refused,
        # never followed or read whole.
        try:
            f = open_file_beneath(self.runs_dir, [run_id, ARTIFACTS_DIR, name])
        except LinkInPath as err:
            raise LinkInPath(f"Artifact {name} of run {run_id}: {err.message}") from err
        except OSError as err:
            raise NotFound(f"Artifact {name} of run {run_id} is gone: {err.strerror or err}") from err
        with f:
            if os.fstat(f.fileno()).st_size > MAX_ARTIFACT_BYTES:
                raise TooLarge(f"Artifact {name} of run {run_id} is over {MAX_ARTIFACT_BYTES // 2**20} MiB.")
            text = f.read(MAX_ARTIFACT_BYTES).decode("utf-8", errors="replace")
        return listed[name].model_copy(update={"content": text})

    def get(self, run_id: str) -> Run:
        with self._lock:
            active = self._active.get(run_id)
            if active is not None:
                return active.run.model_copy(deep=True)
            if run_id in self._unsaved:
                return self._unsaved[run_id].model_copy(deep=True)
        run = self.store.get(run_id)
        if run is None:
            raise NotFound(f"No run {run_id!r}.")
        return run

    def list(self, **filters: Any) -> list[Run]:
        with self._lock:
            live = {rid: r.model_copy(deep=True) for rid, r in self._unsaved.items()}
            live |= {rid: a.run.model_copy(deep=True) for rid, a in self._active.items()}
        return [live.get(r.id, r) for r in self.store.list(**filters)]

    def wait(self, run_id: str, timeout: float | None = None) -> Run:
        with self._lock:
            active = self._active.get(run_id)
        if active is not None:
            active.done.wait(timeout)
        return self.get(run_id)

    # --- the event stream -----------------------------------------------------------------

    def subscribe_lines(
        self, run_id: str, after: int, callback: LineSubscriber
    ) -> tuple[list[str], bool, Callable[[], None]]:
        """The run's events with seq > ``after`` so far, as JSON lines, whether the run has
        ended, and an unsubscribe function; later lines go to ``callback`` (from the run's
        threads) while it runs. No event falls between the replay and the live feed."""
        with self._lock:
            if self.store.get(run_id) is None:
                raise NotFound(f"No run {run_id!r}.")
            ended = run_id not in self._active
            past, unsubscribe = self.events.subscribe(run_id, after, callback, live=not ended)
        return past, ended, unsubscribe

    def subscribe(self, run_id: str, after: int, callback: Subscriber) -> tuple[list[dict[str, Any]], bool, Callable]:
        """subscribe_lines with each event as a dict (the CLI's --follow, tests)."""
        past, ended, unsubscribe = self.subscribe_lines(run_id, after, as_dict_subscriber(callback))
        return [json.loads(line) for line in past], ended, unsubscribe

    # --- restart and shutdown -------------------------------------------------------------

    def close(self) -> None:
        """Cancel everything (no process of any run survives), then close the store."""
        with self._lock:
            self._closed = True
            ids = list(self._active)
        for run_id in ids:
            with contextlib.suppress(ServiceError):
                self.cancel(run_id)
        self.events.close()
        self.store.close()


def is_final(run: Run) -> bool:
    return run.status in FINAL_STATUSES


def write_artifacts(folder: Path, files: list[GeneratedFile]) -> list[Artifact]:
    """Write an engine's generated files into the run's artifacts/ folder; their listing."""
    folder.mkdir(parents=True, exist_ok=True)
    listed = []
    for f in files:
        path = folder / f.name
        path.unlink(missing_ok=True)  # a new file takes the mode below; an old one kept its own
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600 if f.secret else 0o644)
        with open(fd, "w", encoding="utf-8") as out:
            out.write(f.content)
        listed.append(Artifact(name=f.name, title=f.title, media_type=f.media_type))
    return listed
