"""`gpudojo probe` and `gpudojo paths` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import RECORDINGS, needs_no_driver
from gpudojo.cli import main
from gpudojo.gpu.replay import load_recording


def test_probe_table_of_a_replayed_node(capsys):
    assert main(["probe", "--replay", str(RECORDINGS / "2gpu-h100-nvlink.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "2 GPU(s), driver 550.54.15, CUDA 12.4 (replayed recording)" in out
    assert out.count("NVIDIA H100 80GB HBM3") == 2
    assert "GPU0      X  NV18" in out
    assert "Host:" in out


def test_probe_table_names_unsupported_fields(capsys):
    assert main(["probe", "--replay", str(RECORDINGS / "1gpu-rtx4090.jsonl")]) == 0
    assert "not supported on this GPU: graphics_processes, mig, pcie_throughput" in capsys.readouterr().out


def test_probe_json_is_the_devices_document(capsys):
    assert main(["probe", "--json", "--replay", str(RECORDINGS / "8gpu-a100-mig.jsonl")]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["mode"] == "replay" and len(d["gpus"]) == 8


def test_probe_records_a_replayable_file(tmp_path, capsys):
    out = tmp_path / "rec.jsonl"
    src = str(RECORDINGS / "2gpu-h100-nvlink.jsonl")
    assert main(["probe", "--replay", src, "--record", str(out), "--count", "3", "--rate", "50"]) == 0
    assert "Recorded 2 GPU(s), 3 samples at 50 Hz" in capsys.readouterr().out
    inventory, samples = load_recording(out)
    assert len(inventory.gpus) == 2 and len(samples) == 3


def test_probe_with_a_broken_recording_exits_2_with_the_reason(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    assert main(["probe", "--replay", str(bad)]) == 2
    assert "unknown record type" in capsys.readouterr().err


@needs_no_driver
def test_probe_without_a_gpu_exits_2_and_still_reports_the_host():
    proc = subprocess.run([sys.executable, "-m", "gpudojo.cli", "probe"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "No NVIDIA driver found" in proc.stderr
    assert "Host:" in proc.stdout and "logical cores" in proc.stdout


@needs_no_driver
def test_record_without_a_gpu_exits_2(tmp_path, capsys):
    assert main(["probe", "--record", str(tmp_path / "r.jsonl")]) == 2
    assert "nothing to record" in capsys.readouterr().err


def test_bad_rate_is_refused(capsys):
    assert main(["probe", "--rate", "0", "--record", "x"]) == 2
    assert "must be positive" in capsys.readouterr().err


def test_paths_finds_content_and_labs(capsys):
    assert main(["paths"]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    from pathlib import Path

    assert (Path(lines["content"]) / "README.md").is_file()
    assert (Path(lines["labs"]) / "README.md").is_file()


def test_progress_lists_the_course_with_status_and_quiz_scores(tmp_path, capsys):
    from gpudojo.course.models import QuizResult
    from gpudojo.course.progress import ProgressStore
    from gpudojo.paths import material_root

    lessons = sorted(p for p in (material_root("content") / "lessons").glob("*.md") if not p.stem.isupper())
    labs = sorted(material_root("labs").glob("*/lab.toml"))
    exercises = sorted((material_root("content") / "exercises").glob("*/exercise.toml"))
    store = ProgressStore(tmp_path / "gpudojo.sqlite3")
    first_id = "gpu-intro"
    store.set_status("ada", "lesson", first_id, "completed")
    store.record_quiz("ada", first_id, QuizResult(score=4, total=5, results=[]))
    store.close()
    assert main(["progress", "--user", "ada", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"Progress of ada: 1 of {len(lessons) + len(labs) + len(exercises)} completed" in out
    assert "[x] lesson    1. GPU computing for AI" in out and "quiz 4/5" in out
    assert main(["progress", "--user", "ada", "--data-dir", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["lessons"][0]["progress"]["status"] == "completed"
