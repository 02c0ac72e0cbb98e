"""The checks' own reading of a fleet: what fleet.py should report for recordings the checks
crafted, computed here from the files (the README's rules), never by the learner's code."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HOT_C = 85.0  # a GPU whose temperature reached this in the window is degraded
IDLE_PCT = 5.0  # a GPU whose mean utilisation over the window is below this is idle
MiB = 1 << 20


def read(path: Path) -> tuple[dict, list[dict]]:
    inventory, samples = None, []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record["type"] == "inventory":
            inventory = record
        else:
            samples.append(record)
    assert inventory is not None, path
    return inventory, samples


def profile(instance_name: str) -> str:
    return instance_name.split(" MIG ", 1)[1].strip()


def gpu_report(facts: dict, samples: list[dict]) -> dict:
    readings = [g for s in samples for g in s["gpus"] if g["index"] == facts["index"]]
    util = [g["utilization_gpu_pct"] for g in readings if g.get("utilization_gpu_pct") is not None]
    temps = [g["temperature_c"] for g in readings if g.get("temperature_c") is not None]
    problems = []
    if temps and max(temps) >= HOT_C:
        problems.append("hot")
    if any(not link["active"] for link in facts.get("nvlinks", [])):
        problems.append("nvlink-down")
    width_max = facts.get("pcie_max_width")
    if width_max and any(g.get("pcie_width") is not None and g["pcie_width"] < width_max for g in readings):
        problems.append("pcie-degraded")
    mig = facts.get("mig") or {}
    if mig.get("pending", "unsupported") != mig.get("current", "unsupported"):
        problems.append("mig-pending")
    mean = float(np.mean(util)) if util else None
    return {
        "index": facts["index"],
        "name": facts["name"],
        "memory_total_bytes": facts.get("memory_total_bytes"),
        "compute_capability": facts.get("compute_capability"),
        "health": "degraded" if problems else "healthy",
        "problems": problems,
        "max_temperature_c": max(temps) if temps else None,
        "mig": {
            "mode": mig.get("current", "unsupported"),
            "instances": [
                {"profile": profile(i["name"]), "memory_total_bytes": i.get("memory_total_bytes")}
                for i in mig.get("instances", [])
            ],
        },
        "utilization_gpu_pct": {
            "mean": mean,
            "p95": float(np.percentile(util, 95)) if util else None,
        },
        "idle": mean is not None and mean < IDLE_PCT,
    }


def node_report(path: Path) -> dict:
    inventory, samples = read(path)
    times = [s["t"] for s in samples]
    return {
        "node": path.stem,
        "available": inventory["available"],
        "reason": inventory.get("reason"),
        "samples": len(samples),
        "window_s": (max(times) - min(times)) if len(times) > 1 else 0.0,
        "gpus": [gpu_report(g, samples) for g in sorted(inventory["gpus"], key=lambda g: g["index"])],
    }


def report(paths: list[Path]) -> dict:
    nodes = [node_report(p) for p in paths]
    gpus = [g for n in nodes for g in n["gpus"]]
    return {
        "nodes": nodes,
        "totals": {
            "nodes": len(nodes),
            "gpus": len(gpus),
            "healthy": sum(g["health"] == "healthy" for g in gpus),
            "degraded": sum(g["health"] == "degraded" for g in gpus),
            "idle": sum(g["idle"] for g in gpus),
            "mig_instances": sum(len(g["mig"]["instances"]) for g in gpus),
        },
    }


# --- Kubernetes ----------------------------------------------------------------------------


def labels(path: Path) -> dict[str, str]:
    """The GPU feature discovery labels the README asks for (values as strings)."""
    inventory, _ = read(path)
    gpus = inventory["gpus"]
    if not gpus:
        return {}
    first = gpus[0]
    major, minor = first["compute_capability"].split(".")
    out = {
        "nvidia.com/gpu.product": first["name"].replace(" ", "-"),
        "nvidia.com/gpu.count": str(len(gpus)),
        "nvidia.com/gpu.memory": str(first["memory_total_bytes"] // MiB),
        "nvidia.com/gpu.compute.major": major,
        "nvidia.com/gpu.compute.minor": minor,
    }
    counts: dict[str, int] = {}
    for g in gpus:
        if g["mig"]["current"] == "enabled":
            for inst in g["mig"]["instances"]:
                counts[profile(inst["name"])] = counts.get(profile(inst["name"]), 0) + 1
    if any(g["mig"]["current"] == "enabled" for g in gpus):
        out["nvidia.com/mig.strategy"] = "mixed"
        for p, c in counts.items():
            out[f"nvidia.com/mig-{p}.count"] = str(c)
    return out


def allocatable(path: Path) -> dict[str, int]:
    """What the device plugin would advertise (mixed strategy), degraded GPUs left out."""
    node = node_report(path)
    inventory, _ = read(path)
    out: dict[str, int] = {}
    for facts, g in zip(sorted(inventory["gpus"], key=lambda g: g["index"]), node["gpus"], strict=True):
        if g["health"] != "healthy":
            continue
        if facts["mig"]["current"] == "enabled":
            for inst in g["mig"]["instances"]:
                key = f"nvidia.com/mig-{inst['profile']}"
                out[key] = out.get(key, 0) + 1
        else:
            out["nvidia.com/gpu"] = out.get("nvidia.com/gpu", 0) + 1
    return out


def mig_profiles(paths: list[Path]) -> set[str]:
    """Every MIG profile present in the fleet (on any GPU in MIG mode)."""
    found = set()
    for p in paths:
        inventory, _ = read(p)
        for g in inventory["gpus"]:
            if g["mig"]["current"] == "enabled":
                found |= {profile(i["name"]) for i in g["mig"]["instances"]}
    return found
