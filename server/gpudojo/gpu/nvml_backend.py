"""Live GPU facts and readings from NVML (nvidia-ml-py).

pynvml is imported and initialised on first use, never at import time, and every
call is made from the probe's worker thread. A field a GPU refuses is recorded in
the record's ``unsupported`` list; it never raises out of here.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from .models import (
    GpuFacts,
    GpuInventory,
    GpuProcess,
    GpuSample,
    MigInstance,
    MigState,
    NvLinkState,
    Topology,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

# nvidia-smi topo -m spellings of NVML's common-ancestor levels.
_TOPOLOGY_LEVELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


class GpuUnavailable(Exception):
    """NVML cannot be used here; the message says why and what still works."""


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _bus_id(pci: Any) -> str:
    # NVML spells bus ids with 8 hex digits of domain ("00000000:3B:00.0"); the
    # remote end of an NVLink may use 4. Normalise to the short, upper-case form.
    text = _text(getattr(pci, "busId", "") or getattr(pci, "busIdLegacy", "")).upper()
    domain, _, rest = text.partition(":")
    return f"{domain[-4:]}:{rest}" if rest else text


def unavailable_reason(nvml: Any, err: BaseException) -> str:
    """Words for why NVML could not start, with what the user can do next."""
    code = getattr(err, "value", None)
    if code == nvml.NVML_ERROR_LIBRARY_NOT_FOUND:
        return (
            "No NVIDIA driver found (libnvidia-ml.so could not be loaded), so GPU telemetry is off. "
            "Install the NVIDIA driver to see GPUs here."
        )
    if code == nvml.NVML_ERROR_DRIVER_NOT_LOADED:
        return "The NVIDIA driver is installed but not loaded (is the kernel module missing?): GPU telemetry is off."
    if code == nvml.NVML_ERROR_NO_PERMISSION:
        return (
            "No permission to talk to the NVIDIA driver (/dev/nvidia*): GPU telemetry is off. "
            "Run the server as a user in the video group, or check the container's device mounts."
        )
    if code == nvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "NVML and the loaded NVIDIA kernel driver are different versions (reboot after a driver upgrade)."
    return f"NVML failed to start ({err}), so GPU telemetry is off."


class NvmlBackend:
    """Reads GPUs through NVML. ``nvml`` is the pynvml module (or one with its interface)."""

    source = "nvml"

    def __init__(self, nvml: Any | None = None) -> None:
        self._nvml = nvml
        self._handles: list[Any] = []
        self._started = False

    # -- lifecycle -------------------------------------------------------------------

    def _module(self) -> Any:
        if self._nvml is None:
            try:
                self._nvml = importlib.import_module("pynvml")
            except ImportError as err:  # pragma: no cover - nvidia-ml-py is a dependency
                raise GpuUnavailable(
                    "nvidia-ml-py is not installed in the server's environment: GPU telemetry is off."
                ) from err
        return self._nvml

    def start(self) -> None:
        """Initialise NVML and list the GPUs; raises GpuUnavailable with the reason."""
        if self._started:
            return
        nvml = self._module()
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as err:
            raise GpuUnavailable(unavailable_reason(nvml, err)) from err
        try:
            count = nvml.nvmlDeviceGetCount()
            self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except nvml.NVMLError as err:
            nvml.nvmlShutdown()
            raise GpuUnavailable(unavailable_reason(nvml, err)) from err
        if not self._handles:
            nvml.nvmlShutdown()
            raise GpuUnavailable(
                "The NVIDIA driver is loaded but reports no GPUs (are they assigned to this container or VM?)."
            )
        self._started = True

    def close(self) -> None:
        if self._started:
            self._started = False
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:  # pragma: no cover - shutdown after a lost GPU
                log.debug("nvmlShutdown failed", exc_info=True)

    # -- helpers ---------------------------------------------------------------------

    def _try(self, unsupported: list[str], field: str, fn: Callable[..., T], *args: Any) -> T | None:
        try:
            return fn(*args)
        except self._nvml.NVMLError as err:
            if getattr(err, "value", None) != self._nvml.NVML_ERROR_NOT_SUPPORTED:
                log.debug("NVML %s failed: %s", field, err)
            unsupported.append(field)
            return None

    # -- static facts ----------------------------------------------------------------

    def inventory(self) -> GpuInventory:
        self.start()
        nvml = self._nvml
        top: list[str] = []
        driver = self._try(top, "driver_version", nvml.nvmlSystemGetDriverVersion)
        cuda = self._try(top, "cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion)
        nvml_version = self._try(top, "nvml_version", nvml.nvmlSystemGetNVMLVersion)
        facts = [self._facts(i, h) for i, h in enumerate(self._handles)]
        by_bus = {f.pci_bus_id: f.index for f in facts if f.pci_bus_id}
        for f in facts:
            for link in f.nvlinks:
                link.remote_gpu_index = by_bus.get(link.remote_pci_bus_id or "")
        return GpuInventory(
            available=True,
            source="nvml",
            driver_version=_text(driver) if driver is not None else None,
            cuda_driver_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
            nvml_version=_text(nvml_version) if nvml_version is not None else None,
            gpus=facts,
            topology=self._topology(facts),
        )

    def _facts(self, index: int, h: Any) -> GpuFacts:
        nvml = self._nvml
        u: list[str] = []
        cc = self._try(u, "compute_capability", nvml.nvmlDeviceGetCudaComputeCapability, h)
        mem = self._try(u, "memory_total_bytes", nvml.nvmlDeviceGetMemoryInfo, h)
        pci = self._try(u, "pci_bus_id", nvml.nvmlDeviceGetPciInfo, h)
        power_limit = self._try(u, "power_limit_w", nvml.nvmlDeviceGetPowerManagementLimit, h)
        return GpuFacts(
            index=index,
            name=_text(self._try(u, "name", nvml.nvmlDeviceGetName, h) or f"GPU {index}"),
            uuid=_text(uuid) if (uuid := self._try(u, "uuid", nvml.nvmlDeviceGetUUID, h)) else None,
            pci_bus_id=_bus_id(pci) if pci is not None else None,
            compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
            memory_total_bytes=int(mem.total) if mem is not None else None,
            pcie_max_generation=self._try(u, "pcie_max_generation", nvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
            pcie_max_width=self._try(u, "pcie_max_width", nvml.nvmlDeviceGetMaxPcieLinkWidth, h),
            power_limit_w=power_limit / 1000 if power_limit is not None else None,
            max_sm_clock_mhz=self._try(u, "max_sm_clock_mhz", nvml.nvmlDeviceGetMaxClockInfo, h, nvml.NVML_CLOCK_SM),
            max_mem_clock_mhz=self._try(u, "max_mem_clock_mhz", nvml.nvmlDeviceGetMaxClockInfo, h, nvml.NVML_CLOCK_MEM),
            mig=self._mig(h, u),
            nvlinks=self._nvlinks(h),
            unsupported=u,
        )

    def _mig(self, h: Any, unsupported: list[str]) -> MigState:
        nvml = self._nvml
        modes = self._try(unsupported, "mig", nvml.nvmlDeviceGetMigMode, h)
        if modes is None:
            return MigState()

        def word(mode: int) -> str:
            return "enabled" if mode == nvml.NVML_DEVICE_MIG_ENABLE else "disabled"

        state = MigState(current=word(modes[0]), pending=word(modes[1]))
        if state.current != "enabled":
            return state
        skipped: list[str] = []
        count = self._try(skipped, "mig", nvml.nvmlDeviceGetMaxMigDeviceCount, h) or 0
        for i in range(count):
            mh = self._try(skipped, "mig", nvml.nvmlDeviceGetMigDeviceHandleByIndex, h, i)
            if mh is None:  # slots without a MIG device answer NOT_FOUND
                continue
            mem = self._try(skipped, "mig", nvml.nvmlDeviceGetMemoryInfo, mh)
            name = self._try(skipped, "mig", nvml.nvmlDeviceGetName, mh)
            uuid = self._try(skipped, "mig", nvml.nvmlDeviceGetUUID, mh)
            state.instances.append(
                MigInstance(
                    index=i,
                    uuid=_text(uuid) if uuid else None,
                    name=_text(name) if name else None,
                    gpu_instance_id=self._try(skipped, "mig", nvml.nvmlDeviceGetGpuInstanceId, mh),
                    compute_instance_id=self._try(skipped, "mig", nvml.nvmlDeviceGetComputeInstanceId, mh),
                    memory_total_bytes=int(mem.total) if mem is not None else None,
                    memory_used_bytes=int(mem.used) if mem is not None else None,
                )
            )
        return state

    def _nvlinks(self, h: Any) -> list[NvLinkState]:
        nvml = self._nvml
        links: list[NvLinkState] = []
        for link in range(nvml.NVML_NVLINK_MAX_LINKS):
            try:
                state = nvml.nvmlDeviceGetNvLinkState(h, link)
            except nvml.NVMLError:
                # No NVLink at all answers NOT_SUPPORTED on link 0; past the last link, INVALID_ARGUMENT.
                break
            remote = None
            if state == nvml.NVML_FEATURE_ENABLED:
                try:
                    remote = _bus_id(nvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link))
                except nvml.NVMLError:
                    remote = None
            links.append(NvLinkState(link=link, active=state == nvml.NVML_FEATURE_ENABLED, remote_pci_bus_id=remote))
        return links

    def _topology(self, facts: list[GpuFacts]) -> Topology:
        nvml = self._nvml
        n = len(self._handles)
        matrix = [["X"] * n for _ in range(n)]
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                nvlinks = self._nvlinks_between(facts, i, j)
                if nvlinks:
                    matrix[i][j] = f"NV{nvlinks}"
                    continue
                try:
                    level = nvml.nvmlDeviceGetTopologyCommonAncestor(self._handles[i], self._handles[j])
                    matrix[i][j] = _TOPOLOGY_LEVELS.get(level, "SYS")
                except nvml.NVMLError:
                    matrix[i][j] = "?"
        return Topology(gpus=list(range(n)), matrix=matrix)

    def _nvlinks_between(self, facts: list[GpuFacts], i: int, j: int) -> int:
        """NVLinks from GPU i to GPU j: direct links, or all of i's links when an NVSwitch joins them."""
        nvml = self._nvml
        direct = sum(1 for link in facts[i].nvlinks if link.active and link.remote_gpu_index == j)
        if direct:
            return direct
        active = sum(1 for link in facts[i].nvlinks if link.active)
        if not active:
            return 0
        try:
            status = nvml.nvmlDeviceGetP2PStatus(self._handles[i], self._handles[j], nvml.NVML_P2P_CAPS_INDEX_NVLINK)
        except nvml.NVMLError:
            return 0
        return active if status == nvml.NVML_P2P_STATUS_OK else 0

    # -- readings --------------------------------------------------------------------

    def sample(self) -> list[GpuSample]:
        self.start()
        return [self._sample(i, h) for i, h in enumerate(self._handles)]

    def _sample(self, index: int, h: Any) -> GpuSample:
        nvml = self._nvml
        u: list[str] = []
        util = self._try(u, "utilization", nvml.nvmlDeviceGetUtilizationRates, h)
        mem = self._try(u, "memory", nvml.nvmlDeviceGetMemoryInfo, h)
        power = self._try(u, "power_w", nvml.nvmlDeviceGetPowerUsage, h)
        tx = self._try(u, "pcie_throughput", nvml.nvmlDeviceGetPcieThroughput, h, nvml.NVML_PCIE_UTIL_TX_BYTES)
        rx = None
        if tx is not None:
            rx = self._try(u, "pcie_throughput", nvml.nvmlDeviceGetPcieThroughput, h, nvml.NVML_PCIE_UTIL_RX_BYTES)
        return GpuSample(
            index=index,
            utilization_gpu_pct=util.gpu if util is not None else None,
            utilization_memory_pct=util.memory if util is not None else None,
            memory_used_bytes=int(mem.used) if mem is not None else None,
            memory_free_bytes=int(mem.free) if mem is not None else None,
            power_w=power / 1000 if power is not None else None,
            temperature_c=self._try(u, "temperature_c", nvml.nvmlDeviceGetTemperature, h, nvml.NVML_TEMPERATURE_GPU),
            sm_clock_mhz=self._try(u, "sm_clock_mhz", nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_SM),
            mem_clock_mhz=self._try(u, "mem_clock_mhz", nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_MEM),
            pcie_generation=self._try(u, "pcie_generation", nvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
            pcie_width=self._try(u, "pcie_width", nvml.nvmlDeviceGetCurrPcieLinkWidth, h),
            # NVML reports PCIe throughput in KB/s over a 20 ms window.
            pcie_tx_bytes_per_s=tx * 1024.0 if tx is not None else None,
            pcie_rx_bytes_per_s=rx * 1024.0 if rx is not None else None,
            processes=self._processes(h, u),
            unsupported=sorted(set(u)),
        )

    def _processes(self, h: Any, unsupported: list[str]) -> list[GpuProcess]:
        nvml = self._nvml
        procs: list[GpuProcess] = []
        for kind, fn in (
            ("compute", nvml.nvmlDeviceGetComputeRunningProcesses),
            ("graphics", nvml.nvmlDeviceGetGraphicsRunningProcesses),
        ):
            for p in self._try(unsupported, f"{kind}_processes", fn, h) or []:
                used = getattr(p, "usedGpuMemory", None)
                # NVML_VALUE_NOT_AVAILABLE (2**64 - 1) when the driver cannot attribute memory.
                used = int(used) if used is not None and used < 2**63 else None
                procs.append(GpuProcess(pid=int(p.pid), kind=kind, used_memory_bytes=used))
        return procs
