"""Shapes of what the GPU probe reports: static facts, live samples, host facts.

Every GPU field that NVML may refuse is optional; its name is then listed in the
record's ``unsupported`` list so the UI can say "not supported" instead of "0".
Units are in the field names: bytes, pct (0-100), w (watts), c (Celsius), mhz, s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class MigInstance(_Model):
    """One MIG device carved out of a GPU."""

    index: int = Field(description="MIG device index within its parent GPU")
    uuid: str | None = None
    name: str | None = Field(None, description="Profile name, e.g. 'NVIDIA H100 80GB HBM3 MIG 1g.10gb'")
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None


class MigState(_Model):
    current: Literal["enabled", "disabled", "unsupported"] = "unsupported"
    pending: Literal["enabled", "disabled", "unsupported"] = "unsupported"
    instances: list[MigInstance] = Field(default_factory=list)


class NvLinkState(_Model):
    link: int
    active: bool
    remote_pci_bus_id: str | None = None
    remote_gpu_index: int | None = Field(None, description="Index of the peer GPU when the link ends on one")


class GpuFacts(_Model):
    """What does not change while the driver is loaded."""

    index: int
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    compute_capability: str | None = Field(None, description="e.g. '9.0'")
    memory_total_bytes: int | None = None
    pcie_max_generation: int | None = None
    pcie_max_width: int | None = None
    power_limit_w: float | None = None
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    mig: MigState = Field(default_factory=MigState)
    nvlinks: list[NvLinkState] = Field(default_factory=list)
    unsupported: list[str] = Field(default_factory=list)


class GpuProcess(_Model):
    pid: int
    name: str | None = None
    kind: Literal["compute", "graphics"] = "compute"
    used_memory_bytes: int | None = None


class GpuSample(_Model):
    """One reading of a GPU's counters."""

    index: int
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    pcie_generation: int | None = None
    pcie_width: int | None = None
    pcie_tx_bytes_per_s: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    processes: list[GpuProcess] = Field(default_factory=list)
    unsupported: list[str] = Field(default_factory=list)


class Topology(_Model):
    """The GPU-to-GPU matrix that `nvidia-smi topo -m` prints.

    Cells: X (self), NV<n> (n NVLinks), PIX, PXB, PHB, NODE, SYS.
    """

    gpus: list[int] = Field(default_factory=list)
    matrix: list[list[str]] = Field(default_factory=list)


class RecordingInfo(_Model):
    """What a replayed recording is: measured or synthetic, its rate (Hz) and length (s)."""

    synthetic: bool = Field(False, description="True for a generated stand-in, not measured on a GPU")
    note: str | None = Field(None, description="One line on what the recording shows")
    rate_hz: float | None = Field(None, description="Rate the samples were taken at (Hz)")
    duration_s: float | None = Field(None, description="Time from the first sample to the last (s)")
    cycle_s: float | None = Field(None, description="One pass of the replay: duration plus one period (s)")


class GpuInventory(_Model):
    """Static facts of every visible GPU, or why there are none."""

    available: bool
    reason: str | None = Field(None, description="Why no GPU can be used; null when available")
    source: Literal["nvml", "replay"] = "nvml"
    driver_version: str | None = None
    cuda_driver_version: str | None = Field(None, description="Highest CUDA version the driver supports, e.g. '12.8'")
    nvml_version: str | None = None
    gpus: list[GpuFacts] = Field(default_factory=list)
    topology: Topology | None = None
    recording: RecordingInfo | None = Field(None, description="Set when the facts come from a recording")


class HostFacts(_Model):
    hostname: str
    platform: str
    cpu_model: str
    cores_logical: int
    cores_physical: int | None = None
    memory_total_bytes: int


class HostSample(_Model):
    cpu_pct: float = Field(description="Whole-host CPU use, 0-100")
    memory_used_bytes: int
    memory_available_bytes: int


class TelemetrySample(_Model):
    """One tick of the telemetry stream (a frame of its own, and the items of history)."""

    type: Literal["sample"] = "sample"
    t: float = Field(description="Unix time of the reading, in seconds")
    recording_t: float | None = Field(
        None,
        description="Replay only: recording time of the GPU readings since the replay began, "
        "increasing across passes; modulo recording.cycle_s it is the time into the recording (s)",
    )
    host: HostSample
    gpus: list[GpuSample] = Field(default_factory=list)


class GpuDevice(GpuFacts):
    sample: GpuSample | None = None


class DevicesResponse(_Model):
    """GET /gpu/devices: facts and a current reading of every GPU, and of the host."""

    available: bool
    reason: str | None = None
    mode: Literal["gpu", "replay", "cpu"] = Field(
        description="gpu: live NVML; replay: a recorded NVML session; cpu: no GPU, host only"
    )
    source: Literal["nvml", "replay"]
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    nvml_version: str | None = None
    gpus: list[GpuDevice] = Field(default_factory=list)
    topology: Topology | None = None
    recording: RecordingInfo | None = Field(None, description="Replay only: what the recording is")
    host: HostFacts
    host_sample: HostSample
    t: float
    recording_t: float | None = Field(None, description="Replay only: as in TelemetrySample (s)")


class TelemetryControl(_Model):
    """What a telemetry subscriber may send over its socket."""

    type: Literal["pause", "resume", "rate"]
    hz: float | None = Field(None, gt=0, description="New rate for type=rate, clamped by the server (Hz)")


class TelemetryHistory(_Model):
    """First message on a telemetry socket: recent samples and the rate in force."""

    type: Literal["history"] = "history"
    rate_hz: float
    max_hz: float
    mode: Literal["gpu", "replay", "cpu"]
    recording: RecordingInfo | None = Field(None, description="Replay only: what the recording is")
    samples: list[TelemetrySample]


class TelemetryState(_Model):
    """The answer to a control message: whether this subscriber is paused, and its rate."""

    type: Literal["state"] = "state"
    paused: bool
    rate_hz: float
