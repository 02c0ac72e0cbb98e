"""Noise of gpu-performance-optimization's `faster` check: the untouched starter checked against
itself (the check's baseline is the starter), N times. Identical code should measure 1.0x.

    .venv/bin/python bench/perf_exercise_noise.py [--runs 10]

Prints each run's speedup and wall time, then min / median / max.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = "gpu-performance-optimization"
SPEEDUP = re.compile(r"speedup \(CPU\): ([0-9.]+) x")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    args = p.parse_args()
    cli = ROOT / ".venv" / "bin" / "gpudojo"
    starters = ROOT / "content" / "exercises" / EXERCISE / "starters"
    speedups, walls = [], []
    for i in range(args.runs):
        t0 = time.perf_counter()
        out = subprocess.run(
            [str(cli), "exercise", "check", EXERCISE, "--dir", str(starters)], capture_output=True, text=True
        ).stdout
        walls.append(time.perf_counter() - t0)
        m = SPEEDUP.search(out)
        if m is None:
            print(out[-2000:], file=sys.stderr)
            return 1
        speedups.append(float(m.group(1)))
        print(f"run {i + 1}: starter vs starter {speedups[-1]:.3f}x, check wall {walls[-1]:.1f} s", flush=True)
    print(
        f"speedup min {min(speedups):.3f} median {statistics.median(speedups):.3f} max {max(speedups):.3f}; "
        f"check wall median {statistics.median(walls):.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
