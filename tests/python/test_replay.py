"""Recordings: written by the recorder, replayed as a backend, rejected clearly when malformed."""

from __future__ import annotations

import io
import json

import pytest

from conftest import RECORDINGS
from fake_nvml import h100_pair
from gpudojo.gpu.nvml_backend import GpuUnavailable, NvmlBackend
from gpudojo.gpu.probe import GpuProbe
from gpudojo.gpu.replay import ReplayBackend, load_recording, record


@pytest.mark.parametrize(("name", "count"), [("1gpu-rtx4090", 1), ("2gpu-h100-nvlink", 2), ("8gpu-a100-mig", 8)])
def test_committed_recordings_replay(name, count):
    probe = GpuProbe(ReplayBackend(RECORDINGS / f"{name}.jsonl"))
    d = probe.devices()
    assert d.available and d.mode == "replay" and d.source == "replay"
    assert len(d.gpus) == count and all(g.sample is not None for g in d.gpus)


def test_recordings_cover_mig_and_unsupported_fields():
    mig = ReplayBackend(RECORDINGS / "8gpu-a100-mig.jsonl").inventory()
    assert mig.gpus[0].mig.current == "enabled" and len(mig.gpus[0].mig.instances) == 3
    one = ReplayBackend(RECORDINGS / "1gpu-rtx4090.jsonl")
    assert "mig" in one.inventory().gpus[0].unsupported
    assert "pcie_throughput" in one.sample()[0].unsupported


def test_record_then_replay_gives_back_the_same_readings(tmp_path):
    nvml = h100_pair()
    backend = NvmlBackend(nvml)
    readings = []

    def sample():
        nvml.tick()
        readings.append(backend.sample())
        return readings[-1]

    out = io.StringIO()
    now = [0.0]
    n = record(
        backend.inventory,
        sample,
        out,
        rate_hz=5,
        count=4,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    assert n == 4
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["type"] for line in lines] == ["inventory"] + ["sample"] * 4
    assert [line["t"] for line in lines[1:]] == [0.0, 0.2, 0.4, 0.6]
    path = tmp_path / "rec.jsonl"
    path.write_text(out.getvalue())
    replay = ReplayBackend(path)
    assert replay.inventory().gpus == backend.inventory().gpus
    assert [replay.sample() for _ in range(5)] == readings + readings[:1]  # loops


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no inventory line"),
        ('{"type": "inventory", "available": true}\nnot json\n', ":2: not a valid recording line"),
        ('{"type": "inventory", "available": true}\n{"type": "weird"}\n', ":2: unknown record type"),
        ('{"type": "sample", "gpus": [{"index": "zero"}]}\n', ":1: not a valid recording line"),
    ],
)
def test_malformed_recordings_name_the_line(tmp_path, text, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(GpuUnavailable, match=words):
        ReplayBackend(path).inventory()
    probe = GpuProbe(ReplayBackend(path))
    assert not probe.inventory().available and words in probe.inventory().reason


def test_missing_recording_is_a_reason_not_a_crash(tmp_path):
    probe = GpuProbe(ReplayBackend(tmp_path / "nope.jsonl"))
    d = probe.devices()
    assert not d.available and "Cannot read GPU recording" in d.reason


@pytest.mark.parametrize("name", ["1gpu-rtx4090", "2gpu-h100-nvlink", "8gpu-a100-mig"])
def test_stand_in_recordings_say_they_are_synthetic(name):
    header = json.loads((RECORDINGS / f"{name}.jsonl").read_text().splitlines()[0])
    assert header["recording"]["synthetic"] is True and "Synthetic" in header["recording"]["note"]
    d = GpuProbe(ReplayBackend(RECORDINGS / f"{name}.jsonl")).devices()
    assert d.recording is not None and d.recording.synthetic
    assert d.recording.rate_hz == 2.0 and d.recording.duration_s and d.recording.duration_s >= 45


def test_stand_ins_show_a_training_run_not_a_sine_wave():
    _, samples = load_recording(RECORDINGS / "2gpu-h100-nvlink.jsonl")
    mem = [s[0].memory_used_bytes / 2**30 for s in samples]
    util = [s[0].utilization_gpu_pct for s in samples]
    assert mem[0] < 1 and max(mem) > 50  # loads, then holds its memory
    plateau = [m for m in mem if abs(m - max(mem)) < 0.2]
    assert len(plateau) > len(mem) / 2
    assert sum(u < 60 for u in util[len(util) // 3 :]) >= 10  # eval pause, stalls, checkpoint
    assert sum(u > 90 for u in util) > len(util) / 3


def test_paced_replay_plays_at_the_recordings_speed_and_says_where_it_is():
    now = [100.0]
    replay = ReplayBackend(RECORDINGS / "2gpu-h100-nvlink.jsonl", paced=True, clock=lambda: now[0])
    cycle = replay.inventory().recording.cycle_s
    assert cycle == 60.0  # 120 samples at 2 Hz
    first = replay.sample()
    assert replay.position_s == 0.0
    now[0] += 0.25
    assert replay.sample() == first and replay.position_s == 0.0  # a 4 Hz reader sees each sample twice
    now[0] += 0.3
    replay.sample()
    assert replay.position_s == 0.5
    now[0] += cycle  # one pass later: the recording time keeps increasing
    replay.sample()
    assert replay.position_s == cycle + 0.5


def test_replayed_telemetry_carries_recording_time():
    probe = GpuProbe(ReplayBackend(RECORDINGS / "1gpu-rtx4090.jsonl"))
    times = [probe.telemetry_sample().recording_t for _ in range(3)]
    assert times == [0.0, 0.5, 1.0]
    assert probe.devices().recording_t == 1.5
