"""The live NVML path, driven by a simulated NVML where no driver exists (and by the real one)."""

from __future__ import annotations

import pynvml
import pytest

from conftest import needs_no_driver
from fake_nvml import FakeNvml, dgx_a100_with_mig, h100_pair, rtx_4090_workstation
from gpudojo.gpu.nvml_backend import GpuUnavailable, NvmlBackend
from gpudojo.gpu.probe import GpuProbe


def test_h100_pair_facts_and_nvlink_topology():
    inv = NvmlBackend(h100_pair()).inventory()
    assert inv.available and inv.driver_version == "550.54.15" and inv.cuda_driver_version == "12.4"
    assert [g.name for g in inv.gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    g0 = inv.gpus[0]
    assert g0.compute_capability == "9.0"
    assert g0.memory_total_bytes == 80 * 1024**3
    assert g0.power_limit_w == 700.0
    assert (g0.pcie_max_generation, g0.pcie_max_width) == (5, 16)
    assert g0.pci_bus_id == "0000:18:00.0"
    assert g0.mig.current == "disabled" and g0.mig.instances == []
    assert len(g0.nvlinks) == 18 and all(link.remote_gpu_index == 1 for link in g0.nvlinks)
    assert inv.topology.matrix == [["X", "NV18"], ["NV18", "X"]]
    assert g0.unsupported == []


def test_nvswitch_machine_shows_all_links_between_every_pair_and_mig_instances():
    inv = NvmlBackend(dgx_a100_with_mig()).inventory()
    assert len(inv.gpus) == 8
    assert {inv.topology.matrix[i][j] for i in range(8) for j in range(8) if i != j} == {"NV12"}
    mig = inv.gpus[0].mig
    assert mig.current == "enabled"
    assert [m.name.split()[-1] for m in mig.instances] == ["3g.40gb", "2g.20gb", "1g.10gb"]
    assert mig.instances[0].memory_total_bytes == 40 * 1024**3
    assert inv.gpus[1].mig.current == "disabled"


def test_pcie_levels_without_nvlink_follow_nvidia_smi_names():
    nvml = h100_pair()
    for gpu in nvml.gpus:
        gpu.nvlinks = None
    inv = NvmlBackend(nvml).inventory()
    assert inv.topology.matrix == [["X", "PHB"], ["PHB", "X"]]
    assert inv.gpus[0].nvlinks == []


def test_unsupported_fields_are_named_never_raised():
    backend = NvmlBackend(rtx_4090_workstation())
    inv = backend.inventory()
    assert inv.gpus[0].mig.current == "unsupported"
    assert "mig" in inv.gpus[0].unsupported
    [s] = backend.sample()
    assert s.pcie_tx_bytes_per_s is None and s.pcie_rx_bytes_per_s is None
    assert {"pcie_throughput", "graphics_processes"} <= set(s.unsupported)
    # Memory the driver cannot attribute (NVML_VALUE_NOT_AVAILABLE) is unknown, not 16 EiB.
    assert s.processes[0].pid == 4242 and s.processes[0].used_memory_bytes is None
    assert s.utilization_gpu_pct is not None and s.temperature_c is not None


def test_every_reading_field_unsupported_still_gives_a_sample():
    nvml = rtx_4090_workstation()
    nvml.gpus[0].unsupported |= {
        name for name in dir(FakeNvml) if name.startswith("nvmlDeviceGet") and "Count" not in name
    }
    backend = NvmlBackend(nvml)
    inv = backend.inventory()
    assert inv.gpus[0].memory_total_bytes is None and inv.gpus[0].compute_capability is None
    [s] = backend.sample()
    assert s.memory_used_bytes is None and s.power_w is None
    assert {"utilization", "memory", "power_w", "temperature_c", "sm_clock_mhz"} <= set(s.unsupported)


def test_sample_units_watts_and_bytes_per_second():
    nvml = h100_pair()
    [s0, _] = NvmlBackend(nvml).sample()
    assert 70 <= s0.power_w <= 630  # mW from NVML -> W
    assert s0.pcie_tx_bytes_per_s % 1024 == 0  # KB/s from NVML -> bytes/s
    assert s0.processes[0].used_memory_bytes == 42 * 1024**3


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "No NVIDIA driver found"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "not loaded"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "No permission"),
    ],
)
def test_nvml_start_failures_become_reasons(code, words):
    probe = GpuProbe(NvmlBackend(FakeNvml([], init_error=code)))
    inv = probe.inventory()
    assert not inv.available and words in inv.reason
    assert probe.mode == "cpu"
    assert probe.gpu_samples() == []


def test_zero_gpus_is_unavailable_with_reason():
    with pytest.raises(GpuUnavailable, match="no GPUs"):
        NvmlBackend(FakeNvml([])).inventory()


def test_probe_retries_nvml_after_the_retry_interval():
    nvml = FakeNvml(h100_pair().gpus, init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    now = [1000.0]
    probe = GpuProbe(NvmlBackend(nvml), retry_after_s=30, clock=lambda: now[0])
    assert not probe.inventory().available
    nvml.init_error = None  # the driver comes up
    now[0] += 10
    assert not probe.inventory().available  # not retried yet
    now[0] += 25
    assert probe.inventory().available and probe.mode == "gpu"


def test_probe_names_processes_of_this_host():
    import os

    nvml = h100_pair()
    nvml.gpus[0].processes = [(os.getpid(), 1024)]
    probe = GpuProbe(NvmlBackend(nvml))
    [s0, _] = probe.gpu_samples()
    assert s0.processes[0].name and "python" in s0.processes[0].name.lower()


def test_close_shuts_nvml_down():
    nvml = h100_pair()
    backend = NvmlBackend(nvml)
    backend.inventory()
    assert nvml.initialised == 1
    backend.close()
    assert nvml.initialised == 0


@needs_no_driver
def test_real_nvml_without_a_driver_reports_why():
    probe = GpuProbe(NvmlBackend())
    d = probe.devices()
    assert d.available is False and d.mode == "cpu"
    assert "No NVIDIA driver found" in d.reason
    assert d.host.cores_logical >= 1 and d.host.memory_total_bytes > 0
    assert 0 <= d.host_sample.cpu_pct <= 100
