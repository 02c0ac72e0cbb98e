"""gpudojo.labkit: the metrics-file format the run service reads, the stdout fallback for a
terminal, what values it accepts, where it says a process is, and torch's error recording."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from gpudojo import labkit


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("GPUDOJO_RUN_DIR", "GPUDOJO_BACKEND", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    yield
    # labkit keeps each metrics file open for the life of the process; a test is a life.
    for f in labkit._files.values():
        f.close()
    labkit._files.clear()


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDOJO_RUN_DIR", str(tmp_path / "run"))
    return tmp_path / "run"


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_report_appends_one_flushed_line_per_call_to_the_ranks_file(run_dir, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    labkit.report(0, loss=2.5, samples_per_s=1200.0)
    path = run_dir / "metrics" / "rank1.jsonl"
    # Readable before anything is closed: the run service tails the file while the run goes on.
    assert [(r["rank"], r["step"], r["loss"]) for r in lines(path)] == [(1, 0, 2.5)]
    labkit.report(1, loss=2.25, epoch=0, device="cpu")
    first, second = lines(path)
    assert set(first) == {"t", "rank", "step", "loss", "samples_per_s"}
    assert second == {"t": second["t"], "rank": 1, "step": 1, "loss": 2.25, "epoch": 0, "device": "cpu"}
    assert first["t"] <= second["t"] and abs(second["t"] - time.time()) < 60


def test_each_rank_writes_its_own_file(run_dir, monkeypatch):
    for rank in (0, 3):
        monkeypatch.setenv("RANK", str(rank))
        labkit.report(7, loss=float(rank))
    assert sorted(p.name for p in (run_dir / "metrics").iterdir()) == ["rank0.jsonl", "rank3.jsonl"]
    assert lines(run_dir / "metrics" / "rank3.jsonl")[0]["loss"] == 3.0


def test_check_goes_to_the_same_file_and_prints_a_readable_line(run_dir, capsys):
    labkit.report(None, final_loss=0.1)
    labkit.check("loss-falls", True, "2.30 -> 0.10")
    labkit.check("gpu-faster", None, "no GPU here")
    metric, passed, not_applicable = lines(run_dir / "metrics" / "rank0.jsonl")
    assert metric["step"] is None and "check" not in metric
    assert {k: passed[k] for k in ("rank", "check", "ok", "detail")} == {
        "rank": 0,
        "check": "loss-falls",
        "ok": True,
        "detail": "2.30 -> 0.10",
    }
    assert "step" not in passed and not_applicable["ok"] is None
    assert capsys.readouterr().out.splitlines() == ["[PASS] loss-falls: 2.30 -> 0.10", "[n/a ] gpu-faster: no GPU here"]


def test_without_a_run_dir_metrics_go_to_stdout_for_the_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    labkit.report(5, loss=0.75)
    labkit.check("ranks-in-sync", False, "rank 1 differs")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("gpudojo-metric {")
    assert json.loads(out[0].removeprefix("gpudojo-metric "))["loss"] == 0.75
    assert out[1] == "[FAIL] ranks-in-sync: rank 1 differs"
    check = json.loads(out[2].removeprefix("gpudojo-metric "))
    assert check == {"t": check["t"], "rank": 0, "check": "ranks-in-sync", "ok": False, "detail": "rank 1 differs"}
    assert list(tmp_path.iterdir()) == []  # no file anywhere


class Writes:
    """A stdout that keeps every write() apart, as the file torchrun tails sees them."""

    def __init__(self):
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_each_line_for_the_terminal_is_one_write_so_torchrun_never_copies_half(monkeypatch):
    # print() writes the text and the newline apart; torchrun's tailer can read between them
    # and copy "[default0]:gpudojo-metric {...}[default0]:", which no reader can parse.
    out = Writes()
    monkeypatch.setattr(sys, "stdout", out)
    labkit.report(1, loss=0.5)
    labkit.check("loss-falls", True, "2.0 -> 0.5")
    assert [w[-1] for w in out.writes] == ["\n"] * 3
    assert [w.count("\n") for w in out.writes] == [1] * 3
    assert out.writes[1] == "[PASS] loss-falls: 2.0 -> 0.5\n"
    assert json.loads(out.writes[0].removeprefix("gpudojo-metric "))["loss"] == 0.5


def test_tensors_and_numpy_scalars_become_plain_json_numbers(run_dir):
    labkit.report(
        torch.tensor(3).item(),
        loss=torch.tensor(0.5),
        tokens=torch.tensor(4096),
        finite=torch.tensor(True),
        lr=np.float32(0.25),
        seen=np.int64(7),
        diverged=float("nan"),
        overflow=torch.tensor(float("inf")),
    )
    (r,) = lines(run_dir / "metrics" / "rank0.jsonl")
    assert r["loss"] == 0.5 and isinstance(r["loss"], float)
    assert r["tokens"] == 4096 and isinstance(r["tokens"], int)
    assert r["finite"] is True and r["lr"] == 0.25 and r["seen"] == 7
    # JSON has no NaN or infinity: they are written as null, and the file stays strict JSON.
    assert r["diverged"] is None and r["overflow"] is None
    assert "NaN" not in (run_dir / "metrics" / "rank0.jsonl").read_text()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"loss": [0.5, 0.4]}, "'loss' is a list"),
        ({"hist": {"a": 1}}, "'hist' is a dict"),
        ({"grad": torch.ones(3)}, "'grad' is a Tensor of shape (3,)"),
        ({"w": np.zeros((2, 2))}, "'w' is a ndarray of shape (2, 2)"),
        ({"rank": 1}, "'rank' is labkit's own key"),
        ({"check": "x"}, "'check' is labkit's own key"),
        ({}, "at least one value"),
    ],
)
def test_values_that_are_not_json_scalars_are_refused_by_name(run_dir, values, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        labkit.report(1, **values)
    assert not (run_dir / "metrics").exists()


def test_step_and_ok_must_have_their_types():
    with pytest.raises(TypeError, match="step must be an int"):
        labkit.report(1.5, loss=1.0)
    with pytest.raises(TypeError, match="step must be an int"):
        labkit.report(True, loss=1.0)
    with pytest.raises(TypeError, match="ok must be True, False or None"):
        labkit.check("x", "yes")
    with pytest.raises(TypeError, match="non-empty string"):
        labkit.check("", True)


def test_check_accepts_a_tensor_bool(run_dir):
    labkit.check("close", torch.tensor(1.0) < 2.0, "")
    assert lines(run_dir / "metrics" / "rank0.jsonl")[0]["ok"] is True


def test_where_the_process_is_comes_from_torchruns_environment(monkeypatch):
    assert (labkit.rank(), labkit.world_size(), labkit.local_rank()) == (0, 1, 0)
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert (labkit.rank(), labkit.world_size(), labkit.local_rank()) == (5, 8, 1)
    monkeypatch.setenv("RANK", "five")
    with pytest.raises(RuntimeError, match="RANK='five' is not a whole number"):
        labkit.rank()


def test_backend_is_the_run_services_choice_else_what_cuda_allows(monkeypatch):
    assert labkit.backend() == ("nccl" if torch.cuda.is_available() else "gloo")
    monkeypatch.setenv("GPUDOJO_BACKEND", "gloo")
    assert labkit.backend() == "gloo"
    monkeypatch.setenv("GPUDOJO_BACKEND", "nccl")
    assert labkit.backend() == "nccl"


def test_device_is_the_local_ranks_gpu_or_the_cpu(monkeypatch):
    if not torch.cuda.is_available():
        assert labkit.device() == torch.device("cpu")
    # With GPUs, LOCAL_RANK picks one; more ranks than GPUs is an error that says what to change.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert labkit.device() == torch.device("cuda", 1)
    monkeypatch.setenv("LOCAL_RANK", "2")
    with pytest.raises(RuntimeError, match=r"LOCAL_RANK is 2 but this machine shows 2 GPU\(s\).*nproc"):
        labkit.device()


def test_seed_everything_repeats_every_generator():
    def draw():
        return random.random(), float(np.random.rand()), torch.rand(3).tolist()

    labkit.seed_everything(1234)
    first = draw()
    labkit.seed_everything(1234)
    assert draw() == first
    labkit.seed_everything(1235)
    assert not math.isclose(draw()[2][0], first[2][0])


def test_importing_labkit_does_not_import_torch():
    code = "import sys; from gpudojo import labkit; labkit.report; assert 'torch' not in sys.modules, 'torch'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_record_is_torchs_and_writes_the_error_file_with_the_traceback(tmp_path):
    from torch.distributed.elastic.multiprocessing.errors import record

    assert labkit.record is record
    script = tmp_path / "fails.py"
    script.write_text(
        textwrap.dedent(
            """
            from gpudojo import labkit

            @labkit.record
            def main():
                raise RuntimeError("rank 1 ran out of patience")

            main()
            """
        )
    )
    error_file = tmp_path / "error.json"
    env = {**os.environ, "TORCHELASTIC_ERROR_FILE": str(error_file)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    message = json.loads(error_file.read_text())["message"]
    assert message["message"] == "RuntimeError: rank 1 ran out of patience"
    assert "fails.py" in message["extraInfo"]["py_callstack"]


# --- MFU -----------------------------------------------------------------------------------------


def test_declared_flops_add_mfu_to_every_throughput_against_a_measured_cpu_peak(run_dir, capsys):
    from gpudojo.labkit import mfu

    try:
        peak = labkit.declare_flops(per_sample=1e6, dtype="fp32", device="cpu")
        assert peak.measured and 1e8 < peak.flops_per_s < 1e13  # a real CPU's matmul rate
        assert "not a datasheet figure" in capsys.readouterr().out
        labkit.report(0, loss=1.0, samples_per_s=2000.0)
        labkit.report(1, loss=0.9)  # no throughput, no mfu
        labkit.report(2, samples_per_s=1000.0, mfu=0.5)  # the script's own figure is kept
        first, second, third = lines(run_dir / "metrics" / "rank0.jsonl")
        assert first["mfu"] == pytest.approx(2000.0 * 1e6 / peak.flops_per_s)
        assert "mfu" not in second and third["mfu"] == 0.5
    finally:
        mfu.forget()


def test_a_known_gpu_takes_its_datasheet_dense_peak_and_others_are_measured():
    from gpudojo.labkit.mfu import datasheet_peak

    assert datasheet_peak("NVIDIA H100 80GB HBM3", "bf16").flops_per_s == 989.4e12
    assert datasheet_peak("NVIDIA H100 PCIe", "bf16").flops_per_s == 756.5e12
    assert datasheet_peak("NVIDIA A100-SXM4-80GB", "tf32").flops_per_s == 156e12
    assert datasheet_peak("NVIDIA L4", "fp32").flops_per_s == 30.3e12
    assert datasheet_peak("NVIDIA L40", "bf16") is None  # "L4" is not an L40's peak
    assert datasheet_peak("Tesla T4", "bf16") is None
    assert "datasheet dense bf16" in datasheet_peak("NVIDIA H200", "bf16").basis


@pytest.mark.parametrize(("per_sample", "dtype"), [(0, "fp32"), (-1.0, "fp32"), (True, "fp32"), (1e6, "int8")])
def test_declare_flops_refuses_what_is_not_a_positive_count_or_a_known_dtype(per_sample, dtype):
    with pytest.raises(ValueError, match=r"labkit\.declare_flops"):
        labkit.declare_flops(per_sample=per_sample, dtype=dtype, device="cpu")
