"""Prints n lines, reports one metric per line, exits (with 1 when --fail): well under a second."""

import argparse
import sys

from gpudojo import labkit

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=4)
p.add_argument("--scale", type=float, default=0.5)
p.add_argument("--mode", default="plain")
p.add_argument("--fail", action=argparse.BooleanOptionalAction)
args = p.parse_args()
for i in range(args.n):
    labkit.report(step=i, value=i * args.scale)
    print(f"line {i}" if args.mode == "plain" else f"LINE {i}!", flush=True)
sys.exit(1 if args.fail else 0)
