"""The kernel service: compiles through a warm worker process, caches by content hash,
adds occupancy, and runs kernels in a fresh child process per run.

Plain Python, no HTTP: the REST handlers, the CLI and the ``%%cuda`` magic all call this.
Nothing here imports a CUDA library; the worker processes do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import Failed, Invalid, TimedOut, TooLarge, Unavailable
from ..worker.pipe import WarmWorker, WorkerFailure, kill_group
from .cpu_runner import MODE_NOTE as EMULATOR_NOTE
from .cpu_runner.source import refusal
from .models import ArchList, CompileRequest, CompileResult, OccupancyReport, OccupancyRequest, RunRequest, RunResult
from .occupancy import arch_table, limits_for, occupancy, occupancy_curve
from .signature import argument_mismatch

DEFAULT_ARCH = "sm_80"


class KernelRequestError(Invalid):
    """A request the service refuses (unknown arch, over the simulator's budget)."""


class SourceTooLarge(TooLarge, KernelRequestError):
    """A kernel source over the size cap."""


class CompileFailure(WorkerFailure, Failed):
    """The compiler could not answer: kind "timeout", "crashed" or "no_compiler".

    CompileFailure(kind, message) gives the subclass that says what a client can do about
    it (a timeout, a missing compiler), so the warm worker can raise it by kind."""

    def __new__(cls, kind: str, message: str) -> CompileFailure:
        if cls is CompileFailure:
            cls = {"timeout": CompileTimeout, "no_compiler": NoCompiler, "memory": CompileOutOfMemory}.get(
                kind, CompileFailure
            )
        return super().__new__(cls, kind, message)

    def __init__(self, kind: str, message: str) -> None:
        WorkerFailure.__init__(self, kind, message)
        self.message, self.code, self.detail = message, f"compiler_{kind}", None


class CompileTimeout(TimedOut, CompileFailure):
    """The compiler took longer than its limit and was stopped."""


class NoCompiler(Unavailable, CompileFailure):
    """No compiler on this machine (NVRTC missing)."""


class CompileOutOfMemory(TooLarge, CompileFailure):
    """The compiler outgrew its memory cap on this source (a template or macro bomb) and was stopped."""


@dataclass(frozen=True)
class GpuTarget:
    """The GPU a run would use: its name and architecture (from the NVML probe)."""

    name: str
    arch: str


@dataclass(frozen=True)
class KernelLimits:
    compile_timeout_s: float = 20.0
    run_timeout_s: float = 60.0
    max_source_bytes: int = 64 * 1024
    max_ptx_bytes: int = 4 * 1024 * 1024
    max_sass_instructions: int = 100_000
    simulator_max_threads: int = 4096
    # The CPU emulator runs about a million threads a second (one fiber each); the time limit
    # still applies below this.
    emulator_max_threads: int = 1 << 26
    max_array_elements: int = 1 << 26
    cache_entries: int = 128
    # The compile worker is stopped past this much resident memory (a numba compile needs ~0.4 GB).
    compile_max_rss_bytes: int = 2 * 1024**3


class KernelService:
    def __init__(
        self,
        cache_dir: Path,
        limits: KernelLimits | None = None,
        python: str = sys.executable,
    ) -> None:
        self.cache_dir = cache_dir
        self.limits = limits or KernelLimits()
        self.python = python
        self._worker = WarmWorker(
            "gpudojo.worker.compile",
            cache_dir / "compile-worker.log",
            python,
            name="compiler",
            failure=CompileFailure,
            max_rss_bytes=self.limits.compile_max_rss_bytes,
        )
        self._lock = threading.Lock()
        self._memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._runs: set[subprocess.Popen] = set()
        self.worker_starts = 0
        self.compiler_calls = 0

    # --- the warm worker ------------------------------------------------------------------

    def _ensure_worker(self) -> dict[str, Any]:
        if not self._worker.alive:
            self.worker_starts += 1
            info = self._worker.start(timeout_s=max(self.limits.compile_timeout_s, 60.0))
            if not info.get("ready"):
                self._worker.stop()
                raise CompileFailure("no_compiler", info.get("error", {}).get("message", "no compiler"))
        return self._worker.info

    def warm_up(self) -> None:
        """Start the worker now so the first compile does not wait for it."""
        with self._lock, contextlib.suppress(CompileFailure):
            self._ensure_worker()

    @property
    def worker_pid(self) -> int | None:
        return self._worker.proc.pid if self._worker.alive and self._worker.proc else None

    def close(self) -> None:
        """Stop the compile worker and kill every kernel run still going (server shutdown)."""
        for proc in list(self._runs):
            kill_group(proc)
        with self._lock:
            self._worker.stop()

    # --- archs and occupancy --------------------------------------------------------------

    def archs(self, gpu: GpuTarget | None = None) -> ArchList:
        problem = None
        info: dict[str, Any] = {}
        with self._lock:
            try:
                info = self._ensure_worker()
            except CompileFailure as err:
                problem = str(err)
        supported = set(info.get("archs", [])) if info else set()
        table = arch_table()
        archs = [a for name, a in table.items() if not supported or name in supported]
        gpu_arch = gpu.arch if gpu else None
        return ArchList(
            archs=archs,
            default_arch=gpu_arch if gpu_arch in table else DEFAULT_ARCH,
            nvrtc_version=info.get("nvrtc_version"),
            numba_available=bool(info.get("numba_version")),
            compiler_problem=problem,
            gpu_arch=gpu_arch,
            gpu_name=gpu.name if gpu else None,
            max_source_bytes=self.limits.max_source_bytes,
            simulator_max_threads=self.limits.simulator_max_threads,
        )

    def occupancy(self, req: OccupancyRequest) -> OccupancyReport:
        self._check_arch(req.arch)
        return OccupancyReport(
            occupancy=occupancy(req.arch, req.registers_per_thread, req.shared_bytes_per_block, req.block_size),
            curve=occupancy_curve(req.arch, req.registers_per_thread, req.shared_bytes_per_block),
        )

    def _check_arch(self, arch: str) -> None:
        try:
            limits_for(arch)
        except KeyError as err:
            raise KernelRequestError(str(err.args[0]), code="unknown_arch") from err

    # --- compile --------------------------------------------------------------------------

    def cache_key(self, req: CompileRequest) -> str:
        material = {
            "gpudojo": __version__,
            "source": req.source,
            "language": req.language,
            "arch": req.arch,
            "options": req.options.model_dump(),
            "signatures": req.signatures if req.language == "numba" else {},
            "sass": req.sass,
        }
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        if key in self._memory:
            self._memory.move_to_end(key)
            return self._memory[key]
        path = self.cache_dir / key[:2] / f"{key}.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        self._remember(key, raw)
        return raw

    def _remember(self, key: str, raw: dict[str, Any]) -> None:
        self._memory[key] = raw
        self._memory.move_to_end(key)
        while len(self._memory) > self.limits.cache_entries:
            self._memory.popitem(last=False)

    def _cache_put(self, key: str, raw: dict[str, Any]) -> None:
        self._remember(key, raw)
        path = self.cache_dir / key[:2] / f"{key}.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(raw), encoding="utf-8")
            tmp.replace(path)
        except OSError:
            pass  # the cache is an optimisation; a read-only data dir only costs speed

    def compile(self, req: CompileRequest) -> CompileResult:
        t0 = time.perf_counter()
        if len(req.source.encode()) > self.limits.max_source_bytes:
            raise SourceTooLarge(
                f"The source is {len(req.source.encode())} bytes; the most this server compiles is "
                f"{self.limits.max_source_bytes}."
            )
        self._check_arch(req.arch)
        key = self.cache_key(req)
        raw = self._cache_get(key)
        cached = raw is not None
        if raw is None:
            message = {"op": "compile", "request": req.model_dump()}
            with self._lock:
                self._ensure_worker()
                self.compiler_calls += 1
                try:
                    raw = self._worker.call(message, self.limits.compile_timeout_s)
                except CompileFailure:
                    self._worker.stop()
                    raise
            if "error" in raw:
                raise CompileFailure(raw["error"]["kind"], raw["error"]["message"])
            raw = self._cap(raw)
            self._cache_put(key, raw)
        return self._report(req, key, raw, cached, t0)

    def _cap(self, raw: dict[str, Any]) -> dict[str, Any]:
        truncated = []
        limit = self.limits.max_ptx_bytes
        if len(raw.get("ptx", "")) > limit:
            cut = raw["ptx"][:limit]
            raw["ptx"] = cut[: cut.rfind("\n") + 1] + "// ... cut: PTX longer than the server's cap\n"
            raw["ptx_lines"] = raw["ptx_lines"][: raw["ptx"].count("\n")]
            truncated.append("ptx")
        budget = self.limits.max_sass_instructions
        for kernel in raw.get("kernels", []):
            if len(kernel["sass"]) > budget:
                kernel["sass"] = kernel["sass"][:budget]
                truncated.append("sass")
            budget = max(budget - len(kernel["sass"]), 0)
        raw["truncated"] = sorted(set(truncated))
        return raw

    def _report(self, req: CompileRequest, key: str, raw: dict[str, Any], cached: bool, t0: float) -> CompileResult:
        kernels = []
        for k in raw.get("kernels", []):
            shared = k["shared_bytes"] + req.dynamic_shared_bytes
            kernels.append(
                {
                    **k,
                    "occupancy": occupancy(req.arch, k["registers"], shared, req.block_size),
                    "curve": occupancy_curve(req.arch, k["registers"], shared),
                }
            )
        timings = dict(raw.get("timings", {}))
        if cached:
            timings = {"compile_ms": 0.0, "sass_ms": 0.0}
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return CompileResult.model_validate(
            {
                **{k: v for k, v in raw.items() if k not in ("kernels", "timings")},
                "language": req.language,
                "arch": req.arch,
                "cached": cached,
                "key": key,
                "kernels": kernels,
                "timings": timings,
            }
        )

    # --- run ------------------------------------------------------------------------------

    def run(self, req: RunRequest, gpu: GpuTarget | None) -> RunResult:
        t0 = time.perf_counter()
        for arg in req.args:
            if arg.kind == "array":
                elements = 1
                for n in arg.shape:
                    elements *= n
                if elements > self.limits.max_array_elements:
                    raise KernelRequestError(
                        f"Array {arg.name} has {elements} elements; the most is {self.limits.max_array_elements}."
                    )
        if req.language == "numba" and any(arg.kind == "array" and arg.dtype == "bfloat16" for arg in req.args):
            raise KernelRequestError(
                "bfloat16 arrays are for CUDA C kernels (__nv_bfloat16* parameters); numba kernels take "
                "float16, float32 or float64 arrays.",
                code="bad_dtype",
            )
        use_gpu = gpu is not None and req.mode in ("auto", "gpu")
        if req.mode == "gpu" and gpu is None:
            raise KernelRequestError("mode 'gpu' was asked for but this machine has no usable GPU.", code="no_gpu")
        if req.mode == "cpu-emulation" and req.language != "cuda":
            raise KernelRequestError(
                "mode 'cpu-emulation' runs CUDA C; numba kernels run in the simulator (mode 'simulator').",
                code="bad_mode",
            )
        report: CompileResult | None = None
        if req.language == "cuda":
            arch = req.arch or (gpu.arch if use_gpu and gpu and gpu.arch in arch_table() else DEFAULT_ARCH)
            try:
                report = self.compile(
                    CompileRequest(
                        source=req.source,
                        language="cuda",
                        arch=arch,
                        options=req.options,
                        block_size=_prod(req.block),
                        dynamic_shared_bytes=req.shared_bytes,
                    )
                )
            except NoCompiler:
                if use_gpu:
                    raise
                # The CPU emulator needs only g++: run without the NVRTC report.
            if not use_gpu and (refused := refusal(req.source)):
                # Named before anything else: NVRTC may fail on the same line (no mma.h here) less clearly.
                return RunResult(
                    status="error",
                    mode="cpu-emulation",
                    mode_note=EMULATOR_NOTE,
                    error=refused,
                    compile=report,
                    wall_ms=(time.perf_counter() - t0) * 1000,
                )
            if report is not None and not report.ok:
                return RunResult(
                    status="error",
                    mode="none",
                    mode_note="The kernel did not compile; nothing ran.",
                    error={"kind": "compile_error", "message": _first_error(report)},
                    compile=report,
                    wall_ms=(time.perf_counter() - t0) * 1000,
                )
            if report is not None:
                by_symbol = {k.symbol: k.name for k in report.kernels}
                if req.kernel not in {k.name for k in report.kernels} | set(by_symbol):
                    names = ", ".join(k.name for k in report.kernels) or "none"
                    raise KernelRequestError(
                        f"No kernel named {req.kernel!r} in the source (kernels: {names}).", code="unknown_kernel"
                    )
            if mismatch := argument_mismatch(req.source, req.kernel, req.args):
                raise KernelRequestError(mismatch, code="argument_type")
            if not use_gpu:
                if req.threads > self.limits.emulator_max_threads:
                    raise KernelRequestError(
                        f"The launch has {req.threads} threads; the CPU emulator runs at most "
                        f"{self.limits.emulator_max_threads} (about a million a second). Make the grid smaller.",
                        code="too_many_threads",
                    )
                if report is not None and req.kernel in by_symbol:
                    req = req.model_copy(update={"kernel": by_symbol[req.kernel]})
                result = self._run_child(req.model_copy(update={"arch": arch}), "cpu-emulation")
                result.compile = report
                result.wall_ms = (time.perf_counter() - t0) * 1000
                return result
        if not use_gpu and req.threads > self.limits.simulator_max_threads:
            raise KernelRequestError(
                f"The launch has {req.threads} threads; the simulator runs at most "
                f"{self.limits.simulator_max_threads} (about 200 us each). Make the grid smaller.",
                code="too_many_threads",
            )
        result = self._run_child(req, "gpu" if use_gpu else "simulator")
        result.compile = report
        result.wall_ms = (time.perf_counter() - t0) * 1000
        return result

    def _run_child(self, req: RunRequest, mode: str) -> RunResult:
        env = dict(os.environ)
        if mode == "simulator":
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        else:
            env.pop("NUMBA_ENABLE_CUDASIM", None)
        message: dict[str, Any] = {"request": req.model_dump(), "mode": mode}
        timeout_s = self.limits.run_timeout_s
        if mode == "cpu-emulation":
            # The launcher stops itself at run_timeout_s with the looping thread's line; waiting
            # longer here (the g++ compile comes first) only catches a child that could not.
            message["emulator"] = {
                "cache_dir": str(self.cache_dir),
                "compile_timeout_s": self.limits.compile_timeout_s,
                "time_limit_s": self.limits.run_timeout_s,
            }
            timeout_s += self.limits.compile_timeout_s + 10.0
        payload = json.dumps(message).encode()
        proc = subprocess.Popen(
            [self.python, "-m", "gpudojo.worker.kernel_run"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
        )
        self._runs.add(proc)
        try:
            out, err = communicate_capped(proc, payload, timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return RunResult(
                status="error",
                mode=mode,
                mode_note=mode_note(mode),
                error={
                    "kind": "timeout",
                    "message": f"The kernel ran longer than {timeout_s:g} s; its process was "
                    "killed (an endless loop, or too much work for the simulator?).",
                },
            )
        finally:
            self._runs.discard(proc)
        lines = [ln for ln in out.decode(errors="replace").splitlines() if ln.strip()]
        if lines:
            try:
                return RunResult.model_validate_json(lines[-1])
            except ValueError:
                pass
        code = proc.returncode
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        tail = err.decode(errors="replace").strip()[-1500:]
        return RunResult(
            status="error",
            mode=mode,
            mode_note=mode_note(mode),
            error={"kind": "crashed", "message": f"The kernel's process died ({how}). The server is fine.\n{tail}"},
        )


# What the server keeps of a kernel run's output (bytes): the result is the last stdout line
# (small: the child caps what the kernel printed at 20,000 characters), an error's words the
# tail of stderr. A kernel writing gigabytes is read to the end and the rest dropped.
MAX_RESULT_BYTES = 16 * 1024 * 1024
MAX_STDERR_BYTES = 64 * 1024


def _read_tail(pipe: Any, keep: int, into: dict[int, bytes], key: int) -> None:
    """Read ``pipe`` to its end, keeping its last ``keep`` bytes in ``into[key]``."""
    buf = bytearray()
    while chunk := pipe.read1(1 << 16):
        buf += chunk
        if len(buf) > 2 * keep:
            del buf[:-keep]
    into[key] = bytes(buf[-keep:])
    pipe.close()


def _write_all(pipe: Any, payload: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, OSError):
        pipe.write(payload)
        pipe.close()


def communicate_capped(proc: subprocess.Popen, payload: bytes, timeout_s: float) -> tuple[bytes, bytes]:
    """``proc.communicate(payload, timeout_s)``, holding at most MAX_RESULT_BYTES of stdout and
    MAX_STDERR_BYTES of stderr (their tails) however much the child writes. Raises
    subprocess.TimeoutExpired as communicate does."""
    tails: dict[int, bytes] = {}
    readers = [
        threading.Thread(target=_read_tail, args=(proc.stdout, MAX_RESULT_BYTES, tails, 1), daemon=True),
        threading.Thread(target=_read_tail, args=(proc.stderr, MAX_STDERR_BYTES, tails, 2), daemon=True),
    ]
    for t in readers:
        t.start()
    # Written on a thread too: a child that never reads its stdin must still meet the timeout.
    threading.Thread(target=_write_all, args=(proc.stdin, payload), daemon=True).start()
    proc.wait(timeout=timeout_s)
    for t in readers:
        t.join(timeout=5)  # a descendant holding the pipes open must not hold the server
    return tails.get(1, b""), tails.get(2, b"")


def _prod(dims: list[int]) -> int:
    total = 1
    for n in dims:
        total *= n
    return min(total, 1024)


def _first_error(report: CompileResult) -> str:
    for d in report.diagnostics:
        if d.severity == "error":
            return f"line {d.line}: {d.message}" if d.line else d.message
    return "compile failed"


def mode_note(mode: str) -> str:
    if mode == "gpu":
        return "Ran on the GPU; timing from CUDA events."
    if mode == "cpu-emulation":
        return EMULATOR_NOTE
    return (
        "Ran in numba's CUDA simulator on the CPU: every thread is a Python thread (about 200 us each), so timing "
        "says nothing about GPU speed, and there is no memory hierarchy, coalescing or occupancy to see."
    )
