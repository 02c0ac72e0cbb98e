"""gpu_info.py: a health report for the GPUs of this machine.

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
import statistics
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
    code = getattr(err, "value", None)
    if code == nvml.NVML_ERROR_LIBRARY_NOT_FOUND:
        return "the NVIDIA driver's library (libnvidia-ml.so) is not installed, so NVML cannot start"
    if code == nvml.NVML_ERROR_DRIVER_NOT_LOADED:
        return "the NVIDIA kernel driver is not loaded, so NVML cannot start"
    if code == nvml.NVML_ERROR_NO_PERMISSION:
        return "no permission to open /dev/nvidia* (check the user's groups or the container's devices)"
    return f"NVML failed to start: {err}"


def optional(nvml, fn, *args, default=None):
    """fn(*args), or ``default`` when the GPU does not support it (or refuses)."""
    try:
        return fn(*args)
    except nvml.NVMLError:
        return default


def mig_state(nvml, handle) -> dict:
    """MIG mode (current and pending) and the MIG devices of one GPU."""
    try:
        current, pending = nvml.nvmlDeviceGetMigMode(handle)
    except nvml.NVMLError_NotSupported:
        return {"current": "unsupported", "pending": "unsupported", "instances": []}
    except nvml.NVMLError:
        return {"current": "unknown", "pending": "unknown", "instances": []}

    def word(mode: int) -> str:
        return "enabled" if mode == nvml.NVML_DEVICE_MIG_ENABLE else "disabled"

    state = {"current": word(current), "pending": word(pending), "instances": []}
    if state["current"] != "enabled":
        return state
    for slot in range(optional(nvml, nvml.nvmlDeviceGetMaxMigDeviceCount, handle, default=0)):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError:  # NOT_FOUND: no MIG device in this slot
            continue
        mem = optional(nvml, nvml.nvmlDeviceGetMemoryInfo, mig)
        state["instances"].append(
            {
                "index": slot,
                "name": text(optional(nvml, nvml.nvmlDeviceGetName, mig, default="MIG device")),
                "uuid": text(optional(nvml, nvml.nvmlDeviceGetUUID, mig, default="")),
                "gpu_instance_id": optional(nvml, nvml.nvmlDeviceGetGpuInstanceId, mig),
                "compute_instance_id": optional(nvml, nvml.nvmlDeviceGetComputeInstanceId, mig),
                "memory_total_bytes": int(mem.total) if mem is not None else None,
                "memory_used_bytes": int(mem.used) if mem is not None else None,
            }
        )
    return state


def nvlink_state(nvml, handle) -> tuple[dict, list[str]]:
    """The GPU's NVLink summary, and the PCI bus id at the far end of each active link."""
    states: list[bool] = []
    remotes: list[str] = []
    for link in range(nvml.NVML_NVLINK_MAX_LINKS):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError:
            # NOT_SUPPORTED on link 0: no NVLink at all; INVALID_ARGUMENT: past the last link.
            break
        active = state == nvml.NVML_FEATURE_ENABLED
        states.append(active)
        if active:
            remote = optional(nvml, nvml.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
            if remote is not None:
                remotes.append(short_bus_id(remote.busId))
    summary = {
        "links": len(states),
        "active": sum(states),
        "down": [link for link, up in enumerate(states) if not up],
    }
    return summary, remotes


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
        if count == 0:
            raise NoGpu("the NVIDIA driver is loaded but reports no GPU (is one assigned to this container or VM?)")
        driver = optional(nvml, nvml.nvmlSystemGetDriverVersion)
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        gpus, remotes = [], []
        for i, h in enumerate(handles):
            cc = optional(nvml, nvml.nvmlDeviceGetCudaComputeCapability, h)
            mem = nvml.nvmlDeviceGetMemoryInfo(h)
            pci = optional(nvml, nvml.nvmlDeviceGetPciInfo, h)
            links, far_ends = nvlink_state(nvml, h)
            remotes.append(far_ends)
            gpus.append(
                {
                    "index": i,
                    "name": text(nvml.nvmlDeviceGetName(h)),
                    "uuid": text(optional(nvml, nvml.nvmlDeviceGetUUID, h, default="")),
                    "pci_bus_id": short_bus_id(pci.busId) if pci is not None else None,
                    "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
                    "memory_total_bytes": int(mem.total),
                    "memory_used_bytes": int(mem.used),
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
    pairs = []
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            # Direct links: the far end of one of i's active links is GPU j.
            n = sum(1 for bus in remotes[i] if bus == gpus[j]["pci_bus_id"])
            if n == 0 and gpus[i]["nvlink"]["active"]:
                # On NVSwitch systems every link ends at a switch; NVML's P2P status says
                # whether the switches join i and j, and then all of i's links carry the traffic.
                status = optional(
                    nvml, nvml.nvmlDeviceGetP2PStatus, handles[i], handles[j], nvml.NVML_P2P_CAPS_INDEX_NVLINK
                )
                if status == nvml.NVML_P2P_STATUS_OK:
                    n = gpus[i]["nvlink"]["active"]
            if n:
                link = f"NV{n}"
            else:
                level = optional(nvml, nvml.nvmlDeviceGetTopologyCommonAncestor, handles[i], handles[j])
                link = PCIE_PATHS.get(level, "SYS") if level is not None else "unknown"
            pairs.append({"gpus": [i, j], "link": link, "nvlinks": n})
    return pairs


# --- benchmarks ----------------------------------------------------------------------------


def time_cuda_ms(torch, fn, *, inner: int, warmup: int = 5, repeats: int = 7) -> float:
    """Median time of one fn() in ms, from CUDA events around ``inner`` back-to-back calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()  # the events time the GPU's work, not the launches
        times.append(start.elapsed_time(end) / inner)
    return statistics.median(times)


def matmul_ms(torch, n: int) -> float:
    """Median time of one n x n bf16 matmul on the current CUDA device (2 n^3 FLOPs)."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    return time_cuda_ms(torch, lambda: torch.mm(a, b, out=c), inner=10)


def copy_ms(torch, nbytes: int) -> float:
    """Median time of one device-to-device copy of nbytes on the current CUDA device."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return time_cuda_ms(torch, lambda: dst.copy_(src), inner=10)


def bench_device(torch, index: int) -> dict:
    name = torch.cuda.get_device_name(index)
    peak = peak_for(name)
    with torch.cuda.device(index):
        free, _ = torch.cuda.mem_get_info()
        # n = 8192 keeps the tensor cores of any current GPU busy (3 x 128 MiB of operands).
        n = 8192 if free > 2 * 2**30 else 4096
        mm_ms = matmul_ms(torch, n)
        tflops = 2 * n**3 / (mm_ms * 1e-3) / 1e12
        # Each byte copied is read once and written once: 2 bytes of DRAM traffic. 1 GiB is
        # far larger than any L2 cache, so the copy streams from and to DRAM.
        nbytes = min(2**30, free // 8) // 4096 * 4096
        cp_ms = copy_ms(torch, nbytes)
        copy_gbps = 2 * nbytes / (cp_ms * 1e-3) / 1e9
        torch.cuda.empty_cache()
    return {
        "cuda_device": index,
        "name": name,
        "matmul_n": n,
        "matmul_dtype": "bfloat16",
        "matmul_ms": mm_ms,
        "matmul_tflops": tflops,
        "matmul_peak_tflops": peak["bf16_tflops"] if peak else None,
        "matmul_share": tflops / peak["bf16_tflops"] if peak else None,
        "copy_bytes": nbytes,
        "copy_ms": cp_ms,
        "copy_gbps": copy_gbps,
        "copy_peak_gbps": peak["mem_gbps"] if peak else None,
        "copy_share": copy_gbps / peak["mem_gbps"] if peak else None,
    }


def run_benchmarks(skip: bool) -> dict:
    if skip:
        return {"ran": False, "reason": "skipped (--skip-bench)", "results": []}
    try:
        import torch
    except ImportError:
        return {"ran": False, "reason": "no CUDA device: torch is not installed", "results": []}
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return {"ran": False, "reason": "no CUDA device", "results": []}
    results = [bench_device(torch, i) for i in range(torch.cuda.device_count())]
    return {"ran": True, "reason": None, "results": results}


# --- health --------------------------------------------------------------------------------


def find_problems(gpus: list[dict], benchmarks: dict) -> list[dict]:
    """The README's rules, applied to the facts and the measurements."""
    problems = []

    def problem(gpu, check, detail):
        problems.append({"gpu": gpu, "check": check, "detail": detail})

    for g in gpus:
        links = g["nvlink"]
        if 0 < links["active"] < links["links"]:
            down = ", ".join(str(k) for k in links["down"])
            problem(g["index"], "nvlink", f"NVLink {down} down ({links['active']} of {links['links']} active)")
        mig = g["mig"]
        if mig["current"] in ("enabled", "disabled") and mig["pending"] != mig["current"]:
            problem(g["index"], "mig", f"MIG is {mig['current']} but {mig['pending']} is pending: reset the GPU")
        if mig["current"] == "enabled" and not mig["instances"]:
            problem(g["index"], "mig", "MIG is enabled but no MIG device exists: nothing can run on this GPU")
        used = g["memory_used_bytes"] / g["memory_total_bytes"] if g["memory_total_bytes"] else 0.0
        if used > MEMORY_FULL_SHARE:
            problem(g["index"], "memory", f"{used:.0%} of the memory is in use")
    for r in benchmarks.get("results", []):
        for check, share in (("matmul", r["matmul_share"]), ("copy", r["copy_share"])):
            if share is not None and share < MIN_PEAK_SHARE:
                problem(r["cuda_device"], check, f"{check} reached {share:.0%} of the datasheet peak")
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
        return EXIT_NO_GPU

    report["benchmarks"] = run_benchmarks(args.skip_bench)
    report["problems"] = find_problems(report["gpus"], report["benchmarks"])
    code = EXIT_DEGRADED if report["problems"] else EXIT_HEALTHY
    report.update(status=STATUS[code], exit_code=code)
    emit(report, args.json)
    return code


if __name__ == "__main__":
    sys.exit(main())
