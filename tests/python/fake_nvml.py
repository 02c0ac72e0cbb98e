"""A stand-in for the pynvml module, for machines without an NVIDIA driver.

It has pynvml's interface (the real module's constants and NVMLError classes, and the
functions NvmlBackend calls), simulates GPUs of known shapes, and raises exactly the
errors a real driver raises for what a GPU does not support. It is used only where the
real NVML cannot run; on a GPU machine the same tests' live counterparts use pynvml.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml as _real

GIB = 1024**3


@dataclass
class FakeMig:
    name: str
    gpu_instance_id: int
    compute_instance_id: int
    memory_total: int
    memory_used: int
    uuid: str


@dataclass
class FakeGpu:
    name: str
    uuid: str
    bus_id: str
    cc: tuple[int, int]
    memory_total: int
    power_limit_mw: int
    max_sm_mhz: int
    max_mem_mhz: int
    pcie_max: tuple[int, int]  # generation, width
    mig: tuple[int, int] | None = None  # current, pending; None: not supported
    mig_devices: list[FakeMig] = field(default_factory=list)
    nvlinks: list[str] | None = None  # remote bus id per link; None: no NVLink
    processes: list[tuple[int, int | None]] = field(default_factory=list)  # pid, used bytes (None: N/A)
    unsupported: set[str] = field(default_factory=set)  # names of pynvml functions that answer NOT_SUPPORTED
    phase: float = 0.0


class FakeNvml:
    """Simulated NVML with ``gpus``; ``init_error`` makes nvmlInit fail with that NVML error code."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        init_error: int | None = None,
        driver: str = "550.54.15",
        cuda: int = 12040,
        ancestors: dict[tuple[int, int], int] | None = None,
        nvswitch: bool = False,
    ) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.driver = driver
        self.cuda = cuda
        self.ancestors = ancestors or {}
        self.nvswitch = nvswitch
        self.initialised = 0
        self.ticks = 0

    def __getattr__(self, name: str) -> Any:
        # Constants and error classes are the real module's, so `except nvml.NVMLError` works.
        if name.startswith("NVML"):
            return getattr(_real, name)
        raise AttributeError(name)

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def _fail(code: int) -> None:
        raise _real.NVMLError(code)

    def _check(self, gpu: FakeGpu, fn: str) -> None:
        if self.initialised <= 0:
            self._fail(_real.NVML_ERROR_UNINITIALIZED)
        if fn in gpu.unsupported:
            self._fail(_real.NVML_ERROR_NOT_SUPPORTED)

    def _wave(self, gpu: FakeGpu, lo: float, hi: float, period: int = 40) -> float:
        x = math.sin(2 * math.pi * (self.ticks + gpu.phase * period) / period)
        return lo + (hi - lo) * (x + 1) / 2

    def tick(self) -> None:
        """Advance the simulated load by one reading."""
        self.ticks += 1

    # -- system --------------------------------------------------------------------------

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            self._fail(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.initialised -= 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:
        if not 0 <= i < len(self.gpus):
            self._fail(_real.NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[i]

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def nvmlSystemGetNVMLVersion(self) -> str:
        return f"12.{self.driver}"

    # -- static facts --------------------------------------------------------------------

    def nvmlDeviceGetName(self, h: Any) -> str:
        return h.name

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return h.uuid

    def nvmlDeviceGetPciInfo(self, h: FakeGpu) -> Any:
        self._check(h, "nvmlDeviceGetPciInfo")
        return SimpleNamespace(busId=f"0000{h.bus_id}".encode())

    def nvmlDeviceGetCudaComputeCapability(self, h: FakeGpu) -> tuple[int, int]:
        self._check(h, "nvmlDeviceGetCudaComputeCapability")
        return h.cc

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> Any:
        if isinstance(h, FakeMig):
            return SimpleNamespace(total=h.memory_total, used=h.memory_used, free=h.memory_total - h.memory_used)
        self._check(h, "nvmlDeviceGetMemoryInfo")
        used = int(self._wave(h, 0.05, 0.7) * h.memory_total)
        return SimpleNamespace(total=h.memory_total, used=used, free=h.memory_total - used)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: FakeGpu) -> int:
        self._check(h, "nvmlDeviceGetMaxPcieLinkGeneration")
        return h.pcie_max[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: FakeGpu) -> int:
        self._check(h, "nvmlDeviceGetMaxPcieLinkWidth")
        return h.pcie_max[1]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: FakeGpu) -> int:
        self._check(h, "nvmlDeviceGetCurrPcieLinkGeneration")
        return h.pcie_max[0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: FakeGpu) -> int:
        self._check(h, "nvmlDeviceGetCurrPcieLinkWidth")
        return h.pcie_max[1]

    def nvmlDeviceGetPowerManagementLimit(self, h: FakeGpu) -> int:
        self._check(h, "nvmlDeviceGetPowerManagementLimit")
        return h.power_limit_mw

    def nvmlDeviceGetMaxClockInfo(self, h: FakeGpu, clock: int) -> int:
        self._check(h, "nvmlDeviceGetMaxClockInfo")
        return h.max_sm_mhz if clock == _real.NVML_CLOCK_SM else h.max_mem_mhz

    def nvmlDeviceGetMigMode(self, h: FakeGpu) -> tuple[int, int]:
        if h.mig is None:
            self._fail(_real.NVML_ERROR_NOT_SUPPORTED)
        return h.mig

    def nvmlDeviceGetMaxMigDeviceCount(self, h: FakeGpu) -> int:
        return 7 if h.mig is not None else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: FakeGpu, i: int) -> FakeMig:
        if i >= len(h.mig_devices):
            self._fail(_real.NVML_ERROR_NOT_FOUND)
        return h.mig_devices[i]

    def nvmlDeviceGetGpuInstanceId(self, h: FakeMig) -> int:
        return h.gpu_instance_id

    def nvmlDeviceGetComputeInstanceId(self, h: FakeMig) -> int:
        return h.compute_instance_id

    def nvmlDeviceGetNvLinkState(self, h: FakeGpu, link: int) -> int:
        if h.nvlinks is None:
            self._fail(_real.NVML_ERROR_NOT_SUPPORTED)
        if link >= len(h.nvlinks):
            self._fail(_real.NVML_ERROR_INVALID_ARGUMENT)
        return _real.NVML_FEATURE_ENABLED

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: FakeGpu, link: int) -> Any:
        assert h.nvlinks is not None
        return SimpleNamespace(busId=f"0000{h.nvlinks[link]}")

    def nvmlDeviceGetTopologyCommonAncestor(self, a: FakeGpu, b: FakeGpu) -> int:
        i, j = self.gpus.index(a), self.gpus.index(b)
        return self.ancestors.get((min(i, j), max(i, j)), _real.NVML_TOPOLOGY_SYSTEM)

    def nvmlDeviceGetP2PStatus(self, a: FakeGpu, b: FakeGpu, index: int) -> int:
        ok = self.nvswitch and index == _real.NVML_P2P_CAPS_INDEX_NVLINK
        return _real.NVML_P2P_STATUS_OK if ok else _real.NVML_P2P_STATUS_NOT_SUPPORTED

    # -- readings ------------------------------------------------------------------------

    def nvmlDeviceGetUtilizationRates(self, h: FakeGpu) -> Any:
        self._check(h, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=round(self._wave(h, 0, 100)), memory=round(self._wave(h, 0, 60)))

    def nvmlDeviceGetPowerUsage(self, h: FakeGpu) -> int:
        self._check(h, "nvmlDeviceGetPowerUsage")
        return int(self._wave(h, 0.1, 0.9) * h.power_limit_mw)

    def nvmlDeviceGetTemperature(self, h: FakeGpu, sensor: int) -> int:
        self._check(h, "nvmlDeviceGetTemperature")
        return round(self._wave(h, 32, 71))

    def nvmlDeviceGetClockInfo(self, h: FakeGpu, clock: int) -> int:
        self._check(h, "nvmlDeviceGetClockInfo")
        if clock == _real.NVML_CLOCK_SM:
            return round(self._wave(h, 0.3, 1.0) * h.max_sm_mhz)
        return h.max_mem_mhz

    def nvmlDeviceGetPcieThroughput(self, h: FakeGpu, counter: int) -> int:
        self._check(h, "nvmlDeviceGetPcieThroughput")
        return round(self._wave(h, 100, 20_000_000))  # KB/s

    def nvmlDeviceGetComputeRunningProcesses(self, h: FakeGpu) -> list[Any]:
        self._check(h, "nvmlDeviceGetComputeRunningProcesses")
        na = _real.NVML_VALUE_NOT_AVAILABLE_ulonglong.value
        return [SimpleNamespace(pid=pid, usedGpuMemory=na if used is None else used) for pid, used in h.processes]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: FakeGpu) -> list[Any]:
        self._check(h, "nvmlDeviceGetGraphicsRunningProcesses")
        return []


# -- the machines the tests and the replay recordings use ------------------------------


def rtx_4090_workstation() -> FakeNvml:
    """One consumer GPU: no MIG, no NVLink, no PCIe counters, process memory not attributable."""
    gpu = FakeGpu(
        name="NVIDIA GeForce RTX 4090",
        uuid="GPU-5b1f7c0e-4d5a-4f2e-9a51-0c3f2d6e8a41",
        bus_id=":01:00.0",
        cc=(8, 9),
        memory_total=24 * GIB,
        power_limit_mw=450_000,
        max_sm_mhz=3120,
        max_mem_mhz=10501,
        pcie_max=(4, 16),
        processes=[(4242, None)],
        unsupported={"nvmlDeviceGetPcieThroughput", "nvmlDeviceGetGraphicsRunningProcesses"},
    )
    return FakeNvml([gpu], driver="560.35.03", cuda=12060)


def h100_pair() -> FakeNvml:
    """Two H100 SXM joined by 18 NVLinks each, under one PCIe host bridge."""
    buses = [":18:00.0", ":2A:00.0"]
    gpus = [
        FakeGpu(
            name="NVIDIA H100 80GB HBM3",
            uuid=f"GPU-0a6c1e52-7b1d-4c3e-8f20-6d4b2a9c0e{10 + i}",
            bus_id=buses[i],
            cc=(9, 0),
            memory_total=80 * GIB,
            power_limit_mw=700_000,
            max_sm_mhz=1980,
            max_mem_mhz=2619,
            pcie_max=(5, 16),
            mig=(_real.NVML_DEVICE_MIG_DISABLE, _real.NVML_DEVICE_MIG_DISABLE),
            nvlinks=[buses[1 - i]] * 18,
            processes=[(31337, 42 * GIB)] if i == 0 else [],
            phase=0.5 * i,
        )
        for i in range(2)
    ]
    return FakeNvml(gpus, ancestors={(0, 1): _real.NVML_TOPOLOGY_HOSTBRIDGE})


def dgx_a100_with_mig() -> FakeNvml:
    """Eight A100 SXM4 80GB on NVSwitches (12 links each); GPU 0 split into three MIG devices."""
    switch_buses = [":C4:00.0", ":C5:00.0", ":C6:00.0", ":C7:00.0", ":C8:00.0", ":C9:00.0"]
    gpus = []
    for i in range(8):
        gpus.append(
            FakeGpu(
                name="NVIDIA A100-SXM4-80GB",
                uuid=f"GPU-7d2e9f40-3c8b-4a61-b5e7-91c0d4f8a2{i:02d}",
                bus_id=f":{0x07 + 0x10 * i:02X}:00.0",
                cc=(8, 0),
                memory_total=80 * GIB,
                power_limit_mw=400_000,
                max_sm_mhz=1410,
                max_mem_mhz=1593,
                pcie_max=(4, 16),
                mig=(_real.NVML_DEVICE_MIG_ENABLE,) * 2 if i == 0 else (_real.NVML_DEVICE_MIG_DISABLE,) * 2,
                mig_devices=(
                    [
                        FakeMig("NVIDIA A100-SXM4-80GB MIG 3g.40gb", 2, 0, 40 * GIB, 9 * GIB, "MIG-1f0c7a5e-0001"),
                        FakeMig("NVIDIA A100-SXM4-80GB MIG 2g.20gb", 3, 0, 20 * GIB, 1 * GIB, "MIG-1f0c7a5e-0002"),
                        FakeMig("NVIDIA A100-SXM4-80GB MIG 1g.10gb", 9, 0, 10 * GIB, 0, "MIG-1f0c7a5e-0003"),
                    ]
                    if i == 0
                    else []
                ),
                nvlinks=[switch_buses[k % 6] for k in range(12)],
                processes=[(5000 + i, 30 * GIB)] if i % 3 else [],
                phase=i / 8,
            )
        )
    ancestors = {}
    for i in range(8):
        for j in range(i + 1, 8):
            same_pair = i // 2 == j // 2
            same_socket = i // 4 == j // 4
            ancestors[(i, j)] = (
                _real.NVML_TOPOLOGY_MULTIPLE
                if same_pair
                else _real.NVML_TOPOLOGY_NODE
                if same_socket
                else _real.NVML_TOPOLOGY_SYSTEM
            )
    return FakeNvml(gpus, driver="535.183.06", cuda=12020, ancestors=ancestors, nvswitch=True)


MACHINES = {
    "1gpu-rtx4090": rtx_4090_workstation,
    "2gpu-h100-nvlink": h100_pair,
    "8gpu-a100-mig": dgx_a100_with_mig,
}
