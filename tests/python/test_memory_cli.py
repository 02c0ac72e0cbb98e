"""`gpudojo memory summary | diff | estimate`: a snapshot read from a terminal (over ssh, on a
cluster) on the same services as the REST routes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory_data import dump, make_snapshot

GPUDOJO = [sys.executable, "-m", "gpudojo.cli", "memory"]


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cli-snapshots")
    (folder / "small.pickle").write_bytes(dump(make_snapshot(1500, seed=1)))
    (folder / "oom.pickle").write_bytes(dump(make_snapshot(3000, seed=2, oom=True)))
    return {"small": folder / "small.pickle", "oom": folder / "oom.pickle", "data": folder / "data"}


def memory(*args: str, data: Path | None = None) -> subprocess.CompletedProcess:
    more = ["--data-dir", str(data)] if data else []
    return subprocess.run([*GPUDOJO, *args, *more], capture_output=True, text=True, timeout=300, check=False)


def test_summary_prints_the_peak_its_frames_and_the_oom_and_json_is_the_apis_shape(snapshots):
    text = memory("summary", str(snapshots["oom"]), data=snapshots["data"])
    assert text.returncode == 0, text.stderr
    doc = json.loads(memory("summary", str(snapshots["oom"]), "--json", data=snapshots["data"]).stdout)
    assert doc["cached"] is True and doc["ooms"] and doc["peak"]["by_frame"]
    assert "Peak:" in text.stdout and "Out of memory: asked for" in text.stdout
    top = doc["frames"][doc["peak"]["by_frame"][0]["frame"]]
    assert f"{top['filename']}:{top['line']} {top['name']}" in text.stdout
    assert all(note in text.stdout for note in doc["notes"])


def test_summary_of_a_snapshot_without_oom_says_so(snapshots):
    text = memory("summary", str(snapshots["small"]), data=snapshots["data"])
    assert text.returncode == 0, text.stderr
    assert "No out-of-memory error" in text.stdout


def test_diff_prints_both_peaks_and_the_change_and_json_has_the_rows(snapshots):
    args = ("diff", str(snapshots["small"]), str(snapshots["oom"]))
    text = memory(*args, data=snapshots["data"])
    assert text.returncode == 0, text.stderr
    doc = json.loads(memory(*args, "--json", data=snapshots["data"]).stdout)
    assert doc["delta_bytes"] == doc["peak_b_bytes"] - doc["peak_a_bytes"] != 0
    assert text.stdout.startswith("Peak:") and "by frame:" in text.stdout
    assert doc["by_frame"][0]["key"][:40] in text.stdout


def test_estimate_takes_the_rest_requests_fields_and_names_the_gap():
    args = ("estimate", "--parameters", "7e9", "--optimizer", "adamw", "--precision", "mixed-bf16")
    args += ("--zero-stage", "2", "--data-parallel", "8", "--measured-peak-bytes", "90000000000")
    doc = json.loads(memory(*args, "--json").stdout)
    assert {t["component"] for t in doc["terms"]} >= {"parameters", "gradients", "optimizer_states"}
    assert doc["gap_bytes"] == 90_000_000_000 - doc["total_bytes"] and doc["gap_explained"]
    text = memory(*args)
    assert text.returncode == 0 and "ZeRO-2" in text.stdout and "Measured peak" in text.stdout


def test_an_estimate_the_api_would_refuse_exits_2_with_one_line():
    done = memory("estimate", "--parameters", "0")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "parameters" in done.stderr


def test_a_bad_or_missing_snapshot_exits_2_with_one_line(tmp_path):
    (tmp_path / "bad.pickle").write_bytes(b"not a pickle at all")
    for command, files in (("summary", ["bad.pickle"]), ("summary", ["missing.pickle"]), ("diff", ["bad.pickle"] * 2)):
        done = memory(command, *[str(tmp_path / f) for f in files], data=tmp_path / "data")
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.startswith(f"gpudojo memory {command}:"), done.stderr
        assert done.stderr.strip().count("\n") == 0, done.stderr


def test_memory_is_a_command():
    done = memory("--help")
    assert done.returncode == 0 and "summary" in done.stdout and "estimate" in done.stdout


def test_transformer_estimate_from_the_shape_and_layout():
    args = ("transformer", "--layers", "96", "--hidden", "12288", "--heads", "96", "--sequence", "2048")
    args += ("--vocab", "51200", "--learned-positions", "--tensor-parallel", "8", "--pipeline-parallel", "8")
    args += ("--sequence-parallel", "--recompute", "selective")
    doc = json.loads(memory(*args, "--json").stdout)
    assert doc["parameter_count"] == pytest.approx(175e9, rel=0.01)
    assert "sbh(34)/8" in doc["terms"][-1]["formula"]
    text = memory(*args)
    assert text.returncode == 0 and "FLOPs per token" in text.stdout and "selective recompute" in text.stdout
    refused = memory(
        "transformer", "--layers", "4", "--hidden", "100", "--heads", "3", "--sequence", "8", "--vocab", "10"
    )
    assert refused.returncode == 2 and "must divide by heads" in refused.stderr and "Traceback" not in refused.stderr
