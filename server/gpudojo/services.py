"""The services one server holds, shared by every handler.

Nothing heavy is imported or started when the server starts: the probe, pydantic models
and the sampler are built on first use, so the extension adds little to server start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .course.service import CourseService
    from .gpu.probe import GpuProbe
    from .gpu.telemetry import TelemetrySampler
    from .kernels.service import GpuTarget, KernelService
    from .memory.service import MemoryService
    from .runs.models import Run
    from .runs.service import RunService

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """What the services are built from (units in the names)."""

    gpu_replay_file: str = ""
    gpu_retry_s: float = 30.0
    telemetry_default_hz: float = 4.0
    telemetry_max_hz: float = 20.0
    telemetry_history_s: float = 120.0
    max_body_bytes: int = 1 << 20
    max_concurrent_runs: int = 2
    run_timeout_s: float = 3600.0
    devices_max_age_s: float = 0.25
    data_dir: str = ""
    root_dir: str = "."
    content_dir: str = ""
    labs_dir: str = ""
    kernel_compile_timeout_s: float = 20.0
    kernel_run_timeout_s: float = 60.0
    kernel_max_source_bytes: int = 64 * 1024
    simulator_max_threads: int = 4096
    memory_warm_worker: bool = True


class Services:
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
        from pathlib import Path

        from .course.catalog import CourseCatalog
        from .course.progress import ProgressStore
        from .course.service import CourseService
        from .paths import material_root

        s = self.settings
        catalog = CourseCatalog(
            Path(s.content_dir) if s.content_dir else material_root("content"),
            Path(s.labs_dir) if s.labs_dir else material_root("labs"),
        )
        store = ProgressStore(Path(s.data_dir) / "gpudojo.sqlite3")
        return CourseService(catalog, store, Path(s.root_dir))

    @cached_property
    def kernels(self) -> KernelService:
        from pathlib import Path

        from .kernels.service import KernelLimits, KernelService

        s = self.settings
        limits = KernelLimits(
            compile_timeout_s=s.kernel_compile_timeout_s,
            run_timeout_s=s.kernel_run_timeout_s,
            max_source_bytes=s.kernel_max_source_bytes,
            simulator_max_threads=s.simulator_max_threads,
        )
        return KernelService(Path(s.data_dir) / "kernel-cache", limits)

    @cached_property
    def runs(self) -> RunService:
        from pathlib import Path

        from .paths import material_root
        from .runs.service import RunService

        s = self.settings
        return RunService(
            Path(s.labs_dir) if s.labs_dir else material_root("labs"),
            Path(s.data_dir),
            Path(s.root_dir),
            max_concurrent=s.max_concurrent_runs,
            run_timeout_s=s.run_timeout_s,
            on_finish=self._run_finished,
        )

    def _run_finished(self, run: Run) -> None:
        self._lab_progress(run)
        self._analyse_memory(run)

    def _analyse_memory(self, run: Run) -> None:
        """A run's memory captures are analysed as soon as it ends, off the run's thread, so
        that opening one from the run view is the cached path (labs such as lab-06 record
        memory whether or not the run asked to)."""
        self.runs_executor.submit(self.memory.analyse_run, run.id)

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
        from pathlib import Path

        from .memory.service import MemoryService

        s = self.settings
        return MemoryService(Path(s.data_dir), Path(s.root_dir))

    def warm_memory(self) -> None:
        """Start the memory-analysis worker (server start, in the background)."""
        try:
            self.memory.warm_up()
        except Exception:  # the first analysis will start it again and say what went wrong
            logging.getLogger(__name__).exception("gpudojo: the memory-analysis worker did not start")

    def recover_runs(self) -> None:
        """Build the run service now (its constructor marks orphaned runs lost)."""
        try:
            _ = self.runs
        except Exception:  # a broken store must not take the server down; the API will say why
            logging.getLogger(__name__).exception("gpudojo: could not open the run store")

    async def gpu_count(self) -> int:
        """GPUs a run may use: live NVML's count (a replayed recording has none to run on)."""
        probe = self.probe
        doc = await self.in_gpu_thread(probe.devices)
        return len(doc.gpus) if doc.mode == "gpu" else 0

    async def gpu_target(self) -> GpuTarget | None:
        """GPU 0 of this machine for kernel runs; None without one (a replayed recording is
        not a GPU either)."""
        from .kernels.service import GpuTarget

        probe = self.probe
        doc = await self.in_gpu_thread(probe.devices)
        if doc.mode != "gpu" or not doc.gpus:
            return None
        cc = doc.gpus[0].compute_capability or ""
        return GpuTarget(name=doc.gpus[0].name, arch="sm_" + cc.replace(".", ""))

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
        if "sampler" in self.__dict__:
            await self.sampler.stop()
        if "course" in self.__dict__:
            await self.in_io_thread(self.course.store.close)
        if "runs" in self.__dict__:
            # No process of any run may outlive the server.
            await asyncio.get_running_loop().run_in_executor(None, self.runs.close)
        if "kernels" in self.__dict__:
            await self.in_kernel_thread(self.kernels.close)
        if "memory" in self.__dict__:
            await asyncio.get_running_loop().run_in_executor(None, self.memory.close)
        if "probe" in self.__dict__:
            await self.in_gpu_thread(self.probe.close)
        self.gpu_executor.shutdown(wait=False)
        self.io_executor.shutdown(wait=False)
        self.kernel_executor.shutdown(wait=False)
        self.run_executor.shutdown(wait=False)
        self.runs_executor.shutdown(wait=False)
