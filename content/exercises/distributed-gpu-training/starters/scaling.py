"""scaling.py: the throughput of ddp_train.py with 1 and 2 processes, the speedup and the
scaling efficiency.

    python scaling.py                  # a table
    python scaling.py --json           # the table, then the report as one line of JSON

Each point is one torchrun launch of ddp_train.py with a fresh checkpoint folder. The batch
per rank stays the same, so a step of N ranks trains N times the samples of one.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3, help="epochs per run")
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--json", action="store_true", help="print the report as JSON on the last line")
    return p.parse_args(argv)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(nproc: int, args: argparse.Namespace) -> list[dict]:
    """One torchrun launch of ddp_train.py; rank 0's metrics lines (dicts)."""
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
            "--ckpt-every", "0",
            "--ckpt-dir", ckpt,
            "--json",
        ]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"torchrun with {nproc} process(es) exited with {done.returncode}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def throughput(lines: list[dict]) -> float | None:
    # TODO(throughput): samples per second of the whole job, from the metrics lines. Leave out
    # the warm-up, and choose a statistic that one stalled step cannot move much.
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs = []
    # TODO(scaling): run 1 and 2 processes, and report for each its nproc, the world_size its
    # metrics lines show and its samples_per_s; then the speedup of 2 over 1 and the
    # efficiency (speedup / 2). The README has the report's format.
    for n in (1,):
        lines = run(n, args)
        runs.append({"nproc": n, "world_size": lines[-1]["world_size"], "samples_per_s": throughput(lines)})
    report = {"runs": runs, "speedup": None, "efficiency": None}
    for r in runs:
        print(f"{r['nproc']} process(es): {r['samples_per_s']} samples/s")
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
