"""The sandbox's cost: exercise check wall time with and without bubblewrap around learner programs.

Each exercise's solution is checked (CPU variant) through the exercise service, as a
learner's copy would be, once with the sandbox and once without (ExerciseService's
``sandbox=False``, which exists for this bench), alternating which goes first, ``--runs``
times each; the figure is the median wall time from Check to the final result. A second
table gives the cost per learner program: ``python -c pass`` started plainly and in the
sandbox the checks build (the same options), median of ``--programs`` starts.

    cd bench && ../.venv/bin/python bench_checks.py --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpudojo.course.catalog import CourseCatalog
from gpudojo.course.exercises import ExerciseService
from gpudojo.course.progress import ProgressStore
from gpudojo.paths import material_root
from gpudojo.worker import sandbox
from server import machine

EXERCISES = ["gpu-introspection", "cuda-kernel", "pytorch-pipeline", "distributed-gpu-training"]


def check_once(svc: ExerciseService, exercise: str) -> float:
    """Seconds from Check to the final attempt of the exercise's solution."""
    folder = material_root("content") / "exercises" / exercise / "solution"
    t0 = time.perf_counter()
    svc.check("bench", exercise, 0, folder=folder)
    attempt = svc.wait("bench", exercise, timeout_s=1800)
    took = time.perf_counter() - t0
    if attempt is None or not attempt.completed:
        raise SystemExit(f"{exercise}: the solution did not complete ({attempt and attempt.error})")
    return took


def program_starts(n: int, tmp: Path) -> tuple[float, float]:
    """Median ms to start and finish ``python -c pass``, plainly and in the sandbox."""
    support = sandbox.support()
    scratch = tmp / "scratch"
    scratch.mkdir(exist_ok=True)
    plain, boxed = [], []
    argv = [sys.executable, "-c", "pass"]
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, close_fds=True)
        plain.append(time.perf_counter() - t0)
        command, fd = sandbox.wrap(
            support.bwrap, argv, cwd=scratch, writable=[scratch], hidden=[material_root("content")]
        )
        t0 = time.perf_counter()
        try:
            subprocess.run(command, check=True, pass_fds=(fd,))
        finally:
            os.close(fd)
        boxed.append(time.perf_counter() - t0)
    return statistics.median(plain) * 1000, statistics.median(boxed) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--programs", type=int, default=20)
    ap.add_argument("--exercise", action="append", help="exercise id (repeatable); default: " + ", ".join(EXERCISES))
    args = ap.parse_args()
    support = sandbox.support()
    if not support.available:
        raise SystemExit(f"No sandbox to measure here: {support.reason}")
    print(f"machine: {machine()}; Python {sys.version.split()[0]}; {support.bwrap}")
    with tempfile.TemporaryDirectory(prefix="gpudojo-bench-checks-") as tmp_name:
        tmp = Path(tmp_name)
        store = ProgressStore(tmp / "data" / "gpudojo.sqlite3")
        catalog = CourseCatalog(material_root("content"), material_root("labs"))
        services = {
            on: ExerciseService(catalog, store, tmp / "root", tmp / "data" / "exercise-checks", sandbox=on)
            for on in (False, True)
        }
        print("| exercise (solution, CPU variant) | without sandbox | with sandbox | added |")
        print("|---|---|---|---|")
        try:
            for exercise in args.exercise or EXERCISES:
                times: dict[bool, list[float]] = {False: [], True: []}
                for i in range(args.runs):
                    for on in (False, True) if i % 2 == 0 else (True, False):
                        times[on].append(check_once(services[on], exercise))
                off, on = statistics.median(times[False]), statistics.median(times[True])
                print(
                    f"| {exercise} | {off:.1f} s | {on:.1f} s | {on - off:+.1f} s ({(on - off) / off * 100:+.0f}%) |",
                    flush=True,
                )
        finally:
            for svc in services.values():
                svc.close()
            store.close()
        plain, boxed = program_starts(args.programs, tmp)
        print(f"\n`python -c pass`: {plain:.0f} ms plainly, {boxed:.0f} ms in the sandbox ({boxed - plain:+.0f} ms)")


if __name__ == "__main__":
    main()
