"""Labs 2, 3 and 5: each manifest as the run service and the course catalog read it, each entry
script's arguments against its manifest, and each script run the way the run service runs it
(a subprocess with GPUDOJO_RUN_DIR; lab 3 under torchrun with two ranks), at tiny sizes."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

from gpudojo.course.catalog import load_catalog
from gpudojo.paths import material_root
from gpudojo.runs.models import LabManifest

LABS_ROOT = material_root("labs")
NEW_LABS = ("lab-02-pytorch-gpu", "lab-03-ddp", "lab-04-k8s", "lab-05-mixed-precision")
ON_GPU = torch.cuda.is_available()


def manifest(lab: str) -> LabManifest:
    return LabManifest.model_validate(tomllib.loads((LABS_ROOT / lab / "lab.toml").read_text(encoding="utf-8")))


def script_argv(m: LabManifest, **overrides) -> list[str]:
    """The entry script's arguments as lab.toml documents them: `--name value` per parameter,
    bools as `--name` / `--no-name`, and nproc left to torchrun."""
    argv = []
    for p in m.parameters:
        if p.name == "nproc" and m.launcher == "torchrun":
            continue
        value = overrides.pop(p.name, p.default)
        if isinstance(value, bool):
            argv.append(f"--{p.name}" if value else f"--no-{p.name}")
        else:
            argv += [f"--{p.name}", str(value)]
    assert not overrides, f"not parameters of {m.id}: {overrides}"
    return argv


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(lab: str, tmp_path: Path, argv: list[str], *, nproc: int | None = None) -> subprocess.CompletedProcess:
    m = manifest(lab)
    entry = str(LABS_ROOT / lab / m.entry)
    if nproc is None:
        cmd = [sys.executable, "-u", entry, *argv]
    else:
        cmd = [
            sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
            "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
            "--log-dir", str(tmp_path / "torchrun"), "--tee", "3", entry, *argv,
        ]  # fmt: skip
    env = {**os.environ, "GPUDOJO_RUN_DIR": str(tmp_path / "run"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("GPUDOJO_BACKEND", None)
    return subprocess.run(cmd, cwd=LABS_ROOT / lab, env=env, capture_output=True, text=True, timeout=120)


def rank_records(tmp_path: Path, rank: int = 0) -> tuple[list[dict], dict[str, dict]]:
    """(metric lines, checks by id) one rank wrote."""
    path = tmp_path / "run" / "metrics" / f"rank{rank}.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    checks = [r for r in records if "check" in r]
    assert len({c["check"] for c in checks}) == len(checks), "a check was reported twice"
    return [r for r in records if "check" not in r], {c["check"]: c for c in checks}


def series(metrics: list[dict], name: str) -> list[float]:
    return [r[name] for r in metrics if name in r]


def assert_declared(lab: str, metrics: list[dict], checks: dict[str, dict]) -> None:
    """Every number a script reports is a metric of its manifest; every check it reports is a
    `reported` check of its manifest, and every `reported` check is reported."""
    m = manifest(lab)
    own = ("t", "rank", "step")
    numbers = {k for r in metrics for k, v in r.items() if isinstance(v, int | float) and k not in own}
    assert numbers <= {x.name for x in m.metrics}, numbers - {x.name for x in m.metrics}
    assert set(checks) == {c.id for c in m.checks if c.kind == "reported"}


def output(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"


# --- manifests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lab", NEW_LABS)
def test_manifest_is_one_the_run_service_can_launch(lab):
    m = manifest(lab)
    assert m.id == lab and (LABS_ROOT / lab / m.entry).is_file() and (LABS_ROOT / lab / "README.md").is_file()
    names = [p.name for p in m.parameters]
    assert len(names) == len(set(names))
    assert ("nproc" in names) == (m.launcher == "torchrun")
    for p in m.parameters:
        assert p.help, p.name
        if p.type in ("int", "float"):
            assert p.min is not None and p.max is not None and p.min <= p.default <= p.max, p.name
        if p.type == "choice":
            assert p.default in p.choices, p.name
        if p.type == "bool":
            assert isinstance(p.default, bool), p.name
    metric_names = [x.name for x in m.metrics]
    assert len(metric_names) == len(set(metric_names)) and all(x.unit and x.help for x in m.metrics)
    assert len({c.id for c in m.checks}) == len(m.checks)
    for c in m.checks:
        if c.kind in ("decreases", "ranks_equal"):
            assert c.metric in metric_names, c.id
        for key, value in c.when.items():
            assert key in names and isinstance(value, type(next(p.default for p in m.parameters if p.name == key)))
    assert any(c.kind == "succeeded" for c in m.checks)


def test_course_catalog_loads_every_lab_without_problems():
    data = load_catalog(material_root("content"), LABS_ROOT)
    assert [p for p in data.problems if "labs" in p.file] == []
    labs = {item.meta.id: item.meta for item in data.labs}
    assert {lab: labs[lab].order for lab in NEW_LABS} == {
        "lab-02-pytorch-gpu": 2,
        "lab-03-ddp": 3,
        "lab-04-k8s": 4,
        "lab-05-mixed-precision": 5,
    }
    assert all(labs[lab].cpu_path for lab in NEW_LABS)
    # The lessons that point at these labs find them.
    linked = {lab for lesson in data.lessons for lab in lesson.meta.labs}
    assert set(NEW_LABS) <= linked


@pytest.mark.parametrize("lab", NEW_LABS)
def test_script_defaults_are_the_manifests(lab, monkeypatch):
    """`python <entry>` by hand runs what the lab's defaults run, and every parameter parses."""
    m = manifest(lab)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # nothing written into labs/
    spec = importlib.util.spec_from_file_location(f"_{lab.replace('-', '_')}", LABS_ROOT / lab / m.entry)
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, script)  # dataclasses look their module up there
    spec.loader.exec_module(script)
    by_hand = vars(script.parse_args([]))
    from_manifest = vars(script.parse_args(script_argv(m)))
    for p in m.parameters:
        if p.name != "nproc":
            assert by_hand[p.name] == from_manifest[p.name] == p.default, p.name


# --- lab 2 -------------------------------------------------------------------------------------

LAB2_TINY = {"max_batch": 4, "image_size": 32, "width": 8, "seconds_per_point": 0.02}


def test_lab02_sweeps_batch_sizes_and_checks_bf16_against_fp32(tmp_path):
    argv = script_argv(manifest("lab-02-pytorch-gpu"), precision="bf16", **LAB2_TINY)
    done = run("lab-02-pytorch-gpu", tmp_path, argv)
    assert done.returncode == 0, output(done)
    metrics, checks = rank_records(tmp_path)
    assert_declared("lab-02-pytorch-gpu", metrics, checks)
    sweep = [r for r in metrics if r["step"] is not None]
    assert [r["step"] for r in sweep] == [1, 2, 4]  # the step is the batch size
    assert all(r["cpu_samples_per_s"] > 0 and r["cpu_latency_ms"] > 0 for r in sweep)
    assert checks["matches-fp32"]["ok"] is True and "cpu bf16" in checks["matches-fp32"]["detail"]
    if ON_GPU:
        assert all("gpu_samples_per_s" in r and "speedup" in r for r in sweep)
        assert checks["gpu-faster"]["ok"] is not None
    else:
        assert not any("gpu_samples_per_s" in r for r in metrics)
        assert checks["gpu-faster"]["ok"] is None


@pytest.mark.skipif(ON_GPU, reason="the CPU-only path of fp16")
def test_lab02_fp16_without_a_gpu_runs_fp32_and_says_fp16_does_not_apply(tmp_path):
    m = manifest("lab-02-pytorch-gpu")
    done = run("lab-02-pytorch-gpu", tmp_path, script_argv(m, precision="fp16", **{**LAB2_TINY, "max_batch": 2}))
    assert done.returncode == 0, output(done)
    _, checks = rank_records(tmp_path)
    assert checks["matches-fp32"]["ok"] is None and "needs a GPU" in checks["matches-fp32"]["detail"]


# --- lab 3 -------------------------------------------------------------------------------------

# A high learning rate so that 16 steps move the loss well past batch-to-batch noise.
LAB3_TINY = {"epochs": 2, "samples": 512, "batch_size": 32, "hidden": 64, "lr": 0.5}


def test_lab03_two_ranks_learn_in_sync_on_half_the_data_each(tmp_path):
    done = run("lab-03-ddp", tmp_path, script_argv(manifest("lab-03-ddp"), **LAB3_TINY), nproc=2)
    assert done.returncode == 0, output(done)
    (m0, c0), (m1, c1) = rank_records(tmp_path, 0), rank_records(tmp_path, 1)
    assert c0 == c1 == {}
    assert_declared("lab-03-ddp", m0 + m1, {})
    for metrics in (m0, m1):
        assert len(series(metrics, "loss")) == 2 * 256 // 32  # 2 epochs of 256 samples in batches of 32
        assert series(metrics, "samples_seen") == [256, 256]  # the sampler split the 512 samples
        assert all(v > 0 for v in series(metrics, "samples_per_s") + series(metrics, "epoch_time_s"))
        # MFU rides along with every samples_per_s: 6 FLOPs per weight of the 32-64-64-8 MLP.
        step_rows = [r for r in metrics if "samples_per_s" in r]
        assert all(0 < r["mfu"] < 1.5 for r in step_rows)
        peak = {r["samples_per_s"] * 6 * (32 * 64 + 64 * 64 + 64 * 8) / r["mfu"] for r in step_rows}
        assert max(peak) / min(peak) < 1 + 1e-9  # one peak per rank, measured once
    assert "not a datasheet figure" in done.stdout  # the log says what MFU is a fraction of
    loss = series(m0, "loss")
    assert loss[-1] < loss[0]  # the manifest's `decreases` check, on rank 0
    assert series(m0, "epoch_loss") == series(m1, "epoch_loss")  # all-reduced
    (checksum0,), (checksum1,) = series(m0, "param_checksum"), series(m1, "param_checksum")
    assert checksum0 == checksum1  # the `ranks_equal` check: DDP keeps the replicas identical


def test_lab03_without_the_sampler_every_rank_reads_the_whole_dataset(tmp_path):
    m = manifest("lab-03-ddp")
    done = run("lab-03-ddp", tmp_path, script_argv(m, use_sampler=False, **{**LAB3_TINY, "epochs": 1}), nproc=2)
    assert done.returncode == 0, output(done)
    for rank in (0, 1):
        assert series(rank_records(tmp_path, rank)[0], "samples_seen") == [512]
    assert "sampler OFF" in done.stdout and "(2.00x)" in done.stdout


def test_lab03_crash_rank_fails_the_job_with_that_ranks_error_file(tmp_path):
    m = manifest("lab-03-ddp")
    done = run("lab-03-ddp", tmp_path, script_argv(m, crash_rank=1, **{**LAB3_TINY, "epochs": 1}), nproc=2)
    assert done.returncode != 0, output(done)
    (error_file,) = (tmp_path / "torchrun").glob("*/attempt_0/1/error.json")
    message = json.loads(error_file.read_text())["message"]
    assert message["message"].startswith("RuntimeError: rank 1 fails on purpose at step 3")
    assert "train_ddp.py" in message["extraInfo"]["py_callstack"]
    # Rank 1 reported steps 0 to 2 and nothing after.
    assert [r["step"] for r in rank_records(tmp_path, 1)[0]] == [0, 1, 2]


# --- lab 5 -------------------------------------------------------------------------------------


def test_lab05_lower_precision_tracks_fp32_on_the_same_batches(tmp_path):
    m = manifest("lab-05-mixed-precision")
    done = run("lab-05-mixed-precision", tmp_path, script_argv(m, steps=12, batch_size=64, width=32, depth=1, lr=0.01))
    assert done.returncode == 0, output(done)
    metrics, checks = rank_records(tmp_path)
    assert_declared("lab-05-mixed-precision", metrics, checks)
    ran = ["fp32", "fp16", "bf16"] if ON_GPU else ["fp32", "bf16"]
    for p in ran:
        assert len(series(metrics, f"loss_{p}")) == 12 and len(series(metrics, f"step_time_ms_{p}")) == 12
        assert series(metrics, f"saved_for_backward_mb_{p}")[0] > 0
    if not ON_GPU:
        assert series(metrics, "loss_fp16") == [] and "fp16: needs a GPU" in done.stdout
    fp32 = series(metrics, "loss_fp32")
    assert fp32[-1] < fp32[0]  # the manifest's `decreases` check
    # Same initial weights, same batches: the first losses differ only by rounding.
    assert abs(series(metrics, "loss_bf16")[0] - fp32[0]) < 0.05
    assert checks["tracks-fp32"]["ok"] is True and checks["smaller-activations"]["ok"] is True
    if not ON_GPU:
        assert checks["faster-on-gpu"]["ok"] is None and checks["lighter-on-gpu"]["ok"] is None
        assert "cannot compare precisions" in done.stdout
