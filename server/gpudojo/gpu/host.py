"""Host facts and readings (CPU, memory) through psutil; works on every machine."""

from __future__ import annotations

import os
import platform
import socket
import time
from pathlib import Path

import psutil

from .models import HostFacts, HostSample


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                return value.strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def host_facts() -> HostFacts:
    """CPU model, core counts (logical and physical) and memory (bytes) of this host."""
    return HostFacts(
        hostname=socket.gethostname(),
        platform=f"{platform.system()} {platform.release()} ({platform.machine()})",
        cpu_model=_cpu_model(),
        cores_logical=psutil.cpu_count(logical=True) or os.cpu_count() or 1,
        cores_physical=psutil.cpu_count(logical=False),
        memory_total_bytes=psutil.virtual_memory().total,
    )


class HostSampler:
    """Whole-host CPU % since the previous reading, and memory in bytes."""

    def __init__(self) -> None:
        # The first cpu_percent(None) call only primes psutil's counters.
        psutil.cpu_percent(interval=None)
        self._primed_at = time.monotonic()

    def sample(self) -> HostSample:
        # Right after priming the counters cover too little time to mean anything:
        # measure over a short interval once (this runs in the probe's worker thread).
        settle = 0.1 - (time.monotonic() - self._primed_at)
        cpu = psutil.cpu_percent(interval=settle) if settle > 0 else psutil.cpu_percent(interval=None)
        self._primed_at = -1e9
        mem = psutil.virtual_memory()
        return HostSample(
            cpu_pct=cpu,
            memory_used_bytes=mem.total - mem.available,
            memory_available_bytes=mem.available,
        )
