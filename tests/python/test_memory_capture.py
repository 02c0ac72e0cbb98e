"""labkit.memory_capture on the CPU, read back by the server's memory analysis, and lab 6 run
the way the run service runs it, at tiny sizes.

Tolerances, stated once: gradients at the peak equal the parameters' bytes exactly (one fp32
gradient per parameter); Adam's state is its two fp32 moments per parameter plus one 4-byte
`step` counter per parameter tensor, which is what estimator.estimate leaves out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from gpudojo import labkit
from gpudojo.labkit.memory import live_bytes_walk
from gpudojo.memory.analysis import analyse
from gpudojo.memory.estimator import estimate
from gpudojo.memory.models import EstimateRequest
from gpudojo.memory.snapshot import CPU_FORMAT, read_capture
from gpudojo.paths import material_root
from gpudojo.runs.models import LabManifest

LAB = material_root("labs") / "lab-06-memory"
ON_GPU = torch.cuda.is_available()
cpu_only = pytest.mark.skipif(ON_GPU, reason="the CPU capture path; a GPU machine records a CUDA snapshot")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("GPUDOJO_RUN_DIR", "GPUDOJO_RECORD_MEMORY", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    yield
    for f in labkit._files.values():
        f.close()
    labkit._files.clear()


def small_training(steps: int = 3, budget_bytes: int | None = None, **capture):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
    context = labkit.model_context(model, optimizer=optimizer, micro_batch=16, layers=3)
    with labkit.memory_capture(context=context, budget_bytes=budget_bytes, **capture) as mem:
        for _ in range(steps):
            labkit.memory_phase("forward")
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    return model, mem


@cpu_only
def test_cpu_capture_of_adam_training_has_the_estimators_components(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDOJO_RUN_DIR", str(tmp_path / "run"))
    model, mem = small_training(force=True)

    path = tmp_path / "run" / "memory" / "rank0.cpu.json"
    assert mem.path == path and path.is_file()
    doc = json.loads(path.read_text())
    assert doc["format"] == CPU_FORMAT and doc["device"] == "cpu" and "ooms" not in doc
    assert [name for _, name in doc["phases"]] == ["forward"] * 3

    parsed = read_capture(path)
    _, summary = analyse(parsed)
    assert {"parameter", "gradient", "optimizer state", "activation"} <= set(summary["categories"])
    at_peak = {row["category"]: row["bytes"] for row in summary["peak"]["by_category"]}
    assert summary["peak"]["total_bytes"] == mem.peak_bytes

    tensors = list(model.parameters())
    param_bytes = sum(p.numel() * 4 for p in tensors)
    predicted = {t.component: t.bytes for t in estimate(EstimateRequest(**summary["context"])).terms}
    assert predicted["gradients"] == param_bytes and predicted["optimizer_states"] == 2 * param_bytes
    # The peak of an Adam run this small is inside optimizer.step(): every gradient is there.
    assert at_peak["gradient"] == predicted["gradients"]
    step_counters = 4 * len(tensors)
    assert at_peak["optimizer state"] == predicted["optimizer_states"] + step_counters
    # The weights are there too (the profiler also files Adam's sqrt(v) scratch under parameter).
    assert at_peak["parameter"] >= param_bytes


def test_nothing_is_recorded_unless_the_run_asks(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDOJO_RUN_DIR", str(tmp_path / "run"))
    _, mem = small_training(steps=1)
    assert not mem.recording and mem.path is None and not (tmp_path / "run" / "memory").exists()


@cpu_only
def test_record_memory_env_records_into_the_working_folder_without_a_run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDOJO_RECORD_MEMORY", "1")
    _, mem = small_training(steps=1)
    assert mem.path == tmp_path / "gpudojo-memory" / "rank0.cpu.json" and mem.path.is_file()


@cpu_only
def test_cpu_budget_records_a_simulated_oom_the_analysis_explains(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDOJO_RUN_DIR", str(tmp_path / "run"))
    _, mem = small_training(steps=2, force=True, budget_bytes=100_000)

    assert mem.simulated_oom is not None and mem.simulated_oom["simulated"] is True
    doc = json.loads(mem.path.read_text())
    assert doc["budget_bytes"] == 100_000 and "simulated" in doc["budget_note"].lower()
    assert doc["ooms"] == [mem.simulated_oom]
    _, summary = analyse(read_capture(mem.path))
    (oom,) = summary["ooms"]
    # A simulated OOM's moment is that of the allocation that crossed the budget, which the
    # analysis counts as live then: over the budget, and the budget was not yet full before it.
    assert oom["live"]["total_bytes"] > 100_000 >= 100_000 - oom["device_free_bytes"]
    assert 0 <= oom["device_free_bytes"] < oom["requested_bytes"]
    assert oom["fixes"], "with a model context, the estimator names ways out"
    assert any("budget" in note for note in summary["notes"])


def test_live_bytes_walk_frees_before_allocs_at_one_moment_and_counts_unmatched_frees():
    events = [
        [10, "alloc", "a", 100, 0],
        [20, "free", "a", 100, 0],
        [20, "alloc", "b", 150, 1],  # at the same moment as a's free: never 250 live
        [30, "free", "old", 40, 1],  # allocated before the capture: live until here
        [40, "free", "b", 150, 1],
    ]
    walk = live_bytes_walk(events, 2, budget_bytes=180)
    assert walk["peak_bytes"] == 190 and walk["peak_t_us"] == 20
    assert walk["peak_by_category"] == [0, 190] and walk["category_peaks"] == [100, 190]
    assert walk["oom"] == {"t_us": 20, "requested_bytes": 150, "device_free_bytes": 140, "simulated": True}


def test_model_context_counts_shared_parameters_once_and_names_the_optimizer():
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    context = labkit.model_context(model, optimizer=sgd, micro_batch=8, checkpointing=True)
    assert context["parameters"] == 20 and context["optimizer"] == "sgd-momentum"
    assert EstimateRequest(**context).micro_batch == 8


# --- lab 6 -------------------------------------------------------------------------------------

TINY = {"micro_batch": 128, "layers": 4, "width": 32, "steps": 2}


def lab_argv(**values) -> list[str]:
    manifest = LabManifest.model_validate(tomllib.loads((LAB / "lab.toml").read_text(encoding="utf-8")))
    argv = []
    for p in manifest.parameters:
        value = values.pop(p.name, p.default)
        argv += (
            [f"--{p.name}" if value else f"--no-{p.name}"] if isinstance(value, bool) else [f"--{p.name}", str(value)]
        )
    assert not values, values
    return argv


def run_lab(run_dir, **values) -> tuple[subprocess.CompletedProcess, dict, list]:
    env = {**os.environ, "GPUDOJO_RUN_DIR": str(run_dir), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-u", str(LAB / "train_memory.py"), *lab_argv(**values)]
    done = subprocess.run(cmd, cwd=LAB, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    records = [json.loads(line) for line in (run_dir / "metrics" / "rank0.jsonl").read_text().splitlines()]
    return done, {r["check"]: r for r in records if "check" in r}, [r for r in records if "check" not in r]


def test_lab06_manifest_is_complete():
    manifest = LabManifest.model_validate(tomllib.loads((LAB / "lab.toml").read_text(encoding="utf-8")))
    assert manifest.order == 6 and manifest.launcher == "python" and manifest.needs == "gpu" and manifest.cpu_path
    assert {p.name for p in manifest.parameters} == {
        "checkpointing", "micro_batch", "layers", "width", "budget_mb", "steps", "optimizer",
    }  # fmt: skip
    assert all(p.help for p in manifest.parameters) and (LAB / "README.md").is_file()


@cpu_only
def test_lab06_on_cpu_exceeds_a_simulated_budget_and_checkpointing_lowers_the_activation_peak(tmp_path):
    _, checks, metrics = run_lab(tmp_path / "plain", budget_mb=1.0, **TINY)
    declared = LabManifest.model_validate(tomllib.loads((LAB / "lab.toml").read_text(encoding="utf-8")))
    assert set(checks) == {c.id for c in declared.checks if c.kind == "reported"}
    numbers = {
        k for r in metrics for k, v in r.items() if isinstance(v, float | int) and k not in ("t", "rank", "step")
    }
    assert numbers <= {m.name for m in declared.metrics}
    assert checks["peak-measured"]["ok"] is True
    assert checks["oom-explained"]["ok"] is True and "simulated" in checks["oom-explained"]["detail"]
    assert checks["checkpointing-lowers-peak"]["ok"] is True
    capture = tmp_path / "plain" / "memory" / "rank0.cpu.json"
    assert json.loads(capture.read_text())["ooms"][0]["simulated"] is True

    _, checks_ckpt, metrics_ckpt = run_lab(tmp_path / "ckpt", checkpointing=True, **TINY)
    assert checks_ckpt["oom-explained"]["ok"] is None  # no budget, nothing to explain
    final, final_ckpt = metrics[-1], metrics_ckpt[-1]
    assert final_ckpt["activation_peak_mib"] < 0.6 * final["activation_peak_mib"]
    assert final_ckpt["peak_mib"] < final["peak_mib"]
    # The two captures, diffed by category as the UI does: activations fall.
    act = [
        analyse(read_capture(run / "memory" / "rank0.cpu.json"))[1]["peak"]["by_category"]
        for run in (tmp_path / "plain", tmp_path / "ckpt")
    ]
    plain, ckpt = ({r["category"]: r["bytes"] for r in rows}.get("activation", 0) for rows in act)
    assert ckpt < plain


def test_cuda_capture_dumps_the_snapshot_before_an_oom_goes_on(tmp_path, monkeypatch):
    """No GPU here: torch.cuda's memory calls are stood in for, to pin the order labkit makes them
    in (the real ones run in the lab on a GPU machine)."""
    calls: list[tuple] = []
    cuda = torch.cuda
    monkeypatch.setenv("GPUDOJO_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setattr(labkit, "device", lambda: torch.device("cuda", 0))
    monkeypatch.setattr(cuda, "get_device_properties", lambda d: type("P", (), {"total_memory": 8 * 2**30}))
    monkeypatch.setattr(cuda, "set_per_process_memory_fraction", lambda f, d=None: calls.append(("fraction", f)))
    monkeypatch.setattr(cuda, "reset_peak_memory_stats", lambda d=None: None)
    monkeypatch.setattr(cuda, "synchronize", lambda d=None: None)
    monkeypatch.setattr(cuda, "max_memory_allocated", lambda d=None: 123)
    monkeypatch.setattr(cuda.memory, "_record_memory_history", lambda **kw: calls.append(("history", kw)))

    def dump(filename):
        calls.append(("dump", filename))
        Path(filename).write_bytes(b"snapshot")

    monkeypatch.setattr(cuda.memory, "_dump_snapshot", dump)

    with (
        pytest.raises(torch.OutOfMemoryError),
        labkit.memory_capture(force=True, context={"parameters": 7}, budget_bytes=2**30) as mem,
    ):
        labkit.memory_phase("forward")
        raise torch.OutOfMemoryError("CUDA out of memory (stand-in)")

    path = tmp_path / "run" / "memory" / "rank0.pickle"
    assert [c[0] for c in calls] == ["fraction", "history", "dump", "history", "fraction"]
    assert calls[0][1] == pytest.approx(1 / 8) and calls[-1][1] == 1.0
    assert calls[1][1] == {"enabled": "all", "context": "all", "stacks": "python", "max_entries": 200_000}
    assert calls[2][1] == str(path) and calls[3][1] == {"enabled": None}
    sidecar = json.loads((tmp_path / "run" / "memory" / "rank0.phases.json").read_text())
    assert [name for _, name in sidecar["phases"]] == ["forward"] and sidecar["context"] == {"parameters": 7}
    assert mem.path == path and mem.peak_bytes == 123
