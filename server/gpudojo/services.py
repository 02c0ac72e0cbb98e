"""The one place that builds gpudojo's services: for the server (app.py), the `gpudojo`
command (cli.py) and the notebook API (kernels/notebook.py), from one Settings.

Nothing heavy is imported or started when the services are created: the probe, pydantic
models, the sampler and every service are built on first use, so the extension adds little
to server start (bench/bench_start.py) and a CLI command pays only for what it uses.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .analysed_files import MAX_FILE_BYTES

if TYPE_CHECKING:
    from .course.exercises import ExerciseService
    from .course.service import CourseService
    from .gpu.probe import GpuProbe
    from .gpu.telemetry import TelemetrySampler
    from .kernels.service import GpuTarget, KernelService
    from .memory.service import MemoryService
    from .profile.service import ProfileService
    from .runs.models import Run
    from .runs.service import RunService

T = TypeVar("T")


def default_data_dir() -> Path:
    """<jupyter data dir>/gpudojo: the database and run folders of the server and the CLI alike."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "gpudojo"


@dataclass(frozen=True)
class Settings:
    """What the services are built from (units in the names). Empty folders mean the
    defaults: the Jupyter data dir's gpudojo folder, the packaged content and labs."""

    gpu_replay_file: str = ""
    gpu_retry_s: float = 30.0
    telemetry_default_hz: float = 4.0
    telemetry_max_hz: float = 20.0
    telemetry_history_s: float = 120.0
    max_body_bytes: int = 1 << 20
    max_concurrent_runs: int = 2
    run_timeout_s: float = 3600.0
    max_run_log_bytes: int = 64 * 1024 * 1024
    devices_max_age_s: float = 0.25
    data_dir: str = ""
    root_dir: str = "."
    content_dir: str = ""
    labs_dir: str = ""
    kernel_compile_timeout_s: float = 20.0
    kernel_run_timeout_s: float = 60.0
    kernel_max_source_bytes: int = 64 * 1024
    kernel_compile_max_rss_bytes: int = 2 * 1024**3
    analysis_max_rss_bytes: int = 2 * 1024**3
    analysis_max_inflated_bytes: int = 1024**3
    analysis_max_file_bytes: int = MAX_FILE_BYTES
    analysis_keep_open_bytes: int = 128 * 1024**2
    simulator_max_threads: int = 4096
    memory_warm_worker: bool = True
    max_concurrent_checks: int = 2

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir) if self.data_dir else default_data_dir()

    @property
    def labs_path(self) -> Path:
        from .paths import material_root

        return Path(self.labs_dir) if self.labs_dir else material_root("labs")

    @property
    def content_path(self) -> Path:
        from .paths import material_root

        return Path(self.content_dir) if self.content_dir else material_root("content")


class Services:
    """Every service, built on first use from one Settings. Call close() (server) or
    shutdown() (CLI, notebook) when done: no child process outlives them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # One thread owns NVML: calls are serialised and never run on the event loop.
        self.gpu_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpudojo-gpu")
        # File and SQLite work (catalog, lessons, progress) also stays off the event loop.
        self.io_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gpudojo-io")
        # Compiles queue on one thread (one warm worker); kernel runs, each in its own child
        # process, wait on threads of their own.
        self.kernel_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpudojo-compile")
        self.run_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gpudojo-kernel-run")
        # Run service calls (launch, cancel, stream replay) may wait on processes for seconds.
        self.runs_executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="gpudojo-runs")
        self._devices_cache: tuple[float, str] | None = None
        # Told of every progress write once the course service exists (the server's event bus).
        self.progress_listeners: list[Callable[[Any], None]] = []

    @cached_property
    def probe(self) -> GpuProbe:
        from .gpu.probe import GpuProbe, make_backend

        backend = make_backend(self.settings.gpu_replay_file or None)
        return GpuProbe(backend, retry_after_s=self.settings.gpu_retry_s)

    @cached_property
    def sampler(self) -> TelemetrySampler:
        from .gpu.telemetry import TelemetrySampler

        s = self.settings
        return TelemetrySampler(
            self.probe.telemetry_sample,
            self.gpu_executor,
            default_hz=s.telemetry_default_hz,
            max_hz=s.telemetry_max_hz,
            history_s=s.telemetry_history_s,
        )

    @cached_property
    def course(self) -> CourseService:
        from .course.catalog import CourseCatalog
        from .course.progress import ProgressStore
        from .course.service import CourseService

        s = self.settings
        catalog = CourseCatalog(s.content_path, s.labs_path)
        store = ProgressStore(s.data_path / "gpudojo.sqlite3")
        for listener in self.progress_listeners:
            store.add_listener(listener)
        return CourseService(catalog, store, Path(s.root_dir))

    @cached_property
    def exercises(self) -> ExerciseService:
        """Start and check exercises: the course's catalog and progress store, checks in
        scratch folders under the data dir."""
        import shutil

        from .course.exercises import ExerciseService

        s = self.settings
        scratch = s.data_path / "exercise-checks"
        # What a stopped server or CLI left behind. Only old folders: another process (the
        # server, a `gpudojo exercise check`) may be running a check in this data dir now.
        if scratch.is_dir():
            stale = time.time() - 2 * 3600  # longer than any check may run (time_limit_s <= 1800)
            for entry in scratch.iterdir():
                try:
                    if entry.stat().st_mtime < stale:
                        shutil.rmtree(entry, ignore_errors=True)
                except OSError:
                    continue
        course = self.course
        return ExerciseService(
            course.catalog_source, course.store, Path(s.root_dir), scratch, max_concurrent=s.max_concurrent_checks
        )

    @cached_property
    def kernels(self) -> KernelService:
        from .kernels.service import KernelLimits, KernelService

        s = self.settings
        limits = KernelLimits(
            compile_timeout_s=s.kernel_compile_timeout_s,
            run_timeout_s=s.kernel_run_timeout_s,
            max_source_bytes=s.kernel_max_source_bytes,
            simulator_max_threads=s.simulator_max_threads,
            compile_max_rss_bytes=s.kernel_compile_max_rss_bytes,
        )
        return KernelService(s.data_path / "kernel-cache", limits)

    @cached_property
    def runs(self) -> RunService:
        """The run service; lab runs that end mark course progress, whoever launched them."""
        from .runs.service import RunService

        s = self.settings
        return RunService(
            s.labs_path,
            s.data_path,
            Path(s.root_dir),
            max_concurrent=s.max_concurrent_runs,
            run_timeout_s=s.run_timeout_s,
            max_log_bytes=s.max_run_log_bytes,
            on_finish=self._run_finished,
        )

    def _run_finished(self, run: Run) -> None:
        self._lab_progress(run)
        self._analyse_captures(run)

    def _analyse_captures(self, run: Run) -> None:
        """A run's memory captures and profile traces are analysed as soon as it ends, off the
        run's thread, so that opening one from the run view is the cached path (labs such as
        lab-06 record memory whether or not the run asked to)."""
        self.runs_executor.submit(self.memory.analyse_run, run.id)
        if run.record_profile:
            self.runs_executor.submit(self.profile.analyse_run, run.id)

    def _lab_progress(self, run: Run) -> None:
        """A lab run that passed every check that applies completes the lab for its user;
        any other finished lab run marks it in progress (never undoing a completion)."""
        if run.kind != "lab" or not run.lab or not run.user:
            return
        store = self.course.store
        applicable = [c for c in run.checks if c.applies]
        passed = run.status == "succeeded" and bool(applicable) and all(c.ok for c in applicable)
        if passed:
            store.set_status(run.user, "lab", run.lab, "completed")
        elif store.entry(run.user, "lab", run.lab).status == "not_started":
            store.set_status(run.user, "lab", run.lab, "in_progress")

    @cached_property
    def memory(self) -> MemoryService:
        from .memory.service import MemoryService

        s = self.settings
        return MemoryService(
            s.data_path,
            Path(s.root_dir),
            max_capture_bytes=s.analysis_max_file_bytes,
            max_rss_bytes=s.analysis_max_rss_bytes,
            keep_open_bytes=s.analysis_keep_open_bytes,
        )

    @cached_property
    def profile(self) -> ProfileService:
        from .profile.service import ProfileService

        s = self.settings
        return ProfileService(
            s.data_path,
            Path(s.root_dir),
            max_trace_bytes=s.analysis_max_file_bytes,
            max_inflated_bytes=s.analysis_max_inflated_bytes,
            max_rss_bytes=s.analysis_max_rss_bytes,
            keep_open_bytes=s.analysis_keep_open_bytes,
        )

    def warm_memory(self) -> None:
        """Start the memory-analysis worker (server start, in the background)."""
        try:
            self.memory.warm_up()
        except Exception:  # the first analysis will start it again and say what went wrong
            logging.getLogger(__name__).exception("gpudojo: the memory-analysis worker did not start")

    def recover_runs(self) -> list[str]:
        """The run service's start step: runs a stopped server or CLI left queued or running
        are marked lost and their processes killed. The ids of those runs."""
        try:
            return self.runs.start()
        except Exception:  # a broken store must not take the server down; the API will say why
            logging.getLogger(__name__).exception("gpudojo: could not open the run store")
            return []

    def gpu_count_now(self) -> int:
        """GPUs a run may use: live NVML's count (a replayed recording has none to run on).
        Blocks on NVML: the server calls gpu_count() instead."""
        doc = self.probe.devices()
        return len(doc.gpus) if doc.mode == "gpu" else 0

    def gpu_target_now(self) -> GpuTarget | None:
        """GPU 0 of this machine for kernel runs; None without one (a replayed recording is
        not a GPU either). Blocks on NVML: the server calls gpu_target() instead."""
        from .kernels.service import GpuTarget

        doc = self.probe.devices()
        if doc.mode != "gpu" or not doc.gpus or not doc.gpus[0].compute_capability:
            return None
        cc = doc.gpus[0].compute_capability
        return GpuTarget(name=doc.gpus[0].name, arch="sm_" + cc.replace(".", ""))

    async def gpu_count(self) -> int:
        _ = self.probe  # built on the event loop's thread, used on NVML's
        return await self.in_gpu_thread(self.gpu_count_now)

    async def gpu_target(self) -> GpuTarget | None:
        _ = self.probe
        return await self.in_gpu_thread(self.gpu_target_now)

    async def in_kernel_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.kernel_executor, fn, *args)

    async def in_run_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.run_executor, fn, *args)

    async def in_runs_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.runs_executor, fn, *args)

    async def in_gpu_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.gpu_executor, fn, *args)

    async def in_io_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.io_executor, fn, *args)

    async def devices_json(self) -> str:
        """The devices document as JSON; readings at most devices_max_age_s (s) old are reused."""
        now = time.monotonic()
        cached = self._devices_cache
        if cached is not None and now - cached[0] < self.settings.devices_max_age_s:
            return cached[1]
        probe = self.probe
        text = await self.in_gpu_thread(lambda: probe.devices().model_dump_json())
        self._devices_cache = (time.monotonic(), text)
        return text

    async def close(self) -> None:
        """Stop everything, off the event loop where it blocks (the server's shutdown)."""
        if "sampler" in self.__dict__:
            await self.sampler.stop()
        if "exercises" in self.__dict__:
            await asyncio.get_running_loop().run_in_executor(None, self.exercises.close)
        if "course" in self.__dict__:
            await self.in_io_thread(self.course.store.close)
        if "runs" in self.__dict__:
            # No process of any run may outlive the server.
            await asyncio.get_running_loop().run_in_executor(None, self.runs.close)
        if "kernels" in self.__dict__:
            await self.in_kernel_thread(self.kernels.close)
        if "memory" in self.__dict__:
            await asyncio.get_running_loop().run_in_executor(None, self.memory.close)
        if "profile" in self.__dict__:
            await asyncio.get_running_loop().run_in_executor(None, self.profile.close)
        if "probe" in self.__dict__:
            await self.in_gpu_thread(self.probe.close)
        self._shutdown_executors()

    def shutdown(self) -> None:
        """close() for a process without an event loop (the CLI, a notebook at exit)."""
        # Runs first: their last lab run may still mark progress in the course store, and
        # what a finished run queued (its memory analysis) ends before the memory service closes.
        if "runs" in self.__dict__:
            self.runs.close()
            del self.__dict__["runs"]
        self.runs_executor.shutdown(wait=True)
        for name, close in (
            ("exercises", lambda: self.exercises.close()),
            ("memory", lambda: self.memory.close()),
            ("profile", lambda: self.profile.close()),
            ("course", lambda: self.course.store.close()),
            ("kernels", lambda: self.kernels.close()),
            ("probe", lambda: self.probe.close()),
        ):
            if name in self.__dict__:
                close()
                del self.__dict__[name]
        self._shutdown_executors()

    def _shutdown_executors(self) -> None:
        self.gpu_executor.shutdown(wait=False)
        self.io_executor.shutdown(wait=False)
        self.kernel_executor.shutdown(wait=False)
        self.run_executor.shutdown(wait=False)
        self.runs_executor.shutdown(wait=False)


def local_services(
    *,
    data_dir: str | None = None,
    labs_dir: str | None = None,
    content_dir: str | None = None,
    gpu_replay_file: str | None = None,
    root_dir: str | None = None,
) -> Services:
    """The services of a process without a server (the `gpudojo` command, a notebook): the
    server's defaults (same data dir, so the same runs and progress), this folder as root."""
    import os

    return Services(
        Settings(
            data_dir=data_dir or "",
            labs_dir=labs_dir or "",
            content_dir=content_dir or "",
            gpu_replay_file=gpu_replay_file or "",
            root_dir=root_dir or os.getcwd(),
        )
    )
