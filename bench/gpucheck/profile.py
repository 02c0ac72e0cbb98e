"""Step 7: torch.profiler with CPU and CUDA activity over lab-02's CNN, exported as a Chrome trace."""

from __future__ import annotations

import json
import sys

from gpucheck.step import LABS, Ctx, Result, child_env, run_cmd, skipped

PROFILE_SRC = r"""
import gzip, json, sys, time
from pathlib import Path
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule
sys.path.insert(0, sys.argv[2])
from bench_inference import build_cnn  # lab-02's model

out = Path(sys.argv[1])
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = build_cnn(32).to(device).eval()
batch = 32 if device.type == "cuda" else 4
x = torch.randn(batch, 3, 64, 64, device=device)
activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"):
    for _ in range(3):
        model(x)
    with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=2), record_shapes=True) as prof:
        for _ in range(4):
            with record_function("lab02_inference_step"):
                model(x)
            if device.type == "cuda":
                torch.cuda.synchronize()
            prof.step()
prof.export_chrome_trace(str(out))
events = json.loads(out.read_text())["traceEvents"]
cats = {}
for e in events:
    cats[e.get("cat", "?")] = cats.get(e.get("cat", "?"), 0) + 1
kernels = [e for e in events if e.get("cat") == "kernel"]
print(json.dumps({"device": device.type, "name": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
                  "events": len(events), "categories": cats, "kernels": len(kernels),
                  "kernel_us": round(sum(e.get("dur", 0) for e in kernels), 1),
                  "top_kernels": sorted({e["name"][:80] for e in kernels})[:8], "bytes": out.stat().st_size}))
"""


def step_profile(ctx: Ctx) -> Result:
    trace = ctx.work / ("trace.json" if ctx.gpu else "trace-cpu.json")
    env = child_env() if ctx.gpu else child_env(CUDA_VISIBLE_DEVICES="")
    rc, out = run_cmd(
        [sys.executable, "-c", PROFILE_SRC, str(trace), str(LABS / "lab-02-pytorch-gpu")],
        ctx.left(),
        ctx.log / "profile.log",
        env=env,
    )
    try:
        doc = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        doc = {"error": f"exit {rc}: {out[-400:]}"}
    if not ctx.gpu:
        trace.unlink(missing_ok=True)  # a CPU trace is no test data for the CUDA profile
        ok = rc == 0 and doc.get("events", 0) > 0
        return skipped(f"CPU-only torch.profiler trace of the same step exported ({doc.get('events')} events)", doc, ok)
    ok = rc == 0 and doc.get("kernels", 0) > 0
    note = f"{doc.get('kernels')} CUDA kernel events ({doc.get('kernel_us')} us) in {doc.get('events')} events"
    if ok:
        # The profile feature's analysis (the worker the server runs) on this real CUDA trace.
        analysed = analyse(ctx, trace)
        doc["gpudojo_analysis"] = analysed
        ok = analysed.get("mode") == "gpu" and analysed.get("kernels", 0) > 0
        note += f"; gpudojo's analysis: mode {analysed.get('mode')}, {analysed.get('kernels')} kernel rows, " + (
            f"findings {analysed.get('findings')}, HTA {analysed.get('hta')}"
        )
    return ("passed" if ok else "failed"), note, doc


def analyse(ctx: Ctx, trace) -> dict:
    """gpudojo's profile analysis of the trace, in the worker the server runs, summarised."""
    folder = ctx.work / "profile-analysis"
    rc, out = run_cmd(
        [sys.executable, "-m", "gpudojo.worker.profile_analyze", str(folder), str(trace)],
        ctx.left(),
        ctx.log / "profile-analysis.log",
        env=child_env(),
    )
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return {"error": f"exit {rc}: {out[-400:]}"}
    return {
        "mode": summary["mode"]["kind"],
        "steps": len(summary["steps"]),
        "mean_step_us": summary["mean_step_us"],
        "breakdown": {c["category"]: c["us"] for c in summary["breakdown"]},
        "kernels": len(summary["kernels"]),
        "launch": summary.get("launch"),
        "findings": [f["id"] for f in summary["findings"]],
        "hta": summary.get("hta", []),
        "analysis_ms": summary.get("analysis_ms"),
    }
