"""One process: prints, reports two steps, fails on request."""

import argparse

from gpudojo import labkit

p = argparse.ArgumentParser()
p.add_argument("--fail", action=argparse.BooleanOptionalAction)
args = p.parse_args()
for step in range(2):
    labkit.report(step=step, loss=1.0 / (step + 1))
    print(f"single step {step}", flush=True)
if args.fail:
    raise ValueError("asked to fail")
