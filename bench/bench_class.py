"""The class view with many learners: gathering 100 learners' summaries (budget: under 2 s).

100 STAND-IN learner servers (tests/python/class_standins.py: tiny tornado servers, one port each,
serving summaries recorded with gpudojo's own ProgressStore and summarise() over the repository's
course) and a stand-in hub users API run in a separate process; this process gathers the class
as the gpudojo-class service does (gather_report: the users list, then every server's summary,
``--concurrency`` at a time, each within a 5 s timeout), ``--runs`` times per simulated answer
latency. The figure is the median and the slowest wall time of a whole gathering. A second
figure is what a real gpudojo server spends making one summary (summarise() on the course).

    cd bench && ../.venv/bin/python bench_class.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpudojo.classview.app import ClassSettings, gather_report
from gpudojo.course.catalog import CourseCatalog
from gpudojo.course.models import ModuleTest
from gpudojo.course.moduletest import MODULE_TEST_FILE, load_cached, scores
from gpudojo.course.progress import ProgressStore
from gpudojo.course.summary import summarise
from server import machine

REPO = Path(__file__).resolve().parents[1]
STANDINS = REPO / "tests" / "python" / "class_standins.py"


def start_standins(learners: int, latency_ms: float, folder: Path) -> tuple[subprocess.Popen, dict]:
    argv = [sys.executable, str(STANDINS), "--learners", str(learners), "--latency-ms", str(latency_ms)]
    proc = subprocess.Popen(
        [*argv, "--folder", str(folder)],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()  # the stand-ins print where the hub is once every server listens
    if not line:
        raise SystemExit("the stand-in class did not start")
    return proc, json.loads(line)


def gather_times(info: dict, runs: int, concurrency: int) -> list[float]:
    settings = ClassSettings(
        api_url=info["api_url"], token=info["token"], proxy_url="http://127.0.0.1:1", concurrency=concurrency
    )
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        report = asyncio.run(gather_report(settings))
        times.append(time.perf_counter() - t0)
        if report.answered != info["learners"]:
            raise SystemExit(f"only {report.answered} of {info['learners']} answered: {report.learners[:3]}")
    return times


def summary_cost_ms(store_path: Path, repeats: int = 50) -> float:
    """Median ms of one summary of a recorded learner, as a real gpudojo server makes it."""
    data = CourseCatalog(REPO / "content", REPO / "labs").data()
    test, _ = load_cached(REPO / "content" / MODULE_TEST_FILE, ModuleTest)
    store = ProgressStore(store_path)
    try:
        user = store.users()[0]
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            summarise(data, store, user, scores(store, user, test) if test else None).model_dump_json()
            times.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times)
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--latencies", default="0,20,100", help="Simulated answer latencies to try (ms)")
    args = parser.parse_args()
    print(f"Machine: {machine()}")
    print(f"{args.learners} stand-in learners, concurrency {args.concurrency}, median / slowest of {args.runs}")
    print("| answer latency | median | slowest |")
    print("|---|---|---|")
    cost = None
    with tempfile.TemporaryDirectory() as tmp:
        for latency in (float(x) for x in args.latencies.split(",")):
            folder = Path(tmp) / f"lat{latency:g}"
            folder.mkdir()
            proc, info = start_standins(args.learners, latency, folder)
            try:
                times = gather_times(info, args.runs, args.concurrency)
            finally:
                proc.terminate()
                proc.wait(10)
            print(f"| {latency:g} ms | {statistics.median(times) * 1000:.0f} ms | {max(times) * 1000:.0f} ms |")
            if cost is None:
                cost = summary_cost_ms(folder / "stand-in-class.sqlite3")
    print(f"One summary made by a real gpudojo server (summarise() over the course): {cost:.1f} ms median")


if __name__ == "__main__":
    main()
