"""The run service with real torchrun and gloo on this CPU: success, a crashing rank, cancel,
timeout, restart, sweeps, the queue, scripts, the output cap, and the event stream."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from gpudojo.api.base import status_of
from gpudojo.errors import ServiceError
from gpudojo.runfolder import rank_line, whole_line
from gpudojo.runs.models import FINAL_STATUSES, LabRunRequest, ScriptRunRequest, SweepSpec
from gpudojo.runs.procs import alive_of
from gpudojo.runs.service import RunService

LABS = Path(__file__).resolve().parents[1] / "data" / "labs"
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def service(tmp_path):
    svc = RunService(LABS, tmp_path / "data", tmp_path / "root", cancel_grace_s=3.0)
    yield svc
    svc.close()


def lab(**params):
    return LabRunRequest(lab="lab-test-ddp", params=params)


def wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    raise AssertionError("condition not reached")


def all_events(svc, run_id, after=-1):
    past, ended, unsubscribe = svc.subscribe(run_id, after, lambda e: None)
    unsubscribe()
    return past, ended


def test_two_process_gloo_lab_succeeds_with_logs_metrics_and_checks(service):
    (run,) = service.submit(lab(nproc=2))
    assert run.status in ("queued", "running") and run.backend == "gloo" and run.device_mode == "cpu"
    assert "gloo" in run.mode_note
    done = service.wait(run.id, 120)
    assert done.status == "succeeded", done.root_cause
    assert done.exit_code == 0 and done.root_cause is None
    assert done.argv[1:4] == ["-m", "gpudojo.worker.torch_agent", "--nproc-per-node"] and "--log-dir" in done.argv
    assert {c.id: c.ok for c in done.checks} == {
        "loss-falls": True,
        "same-params": True,
        "done": True,
        "said-hello": True,
    }
    events, ended = all_events(service, run.id)
    assert ended and [e["seq"] for e in events] == list(range(len(events)))
    logs = [e for e in events if e["type"] == "log"]
    for rank in (0, 1):
        assert any(
            e["rank"] == rank and e["text"] == "step 5 loss " + e["text"][12:]
            for e in logs
            if e["text"].startswith("step 5")
        )
        assert any(e["rank"] == rank and e["stream"] == "stderr" and e["text"] == "stderr line 0" for e in logs)
    metrics = [e for e in events if e["type"] == "metric"]
    assert {e["rank"] for e in metrics} == {0, 1}
    assert sum(1 for e in metrics if e["rank"] == 0 and "loss" in e["values"]) == 6
    folder = service.runs_dir / run.id
    assert (folder / "metrics" / "rank1.jsonl").is_file()
    assert sorted(p.parent.name for p in (folder / "torchrun").glob("*/attempt_0/*/stdout.log")) == ["0", "1"]
    assert events[-1]["type"] == "status" and events[-1]["run"]["status"] == "succeeded"
    # The store has it, as the server and the CLI will read it.
    assert service.store.get(run.id).status == "succeeded"


def test_crash_on_rank_one_is_the_root_cause(service):
    (run,) = service.submit(lab(nproc=2, crash_rank=1))
    done = service.wait(run.id, 120)
    assert done.status == "failed" and done.exit_code != 0
    cause = done.root_cause
    # 1 from the exception, or -6 when gloo aborts the dying process on its way out.
    assert cause.rank == 1 and cause.exit_code in (1, -6)
    assert cause.exception == "RuntimeError: rank 1 fails on purpose at step 2"
    assert "train.py" in cause.traceback
    assert {c.id: c.ok for c in done.checks}["done"] is False


def test_a_reader_never_sees_a_run_ended_without_its_cause_and_checks(service, monkeypatch):
    """The run's cause is read from its ranks' files after the processes are reaped; while that
    is read (made slow here), GET runs/<id> on another thread must see the run still going or
    ended with its cause and checks, never "failed" with no cause (what CI once caught)."""
    import gpudojo.runs.service as service_module

    real = service_module.root_cause
    reading = threading.Event()

    def slow_root_cause(*args, **kwargs):
        reading.set()
        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(service_module, "root_cause", slow_root_cause)
    (run,) = service.submit(lab(nproc=2, crash_rank=1))
    deadline = time.monotonic() + 120
    while (view := service.get(run.id)).status not in FINAL_STATUSES and time.monotonic() < deadline:
        time.sleep(0.01)
    assert reading.is_set(), "the cause was never read"
    # The first view that says the run ended already has its cause and its checks.
    assert view.status == "failed" and view.root_cause is not None and view.root_cause.rank == 1, view
    assert {c.id: c.ok for c in view.checks}["done"] is False, view.checks


def test_cancel_leaves_no_process_alive(service):
    (run,) = service.submit(lab(nproc=2, sleep_s=120))
    wait_for(lambda: len(service.store.pids(run.id)) >= 3)  # torchrun and its two workers
    wait_for(lambda: any(c.ok for c in service.get(run.id).checks if c.id == "loss-falls"))
    pids = service.store.pids(run.id)
    started = time.monotonic()
    done = service.cancel(run.id)
    assert done.status == "cancelled" and time.monotonic() - started < 15
    assert alive_of(pids) == []
    assert done.root_cause is None


def test_timeout_stops_the_run(tmp_path):
    svc = RunService(LABS, tmp_path / "data", tmp_path, run_timeout_s=4.0, cancel_grace_s=2.0)
    try:
        (run,) = svc.submit(lab(nproc=2, sleep_s=120))
        done = svc.wait(run.id, 60)
        assert done.status == "timed_out"
        assert alive_of(svc.store.pids(run.id)) == []
    finally:
        svc.close()


def test_server_restart_marks_a_killed_run_lost_and_kills_its_workers(tmp_path):
    # A "server" in a child process starts a run, then dies without any chance to clean up.
    data = tmp_path / "data"
    program = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from gpudojo.runs.models import FINAL_STATUSES, LabRunRequest
        from gpudojo.runs.service import RunService
        svc = RunService(Path({str(LABS)!r}), Path({str(data)!r}), Path({str(tmp_path)!r}))
        (run,) = svc.submit(LabRunRequest(lab="lab-test-ddp", params={{"nproc": 2, "sleep_s": 120}}))
        print(run.id, flush=True)
        time.sleep(600)
    """)
    server = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    run_id = server.stdout.readline().strip()
    probe = RunService(LABS, data, tmp_path)  # its owner is alive: the run is left alone
    assert probe.start() == []
    try:
        wait_for(lambda: len(probe.store.pids(run_id)) >= 3)
        assert probe.get(run_id).status == "running"
        pids = probe.store.pids(run_id)
    finally:
        probe.close()
    server.kill()
    server.wait()
    assert alive_of(pids), "the workers outlive a killed server until someone reaps them"
    restarted = RunService(LABS, data, tmp_path)
    assert restarted.get(run_id).status == "running"  # recovery is the explicit start step
    assert restarted.start() == [run_id]
    try:
        run = restarted.get(run_id)
        assert run.status == "lost" and "server stopped" in run.root_cause.exception
        assert alive_of(pids) == []
    finally:
        restarted.close()


@pytest.mark.parametrize(
    ("params", "param", "words"),
    [
        ({"nproc": 9}, "nproc", "above the maximum"),
        ({"steps": "ten"}, "steps", "whole number"),
        ({"lr": True}, "lr", "expected a number"),
        ({"optimizer": "lion"}, "optimizer", "one of sgd, adam"),
        ({"sync": "yes"}, "sync", "true or false"),
        ({"epochs": 3}, "epochs", "no parameter 'epochs'"),
    ],
)
def test_bad_parameters_name_the_field(service, params, param, words):
    with pytest.raises(ServiceError) as info:
        service.submit(lab(**params))
    assert status_of(info.value) == 400
    assert [e["param"] for e in info.value.detail] == [param] and words in info.value.detail[0]["message"]
    assert service.list() == []


def test_unknown_and_broken_labs(service):
    with pytest.raises(ServiceError) as info:
        service.submit(LabRunRequest(lab="lab-nope"))
    assert status_of(info.value) == 404
    listing = service.labs()
    assert [p.lab for p in listing.problems] == ["lab-broken"] and "nowhere.py" in listing.problems[0].message
    assert {lab.id for lab in listing.labs} == {"lab-test-ddp", "lab-test-single"}


def test_late_subscriber_gets_everything_and_can_resume(service):
    (run,) = service.submit(lab(nproc=1, steps=3))
    live: list[dict] = []
    past, ended, unsubscribe = service.subscribe(run.id, -1, live.append)
    service.wait(run.id, 120)
    unsubscribe()
    seen = past + live
    assert [e["seq"] for e in seen] == list(range(len(seen)))
    late, ended = all_events(service, run.id)
    assert ended and late == seen
    tail, _ = all_events(service, run.id, after=len(seen) - 3)
    assert tail == seen[-2:]


def test_sweep_runs_one_after_another(service):
    runs = service.submit(
        LabRunRequest(lab="lab-test-ddp", params={"steps": 3}, sweep=SweepSpec(param="nproc", values=[1, 2]))
    )
    assert [r.params["nproc"] for r in runs] == [1, 2] and runs[0].group == runs[1].group
    first, second = (service.wait(r.id, 120) for r in runs)
    assert first.status == second.status == "succeeded"
    assert second.started_at >= first.ended_at
    assert [r.id for r in service.list(group=runs[0].group)] == [second.id, first.id]


def test_queue_respects_the_cap(tmp_path):
    svc = RunService(LABS, tmp_path / "data", tmp_path, max_concurrent=1, cancel_grace_s=2.0)
    try:
        (first,) = svc.submit(lab(nproc=1, sleep_s=60))
        (second,) = svc.submit(lab(nproc=1, steps=2))
        wait_for(lambda: svc.get(first.id).status == "running")
        assert svc.get(second.id).status == "queued"
        svc.cancel(first.id)
        assert svc.wait(second.id, 120).status == "succeeded"
        (cancelled,) = svc.submit(lab(nproc=1, sleep_s=60))
        (queued,) = svc.submit(lab(nproc=1))
        assert svc.cancel(queued.id).status == "cancelled"
        svc.cancel(cancelled.id)
    finally:
        svc.close()


def test_learners_script_inside_root_only(service):
    root = service.root_dir
    root.mkdir(parents=True, exist_ok=True)
    (root / "mine.py").write_text("import sys\nprint('hi', sys.argv[1:])\nraise SystemExit(3)\n")
    (root.parent / "outside.py").write_text("print('no')\n")
    (run,) = service.submit(ScriptRunRequest(path="mine.py", nproc=1, args=["--x", "1"], launcher="python"))
    done = service.wait(run.id, 60)
    assert done.status == "failed" and done.exit_code == 3 and done.kind == "script"
    assert (done.script_path, done.script_args) == ("mine.py", ["--x", "1"])
    assert "torch.cuda is not available" in done.mode_note
    events, _ = all_events(service, run.id)
    assert any(e["type"] == "log" and e["text"] == "hi ['--x', '1']" for e in events)
    for path, status in (("../outside.py", 403), ("missing.py", 404), ("/etc/passwd", 403)):
        with pytest.raises(ServiceError) as info:
            service.submit(ScriptRunRequest(path=path))
        assert status_of(info.value) == status


def test_single_process_lab_failure_has_its_traceback(service):
    (run,) = service.submit(LabRunRequest(lab="lab-test-single", params={"fail": True}))
    done = service.wait(run.id, 60)
    assert done.status == "failed" and done.backend == "none"
    assert done.root_cause.rank == 0 and done.root_cause.exception == "ValueError: asked to fail"
    events, _ = all_events(service, run.id)
    assert [e["values"]["loss"] for e in events if e["type"] == "metric"] == [1.0, 0.5]


def test_output_cap_marks_where_it_cut(tmp_path):
    svc = RunService(LABS, tmp_path / "data", tmp_path, max_log_bytes=200)
    try:
        (run,) = svc.submit(lab(nproc=1, steps=20))
        assert svc.wait(run.id, 120).status == "succeeded"
        events, _ = all_events(svc, run.id)
        kinds = [e["type"] for e in events]
        assert kinds.count("truncated") == 1
        assert "log" not in kinds[kinds.index("truncated") :]
        # The cap is on log output: every metric still arrives (whenever the tail reads it).
        assert sum(1 for e in events if e["type"] == "metric" and "loss" in e["values"]) == 20
        assert sum(len(e["text"]) + 1 for e in events if e["type"] == "log") <= 200
    finally:
        svc.close()


def test_close_kills_every_run(tmp_path):
    svc = RunService(LABS, tmp_path / "data", tmp_path, cancel_grace_s=2.0)
    (run,) = svc.submit(lab(nproc=2, sleep_s=120))
    wait_for(lambda: len(svc.store.pids(run.id)) >= 3)
    pids = svc.store.pids(run.id)
    svc.close()
    assert alive_of(pids) == []
    reopened = RunService(LABS, tmp_path / "data", tmp_path)
    try:
        assert reopened.get(run.id).status == "cancelled"
    finally:
        reopened.close()


def write_rank_error(attempt: Path, rank: int, message: str, written_at: float) -> None:
    """A rank's error.json as torchrun's @record writes it, with the file's time set."""
    import os

    (attempt / str(rank)).mkdir(parents=True, exist_ok=True)
    doc = {"message": {"message": message, "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "100"}}}
    error_file = attempt / str(rank) / "error.json"
    error_file.write_text(json.dumps(doc))
    os.utime(error_file, (written_at, written_at))


def summary(verdict: tuple[int, int], *failures: tuple[int, int]) -> str:
    """torchrun's failure summary: other failures, then "Root Cause" naming (rank, exit code)."""
    block = lambda rank, code: f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : {code} (pid: 5)\n"  # noqa: E731
    return "".join(f"Failures:\n[1]:\n{block(*f)}" for f in failures) + (
        f"Root Cause (first observed failure):\n[0]:\n{block(*verdict)}"
    )


GLOO_LOST = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
    "peer [127.0.0.1]:31133. This is typically caused by a remote worker crashing."
)


def test_root_cause_is_the_rank_that_failed_by_itself_not_the_peer_that_lost_it(tmp_path):
    from gpudojo.runs.rootcause import root_cause

    attempt = tmp_path / "none_x" / "attempt_0"
    write_rank_error(attempt, 1, "RuntimeError: the real bug", 1000.0)
    write_rank_error(attempt, 0, GLOO_LOST, 1000.4)
    # What CI saw: rank 1 slow to exit after its error, rank 0 aborted on the lost connection
    # first, and torchrun (whole-second timestamps, lowest rank on a tie) named rank 0.
    cause = root_cause(tmp_path, summary((0, -6), (1, -15)), 1)
    assert (cause.rank, cause.exit_code, cause.exception) == (1, -15, "RuntimeError: the real bug")
    assert [(o["rank"], o["exit_code"]) for o in cause.others] == [(0, -6)]
    # The usual order: rank 1 exits 1 and torchrun stops rank 0.
    assert root_cause(tmp_path, summary((1, 1), (0, -15)), 1).rank == 1
    # A peer that lost its connection and exited 1 by itself is still not the cause.
    assert root_cause(tmp_path, summary((0, 1), (1, -15)), 1).rank == 1
    # Without a summary at all.
    assert root_cause(tmp_path, "", 1).rank == 1


def test_root_cause_between_two_real_errors_is_the_one_written_first(tmp_path):
    from gpudojo.runs.rootcause import root_cause

    attempt = tmp_path / "none_x" / "attempt_0"
    write_rank_error(attempt, 0, "ValueError: rank 0's own bug", 1000.7)
    write_rank_error(attempt, 1, "KeyError: rank 1's own bug", 1000.2)
    # Both in the same whole second: torchrun names the lowest rank, the files say rank 1 was first.
    assert root_cause(tmp_path, summary((0, 1), (1, 1)), 1).rank == 1
    # When only peers that lost each other are there, the same order decides.
    write_rank_error(attempt, 0, GLOO_LOST, 1000.7)
    write_rank_error(attempt, 1, "RuntimeError: Connection reset by peer", 1000.2)
    assert root_cause(tmp_path, summary((0, -6), (1, -6)), 1).rank == 1


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[default0]:loss 0.5", (0, "loss 0.5")),
        # torchrun copied the text before the rank wrote its newline: the rest came behind the prefix
        ("[default3]:loss 0.5[default3]:", (3, "loss 0.5")),
        ('[default0]:gpudojo-metric {"loss": 0.5}[default0]:', (0, 'gpudojo-metric {"loss": 0.5}')),
        ("[default1]:[default0]:", (1, "[default0]:")),  # another rank's prefix is the rank's text
        ("[default2]:", (2, "")),
        ("torchrun's own line", None),
        (" [default0]:indented", None),
    ],
)
def test_a_rank_line_is_read_without_the_prefix_a_split_copy_left(line, expected):
    assert rank_line(line) == expected
    assert whole_line(line) == (line if expected is None else f"[default{expected[0]}]:{expected[1]}")


SPLIT_WRITES = textwrap.dedent(
    """\
    import json, sys, time

    def in_two_writes(text):
        sys.stdout.write(text)
        sys.stdout.flush()
        time.sleep(0.6)  # torchrun's tailer reads every 0.1 s: it copies the line unfinished
        sys.stdout.write("\\n")
        sys.stdout.flush()

    in_two_writes("gpudojo-metric " + json.dumps({"t": time.time(), "rank": 0, "step": 1, "loss": 0.5}))
    in_two_writes("a line written in two pieces")
    print("a whole line", flush=True)
    """
)


def test_a_line_torchrun_copied_unfinished_still_files_its_metric_and_reads_as_printed(service):
    # Seen in CI: lab-04's rank printed a metric line with print() under PYTHONUNBUFFERED, and
    # torchrun's output held "[default0]:gpudojo-metric {...}[default0]:".
    root = service.root_dir
    root.mkdir(parents=True, exist_ok=True)
    (root / "split.py").write_text(SPLIT_WRITES)
    (run,) = service.submit(ScriptRunRequest(path="split.py", nproc=1, launcher="torchrun"))
    done = service.wait(run.id, 120)
    assert done.status == "succeeded", done.root_cause
    events, _ = all_events(service, run.id)
    assert [e["values"] for e in events if e["type"] == "metric"] == [{"loss": 0.5}]
    texts = [e["text"] for e in events if e["type"] == "log" and e["rank"] == 0]
    assert texts == ["a line written in two pieces", "a whole line"]


def test_more_ranks_than_gpus_is_refused_naming_nproc(service):
    with pytest.raises(ServiceError) as info:
        service.submit(lab(nproc=4), gpus=2)
    assert info.value.detail == [
        {"param": "nproc", "message": "4 processes but 2 GPU(s) here: with NCCL each rank needs a GPU of its own"}
    ]


def test_another_launcher_plugs_in_behind_the_launcher_interface(tmp_path):
    """An engine (Slurm, Kubernetes) gets the same LaunchSpec and wraps the command its own way."""
    from gpudojo.runfolder import BACKEND_ENV, RECORD_MEMORY_ENV, RECORD_PROFILE_ENV, RUN_DIR_ENV
    from gpudojo.runs.launch import LaunchPlan, LocalLauncher

    class WrappingLauncher(LocalLauncher):
        def __init__(self):
            super().__init__()
            self.specs = []

        def plan(self, spec):
            self.specs.append(spec)
            local = super().plan(spec)
            return LaunchPlan(argv=["/usr/bin/env", "ENGINE=test", *local.argv], env=local.env, cwd=local.cwd)

    launcher = WrappingLauncher()
    svc = RunService(LABS, tmp_path / "data", tmp_path, launcher=launcher)
    try:
        (run,) = svc.submit(LabRunRequest(lab="lab-test-single", record_memory=True, record_profile=True))
        done = svc.wait(run.id, 60)
        assert done.status == "succeeded" and done.argv[:2] == ["/usr/bin/env", "ENGINE=test"]
        assert done.record_memory and done.record_profile
        (spec,) = launcher.specs
        assert (spec.launcher, spec.nproc, spec.dist_backend) == ("python", 1, "gloo")
        assert spec.record_memory and spec.record_profile
        env = launcher.plan(spec).env
        assert env[RUN_DIR_ENV] == str(svc.runs_dir / run.id) and env[BACKEND_ENV] == "gloo"
        assert env[RECORD_MEMORY_ENV] == env[RECORD_PROFILE_ENV] == "1"
        # What the script reported went where the run folder contract says, and was streamed.
        assert svc.folder(run.id).metrics_file(0).is_file()
        events, _ = all_events(svc, run.id)
        assert any(e["type"] == "log" and e["text"] == "single step 1" for e in events)
        assert sum(e["type"] == "metric" for e in events) == 2
    finally:
        svc.close()
