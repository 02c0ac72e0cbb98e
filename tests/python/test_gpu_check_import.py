"""`make gpu-check-import` on a result folder made here the way the GPU machine makes one: the
recording, snapshots, occupancy table and trace land under tests/data of a scratch repository,
and captured outputs go into copies of the lessons (never the real content/ files)."""

from __future__ import annotations

import difflib
import gzip
import io
import json
import shutil
import sys
import tarfile
from pathlib import Path

import jupytext
import pytest

from fake_nvml import h100_pair
from gpudojo.gpu.nvml_backend import NvmlBackend
from gpudojo.gpu.replay import record
from gpudojo.kernels.occupancy import occupancy
from memory_data import dump, make_snapshot

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import gpu_check  # noqa: E402
import gpu_check_import  # noqa: E402

GPU = "NVIDIA H200"
DATE = "2026-12-03"
LESSON = "01-gpu-intro.md"
OTHER = "04-distributed-basics.md"
CAPTURED = "name                 NVIDIA H200   \ncompute capability   9.0\nSMs                  132\n\n"


def _recording() -> bytes:
    nvml = h100_pair()
    backend = NvmlBackend(nvml)

    def sample():
        nvml.tick()
        return backend.sample()

    out = io.StringIO()
    now = [0.0]
    record(backend.inventory, sample, out, rate_hz=4, count=6, clock=lambda: now[0], sleep=lambda s: None)
    return out.getvalue().encode()


def _tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def result(tmp_path):
    """A result folder as the GPU machine packs it, a scratch repo and copies of two lessons."""
    src, repo, lessons = tmp_path / "out", tmp_path / "repo", tmp_path / "lessons"
    for d in (src, repo / "tests" / "data" / "gpu", lessons):
        d.mkdir(parents=True)
    for name in (LESSON, OTHER):
        shutil.copy(REPO / "content" / "lessons" / name, lessons / name)
    (src / "summary.json").write_text(
        json.dumps({"format": "gpudojo-gpu-check/1", "gpu": GPU, "date": DATE, "steps": [], "environment": {}})
    )
    (src / "recording.jsonl.gz").write_bytes(gzip.compress(_recording()))

    snap = tmp_path / "lab-06-oom.rank0.pickle"
    snap.write_bytes(dump(make_snapshot(1500, oom=True, seed=5)))
    expected = gpu_check.snapshot_expectations(snap)
    _tar(
        src / "snapshots.tar.gz",
        {"lab-06-oom.rank0.pickle": snap.read_bytes(), "lab-06-oom.rank0.expected.json": json.dumps(expected).encode()},
    )

    cases = []
    for cid, regs, smem, block in (("light-256", 12, 0, 256), ("static-44k-64", 14, 45056, 64)):
        ours = occupancy("sm_90", regs, smem, block)
        cases.append(
            {
                "id": cid,
                "what": cid,
                "path": "nvrtc",
                "block": block,
                "calculator_input": {"registers": regs, "shared_bytes": smem, "block_size": block},
                "ours": {"blocks_per_sm": ours.active_blocks_per_sm, "limited_by": ours.limited_by},
                "driver": {"registers": regs, "static_shared_bytes": smem, "blocks_per_sm": ours.active_blocks_per_sm},
            }
        )
    cases[1]["driver"] = {**cases[1]["driver"], "blocks_per_sm": 4}  # a disagreement the import must name
    (src / "occupancy.json").write_text(json.dumps({"arch": "sm_90", "device": None, "cases": cases}))
    (src / "trace.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}'))

    ok_cell, other_cell = gpu_check.gpu_cells(lessons / LESSON)[0], gpu_check.gpu_cells(lessons / OTHER)[0]
    stale = {**other_cell, "source_sha": "0" * 16, "status": "ok", "output": "x\n"}
    cells = [{**ok_cell, "status": "ok", "output": CAPTURED}, stale]
    (src / "cells.json").write_text(json.dumps({"gpu": GPU, "date": DATE, "cells": cells}))
    return src, repo, lessons


def test_import_files_every_piece(result, capsys):
    src, repo, lessons = result
    before = {name: (lessons / name).read_text() for name in (LESSON, OTHER)}
    code = gpu_check_import.main([str(src), "--repo", str(repo), "--lessons", str(lessons)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    data = repo / "tests" / "data"

    # The recording, named by its GPU count and model, replays.
    (rec,) = (data / "gpu").glob("*.jsonl")
    assert rec.name == "2gpu-h200.jsonl"
    assert rec.read_bytes() == gzip.decompress((src / "recording.jsonl.gz").read_bytes())

    # The snapshot and its expectations under tests/data/memory/<gpu>/.
    assert sorted(p.name for p in (data / "memory" / "h200").iterdir()) == [
        "lab-06-oom.rank0.expected.json",
        "lab-06-oom.rank0.pickle",
    ]
    assert (data / "gpu" / "trace-h200-lab02-step.json.gz").is_file()

    occ = json.loads((data / "gpu" / "occupancy-h200.json").read_text())
    assert (
        occ["gpu"] == GPU and occ["date"] == DATE and [c["id"] for c in occ["cases"]] == ["light-256", "static-44k-64"]
    )
    assert "DIFFERS from the driver: static-44k-64: ours 5, driver 4 blocks/SM" in printed

    # The lesson's GPU cell now carries the captured output, labelled; nothing else changed.
    nb = jupytext.read(lessons / LESSON, fmt="md:myst")
    old = jupytext.read(REPO / "content" / "lessons" / LESSON, fmt="md:myst")
    assert [c.source for c in nb.cells] == [c.source for c in old.cells]
    gpu_cell = nb.cells[gpu_check.gpu_cells(lessons / LESSON)[0]["index"]]
    meta = gpu_cell.metadata["gpudojo"]
    assert (
        meta["expected_output"]
        == "name                 NVIDIA H200\ncompute capability   9.0\nSMs                  132\n"
    )
    assert meta["expected_on"] == GPU and meta["expected_kind"] == "captured"
    assert meta["expected_source"] == f"captured by make gpu-check on {DATE}"
    assert "needs-gpu" in gpu_cell.metadata["tags"]
    ops = difflib.SequenceMatcher(
        a=before[LESSON].splitlines(), b=(lessons / LESSON).read_text().splitlines(), autojunk=False
    ).get_opcodes()
    changed = [(i1, i2) for tag, i1, i2, _, _ in ops if tag != "equal"]
    assert changed and changed[-1][1] - changed[0][0] < 20, "only the one metadata block may change"

    # A cell whose source changed since the capture is left alone, and named.
    assert (lessons / OTHER).read_text() == before[OTHER]
    assert f"cell left as it was: {OTHER} cell 0" in printed and "source changed since the capture" in printed


def test_import_refuses_a_rehearsal(tmp_path, capsys):
    (tmp_path / "summary.json").write_text(json.dumps({"gpu": None, "steps": []}))
    assert gpu_check_import.main([str(tmp_path), "--repo", str(tmp_path)]) == 2
    assert "without a GPU" in capsys.readouterr().err


def test_dry_run_changes_nothing(result):
    src, repo, lessons = result
    before = (lessons / LESSON).read_text()
    assert gpu_check_import.main([str(src), "--repo", str(repo), "--lessons", str(lessons), "--dry-run"]) == 0
    assert (lessons / LESSON).read_text() == before
    assert not list((repo / "tests" / "data" / "gpu").iterdir())
