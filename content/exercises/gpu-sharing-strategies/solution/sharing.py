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
import os
import sys
import time
from collections import Counter
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


def _covers(profile: dict, workload: dict) -> bool:
    return profile["compute_slices"] >= slices_needed(workload["compute"]) and profile["memory_gb"] >= float(
        workload["memory_gb"]
    )


def _smallest_profile(profiles: list[dict], workload: dict) -> dict | None:
    """The smallest profile that covers the workload: fewest memory slices, then fewest compute
    slices. On these GPUs it is also the one with the most placements, so taking it never
    makes a plan harder to place than a bigger choice would."""
    fits = [p for p in profiles if _covers(p, workload) and "+me" not in p["name"]]
    return min(fits, key=lambda p: (p["memory_slices"], p["compute_slices"]), default=None)


def _place(items: list[tuple[int, dict]], used: int, counts: Counter, starts: dict[int, int]) -> bool:
    """Give each (workload index, profile) a start slice without overlap, backtracking."""
    if not items:
        return True
    (index, profile), rest = items[0], items[1:]
    if counts[profile["name"]] >= profile["max_count"]:
        return False
    width = (1 << profile["memory_slices"]) - 1
    for start in profile["placements"]:
        mask = width << start
        if used & mask or start + profile["memory_slices"] > MEMORY_SLICES:
            continue
        counts[profile["name"]] += 1
        starts[index] = start
        if _place(rest, used | mask, counts, starts):
            return True
        counts[profile["name"]] -= 1
        del starts[index]
    return False


def plan_mig(gpu: str, workloads: list[dict], table: dict | None = None) -> list[dict] | None:
    """One MIG instance per workload, in the workloads' order:
    [{"workload": name, "profile": "2g.20gb", "start": 4}, ...], or None when no valid layout
    of the GPU gives every workload enough memory and compute."""
    profiles = gpu_profiles(gpu, table)
    chosen = [_smallest_profile(profiles, w) for w in workloads]
    if any(p is None for p in chosen):
        return None  # a workload bigger than the whole GPU
    if sum(p["compute_slices"] for p in chosen) > COMPUTE_SLICES:
        return None
    if sum(p["memory_slices"] for p in chosen) > MEMORY_SLICES:
        return None
    # Place the widest instances first, and among equals the ones with the fewest placements
    # (4g before 3g, 2g before 1g.20gb): the tight ones then find their only slots free. The
    # search backtracks anyway, so the order only makes it fast.
    order = sorted(enumerate(chosen), key=lambda item: (-item[1]["memory_slices"], len(item[1]["placements"]), item[0]))
    starts: dict[int, int] = {}
    if not _place(order, 0, Counter(), starts):
        return None
    return [
        {"workload": w["name"], "profile": p["name"], "start": starts[i]}
        for i, (w, p) in enumerate(zip(workloads, chosen, strict=False))
    ]


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
    total = sum(float(c["memory_gb"]) for c in clients)
    if total > gpu_memory_gb:
        raise ValueError(
            f"the clients need {total:g} GB of pinned device memory together; the GPU has {gpu_memory_gb:g} GB"
        )
    daemon_env = {
        # Set before the daemon starts: the MPS server then shows this GPU to its clients as device 0.
        "CUDA_VISIBLE_DEVICES": str(device),
        "CUDA_MPS_PIPE_DIRECTORY": pipe_dir,
        "CUDA_MPS_LOG_DIRECTORY": log_dir,
    }
    plan_clients = []
    for c in clients:
        percent = min(100, max(1, math.ceil(100 * float(c["compute"]) - 1e-9)))
        mib = math.ceil(float(c["memory_gb"]) * 1024 - 1e-9)
        plan_clients.append(
            {
                "name": c["name"],
                "env": {
                    # Clients find the daemon through the same pipe directory, and must not set
                    # CUDA_VISIBLE_DEVICES again: they see the remapped device 0.
                    "CUDA_MPS_PIPE_DIRECTORY": pipe_dir,
                    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(percent),
                    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": f"0={mib}M",
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
    import yaml

    if int(replicas) < 1:
        raise ValueError("replicas must be at least 1")
    config = {
        "version": "v1",
        # Time-slicing MIG devices needs them advertised one resource per profile: the mixed strategy.
        "flags": {"migStrategy": "mixed" if resource.startswith("nvidia.com/mig-") else "none"},
        "sharing": {
            "timeSlicing": {
                # A request for 2 replicas is not twice the compute: refuse it rather than mislead.
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": resource, "replicas": int(replicas)}],
            }
        },
    }
    return yaml.safe_dump(config, sort_keys=False)


# --- (c) interference from a recording --------------------------------------------------------


def read_recording(path: Path | str) -> dict[str, dict[str, list[float]]]:
    """A recording CSV (columns strategy, tenant, step, step_ms) as
    {strategy: {tenant: [step_ms, ...]}}, steps in file order. "alone" is the baseline."""
    runs: dict[str, dict[str, list[float]]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            runs.setdefault(row["strategy"], {}).setdefault(row["tenant"], []).append(float(row["step_ms"]))
    return runs


def _p99(values: list[float]) -> float:
    """The 99th percentile, interpolating linearly between the closest ranks (numpy's default)."""
    xs = sorted(values)
    pos = 0.99 * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def interference(recording, criterion: str = "slowdown") -> dict:
    """Each tenant's slowdown and p99 increase under each sharing strategy, each strategy's
    fairness (the slowest tenant's progress rate over the fastest's), and the strategy that isolates best
    by `criterion`: "slowdown" (lowest worst slowdown), "tail" (lowest worst p99 increase) or
    "fairness" (highest index)."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}")
    runs = recording if isinstance(recording, dict) else read_recording(recording)
    alone = runs["alone"]
    strategies = {}
    for strategy, tenants in runs.items():
        if strategy == "alone":
            continue
        per_tenant = {}
        for tenant, base in alone.items():
            shared = tenants[tenant]
            per_tenant[tenant] = {
                "slowdown": _mean(shared) / _mean(base),
                "p99_increase": _p99(shared) / _p99(base),
            }
        rates = [1.0 / t["slowdown"] for t in per_tenant.values()]  # progress relative to running alone
        strategies[strategy] = {
            "tenants": per_tenant,
            "worst_slowdown": max(t["slowdown"] for t in per_tenant.values()),
            "worst_p99_increase": max(t["p99_increase"] for t in per_tenant.values()),
            # 1 when sharing slowed every tenant alike; 0.5 when one progresses at half another's rate
            "fairness": min(rates) / max(rates),
        }
    if criterion == "slowdown":
        best = min(strategies, key=lambda s: strategies[s]["worst_slowdown"])
    elif criterion == "tail":
        best = min(strategies, key=lambda s: strategies[s]["worst_p99_increase"])
    else:
        best = max(strategies, key=lambda s: strategies[s]["fairness"])
    return {"criterion": criterion, "best": best, "strategies": strategies}


# --- (d) measured on a real GPU ---------------------------------------------------------------


def _tenant(rank, size, seconds, device, ready, start, results):
    """One tenant: a loop of matmuls on its own CUDA context, timed after every tenant is ready."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.get_device_capability(dev)[0] >= 8 else torch.float16
        sync = torch.cuda.synchronize
    else:  # a CPU run only exercises the plumbing
        torch.set_num_threads(1)
        dtype, sync = torch.float32, (lambda: None)
    a = torch.randn(size, size, device=dev, dtype=dtype)
    b = torch.randn(size, size, device=dev, dtype=dtype)
    for _ in range(3):  # warm-up: cuBLAS handles, kernel selection, clocks
        c = a @ b
    sync()
    burst = 4
    ready.put(rank)
    start.wait()
    iters, t0 = 0, time.perf_counter()
    while True:
        for _ in range(burst):
            c = a @ b  # noqa: F841
        sync()  # one host sync per burst keeps the queue full and the timing honest
        iters += burst
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            break
    results.put(
        {"tenant": rank, "pid": os.getpid(), "iters": iters, "seconds": elapsed, "iters_per_s": iters / elapsed}
    )


def _collect(queue, procs, n, timeout_s):
    """n items from queue; fails fast if a tenant process dies (a CUDA error, out of memory)."""
    import queue as queues

    items, deadline = [], time.monotonic() + timeout_s
    while len(items) < n:
        try:
            items.append(queue.get(timeout=1.0))
        except queues.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"a tenant process failed (exit code {dead[0]}); its error is above") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"the tenants did not report within {timeout_s:g} s") from None
    return items


def _run_tenants(n, size, seconds, device):
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # a fresh CUDA context per process; fork and CUDA do not mix
    ready, results, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_tenant, args=(r, size, seconds, device, ready, start, results)) for r in range(n)]
    for p in procs:
        p.start()
    try:
        _collect(ready, procs, n, 300)  # CUDA context, buffers and warm-up done in every tenant
        start.set()  # every tenant starts its timed loop together
        out = _collect(results, procs, n, 120 + 10 * seconds)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    return sorted(out, key=lambda r: r["tenant"])


def measure(seconds: float = 4.0, size: int = 8192, device: str = "cuda", tenants: int = 2) -> dict:
    """The same matmul loop alone, then in `tenants` processes at once (time-slicing: with no
    MPS daemon running, the GPU switches between the processes' contexts)."""
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA GPU is visible: measure needs one")
        name = torch.cuda.get_device_name(0)
    else:
        name = device
    alone = _run_tenants(1, size, seconds, device)[0]
    shared = _run_tenants(tenants, size, seconds, device)
    return {
        "mode": "time-slicing",
        "device": name,
        "size": size,
        "seconds": seconds,
        "alone": alone,
        "shared": shared,
        "slowdown": [alone["iters_per_s"] / s["iters_per_s"] for s in shared],
        "shared_sum_over_alone": sum(s["iters_per_s"] for s in shared) / alone["iters_per_s"],
    }


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
        try:
            result = measure(args.seconds, args.size, args.device)
        except RuntimeError as exc:
            print(f"measure: {exc}", file=sys.stderr)
            return 1
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
