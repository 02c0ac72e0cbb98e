"""The API fuzzed at length: the harness of tests/python/test_fuzz_api.py (schemathesis cases from
the served openapi.json, against a real `jupyter server` with gpudojo and small caps) with more
cases than `make test` runs.

The issue's bar: 0 responses 5xx, 0 responses that violate the documented schema, 0 tracebacks
in a body (and, here, none in the server's log either).

    cd bench && ../.venv/bin/python bench_fuzz.py --cases 20000 --seed 15
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from server import machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

from fuzz_harness import fuzz, fuzz_server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=20000, help="cases over all routes (default 20000)")
    ap.add_argument("--seed", type=int, default=15, help="schemathesis/hypothesis seed (default 15)")
    ap.add_argument("--json", type=Path, help="also write the figures here as JSON")
    ap.add_argument("--quiet", action="store_true", help="no line per route while it runs")
    args = ap.parse_args(argv)

    print(f"machine: {machine()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, fuzz_server(Path(tmp)) as server:
        progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
        report = fuzz(server, cases=args.cases, seed=args.seed, progress=progress)
        alive = server.alive() and server.get_json("gpu/devices")[0] == 200
    print(report.table())
    print(f"server answering after the run: {alive}")
    if report.failures:
        print(report.failure_text(limit=40))
    if args.json:
        args.json.write_text(json.dumps({**report.as_dict(), "alive_after": alive}, indent=2) + "\n")
    ok = report.failures == 0 and report.server_errors == 0 and report.log_tracebacks == 0 and alive
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
