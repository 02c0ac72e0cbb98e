"""What a cached GET profile/summary costs the server, by the summary's size: the served JSON as
made now (the analysis's fields validated and written once per opened analysis, each call adding
its trace, cached flag and time) against the way before (a ProfileSummary model validated from
the analysis's dict and dumped on every call), in the same process, back to back.

The summary's size grows with the trace's profiler steps (each step is its own object with a
breakdown of 7 categories). The analysis is of a real GPU trace, Holistic Trace Analysis's
hta-trace-diff-control (../shared/real-gpu-traces, MIT; 6 steps), and its steps are repeated to
the step counts of the real CPU traces of bench_profile.py: 2,325 (the 1.19M-event trace) and
23,260 (the 10M-event one). Only the number of step objects is made up; their shape is the
real analysis's.

    python bench_profile_summary.py [--steps 6,2325,23260] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from gpudojo.profile.models import ProfileSummary
from gpudojo.profile.service import ProfileService
from server import machine

TRACE = Path(__file__).resolve().parents[2] / "shared" / "real-gpu-traces" / "hta-trace-diff-control.json.gz"


def before(service: ProfileService, trace_id: str) -> str:
    """The code before: every call validated the analysis's dict into a model and dumped it."""
    t0 = time.perf_counter()
    loaded, cached = service._ensure(trace_id)
    s = dict(loaded.summary)
    s["analysis_ms"] = (time.perf_counter() - t0) * 1000
    return ProfileSummary(trace=service.trace(trace_id), cached=cached, **s).model_dump_json()


def timed(call, repeats: int) -> tuple[float, float, int]:
    """(first call ms, median ms of the rest, bytes)."""
    times, size = [], 0
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        size = len(call())
        times.append((time.perf_counter() - t0) * 1000)
    return times[0], statistics.median(times[1:]), size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default="6,2325,23260")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        shutil.copy(TRACE, root / TRACE.name)
        service = ProfileService(Path(tmp) / "data", root)
        trace_id = "file:" + TRACE.name
        service.summary_json(trace_id)  # analysed once; every call below is a cached one
        loaded, _ = service._ensure(trace_id)
        real_steps = loaded.summary["steps"]
        print(f"{machine()}; load average {Path('/proc/loadavg').read_text().split()[0]}")
        print(
            "| steps | summary JSON | before: each call (median) | now: first call | now: each call (median) "
            "| before / now |"
        )
        print("|---|---|---|---|---|---|")
        for n in (int(x) for x in args.steps.split(",")):
            loaded.summary["steps"] = [dict(real_steps[i % len(real_steps)], step=i) for i in range(n)]
            service._bodies.clear()  # as if the analysis had just been opened
            first, now, size = timed(lambda: service.summary_json(trace_id), args.repeats)
            _, old, old_size = timed(lambda: before(service, trace_id), args.repeats)
            a, b = json.loads(service.summary_json(trace_id)), json.loads(before(service, trace_id))
            assert {k: v for k, v in a.items() if k != "analysis_ms"} == {
                k: v for k, v in b.items() if k != "analysis_ms"
            }, "the served summary differs from the model's"
            assert abs(size - old_size) < 64, (size, old_size)
            print(f"| {n:,} | {size / 1e6:.2f} MB | {old:.1f} ms | {first:.1f} ms | {now:.2f} ms | {old / now:.0f}x |")


if __name__ == "__main__":
    main()
