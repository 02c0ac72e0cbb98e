"""Exits with 1 at once (a message on stderr, no traceback: the fuzzer flags any traceback in a
response body), so a fuzzed launch of it fails in well under a second."""

import argparse

p = argparse.ArgumentParser()
p.add_argument("--code", type=int, default=3)
args = p.parse_args()
raise SystemExit(f"lab-fuzz-fails: failing on purpose (code {args.code})")
