"""Sharing one GPU between tenants: MIG plans, MPS and time-slicing configurations, and what
sharing cost each tenant.

    python sharing.py table --gpu A100-80GB
    python sharing.py plan --gpu H100-80GB --workloads data/workloads-sample.json
    python sharing.py mps --gpu-memory-gb 80 --clients data/workloads-sample.json --device 0
    python sharing.py timeslicing --replicas 4 [--resource nvidia.com/mig-1g.10gb]
    python sharing.py interference data/interference-sample.csv --criterion tail
    python sharing.py measure [--seconds 4] [--size 8192] [--json]     (needs an NVIDIA GPU)

A workload (or MPS client) is a dict: {"name": str, "memory_gb": float, "compute": float},
where compute is the share of the whole GPU's SMs it needs (0 < compute <= 1).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
COMPUTE_SLICES = 7  # SM slices of a GPU in MIG mode (the MIG user guide: one slice is about 1/7 of the SMs)
MEMORY_SLICES = 8  # memory slices (one is 1/8 of the memory and its bandwidth)
CRITERIA = ("slowdown", "tail", "fairness")


# --- the MIG profile table (given) ------------------------------------------------------------


def load_mig_table(path: Path | str = DATA / "mig-profiles.json") -> dict:
    """The MIG profile table: data/mig-profiles.json (its source and the date it was read are
    in the file)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def gpu_profiles(gpu: str, table: dict | None = None) -> list[dict]:
    """The profiles of one GPU model ("A100-40GB", "A100-80GB" or "H100-80GB")."""
    table = table or load_mig_table()
    if gpu not in table["gpus"]:
        raise KeyError(f"unknown GPU {gpu!r}; the table has {', '.join(table['gpus'])}")
    return table["gpus"][gpu]["profiles"]


def slices_needed(compute: float) -> int:
    """Compute slices a workload needs: its share of the SMs, rounded up to whole sevenths."""
    return max(1, math.ceil(compute * COMPUTE_SLICES - 1e-9))


# --- (a) MIG plans ----------------------------------------------------------------------------


def plan_mig(gpu: str, workloads: list[dict], table: dict | None = None) -> list[dict] | None:
    """One MIG instance per workload, in the workloads' order:
    [{"workload": name, "profile": "2g.20gb", "start": 4}, ...], or None when no valid layout
    of the GPU gives every workload enough memory and compute."""
    profiles = gpu_profiles(gpu, table)
    # TODO: this gives every workload the whole GPU. Choose, for each workload, a profile with
    # enough memory and compute slices (slices_needed) and no bigger than it must be; then give
    # each instance a start slice from its profile's placements so that no two overlap (the
    # order you place them in matters); return None when no layout works.
    biggest = max(profiles, key=lambda p: p["memory_slices"])
    return [{"workload": w["name"], "profile": biggest["name"], "start": 0} for w in workloads]


# --- (b) MPS and time-slicing configurations --------------------------------------------------


def mps_config(
    gpu_memory_gb: float,
    clients: list[dict],
    device: int = 0,
    pipe_dir: str = "/tmp/nvidia-mps",
    log_dir: str = "/tmp/nvidia-log",
) -> dict:
    """The MPS control daemon's environment and each client's, as the MPS documentation names
    the variables. Raises ValueError when the clients' memory does not fit on the GPU."""
    # TODO: refuse clients whose memory does not fit on the GPU (ValueError).
    daemon_env = {
        "CUDA_VISIBLE_DEVICES": str(device),
        "CUDA_MPS_PIPE_DIRECTORY": pipe_dir,
        "CUDA_MPS_LOG_DIRECTORY": log_dir,
    }
    plan_clients = []
    for c in clients:
        plan_clients.append(
            {
                "name": c["name"],
                # TODO: these are not the variable names the MPS documentation gives, and
                # environment values are strings in the formats it describes.
                "env": {
                    "CUDA_VISIBLE_DEVICES": str(device),
                    "CUDA_MPS_PIPE_DIRECTORY": pipe_dir,
                    "CUDA_MPS_THREAD_PERCENTAGE": c["compute"],
                    "CUDA_MPS_MEMORY_LIMIT": f"{c['memory_gb']}GB",
                },
            }
        )
    return {
        "daemon": {
            "start": "nvidia-cuda-mps-control -d",
            "stop": "echo quit | nvidia-cuda-mps-control",
            "env": daemon_env,
        },
        "clients": plan_clients,
    }


def timeslicing_config(replicas: int, resource: str = "nvidia.com/gpu") -> str:
    """The NVIDIA device plugin's configuration file (YAML) that advertises each GPU, or each
    MIG device of one profile, as `replicas` time-sliced resources."""
    # TODO: this is not the device plugin's format. Check every field's name, nesting and type
    # against its README, and what a MIG resource needs from the flags.
    return f"""version: 1
sharing:
  timeslicing:
    replicas: {replicas}
    resources: [{resource}]
"""


# --- (c) interference from a recording --------------------------------------------------------


def read_recording(path: Path | str) -> dict[str, dict[str, list[float]]]:
    """A recording CSV (columns strategy, tenant, step, step_ms) as
    {strategy: {tenant: [step_ms, ...]}}, steps in file order. "alone" is the baseline."""
    runs: dict[str, dict[str, list[float]]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            runs.setdefault(row["strategy"], {}).setdefault(row["tenant"], []).append(float(row["step_ms"]))
    return runs


def interference(recording, criterion: str = "slowdown") -> dict:
    """Each tenant's slowdown and p99 increase under each sharing strategy, each strategy's
    fairness (the slowest tenant's progress rate over the fastest's), and the strategy that
    isolates best by `criterion`: "slowdown" (lowest worst slowdown), "tail" (lowest worst p99
    increase) or "fairness" (highest). The README gives the report's layout."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}")
    runs = recording if isinstance(recording, dict) else read_recording(recording)  # noqa: F841
    # TODO: compare every strategy's step times with "alone", tenant by tenant.
    raise NotImplementedError("interference() is not written yet (TODO)")


# --- (d) measured on a real GPU ---------------------------------------------------------------


def measure(seconds: float = 4.0, size: int = 8192, device: str = "cuda", tenants: int = 2) -> dict:
    """The same matmul loop alone, then in `tenants` processes at once (time-slicing: with no
    MPS daemon running, the GPU switches between the processes' contexts)."""
    # TODO: run the loop in one process, then in two processes started together, each timing
    # its own matmuls per second over the same window; return the README's layout.
    raise SystemExit("measure is not written yet (TODO)")


# --- the command line -------------------------------------------------------------------------


def _load_workloads(path: str) -> list[dict]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data["workloads"] if isinstance(data, dict) else data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("table", help="the MIG profiles of a GPU")
    t.add_argument("--gpu", default="A100-80GB")
    p = sub.add_parser("plan", help="a MIG plan for a set of workloads")
    p.add_argument("--gpu", default="A100-80GB")
    p.add_argument("--workloads", default=str(DATA / "workloads-sample.json"))
    m = sub.add_parser("mps", help="an MPS setup for a set of clients")
    m.add_argument("--gpu-memory-gb", type=float, default=80.0)
    m.add_argument("--clients", default=str(DATA / "workloads-sample.json"))
    m.add_argument("--device", type=int, default=0)
    s = sub.add_parser("timeslicing", help="the device plugin's time-slicing config")
    s.add_argument("--replicas", type=int, default=4)
    s.add_argument("--resource", default="nvidia.com/gpu")
    i = sub.add_parser("interference", help="slowdown, tail and fairness from a recording")
    i.add_argument("recording", nargs="?", default=str(DATA / "interference-sample.csv"))
    i.add_argument("--criterion", choices=CRITERIA, default="slowdown")
    g = sub.add_parser("measure", help="two processes time-slicing a real GPU")
    g.add_argument("--seconds", type=float, default=4.0)
    g.add_argument("--size", type=int, default=8192)
    g.add_argument("--device", default="cuda")
    g.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    if args.cmd == "table":
        for prof in gpu_profiles(args.gpu):
            print(
                f"{prof['name']:<12} {prof['compute_slices']} compute, {prof['memory_slices']} memory slices, "
                f"{prof['memory_gb']:>3} GB, up to {prof['max_count']}, starts {prof['placements']}"
            )
        return 0
    if args.cmd == "plan":
        plan = plan_mig(args.gpu, _load_workloads(args.workloads))
        print(json.dumps(plan, indent=2))
        return 0 if plan is not None else 1
    if args.cmd == "mps":
        try:
            print(
                json.dumps(mps_config(args.gpu_memory_gb, _load_workloads(args.clients), device=args.device), indent=2)
            )
        except ValueError as exc:
            print(f"mps: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.cmd == "timeslicing":
        print(timeslicing_config(args.replicas, args.resource), end="")
        return 0
    if args.cmd == "interference":
        print(json.dumps(interference(args.recording, args.criterion), indent=2))
        return 0
    if args.cmd == "measure":
        result = measure(args.seconds, args.size, args.device)
        if args.json:
            print(json.dumps(result))
        else:
            print(f"{result['device']}: alone {result['alone']['iters_per_s']:.1f} matmuls/s")
            for s, slow in zip(result["shared"], result["slowdown"], strict=False):
                print(f"  tenant {s['tenant']} shared: {s['iters_per_s']:.1f} matmuls/s ({slow:.2f}x slower)")
            print(f"  shared total / alone: {result['shared_sum_over_alone']:.2f}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
