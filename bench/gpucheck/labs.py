"""Step 5: each lab once through the run service with small parameters and memory recording on;
the CUDA snapshots it leaves, analysed on the spot."""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gpucheck.step import LABS, Ctx, Result, child_env, run_cmd, skipped

# (run name, lab id, --set values, what the run must end as)
LAB_RUNS: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    ("lab-01", "lab-01-cuda-hello", {"n": 1 << 20}, "succeeded"),
    (
        "lab-02",
        "lab-02-pytorch-gpu",
        {"max_batch": 8, "image_size": 32, "width": 16, "seconds_per_point": 0.1},
        "succeeded",
    ),
    ("lab-03-nccl", "lab-03-ddp", {"nproc": 1, "epochs": 1, "samples": 1024}, "succeeded"),
    ("lab-05", "lab-05-mixed-precision", {"steps": 20, "batch_size": 64, "width": 64, "depth": 2}, "succeeded"),
    ("lab-06", "lab-06-memory", {"steps": 4}, "succeeded"),
    ("lab-06-checkpointing", "lab-06-memory", {"steps": 4, "checkpointing": True}, "succeeded"),
    # 8 MiB is below one step's peak at the default size: the allocator raises a real OOM.
    ("lab-06-oom", "lab-06-memory", {"steps": 4, "budget_mb": 8}, "failed"),
)


def _lab_run(ctx: Ctx, name: str, lab: str, params: dict[str, Any]) -> dict[str, Any]:
    limit = ctx.left()
    data = ctx.work / "labdata" / name
    data.mkdir(parents=True, exist_ok=True)
    sets = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items()]
    argv = [sys.executable, "-m", "gpudojo.cli", "lab", "run", lab, "--data-dir", str(data), "--labs-dir", str(LABS)]
    argv += [a for s in sets for a in ("--set", s)] + ["--follow"]
    t0 = time.perf_counter()
    rc, out = run_cmd(argv, limit, ctx.log / f"lab-{name}.log", env=child_env(GPUDOJO_RECORD_MEMORY="1"), cwd=ctx.work)
    m = re.search(r"^(\S+): (\w+) \((\w+), (\w+)\) exit code", out, re.M)
    doc: dict[str, Any] = {
        "lab": lab,
        "params": params,
        "exit": rc,
        "seconds": round(time.perf_counter() - t0, 1),
        "run_id": m and m.group(1),
        "status": m.group(2) if m else ("timed out" if rc == 124 else "no result"),
        "backend": m and m.group(3),
        "device_mode": m and m.group(4),
        "checks": re.findall(r"^  \[(PASS|FAIL|n/a )\] (.+)$", out, re.M),
        "root_cause": (re.search(r"root cause: (.+)", out) or [None, None])[1],
        "snapshots": [],
    }
    if doc["run_id"]:
        run_dir = data / "runs" / doc["run_id"]
        for pickle in sorted((run_dir / "memory").glob("*.pickle")):
            doc["snapshots"].append(collect_snapshot(ctx, name, pickle))
        for metrics in sorted((run_dir / "metrics").glob("*.jsonl")):
            shutil.copy(metrics, ctx.log / f"lab-{name}-{metrics.name}")
    return doc


def collect_snapshot(ctx: Ctx, run_name: str, pickle: Path) -> dict[str, Any]:
    """Copy a CUDA snapshot (and labkit's sidecar) into the work folder, with what gpudojo's
    analysis makes of it: the importer writes this next to it and a test pins it."""
    target = ctx.work / "snapshots"
    target.mkdir(exist_ok=True)
    stem = f"{run_name}.{pickle.stem}"
    shutil.copy(pickle, target / f"{stem}.pickle")
    sidecar = pickle.with_suffix(".phases.json")
    if sidecar.is_file():
        shutil.copy(sidecar, target / f"{stem}.phases.json")
    entry: dict[str, Any] = {"file": f"{stem}.pickle", "bytes": pickle.stat().st_size}
    try:
        expected = snapshot_expectations(target / f"{stem}.pickle")
        (target / f"{stem}.expected.json").write_text(json.dumps(expected, indent=1))
        entry["peak_bytes"] = expected["peak_bytes"]
        entry["peak_by_category"] = expected["peak_by_category"][:6]
        entry["ooms"] = len(expected["ooms"])
    except Exception as err:
        entry["analysis_error"] = f"{type(err).__name__}: {err}"
    return entry


def snapshot_expectations(path: Path) -> dict[str, Any]:
    """What gpudojo's memory analysis makes of a capture: the figures a test pins."""
    from gpudojo.memory.analysis import analyse
    from gpudojo.memory.snapshot import read_capture

    summary = analyse(read_capture(path))[1]
    return {
        "entries": summary["entries"],
        "allocations": summary["allocations"],
        "categories": summary["categories"],
        "category_source": summary["category_source"],
        "peak_bytes": summary["peak"]["total_bytes"],
        "peak_by_category": summary["peak"]["by_category"],
        "ooms": [
            {
                "requested_bytes": o["requested_bytes"],
                "device_free_bytes": o.get("device_free_bytes"),
                "live_bytes": o["live"]["total_bytes"],
                "fixes": [f["action"] for f in o["fixes"]],
            }
            for o in summary["ooms"]
        ],
    }


def step_labs(ctx: Ctx) -> Result:
    from gpudojo.runs.manifest import load_labs, validate_params

    labs, problems = load_labs(LABS)
    details: dict[str, Any] = {"problems": [p.model_dump() for p in problems], "runs": {}}
    bad = []
    for name, lab, params, _ in LAB_RUNS:
        try:
            validate_params(labs[lab].manifest, dict(params))
        except Exception as err:
            bad.append(f"{name}: {type(err).__name__}: {err}")
    details["parameter_problems"] = bad
    if not ctx.gpu:
        return skipped(
            f"{len(LAB_RUNS)} runs of {len({r[1] for r in LAB_RUNS})} labs prepared, their --set values valid"
            + (f"; invalid: {'; '.join(bad)}" if bad else ""),
            details,
            not bad,
        )
    # Four at a time: the GPU has room for all of them; timings in these runs are not the point.
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(_lab_run, ctx, name, lab, params) for name, lab, params, _ in LAB_RUNS}
        for name, fut in futures.items():
            try:
                details["runs"][name] = fut.result()
            except Exception as err:
                details["runs"][name] = {"status": "exception", "error": f"{type(err).__name__}: {err}"}
    wrong = []
    for name, _, _, wanted in LAB_RUNS:
        run = details["runs"][name]
        if run["status"] != wanted:
            wrong.append(f"{name} {run['status']} (wanted {wanted})")
        elif name == "lab-06-oom" and not any(s.get("ooms") for s in run["snapshots"]):
            wrong.append("lab-06-oom failed without an OOM in its snapshot")
        elif name.startswith("lab-06") and not run["snapshots"]:
            wrong.append(f"{name}: no CUDA snapshot")
    failed_checks = [
        f"{name}: {title[:80]}"
        for name, run in details["runs"].items()
        for mark, title in run.get("checks", [])
        if mark == "FAIL"
    ]
    details["failed_checks"] = failed_checks
    if details["runs"].get("lab-03-nccl", {}).get("backend") != "nccl":
        wrong.append("lab-03 did not run on NCCL")
    snaps = sum(len(r.get("snapshots", [])) for r in details["runs"].values())
    note = f"{len(LAB_RUNS) - len(wrong)}/{len(LAB_RUNS)} runs ended as wanted; {snaps} CUDA snapshots"
    if wrong:
        note += "; " + "; ".join(wrong)
    if failed_checks:
        # A lab check that fails on a real GPU is a finding about the lab, not a broken GPU path.
        note += f"; lab checks that failed: {'; '.join(failed_checks)}"
    return ("passed" if not wrong else "failed"), note, details
