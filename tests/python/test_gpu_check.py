"""`make gpu-check` rehearsed without a GPU: the script runs every step's CPU part, says
"skipped: no GPU" for the rest, and packs its results as the device tool can bring them back.

The run takes about 45 s on two idle cores (NVRTC and numba compiles, a profiler trace,
jupytext), so it runs once for the module."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "gpu_check.py"
STEPS = ["probe", "tests", "kernels", "occupancy", "labs", "lessons", "profile"]
ALLOWED_FILES = {
    "summary.md",
    "summary.json",
    "recording.jsonl.gz",
    "snapshots.tar.gz",
    "cells.json",
    "occupancy.json",
    "trace.json.gz",
    "logs.tar.gz",
}


pytestmark = pytest.mark.timeout(660)  # the rehearsal is slower on a loaded machine


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rehearse", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    return out, done


def test_rehearsal_runs_every_step_to_its_summary(rehearsal):
    out, done = rehearsal
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gpu"] is None and summary["environment"]["rehearse"] is True
    assert [s["step"] for s in summary["steps"]] == STEPS
    for step in summary["steps"]:
        # Skipped for want of a GPU, with the CPU part done (a failed CPU part says "failed").
        assert step["status"] == "skipped", (step["step"], step["note"])
        assert step["note"].startswith("no GPU; CPU part: "), step["note"]
        assert 0 < step["seconds"] < 180
    # The summary table is printed and written, one row per step.
    for text in (done.stdout, (out / "summary.md").read_text()):
        assert "| step | status | seconds | note |" in text
        for name in STEPS:
            assert re.search(rf"^\| {name} \| skipped \| [\d.]+ \| no GPU; CPU part: ", text, re.M), name


def test_rehearsal_output_fits_what_comes_back(rehearsal):
    out, _ = rehearsal
    files = list(out.iterdir())
    assert {f.name for f in files} <= ALLOWED_FILES and len(files) <= 8
    assert all(f.is_file() and f.stat().st_size <= 16 * 1024 * 1024 for f in files)
    # Without a GPU nothing GPU-made is packed: no recording, snapshots or CUDA trace.
    assert not {"recording.jsonl.gz", "snapshots.tar.gz", "trace.json.gz"} & {f.name for f in files}


def test_rehearsal_cpu_parts(rehearsal):
    out, _ = rehearsal
    steps = {s["step"]: s for s in json.loads((out / "summary.json").read_text())["steps"]}
    probe = steps["probe"]["details"]
    assert probe["probe_json_exit"] == 2 and probe["available"] is False and probe["record_exit"] == 2
    assert "test_kernels_gpu.py" in steps["tests"]["details"]["files"] and steps["tests"]["details"]["collected"] >= 4
    kernels = steps["kernels"]["details"]
    assert kernels["sgemm_compile"]["ok"] and kernels["sgemm_compile"]["shared_bytes"] == 8192
    assert kernels["runs"]["vector_add"]["status"] == "passed"  # in the CPU emulator
    assert kernels["runs"]["numba_block_sum"]["status"] == "passed"
    assert steps["labs"]["details"]["parameter_problems"] == []
    assert steps["profile"]["details"]["events"] > 0

    occ = json.loads((out / "occupancy.json").read_text())
    assert len(occ["cases"]) >= 12
    for case in occ["cases"]:
        assert "error" not in case, case
        assert case["driver"] is None and case["ours"]["blocks_per_sm"] >= 1
    limiters = {c["ours"]["limited_by"] for c in occ["cases"]}
    assert limiters == {"warps", "blocks", "registers", "shared_memory"}
    question = occ["sm90_numba_question"]
    assert question["answer"] is None and question["linker_reports"] >= question["ptx_declares"] > 0

    cells = json.loads((out / "cells.json").read_text())["cells"]
    tagged = sum(
        len(re.findall(r"^tags: \[[^\]]*needs-gpu", p.read_text(), re.M))
        for p in (REPO / "content" / "lessons").glob("[0-9]*.md")
    )
    assert len(cells) == tagged > 0
    assert all(c["status"] == "skipped" and c["why"] == "no GPU" and c["gpus"] >= 1 for c in cells)
