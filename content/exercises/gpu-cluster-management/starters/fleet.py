"""Inventory, health and Kubernetes view of a GPU fleet, from NVML recordings.

THE STARTER: it reads the recordings and prints each GPU's name. Everything marked TODO is
yours (README.md says what each requirement needs).

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


def gpu_report(facts: dict, readings: list[dict]) -> dict:
    """What the report says about one GPU. `facts` is the GPU's entry in the inventory line;
    `readings` are its entries in the sample lines, in time order."""
    # TODO(inventory): memory_total_bytes and compute_capability, from the inventory.
    # TODO(health): "health" ("healthy" or "degraded") and "problems" (the README's rule
    #   names: hot, nvlink-down, pcie-degraded, mig-pending).
    # TODO(mig-layout): "mig": {"mode": ..., "instances": [{"profile": "1g.10gb", ...}]}.
    # TODO(utilisation): "utilization_gpu_pct": {"mean": ..., "p95": ...} and "idle".
    return {"index": facts["index"], "name": facts.get("name")}


# --- the fleet ----------------------------------------------------------------------------


def node_report(node: Node) -> dict:
    # TODO(utilisation): "samples" and "window_s" (last sample time minus first).
    return {
        "node": node.name,
        "available": bool(node.inventory.get("available")),
        "reason": node.inventory.get("reason"),
        "gpus": [gpu_report(g, node.readings(g["index"])) for g in node.gpus],
    }


def fleet_report(nodes: list[Node]) -> dict:
    reports = [node_report(n) for n in nodes]
    gpus = [g for r in reports for g in r["gpus"]]
    # TODO(health, utilisation, mig-layout): totals "healthy", "degraded", "idle", "mig_instances".
    return {"nodes": reports, "totals": {"nodes": len(reports), "gpus": len(gpus)}}


def print_report(report: dict) -> None:
    for node in report["nodes"]:
        print(f"{node['node']}: {len(node['gpus'])} GPU(s)")
        for g in node["gpus"]:
            print(f"  GPU{g['index']} {g['name']}")
    t = report["totals"]
    print(f"fleet: {t['nodes']} nodes, {t['gpus']} GPUs")


# --- Kubernetes ---------------------------------------------------------------------------


def kubernetes_view(nodes: list[Node], namespace: str, quota: int, pod_gpus: int, mig_profile_name: str | None) -> dict:
    """Labels and allocatable devices per node, the manifests, and what does not fit."""
    views = [
        {
            "node": n.name,
            # TODO(node-labels): the GPU feature discovery labels of the README.
            "labels": {},
            # TODO(schedulable): what the device plugin would advertise, degraded GPUs left out.
            "allocatable": {},
        }
        for n in nodes
    ]
    # TODO(manifests-valid): a ResourceQuota on requests.nvidia.com/gpu (and each MIG
    #   resource) for the namespace, and a Pod asking for the devices, with a nodeSelector.
    manifests: list[dict] = []
    # TODO(schedulable): say why the pod could not run (over the quota, no node can hold it).
    problems: list[str] = []
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
        return 0  # TODO(health): 1 when any GPU is degraded

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
    return 0  # TODO(schedulable): 1 when there are problems


if __name__ == "__main__":
    sys.exit(main())
