"""Inventory, health and Kubernetes view of a GPU fleet, from NVML recordings.

    python fleet.py report data/*.jsonl [--json]
    python fleet.py k8s data/*.jsonl --namespace team-a --quota-gpus 4 --pod-gpus 2
                        [--mig-profile 1g.10gb] [--json] [--out manifests/]

Each recording is one node (the file name without .jsonl is the node's name), in the format
`gpudojo probe --record` writes: an inventory line, then sample lines. README.md states the
rules: what makes a GPU degraded or idle, which labels a node carries, what a pod may ask for.

Exit codes: report: 0 every GPU healthy, 1 some degraded; k8s: 0 the quota and the pod fit
the fleet, 1 they do not (the JSON's "problems" says why); both: 2 a file is not a recording.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

HOT_C = 85.0  # degraded at or above this temperature (C) at any point of the window
IDLE_PCT = 5.0  # idle below this mean utilisation (%) over the window
MiB = 1 << 20


class RecordingError(Exception):
    """A file that is not a readable recording; the message names the file and line."""


@dataclass
class Node:
    """One recording: the inventory line (static facts) and the sample lines, in order."""

    name: str
    inventory: dict
    samples: list[dict]

    @property
    def gpus(self) -> list[dict]:
        return sorted(self.inventory.get("gpus") or [], key=lambda g: g["index"])

    def readings(self, index: int) -> list[dict]:
        """Every sample of GPU `index`, in time order (a GPU may be missing from some)."""
        return [g for s in self.samples for g in s.get("gpus", []) if g.get("index") == index]


def load_node(path: Path) -> Node:
    inventory, samples = None, []
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise RecordingError(f"cannot read {path}: {err.strerror}") from err
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise RecordingError(f"{path}:{lineno}: not JSON ({err.msg})") from err
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "inventory":
            inventory = record
        elif kind == "sample":
            samples.append(record)
        else:
            raise RecordingError(f"{path}:{lineno}: unknown record type {kind!r}")
    if inventory is None:
        raise RecordingError(f"{path}: no inventory line; record one with `gpudojo probe --record FILE`")
    name = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return Node(name, inventory, samples)


# --- one GPU ------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between ranks, as numpy.percentile."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def mig_profile(instance_name: str) -> str:
    """'NVIDIA A100-SXM4-80GB MIG 3g.40gb' -> '3g.40gb'."""
    return instance_name.rsplit(" MIG ", 1)[-1].strip()


def health_problems(facts: dict, readings: list[dict]) -> list[str]:
    """The README's rules a GPU breaks, by name; an empty list is a healthy GPU."""
    problems = []
    temps = [r["temperature_c"] for r in readings if r.get("temperature_c") is not None]
    if temps and max(temps) >= HOT_C:
        problems.append("hot")
    if any(not link.get("active", True) for link in facts.get("nvlinks") or []):
        problems.append("nvlink-down")
    # The link generation drops when a GPU idles (power saving); the width should not.
    width_max = facts.get("pcie_max_width")
    if width_max and any(r.get("pcie_width") is not None and r["pcie_width"] < width_max for r in readings):
        problems.append("pcie-degraded")
    mig = facts.get("mig") or {}
    if mig.get("pending", "unsupported") != mig.get("current", "unsupported"):
        problems.append("mig-pending")  # a MIG mode change waits for a GPU reset
    return problems


def gpu_report(facts: dict, readings: list[dict]) -> dict:
    util = [r["utilization_gpu_pct"] for r in readings if r.get("utilization_gpu_pct") is not None]
    temps = [r["temperature_c"] for r in readings if r.get("temperature_c") is not None]
    mig = facts.get("mig") or {}
    problems = health_problems(facts, readings)
    # NVML gives no utilisation for a GPU in MIG mode: mean and p95 are then null, and a GPU
    # we cannot see is not called idle.
    mean = sum(util) / len(util) if util else None
    return {
        "index": facts["index"],
        "name": facts.get("name"),
        "uuid": facts.get("uuid"),
        "memory_total_bytes": facts.get("memory_total_bytes"),
        "compute_capability": facts.get("compute_capability"),
        "health": "degraded" if problems else "healthy",
        "problems": problems,
        "max_temperature_c": max(temps) if temps else None,
        "nvlinks_down": [link["link"] for link in facts.get("nvlinks") or [] if not link.get("active", True)],
        "mig": {
            "mode": mig.get("current", "unsupported"),
            "pending": mig.get("pending", "unsupported"),
            "instances": [
                {"profile": mig_profile(i.get("name") or ""), "memory_total_bytes": i.get("memory_total_bytes")}
                for i in mig.get("instances") or []
            ],
        },
        "utilization_gpu_pct": {
            "mean": round(mean, 3) if mean is not None else None,
            "p95": round(percentile(util, 95), 3) if util else None,
        },
        "idle": mean is not None and mean < IDLE_PCT,
    }


# --- the fleet ----------------------------------------------------------------------------


def node_report(node: Node) -> dict:
    times = [s["t"] for s in node.samples if "t" in s]
    return {
        "node": node.name,
        "available": bool(node.inventory.get("available")),
        "reason": node.inventory.get("reason"),
        "driver_version": node.inventory.get("driver_version"),
        "samples": len(node.samples),
        "window_s": round(max(times) - min(times), 3) if len(times) > 1 else 0.0,
        "gpus": [gpu_report(g, node.readings(g["index"])) for g in node.gpus],
    }


def fleet_report(nodes: list[Node]) -> dict:
    reports = [node_report(n) for n in nodes]
    gpus = [g for r in reports for g in r["gpus"]]
    return {
        "nodes": reports,
        "totals": {
            "nodes": len(reports),
            "nodes_without_gpus": sum(not r["gpus"] for r in reports),
            "gpus": len(gpus),
            "healthy": sum(g["health"] == "healthy" for g in gpus),
            "degraded": sum(g["health"] == "degraded" for g in gpus),
            "idle": sum(g["idle"] for g in gpus),
            "mig_instances": sum(len(g["mig"]["instances"]) for g in gpus),
        },
    }


def _fmt(value, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def print_report(report: dict) -> None:
    for node in report["nodes"]:
        print(f"{node['node']}: {len(node['gpus'])} GPU(s), {node['samples']} samples over {node['window_s']:.1f} s")
        if not node["gpus"]:
            print(f"  no GPU: {node['reason'] or 'none found'}")
        for g in node["gpus"]:
            util = g["utilization_gpu_pct"]
            mig = ", ".join(i["profile"] for i in g["mig"]["instances"])
            gib = (g["memory_total_bytes"] or 0) / 2**30
            health = g["health"] + (f" ({', '.join(g['problems'])})" if g["problems"] else "")
            print(
                f"  GPU{g['index']} {g['name']:<26} {gib:5.0f} GiB  cc {g['compute_capability']}"
                f"  util mean {_fmt(util['mean']):>5} % p95 {_fmt(util['p95']):>5} %"
                f"  max {_fmt(g['max_temperature_c'], '.0f')} C  {health}"
                f"{'  IDLE' if g['idle'] else ''}{'  MIG: ' + mig if mig else ''}"
            )
    t = report["totals"]
    print(
        f"fleet: {t['nodes']} nodes, {t['gpus']} GPUs: {t['healthy']} healthy, {t['degraded']} degraded, "
        f"{t['idle']} idle, {t['mig_instances']} MIG instances"
    )


# --- Kubernetes ---------------------------------------------------------------------------


def node_labels(node: Node) -> dict[str, str]:
    """The labels GPU feature discovery would put on this node (mixed MIG strategy)."""
    gpus = node.gpus
    if not gpus:
        return {}
    first = gpus[0]  # GFD labels one product per node; our nodes are uniform
    major, _, minor = (first.get("compute_capability") or "0.0").partition(".")
    labels = {
        "nvidia.com/gpu.product": first["name"].replace(" ", "-"),
        "nvidia.com/gpu.count": str(len(gpus)),
        "nvidia.com/gpu.memory": str(first["memory_total_bytes"] // MiB),
        "nvidia.com/gpu.compute.major": major,
        "nvidia.com/gpu.compute.minor": minor,
    }
    mig_gpus = [g for g in gpus if (g.get("mig") or {}).get("current") == "enabled"]
    if mig_gpus:
        labels["nvidia.com/mig.strategy"] = "mixed"
        counts: dict[str, int] = {}
        for g in mig_gpus:
            for inst in g["mig"]["instances"]:
                p = mig_profile(inst.get("name") or "")
                counts[p] = counts.get(p, 0) + 1
        for p, c in sorted(counts.items()):
            labels[f"nvidia.com/mig-{p}.count"] = str(c)
    return labels


def node_allocatable(report: dict) -> dict[str, int]:
    """What the device plugin would advertise with the mixed strategy: full GPUs as
    nvidia.com/gpu, MIG devices as nvidia.com/mig-<profile>; degraded GPUs left out."""
    out: dict[str, int] = {}
    for g in report["gpus"]:
        if g["health"] != "healthy":
            continue
        if g["mig"]["mode"] == "enabled":
            for inst in g["mig"]["instances"]:
                key = f"nvidia.com/mig-{inst['profile']}"
                out[key] = out.get(key, 0) + 1
        else:
            out["nvidia.com/gpu"] = out.get("nvidia.com/gpu", 0) + 1
    return out


def resource_quota(namespace: str, gpus: int, mig_profiles: list[str]) -> dict:
    # Extended resources may only be limited through requests.<name> (overcommit is not
    # allowed for them), and a quota on nvidia.com/gpu does not cover MIG devices: each MIG
    # resource is a name of its own, so it gets its own line.
    hard = {"requests.nvidia.com/gpu": str(gpus)}
    for p in sorted(mig_profiles):
        hard[f"requests.nvidia.com/mig-{p}"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu-quota", "namespace": namespace},
        "spec": {"hard": hard},
    }


def gpu_pod(namespace: str, resource: str, count: int, node_selector: dict[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gpu-job", "namespace": namespace, "labels": {"app": "gpu-job"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": node_selector,
            # GPU nodes are often tainted so that only pods asking for GPUs land there.
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {
                    "name": "cuda",
                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "command": ["nvidia-smi", "-L"],
                    # For extended resources the request equals the limit; giving the limit is enough.
                    "resources": {"limits": {resource: str(count)}},
                }
            ],
        },
    }


def kubernetes_view(nodes: list[Node], namespace: str, quota: int, pod_gpus: int, mig_profile_name: str | None) -> dict:
    reports = [node_report(n) for n in nodes]
    views = [
        {"node": n.name, "labels": node_labels(n), "allocatable": node_allocatable(r)}
        for n, r in zip(nodes, reports, strict=True)
    ]
    profiles = sorted(
        {
            i["profile"]
            for r in reports
            for g in r["gpus"]
            if g["mig"]["mode"] == "enabled"
            for i in g["mig"]["instances"]
        }
    )
    resource = f"nvidia.com/mig-{mig_profile_name}" if mig_profile_name else "nvidia.com/gpu"
    problems = []
    if pod_gpus < 1:
        problems.append(f"the pod asks for {pod_gpus} {resource}; ask for at least 1")
    if mig_profile_name and mig_profile_name not in profiles:
        problems.append(
            f"no node has MIG devices of profile {mig_profile_name} (the fleet has: {', '.join(profiles) or 'none'})"
        )
    if pod_gpus > quota:
        problems.append(
            f"the pod asks for {pod_gpus} {resource} but the namespace quota allows {quota}: it would be refused"
        )
    # Best fit: the node with the fewest healthy devices that still holds the pod, so the
    # big nodes stay free for big jobs.
    fits = [v for v in views if v["allocatable"].get(resource, 0) >= pod_gpus]
    selector: dict[str, str] = {}
    if fits:
        best = min(fits, key=lambda v: (v["allocatable"][resource], v["node"]))
        selector = {"nvidia.com/gpu.product": best["labels"]["nvidia.com/gpu.product"]}
    else:
        most = max((v["allocatable"].get(resource, 0) for v in views), default=0)
        problems.append(
            f"the pod asks for {pod_gpus} {resource} but no node can allocate that many "
            f"(the most on one node is {most}, degraded GPUs not counted): it would stay Pending"
        )
    manifests = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        resource_quota(namespace, quota, profiles),
        gpu_pod(namespace, resource, pod_gpus, selector),
    ]
    return {"nodes": views, "manifests": manifests, "problems": problems}


def write_manifests(manifests: list[dict], out_dir: Path) -> list[Path]:
    """One YAML file per object, numbered in apply order (kubectl apply -f DIR)."""
    import yaml

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, obj in enumerate(manifests):
        path = out_dir / f"{i:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(obj, sort_keys=False))
        paths.append(path)
    return paths


# --- command line -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fleet.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="inventory, health, MIG and utilisation of every node")
    rep.add_argument("recordings", nargs="+", type=Path, help="one NVML recording (.jsonl) per node")
    rep.add_argument("--json", action="store_true", help="print the report as one JSON object")
    k8s = sub.add_parser("k8s", help="node labels, a GPU quota and a GPU pod for the fleet")
    k8s.add_argument("recordings", nargs="+", type=Path)
    k8s.add_argument("--namespace", default="ml-team")
    k8s.add_argument("--quota-gpus", type=int, default=4, help="requests.nvidia.com/gpu of the namespace")
    k8s.add_argument("--pod-gpus", type=int, default=1, help="devices the pod asks for")
    k8s.add_argument(
        "--mig-profile", default=None, help="ask for MIG devices of this profile (e.g. 1g.10gb) instead of GPUs"
    )
    k8s.add_argument("--json", action="store_true")
    k8s.add_argument("--out", type=Path, default=None, help="also write the manifests as YAML files here")
    args = parser.parse_args(argv)

    try:
        nodes = [load_node(p) for p in args.recordings]
    except RecordingError as err:
        print(f"fleet.py: {err}", file=sys.stderr)
        return 2

    if args.command == "report":
        report = fleet_report(nodes)
        if args.json:
            print(json.dumps(report))
        else:
            print_report(report)
        return 1 if report["totals"]["degraded"] else 0

    view = kubernetes_view(nodes, args.namespace, args.quota_gpus, args.pod_gpus, args.mig_profile)
    if args.out:
        for path in write_manifests(view["manifests"], args.out):
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(view))
    else:
        import yaml

        for v in view["nodes"]:
            print(f"# node {v['node']}: allocatable {v['allocatable'] or 'nothing'}")
            for key, value in v["labels"].items():
                print(f"#   {key}={value}")
        print(yaml.safe_dump_all(view["manifests"], sort_keys=False))
        for p in view["problems"]:
            print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if view["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
