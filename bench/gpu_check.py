"""`make gpu-check`: prove every GPU path of gpudojo on a real GPU in under ten minutes, and keep
what it saw as test data (bench/GPU_CHECK.md explains each step and what it proves).

    python bench/gpu_check.py --out DIR        # on a GPU machine (DIR defaults to $OUT)
    python bench/gpu_check.py --rehearse --out DIR   # anywhere: GPU parts skipped, CPU parts run

Seven steps run in order, each in a child process of its own with a time limit, so that a hung
CUDA context or a crash costs one step, not the run:

  1 probe      gpudojo probe --json, and --record for 60 s while bf16 matmuls load the GPU
  2 tests      the GPU tests (test_kernels_gpu.py and the tests that change behaviour on a GPU)
  3 kernels    the kernel service: vector add, block sum, tiled SGEMM, an illegal address, numba
  4 occupancy  our calculator against the driver's cuOccupancyMaxActiveBlocksPerMultiprocessor
  5 labs       labs 01, 02, 03 (nproc=1, NCCL), 05, 06 (with/without checkpointing, a real OOM)
  6 lessons    every lesson cell tagged needs-gpu executed, its output captured
  7 profile    torch.profiler over one lab-02-like inference step, CUDA activity as a Chrome trace

Without a GPU (or with --rehearse) each step says "skipped: no GPU" and runs its CPU part; a
CPU part that goes wrong makes the step "failed". Everything lands in at most eight files of at
most 16 MiB in the output folder (what the device tool brings back), and a summary table is
printed. `make gpu-check-import DIR=...` (bench/gpu_check_import.py) files the results.

This file runs the steps and packs what they leave; the steps themselves are in bench/gpucheck/
(one module a step, gpucheck/step.py for what they share).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucheck.environment import detect_environment
from gpucheck.gpu_tests import step_tests
from gpucheck.kernels import step_kernels
from gpucheck.labs import snapshot_expectations, step_labs
from gpucheck.lesson_cells import gpu_cells
from gpucheck.lessons import execute_lesson, step_lessons
from gpucheck.occupancy import step_occupancy
from gpucheck.probe import step_probe
from gpucheck.profile import step_profile
from gpucheck.step import SERVER, TESTS, Ctx, Result, run_cmd

# Importable from here as before (bench/gpu_check_import.py's tests use them).
__all__ = ["gpu_cells", "main", "snapshot_expectations"]

# Every file that comes back, in this order; the device tool returns at most 8, 16 MiB each.
OUTPUT_FILES = (
    "summary.md",
    "summary.json",
    "recording.jsonl.gz",
    "snapshots.tar.gz",
    "cells.json",
    "occupancy.json",
    "trace.json.gz",
    "logs.tar.gz",
)
MAX_FILE_BYTES = 16 * 1024 * 1024

# name, title, time limit on a GPU (s). The limits add up to 500 s, leaving room for the
# wheel install and the packing inside the device tool's 10-minute command limit.
STEPS: tuple[tuple[str, str, int], ...] = (
    ("probe", "NVML probe and a 60 s recording under a matmul load", 100),
    ("tests", "GPU tests (pytest)", 90),
    ("kernels", "kernel service on the GPU", 45),
    ("occupancy", "occupancy: our calculator against the driver", 35),
    ("labs", "labs through the run service, memory recorded", 100),
    ("lessons", "lesson cells tagged needs-gpu", 100),
    ("profile", "torch.profiler trace of a lab-02-like step", 30),
)
OVERALL_BUDGET_S = 540
# Without a GPU the CPU parts are short; a step still gets this long before it is stopped.
CPU_STEP_LIMIT_S = 180

STEP_FUNCS: dict[str, Callable[[Ctx], Result]] = {
    "probe": step_probe,
    "tests": step_tests,
    "kernels": step_kernels,
    "occupancy": step_occupancy,
    "labs": step_labs,
    "lessons": step_lessons,
    "profile": step_profile,
}


def run_step_child(name: str, work: Path, gpu: bool, limit: float) -> int:
    """In the child: run one step, write its result as JSON."""
    sys.path[:0] = [str(SERVER), str(TESTS)]
    ctx = Ctx(work, gpu, limit)
    try:
        status, note, details = STEP_FUNCS[name](ctx)
    except Exception as err:
        status, note = "failed", f"{type(err).__name__}: {str(err)[:300]}"
        details = {"traceback": traceback.format_exc()[-3000:]}
    (work / "steps" / f"{name}.json").write_text(json.dumps({"status": status, "note": note, "details": details}))
    return 0


def run_steps(work: Path, gpu: bool, only: list[str] | None, budget: float) -> list[dict[str, Any]]:
    (work / "steps").mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    results = []
    for name, title, gpu_limit in STEPS:
        row: dict[str, Any] = {"step": name, "title": title}
        if only and name not in only:
            row.update(status="skipped", seconds=0.0, note="not asked for (--steps)")
            results.append(row)
            continue
        left = budget - (time.monotonic() - t_start)
        limit = min(gpu_limit if gpu else CPU_STEP_LIMIT_S, left)
        if limit < 5:
            row.update(status="skipped", seconds=0.0, note=f"out of time: the {budget:.0f} s budget is spent")
            results.append(row)
            continue
        t0 = time.monotonic()
        argv = [sys.executable, __file__, "--child", name, "--work", str(work), "--limit", str(limit)]
        if gpu:
            argv.append("--gpu")
        code, _ = run_cmd(argv, limit + 5, work / "logs" / f"{name}.log")
        seconds = round(time.monotonic() - t0, 1)
        result_file = work / "steps" / f"{name}.json"
        if result_file.is_file():
            row.update(json.loads(result_file.read_text()))
            if code == 124:
                row["note"] += f" (stopped at its {limit:.0f} s limit after writing its result)"
        else:
            row.update(
                status="failed",
                note=f"timed out after {limit:.0f} s" if code == 124 else f"the step's process died (exit {code})",
                details={},
            )
        row["seconds"] = seconds
        row["limit_s"] = round(limit)
        results.append(row)
        print(f"[gpu-check] {name:<10} {row['status']:<8} {seconds:>6.1f} s  {row['note']}", flush=True)
    return results


def summary_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| step | status | seconds | note |", "| --- | --- | ---: | --- |"]
    for r in rows:
        note = str(r.get("note", "")).replace("|", "/").replace("\n", " ")
        lines.append(f"| {r['step']} | {r['status']} | {r['seconds']:.1f} | {note} |")
    return "\n".join(lines)


def _gzip(src: Path, dst: Path) -> None:
    with open(src, "rb") as f, gzip.open(dst, "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)


def _tar(dst: Path, members: list[tuple[Path, str]]) -> list[str]:
    """tar.gz of the members, leaving out the largest ones until it fits in MAX_FILE_BYTES."""
    dropped: list[str] = []
    members = sorted(members, key=lambda m: m[0].stat().st_size)
    while True:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
            for path, arc in members:
                tar.add(path, arcname=arc)
        if buf.tell() <= MAX_FILE_BYTES or not members:
            dst.write_bytes(buf.getvalue())
            return dropped
        dropped.append(members.pop()[1])


def pack(work: Path, out: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """The work folder as the eight files that come back."""
    out.mkdir(parents=True, exist_ok=True)
    packed: dict[str, Any] = {"dropped": []}
    if (work / "recording.jsonl").is_file():
        _gzip(work / "recording.jsonl", out / "recording.jsonl.gz")
    snaps = sorted((work / "snapshots").glob("*")) if (work / "snapshots").is_dir() else []
    if snaps:
        packed["dropped"] += _tar(out / "snapshots.tar.gz", [(p, p.name) for p in snaps])
    for name in ("cells.json", "occupancy.json"):
        if (work / name).is_file():
            shutil.copy(work / name, out / name)
    if (work / "trace.json").is_file():
        _gzip(work / "trace.json", out / "trace.json.gz")
        if (out / "trace.json.gz").stat().st_size > MAX_FILE_BYTES:
            (out / "trace.json.gz").unlink()
            packed["dropped"].append("trace.json.gz (over 16 MiB)")
    logs = [(p, str(p.relative_to(work))) for p in sorted(work.rglob("*")) if p.is_file() and _is_log(p, work)]
    packed["dropped"] += _tar(out / "logs.tar.gz", logs)
    summary["packed"] = packed
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "summary.md").write_text(summary_markdown(summary))
    packed["files"] = {p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.name in OUTPUT_FILES}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return packed


def _is_log(path: Path, work: Path) -> bool:
    rel = path.relative_to(work)
    if rel.parts[0] in ("snapshots", "kernel-cache") or path.name in ("recording.jsonl", "trace.json"):
        return False
    if rel.parts[0] == "labdata":
        # the run's own record (run.json, logs, metrics, error files), not its snapshots again
        return path.suffix not in (".pickle",) and path.stat().st_size < 4 * 1024 * 1024
    return path.stat().st_size < 8 * 1024 * 1024


def summary_markdown(summary: dict[str, Any]) -> str:
    env = summary["environment"]
    where = env.get("gpu_name") or "no GPU"
    lines = [
        f"# make gpu-check: {where}",
        "",
        f"{env['started_at']} on {env.get('host')} ({env.get('cpus')} CPUs), Python {env.get('python')}, "
        f"torch {env.get('packages', {}).get('torch', 'n/a')} (CUDA {env.get('torch_cuda')}), "
        f"mode: {'GPU' if env['gpu'] else 'rehearsal (no GPU)'}; {summary['seconds']:.0f} s in all.",
        "",
        summary_table(summary["steps"]),
        "",
        "Packages: " + ", ".join(f"{k} {v}" for k, v in sorted(env.get("packages", {}).items())),
        "",
    ]
    occ = next((s for s in summary["steps"] if s["step"] == "occupancy"), None)
    if occ and occ.get("details", {}).get("cases"):
        lines += ["## Occupancy cases (blocks per SM)", "", "| case | ours | driver |", "| --- | ---: | ---: |"]
        for c in occ["details"]["cases"]:
            lines.append(
                f"| {c['id']} | {c.get('ours')} | {c.get('driver') if c.get('driver') is not None else 'n/a'} |"
            )
        lines.append("")
    if summary.get("packed", {}).get("dropped"):
        lines.append("Left out to stay under 16 MiB a file: " + ", ".join(summary["packed"]["dropped"]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="output folder (default: $OUT)")
    ap.add_argument("--rehearse", action="store_true", help="act as if there were no GPU")
    ap.add_argument("--steps", help="comma-separated subset of: " + ",".join(s[0] for s in STEPS))
    ap.add_argument("--budget", type=float, default=OVERALL_BUDGET_S, help="seconds for all steps together")
    ap.add_argument("--keep-work", action="store_true", help="keep the work folder (printed)")
    # internal: one step in a child process, or one lesson
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=float, default=60, help=argparse.SUPPRESS)
    ap.add_argument("--gpu", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--lesson", help=argparse.SUPPRESS)
    ap.add_argument("--gpus", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--cell-timeout", type=int, default=120, help=argparse.SUPPRESS)
    ap.add_argument("--partial", help=argparse.SUPPRESS)
    ap.add_argument("--gpu-lock", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        return run_step_child(args.child, Path(args.work), args.gpu, args.limit)
    if args.lesson:
        sys.path[:0] = [str(SERVER), str(TESTS)]
        partial = Path(args.partial) if args.partial else None
        lock = Path(args.gpu_lock) if args.gpu_lock else None
        print(json.dumps(execute_lesson(Path(args.lesson), args.gpus, args.cell_timeout, partial, lock)))
        return 0

    out_dir = args.out or os.environ.get("OUT")
    if not out_dir:
        ap.error("give --out DIR (or set OUT)")
    out = Path(out_dir).resolve()
    only = [s.strip() for s in args.steps.split(",")] if args.steps else None
    if only and set(only) - set(STEP_FUNCS):
        ap.error(f"unknown steps: {', '.join(sorted(set(only) - set(STEP_FUNCS)))}")
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    (work / "logs").mkdir()
    try:
        env = detect_environment(work, args.rehearse)
        (work / "environment.json").write_text(json.dumps(env, indent=1))
        mode = f"GPU: {env.get('gpu_name')} ({env.get('arch')})" if env["gpu"] else "rehearsal: no GPU"
        print(f"[gpu-check] {mode}; work folder {work}; results to {out}", flush=True)
        steps = run_steps(work, env["gpu"], only, args.budget)
        summary = {
            "format": "gpudojo-gpu-check/1",
            "environment": env,
            "gpu": env.get("gpu_name") if env["gpu"] else None,
            "date": dt.date.today().isoformat(),
            "seconds": round(time.monotonic() - t0, 1),
            "steps": steps,
        }
        packed = pack(work, out, summary)
        print()
        print(summary_table(steps))
        print(
            f"\n[gpu-check] {len(packed['files'])} files in {out}: "
            + ", ".join(f"{k} ({v / 1024:.0f} KiB)" for k, v in packed["files"].items())
        )
        if packed["dropped"]:
            print(f"[gpu-check] left out to fit: {', '.join(packed['dropped'])}")
        return 0 if all(s["status"] != "failed" for s in steps) else 1
    finally:
        if args.keep_work:
            print(f"[gpu-check] work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
