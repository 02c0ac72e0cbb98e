"""What `make gpu-check` brought back from a real GPU, pinned: every recording in tests/data/gpu
replays, our occupancy calculator gives the driver's answer for every case a GPU measured, and
gpudojo's memory analysis of each real CUDA snapshot gives the figures it gave on that machine.

The recordings test always has data (the stand-ins); the other two skip until
`make gpu-check-import` has filed results from a GPU (bench/GPU_CHECK.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudojo.gpu.probe import GpuProbe
from gpudojo.gpu.replay import ReplayBackend
from gpudojo.kernels.occupancy import occupancy
from gpudojo.memory.analysis import analyse
from gpudojo.memory.snapshot import read_capture

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDINGS = sorted((DATA / "gpu").glob("*.jsonl"))
OCCUPANCY_CASES = [
    pytest.param(doc["arch"], case, id=f"{path.stem}:{case['id']}")
    for path in sorted((DATA / "gpu").glob("occupancy-*.json"))
    for doc in [json.loads(path.read_text())]
    for case in doc["cases"]
]
SNAPSHOTS = sorted((DATA / "memory").rglob("*.pickle"))


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_every_recording_replays(path):
    probe = GpuProbe(ReplayBackend(path))
    try:
        first = probe.devices()
        later = probe.devices()
    finally:
        probe.close()
    assert first.available and first.source == "replay", first.reason
    assert first.gpus and all(g.name and g.memory_total_bytes for g in first.gpus)
    assert all(g.sample is not None for g in later.gpus)
    # Every sample line covers every GPU of the inventory.
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    samples = [line for line in lines if line["type"] == "sample"]
    assert samples and all(len(s["gpus"]) == len(first.gpus) for s in samples)


@pytest.mark.parametrize(("arch", "case"), OCCUPANCY_CASES)
def test_calculator_gives_the_drivers_answer(arch, case):
    inputs = case["calculator_input"]
    ours = occupancy(arch, inputs["registers"], inputs["shared_bytes"], inputs["block_size"])
    assert ours.active_blocks_per_sm == case["driver"]["blocks_per_sm"], (
        f"{case['id']} ({case['what']}): our calculator says {ours.active_blocks_per_sm} blocks per SM "
        f"(limited by {ours.limited_by}), cuOccupancyMaxActiveBlocksPerMultiprocessor said "
        f"{case['driver']['blocks_per_sm']}; the driver saw {case['driver']['registers']} registers and "
        f"{case['driver']['static_shared_bytes']} B static shared memory"
    )


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_snapshot_analysis(path):
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    summary = analyse(read_capture(path))[1]
    assert summary["peak"]["total_bytes"] == expected["peak_bytes"] > 0
    assert summary["categories"] == expected["categories"]
    assert summary["peak"]["by_category"] == expected["peak_by_category"]
    # On a GPU the categories are labkit's phase marks (lab-06 marks forward, backward, optimizer).
    assert summary["category_source"] == "phases" and "forward" in summary["categories"], summary["categories"]
    assert len(summary["ooms"]) == len(expected["ooms"])
    if "oom" in path.name:
        (oom,) = summary["ooms"][:1]
        assert oom["requested_bytes"] == expected["ooms"][0]["requested_bytes"] > 0
        assert oom["fixes"], "an OOM with nothing suggested to fix it"
