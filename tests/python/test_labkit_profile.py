"""labkit.profile on this CPU: by hand, under the run service's variables, around an exception,
beside a memory capture; the runs API's record_profile; labs 2 and 5 and a two-rank script run
through the run service with "Record profile", at tiny sizes."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from pydantic import ValidationError

from gpudojo import labkit
from gpudojo.paths import material_root
from gpudojo.runfolder import RECORD_MEMORY_ENV, RECORD_PROFILE_ENV, TRACE_NAME, RunFolder, trace_name
from gpudojo.runs.launch import LaunchSpec, run_env
from gpudojo.runs.models import LabRunRequest, RunRequestBody, ScriptRunRequest
from gpudojo.runs.service import RunService

# labkit.profile is the function; the module it lives in, for its private state.
profile_module = importlib.import_module("gpudojo.labkit.profile")
ON_GPU = torch.cuda.is_available()
cpu_only = pytest.mark.skipif(ON_GPU, reason="a CPU memory capture; on a GPU it records a CUDA snapshot instead")
pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("GPUDOJO_RUN_DIR", RECORD_PROFILE_ENV, RECORD_MEMORY_ENV, "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    profile_module._said.clear()
    yield
    assert profile_module._active == [], "a capture was left recording"


def train(steps: int, *, fail_at: int | None = None, **options) -> labkit.ProfileCapture:
    """A tiny training loop inside labkit.profile, one profile_step() per step."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    with labkit.profile(**options) as prof:
        for step in range(steps):
            if step == fail_at:
                raise RuntimeError(f"boom at step {step}")
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            labkit.profile_step()
    return prof


def events_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["traceEvents"]


def profiler_steps(events: list[dict]) -> list[str]:
    return sorted({e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")})


# --- labkit.profile -------------------------------------------------------------------------


def test_hand_run_records_steps_2_to_4_with_shapes_and_python_stacks(tmp_path):
    prof = train(6, enabled=True)

    path = tmp_path / "gpudojo-profiles" / "rank0.trace.json"
    assert prof.recording and prof.path == path and path.is_file()
    assert prof.steps == 6 and prof.recorded_steps == (2, 4)
    assert [p.name for p in path.parent.iterdir()] == ["rank0.trace.json"], "the temporary file was renamed"
    events = events_of(path)
    # wait=1 and warmup=1 by default: steps 0 and 1 are not in the file, the three active ones are.
    assert profiler_steps(events) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    addmm = [e for e in ops if e["name"] == "aten::addmm"]
    assert len(addmm) == 3 * 2, "two linear layers' forward in each recorded step"
    assert [8, 16] in addmm[0]["args"]["Input Dims"], "record_shapes: the batch's shape is on the op"
    python = [e["name"] for e in events if e.get("cat") == "python_function"]
    assert any("test_labkit_profile.py" in name and "train" in name for name in python), "with_stack"


def test_without_the_run_asking_nothing_is_recorded_and_it_costs_nothing(tmp_path):
    prof = train(6)
    assert not prof.requested and not prof.recording and prof.path is None
    assert not (tmp_path / "gpudojo-profiles").exists()

    with labkit.profile():
        started = time.perf_counter()
        for _ in range(100_000):
            labkit.profile_step()
        per_step_us = (time.perf_counter() - started) * 1e6 / 100_000
    assert per_step_us < 5, f"profile_step() with no recording took {per_step_us:.2f} us"

    # A disabled block does not even import torch (labkit never does on its own).
    code = (
        "import sys; from gpudojo import labkit\n"
        "with labkit.profile() as p:\n"
        "    labkit.profile_step()\n"
        "print(p.path, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None False"


def test_profile_step_without_a_capture_does_nothing():
    labkit.profile_step()
    labkit.profile_step()
    assert profile_module._active == []


def test_the_run_service_variables_record_per_rank_into_the_run_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDOJO_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv(RECORD_PROFILE_ENV, "1")
    monkeypatch.setenv("RANK", "3")
    prof = train(5)
    assert prof.path == RunFolder(tmp_path / "run").profile_dir / "rank3.trace.json"
    assert TRACE_NAME.match(prof.path.name).group(1) == "3" and prof.path.name == trace_name(3)
    # enabled=False wins over the run's request: lab 5 keeps its other precisions' runs out.
    assert train(5, enabled=False).path is None


def test_an_exception_in_the_block_writes_what_was_recorded_then_propagates(tmp_path):
    with pytest.raises(RuntimeError, match="boom at step 3"):
        train(6, fail_at=3, enabled=True)
    path = tmp_path / "gpudojo-profiles" / "rank0.trace.json"
    events = events_of(path)
    # Step 2 was recorded whole; step 3 was cut short by the exception and is in the file too.
    assert profiler_steps(events) == ["ProfilerStep#2", "ProfilerStep#3"]
    assert sum(e["name"] == "aten::addmm" for e in events if e.get("cat") == "cpu_op") == 2


def test_a_block_that_ends_before_the_active_steps_writes_nothing_and_says_why(tmp_path, capsys):
    prof = train(2, enabled=True, wait=1, warmup=2)
    assert prof.recording and prof.path is None and prof.recorded_steps is None
    assert not (tmp_path / "gpudojo-profiles").exists()
    err = capsys.readouterr().err
    assert "nothing recorded: the block ended after 2 step(s), before the first active step (step 3" in err


@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup", "ignore:Warning. Profiler clears events")
def test_with_repeat_the_file_holds_the_last_cycle(tmp_path):
    prof = train(5, enabled=True, wait=0, warmup=0, active=2, repeat=2)
    assert prof.recorded_steps == (2, 3)
    assert profiler_steps(events_of(prof.path)) == ["ProfilerStep#2", "ProfilerStep#3"]


@pytest.mark.parametrize(
    ("option", "value"), [("wait", -1), ("warmup", 1.5), ("active", 0), ("repeat", -2), ("active", True)]
)
def test_schedule_arguments_are_checked(option, value):
    with pytest.raises(ValueError, match=f"labkit.profile: {option} must be a whole number"):
        labkit.profile(**{option: value})


@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
def test_a_profile_inside_another_records_nothing_and_says_so_once(tmp_path, capsys):
    with labkit.profile(enabled=True, wait=0, warmup=0, active=2) as outer:
        inner = [train(3, enabled=True) for _ in range(2)]  # its profile_step() calls step the outer one
    assert all(not p.recording and p.path is None for p in inner)
    assert "another labkit.profile block is already recording" in inner[0].note
    err = capsys.readouterr().err
    assert err.count("another labkit.profile block is already recording") == 1
    # The outer capture went on undisturbed: the inner blocks' steps were its steps.
    assert outer.path is not None and profiler_steps(events_of(outer.path)) == ["ProfilerStep#0", "ProfilerStep#1"]


@cpu_only
def test_a_cpu_memory_capture_keeps_the_profiler_and_the_profile_says_so(tmp_path, capsys):
    with labkit.memory_capture(force=True) as mem:
        prof = train(6, enabled=True)
    assert prof.path is None and "labkit.memory_capture" in prof.note
    assert "one profiler at a time" in capsys.readouterr().err
    assert mem.path is not None and mem.path.is_file(), "the memory capture was not disturbed"


@cpu_only
def test_a_cpu_memory_capture_inside_a_profile_records_nothing_and_the_profile_goes_on(tmp_path, capsys):
    with labkit.profile(enabled=True, wait=0, warmup=0, active=2) as prof, labkit.memory_capture(force=True) as mem:
        labkit.profile_step()
        labkit.profile_step()
    assert not mem.recording and mem.path is None
    assert "labkit.profile is recording a trace" in capsys.readouterr().err
    assert prof.path is not None and profiler_steps(events_of(prof.path)) == ["ProfilerStep#0", "ProfilerStep#1"]


# --- the runs API -------------------------------------------------------------------------


def test_run_requests_accept_record_profile_and_still_refuse_unknown_fields():
    lab = RunRequestBody.model_validate({"kind": "lab", "lab": "lab-02-pytorch-gpu", "record_profile": True}).root
    assert isinstance(lab, LabRunRequest) and lab.record_profile and not lab.record_memory
    script = RunRequestBody.model_validate({"kind": "script", "path": "train.py", "record_profile": True}).root
    assert isinstance(script, ScriptRunRequest) and script.record_profile
    assert not LabRunRequest(lab="lab-02-pytorch-gpu").record_profile
    for body in (
        {"kind": "lab", "lab": "lab-02-pytorch-gpu", "record_trace": True},
        {"kind": "script", "path": "train.py", "profile": True},
    ):
        with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
            RunRequestBody.model_validate(body)


def test_run_env_sets_the_profile_variable_only_when_asked(tmp_path):
    def spec(**recording) -> LaunchSpec:
        return LaunchSpec("r", RunFolder(tmp_path), tmp_path / "x.py", [], "python", 1, "gloo", **recording)

    stale = {RECORD_PROFILE_ENV: "1", RECORD_MEMORY_ENV: "1"}  # left in the server's own environment
    assert run_env(spec(record_profile=True), base={})[RECORD_PROFILE_ENV] == "1"
    quiet = run_env(spec(), base=stale)
    assert RECORD_PROFILE_ENV not in quiet and RECORD_MEMORY_ENV not in quiet


# --- runs through the run service -----------------------------------------------------------

LAB2_TINY = {"max_batch": 2, "image_size": 32, "width": 8, "seconds_per_point": 0.02}
LAB5_TINY = {"precision": "fp32", "steps": 8, "batch_size": 32, "width": 16, "depth": 1}


@pytest.fixture
def service(tmp_path):
    svc = RunService(material_root("labs"), tmp_path / "data", tmp_path / "root", cancel_grace_s=3.0)
    yield svc
    svc.close()


def traces(svc: RunService, run_id: str) -> list[str]:
    folder = svc.folder(run_id).profile_dir
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_labs_that_call_labkit_profile_declare_it(service):
    records = {lab.id: lab.records for lab in service.labs().labs}
    assert records["lab-02-pytorch-gpu"] == records["lab-05-mixed-precision"] == ["profile"]
    assert "profile" not in records["lab-03-ddp"] and "profile" not in records["lab-06-memory"]


def test_lab02_with_record_profile_leaves_a_trace_of_three_timed_passes(service):
    (run,) = service.submit(LabRunRequest(lab="lab-02-pytorch-gpu", params=LAB2_TINY, record_profile=True))
    assert run.record_profile
    done = service.wait(run.id, 120)
    assert done.status == "succeeded" and done.record_profile, done.root_cause
    assert traces(service, run.id) == ["rank0.trace.json"]
    events = events_of(service.folder(run.id).profile_dir / "rank0.trace.json")
    # One step per forward pass at the largest batch: three warm-up passes, then three timed ones.
    assert profiler_steps(events) == ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"]
    convs = [e for e in events if e.get("name") == "aten::conv2d"]
    assert convs and all(e["args"]["Input Dims"][0][0] == 2 for e in convs), "the batch of 2, max_batch"
    assert service.store.get(run.id).record_profile, "the store keeps the choice"


def test_lab02_without_record_profile_has_no_profile_folder(service):
    (run,) = service.submit(LabRunRequest(lab="lab-02-pytorch-gpu", params=LAB2_TINY))
    done = service.wait(run.id, 120)
    assert done.status == "succeeded" and not done.record_profile
    assert not service.folder(run.id).profile_dir.exists()


def test_lab05_with_record_profile_records_steps_5_to_7_of_its_training(service):
    (run,) = service.submit(LabRunRequest(lab="lab-05-mixed-precision", params=LAB5_TINY, record_profile=True))
    done = service.wait(run.id, 120)
    assert done.status == "succeeded", done.root_cause
    assert traces(service, run.id) == ["rank0.trace.json"]
    events = events_of(service.folder(run.id).profile_dir / "rank0.trace.json")
    assert profiler_steps(events) == ["ProfilerStep#5", "ProfilerStep#6", "ProfilerStep#7"]
    names = {e["name"] for e in events if e.get("cat") == "cpu_op"}
    assert {"aten::addmm", "aten::layer_norm", "aten::gelu"} <= names
    assert any(name.startswith("Optimizer.step#AdamW") for name in (e.get("name", "") for e in events))


def test_a_two_rank_script_run_leaves_one_trace_per_rank(service):
    root = service.root_dir
    root.mkdir(parents=True, exist_ok=True)
    (root / "tiny.py").write_text(
        textwrap.dedent(
            """
            import torch
            from gpudojo import labkit

            x = torch.randn(4, 8)
            with labkit.profile(wait=0, warmup=1, active=2):
                for step in range(4):
                    (x @ x.T).sum()
                    labkit.profile_step()
            """
        )
    )
    (run,) = service.submit(ScriptRunRequest(path="tiny.py", nproc=2, record_profile=True))
    done = service.wait(run.id, 120)
    assert done.status == "succeeded", done.root_cause
    assert traces(service, run.id) == ["rank0.trace.json", "rank1.trace.json"]
    pids = []
    for rank in (0, 1):
        events = events_of(service.folder(run.id).profile_dir / trace_name(rank))
        assert profiler_steps(events) == ["ProfilerStep#1", "ProfilerStep#2"]
        pids.append({e["pid"] for e in events if e.get("cat") == "cpu_op"})
    assert len(pids[0]) == len(pids[1]) == 1 and pids[0] != pids[1], "each rank's own process wrote its own file"


# --- exercise 5's check reads a profiled step ------------------------------------------------


class SlowSamples(torch.utils.data.Dataset):
    """Takes 2 ms to make each sample (a slow transform, a disk read): loading dominates a step."""

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(0.002)
        return torch.randn(16, generator=torch.Generator().manual_seed(i)), torch.tensor(i % 4)


def test_exercise5_check_reads_the_loaders_share_and_the_learners_host_reads_from_a_profile(tmp_path):
    path = material_root("content") / "exercises" / "gpu-performance-optimization" / "checks"
    spec = importlib.util.spec_from_file_location("ex5_check", path / "test_gpu_performance_optimization.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # reads its own step counter: not the learner's
    losses = []
    with labkit.profile(enabled=True, wait=0, warmup=1, active=3) as prof:
        for x, y in torch.utils.data.DataLoader(SlowSamples(), batch_size=8):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())  # the learner's host read
            labkit.profile_step()

    step = check.step_profile(prof.path)
    assert step["steps"] == 3 and step["syncs_per_step"] == 1.0
    this_test = "test_exercise5_check_reads_the_loaders_share_and_the_learners_host_reads_from_a_profile"
    assert step["sync_sites"] == [(f"{this_test}() in test_labkit_profile.py", 3)]
    # 8 samples of 2 ms each against a step of a tiny model: mostly loading.
    assert 0.5 < step["loader_share"] < 1.0
    assert step["ops_per_step"] > 100 and step["step_ms"] > 0
