"""Exercises: starters copied into the workspace, hidden checks run against the learner's copy.

Start copies ``starters/`` (and the README) into ``<root_dir>/gpudojo-exercises/<id>/``; an
existing copy is kept unless the learner asks for a reset, which moves the old folder aside
first. Check copies the learner's folder into a scratch folder and runs the exercise's
hidden pytest checks (``checks/``, never copied into the workspace) against it in a child
process of its own (its own session, the manifest's time limit, a cap on its output). The
checks are ordinary pytest files written against gpudojo.worker.checkkit, whose plugin
turns pytest's report of each test into one JSON line per requirement, written to a pipe
only the pytest process inherits; the service reads those lines while the child runs, so a
client polling the exercise sees requirements tick.

The learner's code is the adversary here: it gains from a forged result. It runs only in
programs the checks start, each in a bubblewrap sandbox (gpudojo.worker.sandbox) that shows
it neither the check process, nor the checks, nor the course content or the data dir, and
holds no end of the results pipe. The checks run from a read-only copy in a control folder
beside the scratch folder, so nothing planted next to them or above them is collected. An
attempt is completed only when pytest itself exited 0 and every applicable requirement
passed.

Why pytest rather than a runner of our own: fixtures, skips, assertion messages and
reporting are what a check needs, authors already know them, and each requirement's
result comes from pytest's own report (see content/exercises/FORMAT.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Conflict, Forbidden, NotFound, TooLarge, Unavailable
from .catalog import CourseCatalog, Item
from .models import (
    CheckAttempt,
    ExerciseDoc,
    ExerciseMeta,
    ExerciseStart,
    ExerciseWorkspace,
    Figure,
    RequirementResult,
)
from .progress import ProgressStore

if TYPE_CHECKING:
    from ..worker.sandbox import SandboxSupport

log = logging.getLogger(__name__)

WORKSPACE_FOLDER = "gpudojo-exercises"
# What Start and Check never copy from a folder.
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", ".pytest_cache")
MAX_COPY_BYTES = 64 << 20  # a learner's folder larger than this is refused by Check
MAX_LOG_BYTES = 4 << 20  # the check process's own output past this stops the check
MAX_RESULT_LINE = 1 << 20  # bytes: a longer result line from the checks is dropped
POLL_S = 0.1


class UnknownExercise(NotFound):
    """No exercise with that id."""


@dataclass
class _Running:
    attempt: CheckAttempt
    user: str
    done: threading.Event = field(default_factory=threading.Event)
    record: bool = True
    pid: int | None = None
    cancelled: bool = False
    sandbox: SandboxSupport | None = None


class ExerciseService:
    def __init__(
        self,
        catalog: CourseCatalog,
        store: ProgressStore,
        root_dir: Path,
        scratch_root: Path,
        *,
        max_concurrent: int = 2,
        python: str = sys.executable,
        sandbox: bool = True,
    ) -> None:
        """``sandbox=False`` runs learner programs unsandboxed (to measure the sandbox's
        cost); otherwise they are sandboxed wherever bubblewrap can run."""
        self.catalog = catalog
        self.store = store
        self.root_dir = root_dir
        self.scratch_root = scratch_root
        self.python = python
        self.sandbox = sandbox
        self.max_concurrent = max_concurrent
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._lock = threading.Lock()
        self._running: dict[tuple[str, str], _Running] = {}
        self._closed = False

    # --- the exercise and the learner's folder -------------------------------------------

    def _item(self, exercise_id: str) -> Item:
        item = next((e for e in self.catalog.data().exercises if e.meta.id == exercise_id), None)
        if item is None:
            raise UnknownExercise(f"No exercise {exercise_id!r} in the course (gpudojo exercise list shows them).")
        return item

    def meta(self, exercise_id: str) -> ExerciseMeta:
        return self._item(exercise_id).meta  # type: ignore[return-value]

    def folder(self, exercise_id: str) -> Path:
        """Where the exercise's material lives (manifest, README, starters, checks)."""
        return self._item(exercise_id).path.parent.resolve()

    def list(self) -> list[ExerciseMeta]:
        return [e.meta for e in self.catalog.data().exercises]  # type: ignore[misc]

    def _workspace_dir(self, exercise_id: str) -> Path:
        root = self.root_dir.resolve()
        target = (root / WORKSPACE_FOLDER / exercise_id).resolve()
        if not target.is_relative_to(root):  # ids are slugs: only a symlink (gpudojo-exercises/ ...) leads out
            raise Forbidden(
                f"{WORKSPACE_FOLDER}/{exercise_id} leads outside the server's root folder (a symlink?)", "outside_root"
            )
        return target

    def workspace(self, exercise_id: str) -> ExerciseWorkspace:
        meta = self.meta(exercise_id)
        target = self._workspace_dir(exercise_id)
        root = self.root_dir.resolve()
        rel = target.relative_to(root).as_posix()
        files = (
            sorted(
                p.relative_to(target).as_posix()
                for p in target.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts
            )
            if target.is_dir()
            else []
        )
        return ExerciseWorkspace(
            path=rel, exists=target.is_dir(), main=f"{rel}/{meta.main}", readme=f"{rel}/README.md", files=files
        )

    def readme(self, exercise_id: str) -> str:
        path = self.folder(exercise_id) / "README.md"
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def start(self, user: str, exercise_id: str, reset: bool = False) -> ExerciseStart:
        """Copy the starters into the learner's folder. An existing copy is kept as it is,
        unless ``reset``: then it is moved beside the new one (nothing is ever deleted)."""
        meta = self.meta(exercise_id)
        source = self.folder(exercise_id)
        target = self._workspace_dir(exercise_id)
        kept_as: str | None = None
        if target.exists() and not reset:
            return ExerciseStart(workspace=self.workspace(exercise_id), created=False)
        if target.exists():
            stamp = time.strftime("%Y%m%d-%H%M%S")
            aside = target.with_name(f"{target.name}.old-{stamp}")
            n = 1
            while aside.exists():
                n += 1
                aside = target.with_name(f"{target.name}.old-{stamp}-{n}")
            target.rename(aside)
            kept_as = aside.relative_to(self.root_dir.resolve()).as_posix()
        tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex[:8]}")
        shutil.copytree(source / "starters", tmp, ignore=IGNORED)
        if (source / "README.md").is_file():
            shutil.copy2(source / "README.md", tmp / "README.md")
        tmp.rename(target)
        if self.store.entry(user, "exercise", meta.id).status == "not_started":
            self.store.set_status(user, "exercise", meta.id, "in_progress")
        return ExerciseStart(workspace=self.workspace(exercise_id), created=True, kept_as=kept_as)

    def doc(self, user: str, exercise_id: str, gpus: int) -> ExerciseDoc:
        meta = self.meta(exercise_id)
        with self._lock:
            running = self._running.get((user, exercise_id))
            current = running.attempt.model_copy(deep=True) if running else None
        return ExerciseDoc(
            meta=meta,
            readme=self.readme(exercise_id),
            workspace=self.workspace(exercise_id),
            progress=self.store.entry(user, "exercise", exercise_id),
            mode="gpu" if gpus > 0 else "cpu",
            gpus=gpus,
            current=current,
            last=self.store.last_check(user, exercise_id),
            history=self.store.check_history(user, exercise_id),
        )

    # --- checks ----------------------------------------------------------------------------

    def check(self, user: str, exercise_id: str, gpus: int, folder: Path | None = None) -> CheckAttempt:
        """Start the hidden checks against the learner's folder and return the attempt as it
        starts; it runs on a thread of its own and ``wait`` blocks on it. A check of another
        ``folder`` (an author checking the solution) is not recorded as the user's attempt."""
        meta = self.meta(exercise_id)
        source = folder if folder is not None else self._workspace_dir(exercise_id)
        if not source.is_dir():
            raise Conflict(
                f"There is no copy of {exercise_id!r} to check yet: Start copies the starters into "
                f"{WORKSPACE_FOLDER}/{exercise_id}/.",
                code="not_started",
            )
        size = _folder_bytes(source)
        if size > MAX_COPY_BYTES:
            raise TooLarge(
                f"{source.name} holds {size / 2**20:.0f} MiB; a check copies at most "
                f"{MAX_COPY_BYTES / 2**20:.0f} MiB (move data files and checkpoints out of it)."
            )
        support = self._sandbox_support()
        attempt = CheckAttempt(
            id=uuid.uuid4().hex[:12],
            exercise=exercise_id,
            status="running",
            mode="gpu" if gpus > 0 else "cpu",
            started_at=time.time(),
            sandbox="bubblewrap" if support.available else "none",
            sandbox_reason=support.reason,
            results=[
                RequirementResult(id=r.id, statement=r.statement, gpu=r.gpu, outcome="pending")
                for r in meta.requirements
            ],
        )
        key = (user, exercise_id)
        with self._lock:
            if self._closed:
                raise Unavailable("The exercise service is shutting down.")
            if key in self._running:
                raise Conflict(f"A check of {exercise_id!r} is already running; wait for it to finish.")
            if not self._slots.acquire(blocking=False):
                n = self.max_concurrent
                what = f"{n} checks are" if n != 1 else "A check is"
                raise Conflict(f"{what} already running on this server (its limit); try again when one finishes.")
            running = _Running(attempt=attempt, user=user, record=folder is None, sandbox=support)
            self._running[key] = running
        thread = threading.Thread(
            target=self._run, args=(running, meta, source, gpus), name=f"gpudojo-check-{exercise_id}", daemon=True
        )
        thread.start()
        return attempt.model_copy(deep=True)

    def _sandbox_support(self) -> SandboxSupport:
        from ..worker.sandbox import SandboxSupport, support

        if not self.sandbox:
            return SandboxSupport(None, "the sandbox is turned off for this exercise service (sandbox=False)")
        return support()

    def wait(self, user: str, exercise_id: str, timeout_s: float | None = None) -> CheckAttempt | None:
        """Block until the running check of this exercise ends; its final attempt (None if
        none was running)."""
        with self._lock:
            running = self._running.get((user, exercise_id))
        if running is None:
            return self.store.last_check(user, exercise_id)
        running.done.wait(timeout_s)
        if running.done.is_set():  # the thread has stored it; what the store holds is final
            return running.attempt.model_copy(deep=True)
        return running.attempt.model_copy(deep=True)

    def _run(self, running: _Running, meta: ExerciseMeta, source: Path, gpus: int) -> None:
        attempt = running.attempt
        # The learner's programs see `scratch` (their copy, HOME, TMPDIR); the check's own
        # files (results, log, settings) sit in a folder beside it that is not named to them.
        scratch = self.scratch_root / attempt.id
        control = self.scratch_root / f".{attempt.id}-{uuid.uuid4().hex}"
        try:
            self._run_checks(running, meta, source, scratch, control, gpus)
        except Exception as err:  # a broken check setup must still end the attempt with a reason
            log.exception("gpudojo: check of %s failed to run", meta.id)
            with self._lock:
                attempt.status = "error"
                attempt.error = f"The checks could not run: {err}"
                _finish(attempt)
        finally:
            with self._lock:
                if attempt.finished_at is None:  # ended by neither branch (interrupted)
                    _finish(attempt)
            try:
                if running.record:
                    self.store.record_check(running.user, attempt)
            except Exception:
                log.exception("gpudojo: could not store the check of %s", meta.id)
            shutil.rmtree(scratch, ignore_errors=True)
            _remove_read_only(control)
            with self._lock:
                self._running.pop((running.user, meta.id), None)
            self._slots.release()
            running.done.set()

    def _run_checks(
        self, running: _Running, meta: ExerciseMeta, source: Path, scratch: Path, control: Path, gpus: int
    ) -> None:
        import subprocess

        from ..runs.procs import ProcessTree
        from ..worker import checkenv

        attempt = running.attempt
        folder = self.folder(meta.id)
        work = scratch / "work"
        for sub in ("home", "tmp"):
            (scratch / sub).mkdir(parents=True, exist_ok=True)
        control.mkdir(parents=True, mode=0o700)
        shutil.copytree(source, work, ignore=IGNORED, symlinks=True)
        # The checks run from a copy of their own: nothing planted beside or above the
        # packaged ones is collected (pytest reads no conftest.py above its rootdir,
        # `control`), and the copy is read-only once made.
        checks = control / "checks"
        shutil.copytree(folder / "checks", checks, ignore=IGNORED)
        ini = control / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")  # none of the repository's pytest settings
        logfile = control / "check.log"
        logfile.touch(mode=0o600)
        _make_read_only(checks)
        _make_read_only(ini)
        control.chmod(0o500)
        env = {k: v for k, v in os.environ.items() if not k.startswith(checkenv.CHECK_PREFIXES)}
        env.update(
            {
                checkenv.ENV_WORK: str(work),
                checkenv.ENV_MANIFEST: str(folder / "exercise.toml"),
                checkenv.ENV_SCRATCH: str(scratch),
                checkenv.ENV_GPUS: str(gpus),
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "PYTHONDONTWRITEBYTECODE": "1",  # nothing written into the checks
                "TMPDIR": str(scratch / "tmp"),
            }
        )
        support = running.sandbox
        if support is not None and support.available:
            env[checkenv.ENV_SANDBOX] = json.dumps(
                {"bwrap": support.bwrap, "hide": [str(p) for p in self._hidden(folder, control)], "checks": str(checks)}
            )
        argv = [
            self.python,
            "-m",
            "pytest",
            str(checks),
            "-c",
            str(ini),
            "--rootdir",
            str(control),
            "-p",
            "gpudojo.worker.checkkit",
            "-p",
            "no:cacheprovider",
            "-q",
            "--no-header",
            "-rN",
            f"--basetemp={scratch / 'pytest-tmp'}",
        ]
        read_end, write_end = os.pipe()
        env[checkenv.ENV_RESULTS_FD] = str(write_end)
        results = _ResultLines()
        try:
            # cwd is the read-only control folder: `python -m` puts it first on sys.path,
            # where a module planted in scratch would otherwise shadow a later import.
            with open(logfile, "wb") as log_out:
                proc = subprocess.Popen(
                    argv,
                    cwd=control,
                    env=env,
                    stdout=log_out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    pass_fds=(write_end,),
                )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)  # pytest holds the only write end
        os.set_blocking(read_end, False)
        running.pid = proc.pid
        tree = ProcessTree(proc.pid)
        deadline = time.monotonic() + meta.time_limit_s
        stopped: str | None = None
        try:
            while True:
                code = proc.poll()
                tree.refresh()
                self._fold(attempt, results.read(read_end))
                if code is not None:
                    break
                if running.cancelled:
                    stopped = "The check was stopped (the server is shutting down)."
                elif time.monotonic() > deadline:
                    stopped = (
                        f"The checks ran past the exercise's time limit of {meta.time_limit_s} s and were stopped "
                        "(does your code loop forever, or wait for input?)."
                    )
                elif logfile.stat().st_size > MAX_LOG_BYTES:
                    stopped = "The checks printed more than 4 MiB and were stopped."
                if stopped:
                    tree.kill()
                    proc.wait()
                    break
                time.sleep(POLL_S)
            tree.kill()  # whatever a learner's program left running in sessions of its own
            self._fold(attempt, results.read(read_end))
        finally:
            os.close(read_end)
        with self._lock:
            if stopped:
                attempt.status = "error"
                attempt.error = stopped
                for r in attempt.results:
                    if r.outcome == "pending":
                        r.outcome, r.message = "failed", "Not checked: " + stopped
            elif code == 1 and not any(r.outcome == "failed" for r in attempt.results):
                # pytest saw a failure that no requirement reported (a fixture's teardown, a
                # test tied to no requirement): the attempt cannot count as completed.
                attempt.status = "error"
                attempt.error = f"A check failed outside the requirements (pytest exit 1): {_tail(logfile)}"
                for r in attempt.results:
                    if r.outcome == "pending":
                        r.outcome, r.message = "failed", "Not checked: a check failed outside the requirements."
            elif code not in (0, 1):  # 2-4: interrupted, internal or usage error, 5: no tests
                attempt.status = "error"
                attempt.error = f"The checks could not run (pytest exit {code}): {_tail(logfile)}"
                for r in attempt.results:
                    if r.outcome == "pending":
                        r.outcome, r.message = "failed", "Not checked: the checks could not run."
            else:
                for r in attempt.results:
                    if r.outcome == "pending":
                        r.outcome, r.message = "failed", "No check ran for this requirement."
            # In the same hold of the lock: a reader (the exercise's GET, another thread) never
            # sees the attempt ended without its counts and verdict.
            _finish(attempt)

    def _hidden(self, folder: Path, control: Path) -> list[Path]:
        """What learner programs must not see: the course content (this catalog's and the
        package's), the data dir (progress, every check's scratch and control folders) and
        Jupyter's runtime dir (the server's token)."""
        import gpudojo

        from ..paths import material_root
        from ..worker.sandbox import hidden_folders

        paths = [folder.parents[1], material_root("content"), self.store.path.parent, self.scratch_root, control]
        try:
            from jupyter_core.paths import jupyter_runtime_dir

            paths.append(Path(jupyter_runtime_dir()))
        except Exception:  # no jupyter_core (the CLI on its own): no runtime dir to hide
            pass
        keep = [Path(sys.prefix), Path(sys.base_prefix), Path(self.python).parent, Path(gpudojo.__file__).parent]
        return hidden_folders(paths, keep=keep)

    def _fold(self, attempt: CheckAttempt, lines: list[bytes]) -> None:
        """Fold result lines from the checks' pipe into the attempt."""
        by_id = {r.id: r for r in attempt.results}
        with self._lock:
            for line in lines:
                try:
                    rec = json.loads(line)
                    r = by_id.get(rec.get("requirement") or "")
                    if r is not None:
                        _merge(r, rec)
                except (ValueError, TypeError, AttributeError):
                    continue

    def running(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._running)

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop every running check (no child outlives the service)."""
        with self._lock:
            self._closed = True
            runs = list(self._running.values())
        for r in runs:
            r.cancelled = True
        for r in runs:
            r.done.wait(timeout_s)


class _ResultLines:
    """The complete lines read so far from the checks' results pipe."""

    def __init__(self) -> None:
        self.partial = b""

    def read(self, fd: int) -> list[bytes]:
        """Every complete line that can be read from ``fd`` (non-blocking) now."""
        data = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
        if not data:
            return []
        *lines, self.partial = (self.partial + data).split(b"\n")
        if len(self.partial) > MAX_RESULT_LINE:
            self.partial = b""
        return [line for line in lines if len(line) <= MAX_RESULT_LINE]


def _make_read_only(path: Path) -> None:
    """Files 0400 and folders 0500 under ``path`` (and ``path`` itself)."""
    if path.is_dir():
        for p in path.rglob("*"):
            p.chmod(0o500 if p.is_dir() else 0o400)
        path.chmod(0o500)
    else:
        path.chmod(0o400)


def _remove_read_only(path: Path) -> None:
    """Remove a folder that :func:`_make_read_only` locked (a non-root owner could not)."""
    if not path.exists():
        return
    for p in [path, *path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            with contextlib.suppress(OSError):
                p.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)


def _merge(r: RequirementResult, rec: dict) -> None:
    """Fold one test's result in: a requirement with several tests failed if any failed,
    else skipped if any was skipped (it needs a GPU), else passed."""
    outcome = rec.get("outcome")
    figures = [Figure.model_validate(f) for f in rec.get("figures") or [] if isinstance(f, dict)]
    r.figures += figures
    r.duration_s = round(r.duration_s + float(rec.get("duration_s") or 0.0), 3)
    rank = {"pending": 0, "passed": 1, "skipped": 2, "failed": 3}
    if outcome not in rank or rank[outcome] < rank[r.outcome]:
        return
    message = rec.get("message") or ""
    if outcome == "failed" and r.outcome == "failed":
        message = f"{r.message} {message}".strip()
    r.outcome, r.message = outcome, message


def _finish(attempt: CheckAttempt) -> None:
    """End ``attempt``: "done" unless it already ended in error, with its counts and verdict."""
    attempt.finished_at = time.time()
    if attempt.status == "running":
        attempt.status = "done"
    applicable = [r for r in attempt.results if r.outcome != "skipped"]
    attempt.applicable = len(applicable)
    attempt.passed = sum(r.outcome == "passed" for r in applicable)
    attempt.completed = attempt.status == "done" and bool(applicable) and attempt.passed == len(applicable)


def _folder_bytes(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts:
            total += p.stat().st_size
            if total > MAX_COPY_BYTES:
                break
    return total


def _tail(path: Path, n: int = 1500) -> str:
    try:
        text = path.read_bytes()[-n:].decode("utf-8", "replace")
    except OSError:
        return ""
    return text.strip()
