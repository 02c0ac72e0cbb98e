"""`gpudojo lab ...` and `gpudojo runs ...`: the same service and store as the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LABS = Path(__file__).resolve().parents[1] / "data" / "labs"
pytestmark = pytest.mark.timeout(180)


def gpudojo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpudojo.cli", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=150,
    )


def common(tmp_path: Path) -> list[str]:
    return ["--labs-dir", str(LABS), "--data-dir", str(tmp_path / "data")]


def test_lab_list_and_run_follow_then_runs_show(tmp_path):
    listed = gpudojo(tmp_path, "lab", "list", *common(tmp_path))
    assert listed.returncode == 0 and "lab-test-ddp" in listed.stdout and "torchrun" in listed.stdout
    assert "lab-broken" in listed.stderr
    ran = gpudojo(
        tmp_path, "lab", "run", "lab-test-ddp", *common(tmp_path), "--set", "nproc=2", "--set", "steps=3", "--follow"
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "[rank 0] step 2 loss" in ran.stdout and "[rank 1] step 2 loss" in ran.stdout
    assert "[rank 1] stderr line 0" in ran.stderr
    assert ": succeeded (gloo, cpu) exit code 0" in ran.stdout and "[PASS] Loss falls" in ran.stdout
    run_id = ran.stdout.split(": succeeded")[0].split()[-1]
    listing = gpudojo(tmp_path, "runs", "list", *common(tmp_path))
    assert run_id in listing.stdout and "succeeded" in listing.stdout
    shown = gpudojo(tmp_path, "runs", "show", run_id, *common(tmp_path), "--json")
    assert '"status": "succeeded"' in shown.stdout


def test_lab_run_failure_and_bad_values(tmp_path):
    failed = gpudojo(tmp_path, "lab", "run", "lab-test-ddp", *common(tmp_path), "--set", "crash_rank=1")
    assert failed.returncode == 1 and "root cause: rank 1: RuntimeError: rank 1 fails on purpose" in failed.stdout
    bad = gpudojo(tmp_path, "lab", "run", "lab-test-ddp", *common(tmp_path), "--set", "nproc=99")
    assert bad.returncode == 2 and "nproc" in bad.stderr and "maximum" in bad.stderr
    missing = gpudojo(tmp_path, "runs", "show", "20990101-000000-abcdef", *common(tmp_path))
    assert missing.returncode == 2


def test_runs_cancel_stops_a_run_another_process_supervises(tmp_path):
    import time

    from gpudojo.runs.models import LabRunRequest
    from gpudojo.runs.procs import alive_of
    from gpudojo.runs.service import RunService

    server = RunService(LABS, tmp_path / "data", tmp_path, cancel_grace_s=2.0)
    try:
        (run,) = server.submit(LabRunRequest(lab="lab-test-ddp", params={"sleep_s": 120}))
        deadline = time.monotonic() + 60
        while len(server.store.pids(run.id)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = server.store.pids(run.id)
        cancelled = gpudojo(tmp_path, "runs", "cancel", run.id, *common(tmp_path))
        assert cancelled.returncode == 0 and f"{run.id}: cancelled" in cancelled.stdout
        assert server.get(run.id).status == "cancelled" and alive_of(pids) == []
    finally:
        server.close()


def test_a_passing_cli_lab_run_completes_the_lab_in_progress(tmp_path):
    import json

    before = gpudojo(tmp_path, "progress", "--json", *common(tmp_path))
    assert before.returncode == 0, before.stderr
    status = {lab["id"]: lab["progress"]["status"] for lab in json.loads(before.stdout)["labs"]}
    assert status["lab-test-ddp"] == "not_started"
    ran = gpudojo(tmp_path, "lab", "run", "lab-test-ddp", *common(tmp_path), "--set", "nproc=1", "--set", "steps=3")
    assert ran.returncode == 0 and "[PASS] Loss falls" in ran.stdout, ran.stdout + ran.stderr
    after = gpudojo(tmp_path, "progress", "--json", *common(tmp_path))
    status = {lab["id"]: lab["progress"]["status"] for lab in json.loads(after.stdout)["labs"]}
    assert status == {"lab-test-ddp": "completed", "lab-test-single": "not_started"}
    text = gpudojo(tmp_path, "progress", *common(tmp_path))
    assert "[x] lab" in text.stdout and "1 of" in text.stdout
