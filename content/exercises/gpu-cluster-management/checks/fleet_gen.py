"""Crafted fleets for the checks: NVML recordings in the format of `gpudojo probe --record`
(server/gpudojo/gpu/replay.py), for nodes the learner has never seen.

A node is described by a NodeSpec (model, GPU count, MIG layouts, faults, utilisation
patterns); write_node() turns it into JSON lines, which gpudojo's own replay loader must
accept (the checks load every file with it before handing it to the learner's code).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

GiB = 1 << 30

# GPU models: compute capability from NVIDIA's CUDA GPU list
# (https://developer.nvidia.com/cuda-gpus, read 2026-12-04); NVLink counts per GPU from the
# H100 and A100 datasheets (18 fourth-generation links on H100 SXM5, 12 third-generation on
# A100 SXM4). Memory, power limits and clocks of the first three are what the recordings in
# tests/data/gpu/ hold; the others are nominal sizes (NVML reports slightly less on some boards).
MODELS: dict[str, dict] = {
    "NVIDIA H100 80GB HBM3": dict(
        cc="9.0", mem=80 * GiB, nvlinks=18, pcie_gen=5, power=700.0, sm=1980, memclk=2619, mig=True
    ),
    "NVIDIA A100-SXM4-80GB": dict(
        cc="8.0", mem=80 * GiB, nvlinks=12, pcie_gen=4, power=400.0, sm=1410, memclk=1593, mig=True
    ),
    "NVIDIA GeForce RTX 4090": dict(
        cc="8.9", mem=24 * GiB, nvlinks=0, pcie_gen=4, power=450.0, sm=3120, memclk=10501, mig=False
    ),
    "NVIDIA L4": dict(cc="8.9", mem=24 * GiB, nvlinks=0, pcie_gen=4, power=72.0, sm=2040, memclk=6251, mig=False),
    "NVIDIA A10": dict(cc="8.6", mem=24 * GiB, nvlinks=0, pcie_gen=4, power=150.0, sm=1695, memclk=6251, mig=False),
    "Tesla T4": dict(cc="7.5", mem=16 * GiB, nvlinks=0, pcie_gen=3, power=70.0, sm=1590, memclk=5001, mig=False),
}

# MIG profiles of the 80 GB A100 and H100 and the memory of each instance, from NVIDIA's MIG
# user guide, "Supported MIG Profiles"
# (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html, read
# 2026-12-04): 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb. The memory is the
# profile's nominal size, as in tests/data/gpu/8gpu-a100-mig.jsonl.
MIG_MEMORY = {
    "1g.10gb": 10 * GiB,
    "1g.20gb": 20 * GiB,
    "2g.20gb": 20 * GiB,
    "3g.40gb": 40 * GiB,
    "4g.40gb": 40 * GiB,
    "7g.80gb": 80 * GiB,
}
# Layouts that fit one GPU (at most 7 compute slices and 8 memory slices).
MIG_LAYOUTS = [
    ["3g.40gb", "2g.20gb", "1g.10gb"],
    ["1g.10gb"] * 7,
    ["4g.40gb", "3g.40gb"],
    ["2g.20gb", "2g.20gb", "2g.20gb", "1g.10gb"],
    ["3g.40gb", "3g.40gb"],
    ["7g.80gb"],
    ["1g.20gb", "1g.20gb", "1g.20gb", "1g.10gb"],
]

UTIL_PATTERNS = ("busy", "bursty", "light", "idle", "ramp")


@dataclass
class NodeSpec:
    name: str
    model: str | None  # None: a node with no usable GPU (NVML did not start)
    gpus: int = 0
    samples: int = 40
    mig: dict[int, list[str]] = field(default_factory=dict)  # GPU index -> MIG profiles
    hot: set[int] = field(default_factory=set)
    nvlink_down: dict[int, list[int]] = field(default_factory=dict)  # GPU index -> links down
    pcie_narrow: set[int] = field(default_factory=set)
    mig_pending: set[int] = field(default_factory=set)  # a MIG mode change waiting for a reset
    util: dict[int, str] = field(default_factory=dict)  # GPU index -> pattern (default: random)
    util_gaps: set[int] = field(default_factory=set)  # GPUs with some null utilisation readings


def _util_series(pattern: str, n: int, rng: random.Random) -> list[float]:
    """Integer percentages whose mean stays well away from the 5 % idle line."""
    while True:
        if pattern == "busy":
            base = rng.uniform(55, 90)
            vals = [min(100, max(0, round(rng.gauss(base, 10)))) for _ in range(n)]
        elif pattern == "bursty":
            vals = [rng.choice([0, 0, 0, 100, 97, 3, 64]) for _ in range(n)]
        elif pattern == "light":
            vals = [max(0, round(rng.gauss(rng.choice([9, 12, 16]), 4))) for _ in range(n)]
        elif pattern == "idle":
            vals = [rng.choice([0, 0, 0, 0, 1, 2, 3]) for _ in range(n)]
            vals[rng.randrange(n)] = rng.choice([12, 20])  # a health-check blip
        else:  # ramp: a job starting in the middle of the window
            start = rng.randrange(n // 4, 3 * n // 4)
            vals = [0 if i < start else min(100, 40 + 3 * (i - start)) for i in range(n)]
        mean = sum(vals) / n
        if abs(mean - 5.0) >= 1.0:
            return [float(v) for v in vals]


def _temps(hot: bool, n: int, rng: random.Random) -> list[float]:
    """Healthy GPUs peak at or below 82 C; hot ones reach 87 C or more for a few samples."""
    base = rng.uniform(38, 62)
    temps = [round(min(82.0, max(25.0, base + rng.gauss(0, 4))), 0) for _ in range(n)]
    if hot:
        start = rng.randrange(n // 3, n - 4)
        peak = rng.choice([87.0, 89.0, 91.0, 94.0])
        for i in range(start, min(n, start + rng.randint(3, 8))):
            temps[i] = peak - rng.choice([0.0, 0.0, 1.0, 2.0])
        temps[start] = peak
    return [float(t) for t in temps]


def build_node(spec: NodeSpec, rng: random.Random, t0: float | None = None) -> list[dict]:
    """The JSON lines of one recording (an inventory line, then spec.samples sample lines)."""
    t0 = t0 if t0 is not None else float(rng.randint(1_790_000_000, 1_800_000_000))
    rate = rng.choice([1.0, 2.0, 4.0])
    if spec.model is None:
        inventory = {
            "type": "inventory",
            "format": 1,
            "available": False,
            "reason": "NVML could not start: Driver Not Loaded. Is the NVIDIA driver installed?",
            "source": "nvml",
            "driver_version": None,
            "cuda_driver_version": None,
            "nvml_version": None,
            "gpus": [],
            "topology": None,
        }
        lines = [inventory]
        for k in range(spec.samples):
            lines.append({"type": "sample", "t": round(t0 + k / rate, 3), "gpus": []})
        return lines

    m = MODELS[spec.model]
    driver = rng.choice(["535.183.06", "550.54.15", "560.35.03", "570.86.15"])
    bus = [f"0000:{b:02X}:00.0" for b in rng.sample(range(0x05, 0xE0), spec.gpus)]
    switches = [f"0000:{0xC4 + i:02X}:00.0" for i in range(6)]
    uuid_base = "".join(rng.choice("0123456789abcdef") for _ in range(8))
    facts = []
    for i in range(spec.gpus):
        links = []
        for link in range(m["nvlinks"]):
            if spec.gpus == 2:
                remote, remote_idx = bus[1 - i], 1 - i
            else:
                remote, remote_idx = switches[link % 6], None
            links.append(
                {
                    "link": link,
                    "active": link not in spec.nvlink_down.get(i, []),
                    "remote_pci_bus_id": remote,
                    "remote_gpu_index": remote_idx,
                }
            )
        if not m["mig"]:
            mig = {"current": "unsupported", "pending": "unsupported", "instances": []}
        else:
            enabled = i in spec.mig
            current = "enabled" if enabled else "disabled"
            pending = current
            if i in spec.mig_pending:
                pending = "disabled" if enabled else "enabled"
            instances = []
            for j, profile in enumerate(spec.mig.get(i, [])):
                instances.append(
                    {
                        "index": j,
                        "uuid": f"MIG-{uuid_base}-{i:02d}{j:02d}",
                        "name": f"{spec.model} MIG {profile}",
                        "gpu_instance_id": j + 1,
                        "compute_instance_id": 0,
                        "memory_total_bytes": MIG_MEMORY[profile],
                        "memory_used_bytes": rng.choice([0, 1 * GiB, 3 * GiB]),
                    }
                )
            mig = {"current": current, "pending": pending, "instances": instances}
        facts.append(
            {
                "index": i,
                "name": spec.model,
                "uuid": f"GPU-{uuid_base}-0000-4000-8000-{i:012d}",
                "pci_bus_id": bus[i],
                "compute_capability": m["cc"],
                "memory_total_bytes": m["mem"],
                "pcie_max_generation": m["pcie_gen"],
                "pcie_max_width": 16,
                "power_limit_w": m["power"],
                "max_sm_clock_mhz": m["sm"],
                "max_mem_clock_mhz": m["memclk"],
                "mig": mig,
                "nvlinks": links,
                "unsupported": [] if m["mig"] else ["mig"],
            }
        )
    if spec.gpus > 1:
        cell = f"NV{m['nvlinks']}" if m["nvlinks"] else "PHB"
        matrix = [["X" if a == b else cell for b in range(spec.gpus)] for a in range(spec.gpus)]
    else:
        matrix = [["X"]] if spec.gpus else []
    inventory = {
        "type": "inventory",
        "format": 1,
        "available": spec.gpus > 0,
        "reason": None if spec.gpus else "NVML found no GPU on this machine",
        "source": "nvml",
        "driver_version": driver,
        "cuda_driver_version": "12.4",
        "nvml_version": f"12.{driver}",
        "gpus": facts,
        "topology": {"gpus": list(range(spec.gpus)), "matrix": matrix},
    }

    n = spec.samples
    util = {i: _util_series(spec.util.get(i) or rng.choice(UTIL_PATTERNS), n, rng) for i in range(spec.gpus)}
    gaps = {i: set(rng.sample(range(n), rng.randint(3, n // 4))) for i in spec.util_gaps}
    temps = {i: _temps(i in spec.hot, n, rng) for i in range(spec.gpus)}
    narrow_from = {i: rng.randrange(0, n // 2) for i in spec.pcie_narrow}
    lines = [inventory]
    for k in range(n):
        t = t0 + k / rate + (rng.uniform(-0.004, 0.004) if k > 0 else 0.0)
        gpus = []
        for i in range(spec.gpus):
            # NVML reports no utilisation for a GPU in MIG mode (nvidia-smi shows N/A).
            mig_mode = facts[i]["mig"]["current"] == "enabled"
            u = None if mig_mode or k in gaps.get(i, ()) else util[i][k]
            used = int(m["mem"] * (0.05 + 0.9 * (u or 0) / 100))
            unsupported = [] if m["mig"] else ["graphics_processes"]
            if u is None:
                unsupported = [*unsupported, "utilization"]
            gpus.append(
                {
                    "index": i,
                    "utilization_gpu_pct": u,
                    "utilization_memory_pct": None if u is None else round(u * 0.6),
                    "memory_used_bytes": used,
                    "memory_free_bytes": m["mem"] - used,
                    "power_w": round(m["power"] * (0.15 + 0.8 * (u or 0) / 100), 3),
                    "temperature_c": temps[i][k],
                    "sm_clock_mhz": int(m["sm"] * (0.5 + 0.5 * (u or 0) / 100)),
                    "mem_clock_mhz": m["memclk"],
                    "pcie_generation": m["pcie_gen"] if (u or 0) > 10 else 1,  # the link slows down when idle
                    "pcie_width": 8 if i in narrow_from and k >= narrow_from[i] else 16,
                    "pcie_tx_bytes_per_s": None,
                    "pcie_rx_bytes_per_s": None,
                    "processes": [{"pid": 4000 + i, "name": None, "kind": "compute", "used_memory_bytes": None}]
                    if (u or 0) > 5
                    else [],
                    "unsupported": unsupported,
                }
            )
        lines.append({"type": "sample", "t": round(t, 3), "gpus": gpus})
    return lines


def write_node(spec: NodeSpec, folder: Path, rng: random.Random) -> Path:
    """Write spec's recording to folder/<name>.jsonl and check gpudojo's replay loader reads it."""
    from gpudojo.gpu.replay import load_recording

    path = folder / f"{spec.name}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in build_node(spec, rng)))
    load_recording(path)  # the crafted file must be a valid recording
    return path


def node_name(rng: random.Random, used: set[str]) -> str:
    while True:
        name = (
            f"{rng.choice(['gpu', 'node', 'train', 'infer', 'dgx'])}-{rng.choice('abcdefgh')}{rng.randint(1, 99):02d}"
        )
        if name not in used:
            used.add(name)
            return name
