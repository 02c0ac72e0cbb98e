"""Server start time with and without gpudojo: spawn to first answer of /api/status (ms)."""

from __future__ import annotations

import argparse
import json
import statistics

from server import jupyter_server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.runs):
        for enabled in (False, True):  # interleaved so drift hits both alike
            with jupyter_server(gpudojo=enabled) as (proc, _):
                times[enabled].append(proc.started_in * 1000)
    without, with_ = statistics.median(times[False]), statistics.median(times[True])
    print(
        json.dumps(
            {
                "runs": args.runs,
                "without_gpudojo_ms": round(without),
                "with_gpudojo_ms": round(with_),
                "added_ms": round(with_ - without),
            }
        )
    )


if __name__ == "__main__":
    main()
