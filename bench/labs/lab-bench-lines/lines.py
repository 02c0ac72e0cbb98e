"""Print a first line at once (click-to-first-line), then --lines numbered lines, then done."""

import argparse
import sys

print("first line", flush=True)
parser = argparse.ArgumentParser()
parser.add_argument("--lines", type=int, default=0)
args = parser.parse_args()
out = sys.stdout
for i in range(args.lines):
    out.write(f"line {i} of a benchmark that streams many lines to the browser\n")
out.write("done\n")
out.flush()
