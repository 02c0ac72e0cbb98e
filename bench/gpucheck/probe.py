"""Step 1: `gpudojo probe --json`, then a 60 s `gpudojo probe --record` while bf16 matmuls load
the GPU; the recording's fields compared with the stand-in recording's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpucheck.step import REPO, Ctx, Result, child_env, kill_group, run_cmd, skipped

RECORD_SECONDS = 60
RECORD_RATE_HZ = 4

LOAD_SRC = r"""
import sys, time, torch
seconds = float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
print("loaded", flush=True)
t0 = time.perf_counter()
n = 0
while time.perf_counter() - t0 < seconds:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
    n += 20
took = time.perf_counter() - t0
print(f"matmuls {n} in {took:.1f} s: {2 * 8192**3 * n / took / 1e12:.0f} TFLOP/s (bf16 8192^3)", flush=True)
"""


def _flat_fields(sample: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sample.items() if k not in ("index", "processes", "unsupported")}


def recording_report(path: Path) -> dict[str, Any]:
    """What a recording holds: samples, ranges of the load-bearing fields, fields never reported."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    samples = [g for line in lines if line.get("type") == "sample" for g in line["gpus"]]
    fields: dict[str, list[Any]] = {}
    for s in samples:
        for k, v in _flat_fields(s).items():
            fields.setdefault(k, []).append(v)
    ranges = {}
    for k, values in fields.items():
        nums = [v for v in values if isinstance(v, int | float)]
        ranges[k] = {"min": min(nums), "max": max(nums)} if nums else None
    inv = next((line for line in lines if line.get("type") == "inventory"), {})
    return {
        "lines": len(lines),
        "samples": len(samples),
        "ranges": ranges,
        "never_reported": sorted(k for k, r in ranges.items() if r is None),
        "unsupported": sorted({u for s in samples for u in s.get("unsupported", [])}),
        "inventory_keys": sorted(inv.keys()),
    }


def stand_in_fields() -> set[str]:
    """Sample fields the stand-in recording (made over a simulated NVML) fills."""
    path = REPO / "tests" / "data" / "gpu" / "2gpu-h100-nvlink.jsonl"
    for line in path.read_text().splitlines():
        doc = json.loads(line)
        if doc.get("type") == "sample":
            return {k for k, v in _flat_fields(doc["gpus"][0]).items() if v is not None}
    return set()


def step_probe(ctx: Ctx) -> Result:
    log = ctx.log / "probe.log"
    cli = [sys.executable, "-m", "gpudojo.cli", "probe"]
    rc, out = run_cmd([*cli, "--json"], timeout=60, log=log)
    details: dict[str, Any] = {"probe_json_exit": rc}
    try:
        doc = json.loads(out[out.index("{") : out.rindex("}") + 1])
        (ctx.work / "probe.json").write_text(json.dumps(doc, indent=2))
    except ValueError:
        doc = {}
    details["available"] = doc.get("available")
    details["reason"] = doc.get("reason")
    if not ctx.gpu:
        rc_rec, _ = run_cmd([*cli, "--record", str(ctx.work / "recording.jsonl"), "--count", "2"], 60, log)
        details["record_exit"] = rc_rec
        ok = rc == 2 and doc.get("available") is False and rc_rec == 2
        return skipped(
            f"probe --json exit {rc} (available={doc.get('available')}, reason: {doc.get('reason')!r}); "
            f"probe --record exit {rc_rec}" + ("" if ok else " (expected exit 2 from both, no GPU)"),
            details,
            ok,
        )
    gpus = doc.get("gpus") or []
    if gpus:
        g = gpus[0]
        details["gpu"] = {k: g.get(k) for k in ("name", "compute_capability", "memory_total_bytes", "power_limit_w")}
        details["gpu_unsupported"] = g.get("unsupported")
    load = subprocess.Popen(
        [sys.executable, "-c", LOAD_SRC, str(RECORD_SECONDS + 3)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=child_env(),
        text=True,
    )
    try:
        first = load.stdout.readline() if load.stdout else ""
        details["load_started"] = first.strip() == "loaded"
        count = RECORD_SECONDS * RECORD_RATE_HZ
        rec = ctx.work / "recording.jsonl"
        rc_rec, _ = run_cmd(
            [*cli, "--record", str(rec), "--count", str(count), "--rate", str(RECORD_RATE_HZ)],
            timeout=min(RECORD_SECONDS + 30, ctx.left()),
            log=log,
        )
        details["record_exit"] = rc_rec
        load_out, _ = load.communicate(timeout=max(min(20, ctx.left()), 1))
        details["load"] = load_out.strip().splitlines()[-1:] if load_out else []
    except subprocess.TimeoutExpired:
        details["load"] = ["the load did not finish in time"]
    finally:
        kill_group(load)
    rec = ctx.work / "recording.jsonl"
    if not rec.is_file():
        return (
            "failed",
            f"probe --json exit {rc}; no recording (probe --record exit {details.get('record_exit')})",
            details,
        )
    report = recording_report(rec)
    details["recording"] = report
    standin = stand_in_fields()
    real = {k for k, r in report["ranges"].items() if r is not None}
    details["vs_stand_in"] = {
        "stand_in_only": sorted(standin - real),
        "real_only": sorted(real - standin),
    }
    util = (report["ranges"].get("utilization_gpu_pct") or {}).get("max") or 0
    count = RECORD_SECONDS * RECORD_RATE_HZ
    ok = rc == 0 and details.get("record_exit") == 0 and report["samples"] >= count * 0.9 and util >= 50
    note = (
        f"{report['samples']} samples at {RECORD_RATE_HZ} Hz; max utilisation {util:.0f}%, "
        f"power up to {(report['ranges'].get('power_w') or {}).get('max')} W; "
        f"never reported: {', '.join(report['never_reported']) or 'none'}"
    )
    return ("passed" if ok else "failed"), note, details
