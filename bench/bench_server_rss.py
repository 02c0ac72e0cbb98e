"""The server process's RSS across many different analysed profile traces and memory captures
(issue 27): what the server keeps of the analyses is bounded by GPUDojo.analysis_keep_open_bytes
(and 4 open analyses per service), so its RSS rises while the services fill that budget, then
stays flat.

A real `jupyter server` with gpudojo (bench/server.py); for each of --count pairs, POST
profile/analyze on a trace never seen before, GET profile/window (px=1200), POST memory/analyze
on a capture never seen before, GET memory/window (px=1200, top=500), then the server's RSS
(/proc/PID/status, the server process only: the analysis workers are children of their own).
Traces: a real torch.profiler CPU trace (tests/python/profile_traces.py ``make_fast_trace``)
repeated to a different number of events each (``scale_trace``, sizes spread over --events);
captures: real-shaped snapshots (``write_real_snapshot``) of as many entries, seed = index.
Inputs are made once into --cache-dir.

    cd bench && ../.venv/bin/python bench_server_rss.py [--count 20 --events 200000,400000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from server import REPO, api, jupyter_server, machine

sys.path.insert(0, str(REPO / "tests" / "python"))

MIB = 1024**2


def rss(pid: int) -> int:
    """Resident set of one process (bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def make_inputs(cache: Path, count: int, lo: int, hi: int) -> list[tuple[Path, Path, int]]:
    """(trace, capture, n) for ``count`` sizes spread over [lo, hi], made once."""
    from memory_data import write_real_snapshot
    from profile_traces import make_fast_trace, scale_trace

    cache.mkdir(parents=True, exist_ok=True)
    base = cache / "base.json"
    if not base.is_file():
        make_fast_trace(base)
    step = max((hi - lo) // max(count - 1, 1), 1)  # lo == hi: sizes one event apart, still different files
    ramp = [lo + i * step for i in range(count)]
    sizes = ramp[::2] + ramp[1::2]  # the ramp twice over: what was kept is replaced by bigger and smaller
    made = []
    for n in sizes:
        trace, capture = cache / f"trace-{n}.json", cache / f"capture-{n}.pickle"
        if not trace.is_file():
            scale_trace(base, trace.with_suffix(".tmp"), n).replace(trace)
        if not capture.is_file():
            write_real_snapshot(capture.with_suffix(".tmp"), n, seed=n)
            capture.with_suffix(".tmp").replace(capture)
        made.append((trace, capture, n))
    return made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=20, help="different traces, and as many captures")
    parser.add_argument("--events", default="200000,400000", help="smallest,largest trace events (and entries)")
    parser.add_argument("--keep-open-mib", type=int, default=None, help="GPUDojo.analysis_keep_open_bytes in MiB")
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "gpudojo-bench-rss", help="inputs, made once"
    )
    args = parser.parse_args()
    lo, hi = (int(x) for x in args.events.split(","))
    t0 = time.perf_counter()
    inputs = make_inputs(args.cache_dir, args.count, lo, hi)
    print(f"inputs ready in {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    extra = ["--GPUDojo.memory_warm_worker=True"]
    if args.keep_open_mib is not None:
        extra.append(f"--GPUDojo.analysis_keep_open_bytes={args.keep_open_mib * MIB}")
    rows = []
    with jupyter_server(extra=extra) as (proc, port):
        root = Path(next(a for a in proc.args if a.startswith("--ServerApp.root_dir=")).split("=", 1)[1])
        for trace, capture, _ in inputs:
            shutil.copyfile(trace, root / trace.name)
            shutil.copyfile(capture, root / capture.name)
        # The services' first use imports what they need (NumPy, the analyses' modules).
        start = rss(proc.pid)
        for trace, capture, n in inputs:
            t_s, summary, _ = api(port, "profile/analyze", {"path": trace.name})
            api(port, f"profile/window?trace=file:{trace.name}&px=1200")
            c_s, analysis, _ = api(port, "memory/analyze", {"path": capture.name})
            api(port, f"memory/window?capture=file:{capture.name}&px=1200&top=500")
            assert not summary["cached"] and not analysis["cached"]
            rows.append({"n": n, "trace_s": t_s, "capture_s": c_s, "rss": rss(proc.pid)})
            print(f"{n:>9,} events/entries: server RSS {rows[-1]['rss'] / MIB:.0f} MiB", file=sys.stderr)
    report(rows, start, args)


def report(rows: list[dict], start: int, args: argparse.Namespace) -> None:
    print(f"Machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the end")
    budget = f"{args.keep_open_mib} MiB" if args.keep_open_mib is not None else "default (128 MiB)"
    print(f"analysis_keep_open_bytes: {budget} per service; server RSS before the first analysis {start / MIB:.0f} MiB")
    print("\n| # | trace events / capture entries | analyze trace | analyze capture | server RSS |")
    print("|---|---|---|---|---|")
    for i, r in enumerate(rows, 1):
        print(f"| {i} | {r['n']:,} | {r['trace_s']:.2f} s | {r['capture_s']:.2f} s | {r['rss'] / MIB:.0f} MiB |")
    curve = [r["rss"] for r in rows]
    half = len(curve) // 2
    print(
        f"\nRSS after pair 1: {curve[0] / MIB:.0f} MiB; highest: {max(curve) / MIB:.0f} MiB; "
        f"second half (pairs {half + 1}-{len(curve)}): {min(curve[half:]) / MIB:.0f}-{max(curve[half:]) / MIB:.0f} MiB "
        f"(spread {(max(curve[half:]) - min(curve[half:])) / MIB:.1f} MiB)"
    )


if __name__ == "__main__":
    main()
