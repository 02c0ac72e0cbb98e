"""The pytest plugin that hidden exercise checks are written against.

The exercise service runs ``python -m pytest <exercise>/checks -p gpudojo.worker.checkkit``
in a child process of its own (gpudojo.course.exercises). Each test is tied to one
requirement of the exercise's manifest with ``@requirement("id")``; pytest's own report of
each test becomes that requirement's result, written as a JSON line to the results file
the service reads (and watches, so the requirement list ticks while the checks run).

Rules for check authors (content/exercises/FORMAT.md says the same):
- never import the learner's code in the check process: run it with ``learner.run`` or
  ``learner.drive`` (a child with a time limit and an output cap), so a program that
  loops forever or prints a gigabyte is stopped and reported, never the checker;
- fail with ``fail("what is wrong, in the learner's terms")``, and record what was
  measured with ``figures.add(...)``: the UI shows both;
- a requirement the manifest marks ``gpu = true`` is skipped without a GPU (the plugin does
  it; the test need not check).
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

from .checkenv import ENV_GPUS, ENV_MANIFEST, ENV_RESULTS, ENV_SCRATCH, ENV_WORK

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


def _limit_file_size(pid: int) -> None:
    """Cap the size of any file the learner's process writes (set right after it starts;
    its children inherit the limit)."""
    with contextlib.suppress(Exception):
        import psutil

        psutil.Process(pid).rlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_CAP, FILE_SIZE_CAP))


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


class Learner:
    """The learner's copy of the exercise (a scratch copy: checks may write in it) and the
    way to run what is in it."""

    def __init__(self, work: Path, scratch: Path, gpus: int) -> None:
        self.dir = work
        self.scratch = scratch
        self.gpus = gpus

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
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("GPUDOJO_EXERCISE") and k not in ("PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")
        }
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
    ) -> Result:
        """Run a learner program (``python`` as argv[0] means this Python) in the learner's
        folder. A program past ``timeout_s`` or printing more than ``output_cap`` bytes is
        killed with its children; with ``check_limits`` (the default) the requirement then
        fails saying so."""
        argv = [sys.executable if a == "python" and i == 0 else str(a) for i, a in enumerate(argv)]
        for sub in ("home", "tmp"):
            (self.scratch / sub).mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=cwd or self.dir,
            env=self.env(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a kill reaches whatever it starts
        )
        _limit_file_size(proc.pid)
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
        # Children the program left behind in its session go too.
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
        source goes in on stdin, so neither a file nor the command line shows it."""
        return self.run(["python", "-", *args], stdin=driver, **kwargs)


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
    return Learner(Path(work), _scratch(), gpus)


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Figures:
    figs = Figures()
    request.node.user_properties.append(("gpudojo_figures", figs.items))
    return figs


# --- the plugin: requirements, GPU skips, result lines --------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requirement(id): the exercise requirement this test checks")


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
    path = os.environ.get(ENV_RESULTS)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
