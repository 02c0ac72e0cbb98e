"""gpu_info.py: a health report for the GPUs of this machine (starter: see the TODOs).

    python gpu_info.py [--json] [--skip-bench]

It reads each GPU's facts from NVML (pynvml), the NVLink links and the connection between
every pair of GPUs, the MIG state, then measures a bf16 matmul and a device-to-device copy on
every CUDA device and holds them against the chip's datasheet peaks. The report goes to
stdout (text, or one JSON document with --json); the exit code says how things stand:

    0  healthy: every GPU passed every rule
    1  degraded: at least one rule found a problem (the report lists them)
    2  no GPU: NVML could not start or reports no GPU (the host facts are still reported)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys

EXIT_HEALTHY, EXIT_DEGRADED, EXIT_NO_GPU = 0, 1, 2
STATUS = {EXIT_HEALTHY: "healthy", EXIT_DEGRADED: "degraded", EXIT_NO_GPU: "no-gpu"}

# Datasheet peaks, keyed by a piece of the name NVML and torch report. bf16_tflops is the
# dense BF16 tensor-core rate (datasheets print twice that "with sparsity"); mem_gbps is the
# DRAM bandwidth in GB/s (10^9 bytes per second).
A100_DATASHEET = (
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
PEAKS = {
    "H200 NVL": {
        "bf16_tflops": 835.5,
        "mem_gbps": 4800,
        "source": "https://www.nvidia.com/en-us/data-center/h200/ (1,671 TFLOPS BF16 with sparsity)",
    },
    "H200": {
        "bf16_tflops": 989.5,
        "mem_gbps": 4800,
        "source": "https://www.nvidia.com/en-us/data-center/h200/ (H200 SXM, 1,979 TFLOPS BF16 with sparsity)",
    },
    "H100 80GB HBM3": {
        "bf16_tflops": 989.5,
        "mem_gbps": 3350,
        "source": "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet (H100 SXM)",
    },
    "H100 PCIe": {
        "bf16_tflops": 756.5,
        "mem_gbps": 2000,
        "source": "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet (H100 PCIe)",
    },
    "A100-SXM4-80GB": {
        "bf16_tflops": 312,
        "mem_gbps": 2039,
        "source": A100_DATASHEET,
    },
    "A100-SXM4-40GB": {
        "bf16_tflops": 312,
        "mem_gbps": 1555,
        "source": A100_DATASHEET,
    },
    "RTX 4090": {
        "bf16_tflops": 165.2,
        "mem_gbps": 1008,
        "source": "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
        " (BF16 with FP32 accumulate)",
    },
}

MEMORY_FULL_SHARE = 0.95  # more than this share of a GPU's memory in use: degraded
MIN_PEAK_SHARE = 0.50  # a benchmark below half of the datasheet peak: degraded

# nvidia-smi topo -m's words for NVML's common-ancestor levels.
PCIE_PATHS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def peak_for(name: str) -> dict | None:
    """The datasheet peaks of the GPU called ``name`` (the longest matching key), or None.

    A MIG device is a slice of a GPU, so the whole chip's peak does not apply to it."""
    if "MIG" in name:
        return None
    keys = [k for k in PEAKS if k in name]
    return PEAKS[max(keys, key=len)] if keys else None


# --- the host ------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def host_memory_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except ImportError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def torch_version() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.__version__


def host_facts() -> dict:
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_total_bytes": host_memory_bytes(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch_version(),
    }


# --- NVML ----------------------------------------------------------------------------------


class NoGpu(Exception):
    """NVML cannot start or sees no GPU; the message says why."""


def text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def short_bus_id(bus_id) -> str:
    """'00000000:18:00.0' and '0000:18:00.0' both become '0000:18:00.0' (NVML spells the PCI
    domain with 8 or 4 hex digits depending on the call)."""
    domain, _, rest = text(bus_id).upper().partition(":")
    return f"{domain[-4:].rjust(4, '0')}:{rest}" if rest else text(bus_id).upper()


def why_no_nvml(nvml, err) -> str:
    # TODO: say in words why NVML could not start, for at least NVML_ERROR_LIBRARY_NOT_FOUND
    # (no driver installed) and NVML_ERROR_DRIVER_NOT_LOADED (installed, not loaded).
    return f"NVML failed to start: {err}"


def optional(nvml, fn, *args, default=None):
    """fn(*args), or ``default`` when the GPU does not support it (or refuses)."""
    try:
        return fn(*args)
    except nvml.NVMLError:
        return default


def mig_state(nvml, handle) -> dict:
    """MIG mode (current and pending) and the MIG devices of one GPU."""
    # TODO: nvmlDeviceGetMigMode gives [current, pending]; a GPU without MIG raises
    # NVMLError_NotSupported ("unsupported"). When MIG is enabled, list the MIG devices:
    # nvmlDeviceGetMaxMigDeviceCount slots, nvmlDeviceGetMigDeviceHandleByIndex for each
    # (empty slots raise NVMLError_NotFound), then name, ids and memory of each MIG device.
    return {"current": None, "pending": None, "instances": []}


def nvlink_state(nvml, handle) -> tuple[dict, list[str]]:
    """The GPU's NVLink summary, and the PCI bus id at the far end of each active link."""
    # TODO: ask nvmlDeviceGetNvLinkState for links 0, 1, ... up to NVML_NVLINK_MAX_LINKS. A GPU
    # without NVLink raises on link 0; past its last link NVML raises too. For each active
    # link, nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId is the far end.
    return {"links": 0, "active": 0, "down": []}, []


def read_nvml() -> tuple[str | None, list[dict], list[dict]]:
    """(driver version, one dict per GPU, one dict per pair of GPUs); raises NoGpu."""
    try:
        import pynvml as nvml
    except ImportError as err:
        raise NoGpu("pynvml (nvidia-ml-py) is not installed, so NVML cannot be asked") from err
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        raise NoGpu(why_no_nvml(nvml, err)) from err
    try:
        count = nvml.nvmlDeviceGetCount()
        # TODO: a driver that reports zero GPUs is "no GPU" too.
        driver = optional(nvml, nvml.nvmlSystemGetDriverVersion)
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        gpus, remotes = [], []
        for i, h in enumerate(handles):
            # TODO: compute capability, memory (total and used) and the PCI bus id of GPU i.
            links, far_ends = nvlink_state(nvml, h)
            remotes.append(far_ends)
            gpus.append(
                {
                    "index": i,
                    "name": text(nvml.nvmlDeviceGetName(h)),
                    "uuid": text(optional(nvml, nvml.nvmlDeviceGetUUID, h, default="")),
                    "pci_bus_id": None,
                    "compute_capability": None,
                    "memory_total_bytes": None,
                    "memory_used_bytes": None,
                    "mig": mig_state(nvml, h),
                    "nvlink": links,
                }
            )
        topology = read_topology(nvml, handles, gpus, remotes)
        return (text(driver) if driver is not None else None), gpus, topology
    except nvml.NVMLError as err:
        raise NoGpu(f"NVML failed while listing the GPUs: {err}") from err
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def read_topology(nvml, handles, gpus, remotes) -> list[dict]:
    """How each pair of GPUs is connected: NV<n> (n NVLinks) or the PCIe path (PIX ... SYS)."""
    # TODO: one {"gpus": [i, j], "link": ..., "nvlinks": n} per pair i < j (see the README).
    return []


# --- benchmarks ----------------------------------------------------------------------------


def time_cuda_ms(torch, fn, *, inner: int, warmup: int = 5, repeats: int = 7) -> float:
    """Median time of one fn() in ms, from CUDA events around ``inner`` back-to-back calls."""
    # TODO: warm up, then time `repeats` samples of `inner` calls each with a pair of
    # torch.cuda.Event(enable_timing=True), and return the median per call.
    raise NotImplementedError("time_cuda_ms")


def bench_device(torch, index: int) -> dict:
    """One result of benchmarks.results for CUDA device ``index`` (the README lists its fields)."""
    # peak = peak_for(torch.cuda.get_device_name(index)) gives the datasheet figures.
    # TODO: a bf16 matmul (2 n^3 FLOPs) and a device-to-device copy (each byte read once and
    # written once), timed with time_cuda_ms, as TFLOP/s and GB/s and as shares of `peak`.
    raise NotImplementedError("bench_device")


def run_benchmarks(skip: bool) -> dict:
    if skip:
        return {"ran": False, "reason": "skipped (--skip-bench)", "results": []}
    # TODO: run bench_device on every CUDA device torch sees; when there is none (or torch is
    # missing), report why the benchmarks did not run, as the README says.
    return {"ran": False, "reason": "TODO: the benchmarks are not written yet", "results": []}


# --- health --------------------------------------------------------------------------------


def find_problems(gpus: list[dict], benchmarks: dict) -> list[dict]:
    """The README's rules, applied to the facts and the measurements."""
    problems = []
    # TODO: one {"gpu": ..., "check": ..., "detail": ...} per problem the README's rules find:
    # nvlink, mig, memory, matmul, copy.
    return problems


# --- output --------------------------------------------------------------------------------


def gib(n) -> str:
    return f"{n / 2**30:.1f} GiB" if n is not None else "?"


def render(report: dict) -> str:
    h = report["host"]
    lines = [
        f"status: {report['status']} (exit code {report['exit_code']})",
        f"host: {h['cpu_model']}, {h['cpu_count']} CPUs, {gib(h['memory_total_bytes'])}, {h['os']}, "
        f"Python {h['python']}, torch {h['torch']}",
    ]
    if report["error"]:
        lines.append(f"no GPU: {report['error']}")
        return "\n".join(lines)
    lines.append(f"driver: {report['driver_version']}")
    for g in report["gpus"]:
        mig, links = g["mig"], g["nvlink"]
        migs = f"MIG {mig['current']}" + (f" (pending {mig['pending']})" if mig["pending"] != mig["current"] else "")
        if mig["instances"]:
            migs += ": " + ", ".join(f"{m['name']} [GI {m['gpu_instance_id']}]" for m in mig["instances"])
        lines.append(
            f"GPU {g['index']}: {g['name']}, sm_{(g['compute_capability'] or '?').replace('.', '')}, "
            f"{gib(g['memory_used_bytes'])} of {gib(g['memory_total_bytes'])} used, "
            f"NVLink {links['active']}/{links['links']} active, {migs}"
        )
    for p in report["topology"]:
        lines.append(f"GPU {p['gpus'][0]} <-> GPU {p['gpus'][1]}: {p['link']}")
    bench = report["benchmarks"]
    if not bench["ran"]:
        lines.append(f"benchmarks: not run ({bench['reason']})")
    for r in bench["results"]:

        def share(x):
            return f"{x:.0%} of peak" if x is not None else "peak unknown"

        lines.append(
            f"cuda:{r['cuda_device']} {r['name']}: bf16 matmul {r['matmul_tflops']:.1f} TFLOP/s "
            f"({share(r['matmul_share'])}), copy {r['copy_gbps']:.0f} GB/s ({share(r['copy_share'])})"
        )
    for p in report["problems"]:
        where = f"GPU {p['gpu']}" if p["gpu"] is not None else "machine"
        lines.append(f"PROBLEM {where} [{p['check']}]: {p['detail']}")
    return "\n".join(lines)


def emit(report: dict, as_json: bool) -> None:
    print(json.dumps(report, indent=2) if as_json else render(report))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Report this machine's GPUs and their health.")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--skip-bench", action="store_true", help="do not run the matmul and copy benchmarks")
    args = parser.parse_args(argv)

    report = {
        "status": None,
        "exit_code": None,
        "problems": [],
        "host": host_facts(),
        "driver_version": None,
        "gpus": [],
        "topology": [],
        "benchmarks": {"ran": False, "reason": "no GPU", "results": []},
        "error": None,
    }
    try:
        report["driver_version"], report["gpus"], report["topology"] = read_nvml()
    except NoGpu as err:
        print(f"gpu_info: no GPU found: {err}. Reporting the host only.", file=sys.stderr)
        report.update(status=STATUS[EXIT_NO_GPU], exit_code=EXIT_NO_GPU, error=str(err))
        emit(report, args.json)
        return 0  # TODO: the exit code for "no GPU"

    report["benchmarks"] = run_benchmarks(args.skip_bench)
    report["problems"] = find_problems(report["gpus"], report["benchmarks"])
    code = EXIT_HEALTHY  # TODO: degraded when a rule found a problem
    report.update(status=STATUS[code], exit_code=code)
    emit(report, args.json)
    return code


if __name__ == "__main__":
    sys.exit(main())
