"""scaling.py: the throughput of ddp_train.py with 1 and 2 processes, the speedup and the
scaling efficiency.

    python scaling.py                  # a table
    python scaling.py --json           # the table, then the report as one line of JSON
    python scaling.py --nproc 1 2 4    # more points (each process needs a core, or a GPU)

Each point is one torchrun launch of ddp_train.py with a fresh checkpoint folder. The batch
per rank stays the same, so a step of N ranks trains N times the samples of one (weak
scaling, as most data-parallel jobs are run): ideally the throughput grows N-fold.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--nproc", type=int, nargs="+", default=[1, 2], help="process counts to run (the first is the baseline)"
    )
    p.add_argument("--epochs", type=int, default=3, help="epochs per run; the first is left out as warm-up")
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--json", action="store_true", help="print the report as JSON on the last line")
    args = p.parse_args(argv)
    if args.epochs < 2:
        p.error("--epochs must be at least 2: the first epoch is warm-up")
    return args


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(nproc: int, args: argparse.Namespace) -> list[dict]:
    """One torchrun launch; rank 0's metrics lines."""
    with tempfile.TemporaryDirectory(prefix="scaling-") as ckpt:
        cmd = [
            sys.executable, "-m", "torch.distributed.run",
            "--nproc-per-node", str(nproc),
            "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"127.0.0.1:{free_port()}",
            str(HERE / "ddp_train.py"),
            "--epochs", str(args.epochs),
            "--samples", str(args.samples),
            "--batch-size", str(args.batch_size),
            "--hidden", str(args.hidden),
            "--ckpt-every", "0",  # a checkpoint only at the end: we time training, not disk writes
            "--ckpt-dir", ckpt,
            "--json",
        ]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": "1"}  # one thread per rank: ranks do not fight over cores
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"torchrun with {nproc} process(es) exited with {done.returncode}")
    lines = []
    for line in done.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
            if "step" in rec:
                lines.append(rec)
    return lines


def throughput(lines: list[dict]) -> float:
    """Samples per second of the whole job: the median over the steps after the first epoch
    (the first pays for allocations and DDP's bucket rebuild). The median, not the mean: on a
    shared machine a few steps stall, and they say nothing about the job."""
    steady = [r["samples_per_s"] for r in lines if r["epoch"] > 0] or [r["samples_per_s"] for r in lines]
    return statistics.median(steady)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs = []
    for n in args.nproc:
        lines = run(n, args)
        runs.append(
            {
                "nproc": n,
                "world_size": lines[-1]["world_size"],  # what the run itself saw
                "steps": len(lines),
                "samples_per_s": throughput(lines),
            }
        )

    base = runs[0]
    print(f"{'processes':>9} {'steps':>6} {'samples/s':>11} {'speedup':>8} {'efficiency':>10}")
    for r in runs:
        r["speedup"] = r["samples_per_s"] / base["samples_per_s"]
        # Efficiency against the baseline, per process added: 1.0 is perfect scaling.
        r["efficiency"] = r["speedup"] / (r["nproc"] / base["nproc"])
        figures = f"{r['samples_per_s']:>11,.0f} {r['speedup']:>7.2f}x {r['efficiency']:>9.0%}"
        print(f"{r['nproc']:>9} {r['steps']:>6} {figures}")
    print(f"(this machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f})")

    if args.json:
        two = next((r for r in runs if r["nproc"] == 2), runs[-1])
        report = {"runs": runs, "speedup": two["speedup"], "efficiency": two["efficiency"]}
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
