"""The pytest plugin that hidden exercise checks are written against.

The exercise service runs ``python -m pytest <exercise>/checks -p gpudojo.worker.checkkit``
in a child process of its own (gpudojo.course.exercises). Each test is tied to one
requirement of the exercise's manifest with ``@requirement("id")``; pytest's own report of
each test becomes that requirement's result, written as a JSON line to a pipe that only
this process inherited from the service (which reads it while the checks run, so the
requirement list ticks). No learner program holds that pipe, sees this process or can name
the checks: each runs in a sandbox of its own (gpudojo.worker.sandbox).

Rules for check authors (content/exercises/FORMAT.md says the same):
- never import the learner's code in the check process: run it with ``learner.run`` or
  ``learner.drive`` (a child with a time limit and an output cap), so a program that
  loops forever or prints a gigabyte is stopped and reported, never the checker;
- fail with ``fail("what is wrong, in the learner's terms")``, and record what was
  measured with ``figures.add(...)``: the UI shows both;
- a requirement the manifest marks ``gpu = true`` is skipped without a GPU (the plugin does
  it; the test need not check);
- learner programs see neither the checks folder nor this process: a file of the checks
  named in a program's argv or env is shown to it read-only, and a pid a learner program
  reports is its pid inside its sandbox (``learner.host_pid`` gives the one to signal).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from . import sandbox
from .checkenv import CHECK_PREFIXES, ENV_GPUS, ENV_MANIFEST, ENV_RESULTS_FD, ENV_SANDBOX, ENV_SCRATCH, ENV_WORK

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_OUTPUT_CAP = 1 << 20  # bytes of stdout + stderr kept from one learner program
FILE_SIZE_CAP = 256 << 20  # no file a learner program writes during a check may grow past this


def fail(message: str) -> None:
    """Fail this requirement with a message in the learner's terms (no traceback shown)."""
    __tracebackhide__ = True
    pytest.fail(message, pytrace=False)


def requirement(req_id: str):
    """Tie a test to the manifest's requirement ``req_id``."""
    return pytest.mark.requirement(req_id)


# --- the learner's programs ----------------------------------------------------------------


@dataclass
class Result:
    """What one learner program did."""

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    output_capped: bool = False

    def json(self) -> Any:
        """The last line of stdout that parses as JSON (what a --json flag printed)."""
        for line in reversed(self.stdout.strip().splitlines()):
            line = line.strip()
            if line.startswith(("{", "[")):
                with contextlib.suppress(json.JSONDecodeError):
                    return json.loads(line)
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(self.stdout)
        fail(f"{self.name} printed no JSON on stdout; its output began: {_clip(self.stdout or self.stderr)!r}")

    @property
    def name(self) -> str:
        return " ".join(Path(a).name if i == 0 else a for i, a in enumerate(self.argv[:3]))

    def tail(self, n: int = 600) -> str:
        text = (self.stderr or self.stdout).strip()
        return text[-n:]


def _clip(text: str, n: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= n else text[:n] + "..."


class _CappedReader(threading.Thread):
    def __init__(self, stream, cap: int, on_cap) -> None:
        super().__init__(daemon=True)
        self.stream, self.cap, self.on_cap = stream, cap, on_cap
        self.chunks: list[bytes] = []
        self.size = 0
        self.capped = False

    def run(self) -> None:
        while True:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
            if not chunk:
                return
            if self.size < self.cap:
                self.chunks.append(chunk[: self.cap - self.size])
            self.size += len(chunk)
            if self.size > self.cap and not self.capped:
                self.capped = True
                self.on_cap()

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


def _python_under_tmp() -> list[Path]:
    """This Python's folders and gpudojo's, where the sandbox's private /tmp would hide them."""
    tmp = Path("/tmp")
    ours = (Path(sys.prefix), Path(sys.base_prefix), Path(__file__).parents[2])
    return sorted({p.resolve() for p in ours if tmp in p.resolve().parents})


# The first lines of every driver: the folder it runs in (the learner's) goes last on sys.path.
_LEARNER_LAST = "import os as _os, sys as _sys\n_sys.path.append(_os.getcwd())\ndel _os, _sys\n"


class Learner:
    """The learner's copy of the exercise (a scratch copy: checks may write in it) and the
    way to run what is in it."""

    def __init__(self, work: Path, scratch: Path, gpus: int, sandbox_spec: dict[str, Any] | None = None) -> None:
        self.dir = work
        self.scratch = scratch
        self.gpus = gpus
        self._sandbox = sandbox_spec
        self._running: set[int] = set()  # the sandboxes (bwrap's pid) of the programs running now

    def path(self, name: str) -> Path:
        return self.dir / name

    def exists(self, name: str) -> bool:
        return (self.dir / name).is_file()

    def require(self, name: str) -> Path:
        """The learner's file ``name``; the requirement fails if it is missing."""
        p = self.dir / name
        if not p.is_file():
            fail(f"{name} is missing from your copy of the exercise (Reset restores the starter).")
        return p

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(CHECK_PREFIXES)}
        env["PYTHONPATH"] = str(self.dir)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONUNBUFFERED"] = "1"
        env["HOME"] = str(self.scratch / "home")
        env["TMPDIR"] = str(self.scratch / "tmp")
        env["MPLBACKEND"] = "Agg"
        if self.gpus == 0:
            env["CUDA_VISIBLE_DEVICES"] = ""
        env.update(extra or {})
        return env

    def run(
        self,
        argv: list[str],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        check_limits: bool = True,
        cwd: Path | None = None,
        share: list[Path] | None = None,
    ) -> Result:
        """Run a learner program (``python`` as argv[0] means this Python) in the learner's
        folder, in its sandbox. A program past ``timeout_s`` or printing more than
        ``output_cap`` bytes is killed with its children; with ``check_limits`` (the
        default) the requirement then fails saying so. Files of the checks folder named in
        ``argv``, in ``env`` or in ``share`` are readable by the program (read-only)."""
        argv = [sys.executable if a == "python" and i == 0 else str(a) for i, a in enumerate(argv)]
        for sub in ("home", "tmp"):
            (self.scratch / sub).mkdir(parents=True, exist_ok=True)
        cwd = cwd or self.dir
        command, pass_fds = argv, ()
        if self._sandbox:
            shown = self._shared([*argv, *(env or {}).values(), *map(str, share or [])])
            command, options_fd = sandbox.wrap(
                self._sandbox["bwrap"],
                argv,
                cwd=Path(cwd),
                writable=[self.scratch],
                hidden=[Path(h) for h in self._sandbox["hide"]],
                readable=shown + _python_under_tmp(),
                gpu=self.gpus > 0,
            )
            pass_fds = (options_fd,)
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                command,
                cwd=cwd,
                env=self.env(env),
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,  # the results pipe is this process's alone
                pass_fds=pass_fds,
                start_new_session=True,  # a kill reaches whatever it starts
            )
        finally:
            for fd in pass_fds:
                os.close(fd)
        self._running.add(proc.pid)
        try:
            return self._wait(proc, argv, t0, timeout_s, stdin, output_cap, check_limits)
        finally:
            self._running.discard(proc.pid)

    def _shared(self, values: list[str]) -> list[Path]:
        """Files of the checks folder among ``values`` (what the check hands the program)."""
        checks = Path(self._sandbox["checks"]) if self._sandbox and self._sandbox.get("checks") else None
        if checks is None:
            return []
        out: list[Path] = []
        for v in values:
            if not v.startswith(os.sep):
                continue
            p = Path(v).resolve()
            if checks in p.parents and p.exists() and p not in out:
                out.append(p)
        return out

    def host_pid(self, pid: int) -> int | None:
        """The pid this process can signal for the learner process that reported ``pid``
        (its own ``os.getpid()``): a learner program runs in a PID namespace of its own, so
        its pids are not this process's. None when no running learner process has it."""
        if not self._sandbox:
            return pid
        for root in list(self._running):
            found = sandbox.host_pid(root, pid)
            if found is not None:
                return found
        return None

    def _wait(
        self,
        proc: subprocess.Popen,
        argv: list[str],
        t0: float,
        timeout_s: float,
        stdin: str | None,
        output_cap: int,
        check_limits: bool,
    ) -> Result:
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

        readers = [_CappedReader(proc.stdout, output_cap, kill), _CappedReader(proc.stderr, output_cap, kill)]
        for r in readers:
            r.start()
        if stdin is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                proc.stdin.write(stdin.encode())  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill()
            proc.wait()
        # Unsandboxed, what the program left running in its session goes too (a sandbox's
        # processes went with its PID namespace when the program ended).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        for r in readers:
            r.join(timeout=5)
        res = Result(
            argv=argv,
            returncode=proc.returncode,
            stdout=readers[0].text(),
            stderr=readers[1].text(),
            duration_s=time.monotonic() - t0,
            timed_out=timed_out,
            output_capped=any(r.capped for r in readers),
        )
        if check_limits:
            if res.timed_out:
                fail(f"{res.name} ran longer than {timeout_s:g} s and was stopped (an endless loop, or far too slow).")
            if res.output_capped:
                fail(
                    f"{res.name} printed more than {output_cap / 1024**2:g} MiB and was stopped "
                    "(print less: a summary, not every value)."
                )
        return res

    def drive(self, driver: str, *args: str, **kwargs: Any) -> Result:
        """Run ``driver`` (Python source that imports the learner's modules) in a child. The
        source goes in on stdin, so neither a file nor the command line shows it. The child runs
        isolated (``python -I``: no PYTHONPATH, no user site, no current folder first on
        sys.path), with the folder it runs in appended last: the learner's modules import, but a
        statistics.py, json.py or torch/ planted there shadows nothing the driver imports."""
        return self.run(["python", "-I", "-", *args], stdin=_LEARNER_LAST + driver, **kwargs)


# --- figures -------------------------------------------------------------------------------


@dataclass
class Figures:
    items: list[dict[str, Any]] = field(default_factory=list)

    def add(self, name: str, value: float | int | str | None, unit: str = "", note: str = "") -> None:
        """Record a measured figure: shown with the requirement, passed or failed."""
        if isinstance(value, float):
            value = float(f"{value:.4g}")
        self.items.append({"name": name, "value": value, "unit": unit, "note": note})


# --- fixtures ------------------------------------------------------------------------------


def _scratch() -> Path:
    return Path(os.environ.get(ENV_SCRATCH) or os.environ.get("TMPDIR") or "/tmp")


@pytest.fixture(scope="session")
def gpus() -> int:
    """GPUs the learner's code can use here (0: the CPU variant)."""
    return int(os.environ.get(ENV_GPUS, "0") or 0)


@pytest.fixture
def learner(gpus: int) -> Learner:
    work = os.environ.get(ENV_WORK)
    if not work:
        pytest.fail("the check runs only through the exercise service (no learner folder given)", pytrace=False)
    return Learner(Path(work), _scratch(), gpus, _SANDBOX)


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Figures:
    figs = Figures()
    request.node.user_properties.append(("gpudojo_figures", figs.items))
    return figs


# --- the plugin: requirements, GPU skips, result lines --------------------------------------


_RESULTS: Any = None  # the results pipe, as a text file
_SANDBOX: dict[str, Any] | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Take what the service handed this process, before any learner program starts."""
    global _RESULTS, _SANDBOX
    config.addinivalue_line("markers", "requirement(id): the exercise requirement this test checks")
    fd = os.environ.pop(ENV_RESULTS_FD, "")
    if fd.isdigit() and _RESULTS is None:
        os.set_inheritable(int(fd), False)  # no child of this process, learner's or not, gets it
        _RESULTS = os.fdopen(int(fd), "w", encoding="utf-8", buffering=1)
    spec = os.environ.pop(ENV_SANDBOX, "")
    if spec:
        _SANDBOX = json.loads(spec)
    _harden()


def _harden() -> None:
    """Shield this process from the learner programs it starts, and cap their files."""
    # Not dumpable: other processes of this user (an unsandboxed learner program) cannot
    # read this one's /proc/<pid>/environ, fd/ or mem, nor attach a debugger to it.
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    # Set here, before any program starts, so that every one of them inherits it (bytes).
    with contextlib.suppress(ValueError, OSError):
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        cap = FILE_SIZE_CAP if hard == resource.RLIM_INFINITY else min(hard, FILE_SIZE_CAP)
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))


def _manifest() -> dict[str, Any]:
    path = os.environ.get(ENV_MANIFEST)
    if not path:
        return {}
    import tomllib

    return tomllib.loads(Path(path).read_text(encoding="utf-8"))


_MANIFEST: dict[str, Any] | None = None


def _gpu_only() -> dict[str, bool]:
    global _MANIFEST
    if _MANIFEST is None:
        _MANIFEST = _manifest()
    return {r["id"]: bool(r.get("gpu", False)) for r in _MANIFEST.get("requirements", [])}


def _requirement_of(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("requirement")
    return str(mark.args[0]) if mark and mark.args else None


def pytest_runtest_setup(item: pytest.Item) -> None:
    req = _requirement_of(item)
    if req and _gpu_only().get(req) and int(os.environ.get(ENV_GPUS, "0") or 0) == 0:
        pytest.skip("needs an NVIDIA GPU; this machine has none, so the CPU variant skips it")


def _message(excinfo: pytest.ExceptionInfo | None, longrepr: Any) -> str:
    if excinfo is None:
        return str(longrepr or "")
    exc = excinfo.value
    if isinstance(exc, pytest.skip.Exception):
        return str(exc.msg)
    if isinstance(exc, pytest.fail.Exception):
        return str(exc.msg)
    if isinstance(exc, AssertionError):
        text = str(exc).split("\nassert ")[0].strip()
        return text or "an assertion about your code's output did not hold"
    return f"the check could not finish: {type(exc).__name__}: {_clip(str(exc), 400)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        figs = next((v for k, v in item.user_properties if k == "gpudojo_figures"), [])
        _write(
            {
                "requirement": _requirement_of(item),
                "test": item.nodeid,
                "outcome": report.outcome,
                "message": "" if report.outcome == "passed" else _message(call.excinfo, report.longrepr),
                "figures": figs,
                "duration_s": round(call.duration, 3),
            }
        )


def _write(record: dict[str, Any]) -> None:
    if _RESULTS is None:  # not run by the exercise service
        return
    with contextlib.suppress(BrokenPipeError, OSError):  # the service is gone: nobody to tell
        _RESULTS.write(json.dumps(record) + "\n")
