"""The GPU probe service: one backend (live NVML or a replayed recording) plus the host.

Plain Python with no server in it: the CLI calls it directly, the server calls it from
one worker thread so NVML never runs on the event loop. Methods are thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

import psutil

from .host import HostSampler, host_facts
from .models import DevicesResponse, GpuDevice, GpuInventory, GpuSample, HostFacts, TelemetrySample
from .nvml_backend import GpuUnavailable, NvmlBackend
from .replay import ReplayBackend


class GpuBackend(Protocol):
    source: str

    def start(self) -> None: ...
    def inventory(self) -> GpuInventory: ...
    def sample(self) -> list[GpuSample]: ...
    def close(self) -> None: ...


def make_backend(replay_file: str | None = None) -> GpuBackend:
    """Live NVML unless a recording to replay is named (then played at its own speed)."""
    return ReplayBackend(replay_file, paced=True) if replay_file else NvmlBackend()


class GpuProbe:
    """GPU facts and readings with the host's, or the reason there are no GPUs."""

    def __init__(
        self,
        backend: GpuBackend,
        *,
        retry_after_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.backend = backend
        self.retry_after_s = retry_after_s
        self._clock = clock
        self._lock = threading.RLock()
        self._inventory: GpuInventory | None = None
        self._failed_at = 0.0
        self._host: HostFacts | None = None
        self._host_sampler: HostSampler | None = None
        self._names: dict[int, str | None] = {}

    @property
    def mode(self) -> str:
        """'gpu', 'replay' or 'cpu' (no usable GPU), after the first probe."""
        inv = self.inventory()
        if not inv.available:
            return "cpu"
        return "replay" if inv.source == "replay" else "gpu"

    def inventory(self) -> GpuInventory:
        """Static facts, probed once; after a failure, probed again every retry_after_s (s)."""
        with self._lock:
            stale = (
                self._inventory is not None
                and not self._inventory.available
                and self._clock() - self._failed_at >= self.retry_after_s
            )
            if self._inventory is None or stale:
                try:
                    self._inventory = self.backend.inventory()
                except GpuUnavailable as err:
                    self._failed_at = self._clock()
                    self._inventory = GpuInventory(available=False, reason=str(err), source=self.backend.source)
            return self._inventory

    def gpu_samples(self) -> list[GpuSample]:
        """One reading per GPU, or [] without GPUs. A GPU that vanished turns the probe to 'cpu'."""
        with self._lock:
            if not self.inventory().available:
                return []
            try:
                samples = self.backend.sample()
            except GpuUnavailable as err:
                self._failed_at = self._clock()
                self._inventory = GpuInventory(available=False, reason=str(err), source=self.backend.source)
                return []
            if self.backend.source == "nvml":  # a replay keeps the names it recorded
                for s in samples:
                    for p in s.processes:
                        p.name = self._process_name(p.pid)
            return samples

    def host(self) -> HostFacts:
        with self._lock:
            if self._host is None:
                self._host = host_facts()
            return self._host

    def telemetry_sample(self) -> TelemetrySample:
        """Host and GPU readings taken now."""
        with self._lock:
            if self._host_sampler is None:
                self._host_sampler = HostSampler()
            host = self._host_sampler.sample()
            gpus = self.gpu_samples()
            recording_t = self.backend.position_s if isinstance(self.backend, ReplayBackend) and gpus else None
            return TelemetrySample(t=self._clock(), recording_t=recording_t, host=host, gpus=gpus)

    def devices(self) -> DevicesResponse:
        """Facts and a current reading of every GPU and of the host."""
        with self._lock:
            inv = self.inventory()
            reading = self.telemetry_sample()
            by_index = {s.index: s for s in reading.gpus}
            return DevicesResponse(
                available=inv.available,
                reason=inv.reason,
                mode=self.mode,
                source=inv.source,
                driver_version=inv.driver_version,
                cuda_driver_version=inv.cuda_driver_version,
                nvml_version=inv.nvml_version,
                gpus=[GpuDevice(**f.model_dump(), sample=by_index.get(f.index)) for f in inv.gpus],
                topology=inv.topology,
                recording=inv.recording,
                host=self.host(),
                host_sample=reading.host,
                t=reading.t,
                recording_t=reading.recording_t,
            )

    def close(self) -> None:
        with self._lock:
            self.backend.close()

    def _process_name(self, pid: int) -> str | None:
        if pid not in self._names:
            if len(self._names) > 4096:
                self._names.clear()
            try:
                self._names[pid] = psutil.Process(pid).name()
            except (psutil.Error, OSError):
                # Another container's process, or one that already ended.
                self._names[pid] = None
        return self._names[pid]
