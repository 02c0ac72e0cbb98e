"""Fault injection on runs through a real Jupyter server (torchrun on gloo): a rank that
crashes, a rank that hangs in a collective, torchrun SIGKILLed, the supervising `gpudojo`
command SIGKILLed, a run folder on a full disk, runs.sqlite3 locked and corrupt. Each ends
as a user would expect, with every process of the run reaped, and the server answers
throughout."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gpudojo.runfolder import RUN_ID_ENV
from gpudojo.runs.procs import alive_of
from gpudojo.runs.store import RunStore

pytestmark = pytest.mark.timeout(150)

FAULTS = Path(__file__).resolve().parents[1] / "data" / "faults"
LABS = Path(__file__).resolve().parents[1] / "data" / "labs"
FINAL = {"succeeded", "failed", "cancelled", "timed_out", "lost"}


@pytest.fixture
def run_timeout_s() -> float:
    """The server's run timeout (s); parametrize to shorten it."""
    return 120.0


@pytest.fixture
def jp_server_config(jp_server_config, run_timeout_s, jp_root_dir):
    jp_server_config.GPUDojo.labs_dir = str(LABS)
    jp_server_config.GPUDojo.run_timeout_s = run_timeout_s
    for script in FAULTS.glob("*.py"):
        shutil.copy(script, jp_root_dir / script.name)
    return jp_server_config


# --- helpers (test_faults_server.py uses them too) -------------------------------------------


def processes_of(run_ids: set[str]) -> list[psutil.Process]:
    """Live processes (not zombies) whose environment names one of these runs."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(RUN_ID_ENV) in run_ids:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def assert_reaped(run_id: str, pids: list[tuple[int, float]]) -> None:
    """No process the run had (by its recorded pids, and by its environment) is alive."""
    assert alive_of(pids) == [], f"{run_id}: recorded processes still alive"
    assert processes_of({run_id}) == [], f"{run_id}: processes with its {RUN_ID_ENV} still alive"


async def rest(jp_fetch, method: str, *path: str, body: dict | None = None, **params: str) -> tuple[int, dict]:
    kwargs = {"method": method, "raise_error": False, "params": params}
    if method == "POST":
        kwargs["body"] = json.dumps(body or {})
    r = await jp_fetch("gpudojo", "api", *path, **kwargs)
    return r.code, json.loads(r.body)


async def assert_server_answers(jp_fetch) -> None:
    for path in (("gpu", "devices"), ("runs", "labs")):
        status, _ = await rest(jp_fetch, "GET", *path)
        assert status == 200, path


async def start(jp_fetch, path: str, *, nproc: int = 1, launcher: str = "python") -> str:
    body = {"kind": "script", "path": path, "nproc": nproc, "launcher": launcher}
    status, doc = await rest(jp_fetch, "POST", "runs", body=body)
    assert status == 201, doc
    return doc["runs"][0]["id"]


async def wait_final(jp_fetch, run_id: str, timeout_s: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, run = await rest(jp_fetch, "GET", "runs", run_id)
        assert status == 200, run
        if run["status"] in FINAL:
            return run
        await asyncio.sleep(0.2)
    raise AssertionError(f"run {run_id} did not end within {timeout_s} s")


async def wait_for(predicate, timeout_s: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} not reached within {timeout_s} s")


def logged(runs, run_id: str, text: str) -> bool:
    """Whether a log line of the run's event stream so far ends with ``text``."""
    past, _, unsubscribe = runs.subscribe(run_id, -1, lambda event: None)
    unsubscribe()
    return any(e["type"] == "log" and e["text"].endswith(text) for e in past)


def services_of(jp_serverapp):
    return jp_serverapp.web_app.settings["gpudojo"]


# --- ranks ------------------------------------------------------------------------------------


async def test_a_crashing_rank_is_named_with_its_exception(jp_fetch, jp_serverapp):
    run_id = await start(jp_fetch, "crash_rank.py", nproc=2, launcher="torchrun")
    run = await wait_final(jp_fetch, run_id)
    assert run["status"] == "failed" and run["exit_code"] != 0
    cause = run["root_cause"]
    assert cause["rank"] == 1 and cause["exception"] == "ZeroDivisionError: rank 1 divides by zero"
    assert "crash_rank.py" in cause["traceback"]
    assert_reaped(run_id, services_of(jp_serverapp).runs.store.pids(run_id))
    await assert_server_answers(jp_fetch)


@pytest.mark.parametrize("run_timeout_s", [15.0])
async def test_a_rank_hanging_in_a_collective_is_ended_by_the_timeout(jp_fetch, jp_serverapp):
    runs = services_of(jp_serverapp).runs
    run_id = await start(jp_fetch, "hang_collective.py", nproc=2, launcher="torchrun")
    both_up = lambda: logged(runs, run_id, "rank 0 up") and logged(runs, run_id, "rank 1 up")  # noqa: E731
    await wait_for(both_up, 15, "both ranks up")
    assert len(processes_of({run_id})) == 3  # torchrun and its two workers, one stuck in all_reduce
    await assert_server_answers(jp_fetch)
    run = await wait_final(jp_fetch, run_id)
    assert run["status"] == "timed_out"
    assert run["root_cause"]["exception"] == "stopped after 15 s (timeout)"
    assert run["ended_at"] - run["started_at"] < 15 + 15  # the timeout, then at most the grace and a kill
    assert_reaped(run_id, runs.store.pids(run_id))
    await assert_server_answers(jp_fetch)


async def test_torchrun_sigkilled_ends_the_run_failed_and_its_workers_reaped(jp_fetch, jp_serverapp):
    runs = services_of(jp_serverapp).runs
    run_id = await start(jp_fetch, "sleeper.py", nproc=2, launcher="torchrun")
    up = lambda: len(processes_of({run_id})) == 3 and logged(runs, run_id, "up")  # noqa: E731
    await wait_for(up, 60, "torchrun and 2 workers")
    (torchrun,) = [p for p in processes_of({run_id}) if "gpudojo.worker.torch_agent" in " ".join(p.cmdline())]
    workers = [p for p in processes_of({run_id}) if p.pid != torchrun.pid]
    torchrun.send_signal(signal.SIGKILL)
    run = await wait_final(jp_fetch, run_id, 30)
    assert run["status"] == "failed" and run["exit_code"] == -9
    assert run["root_cause"]["exception"] == "torchrun was killed by SIGKILL"
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
    assert_reaped(run_id, runs.store.pids(run_id))
    await assert_server_answers(jp_fetch)


def wait_sync(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s} s")
        time.sleep(0.1)


@pytest.fixture
def forget_workers() -> bool:
    """Whether the store should hold only torchrun's pid, as when the supervisor died before
    it had recorded the workers torchrun had just started."""
    return False


@pytest.fixture
def killed_cli_run(tmp_path, forget_workers) -> tuple[str, list[tuple[int, float]]]:
    """`gpudojo lab run` supervising a 2-rank torchrun run, SIGKILLed once the run is going,
    before this test's server starts on the same data dir: the run's id and its processes."""
    data = tmp_path / "gpudojo-data"
    cli = Path(sys.executable).with_name("gpudojo")
    argv = [str(cli)] if cli.is_file() else [sys.executable, "-m", "gpudojo.cli"]
    argv += ["lab", "run", "lab-test-ddp", "--set", "nproc=2", "--set", "sleep_s=300"]
    argv += ["--data-dir", str(data), "--labs-dir", str(LABS)]
    supervisor = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_sync((data / "runs.sqlite3").is_file, 30, "the CLI's run database")
        store = RunStore(data / "runs.sqlite3")
        try:
            wait_sync(lambda: any(len(store.pids(r.id)) >= 3 for r in store.list()), 60, "the CLI's run going")
            (run,) = store.list()
            pids = store.pids(run.id)
        finally:
            store.close()
        assert run.status == "running"
    finally:
        supervisor.send_signal(signal.SIGKILL)
        supervisor.wait()
    if forget_workers:
        store = RunStore(data / "runs.sqlite3")
        try:
            launcher = [p for p in pids if "gpudojo.worker.torch_agent" in " ".join(psutil.Process(p[0]).cmdline())]
            store.set_pids(run.id, launcher)
        finally:
            store.close()
    return run.id, pids


@pytest.mark.parametrize("forget_workers", [False, True], ids=["recorded", "workers-unrecorded"])
async def test_a_killed_cli_supervisor_leaves_a_run_the_next_start_marks_lost(killed_cli_run, jp_fetch):
    run_id, pids = killed_cli_run
    # The server started after the CLI died; its start step marks the run lost and kills the
    # ranks the CLI left (they had outlived it: nothing else would have reaped them), recorded
    # or not (found by the run id in their environment).
    for _ in range(300):
        status, run = await rest(jp_fetch, "GET", "runs", run_id)
        assert status == 200
        if run["status"] == "lost":
            break
        await asyncio.sleep(0.1)
    assert run["status"] == "lost" and "server stopped" in run["root_cause"]["exception"]
    await wait_for(lambda: not alive_of(pids), 10, "its processes killed")
    assert_reaped(run_id, pids)
    await assert_server_answers(jp_fetch)


# --- the disk and the database ------------------------------------------------------------------


@pytest.fixture
def full_runs_disk(tmp_path) -> Iterator[Path]:
    """A 2 MiB tmpfs where the server keeps its run folders (set up before the server, torn
    down after it): a run folder on a disk that fills up."""
    runs = tmp_path / "gpudojo-data" / "runs"
    runs.mkdir(parents=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(runs)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield runs
    finally:
        subprocess.run(["umount", "-l", str(runs)], check=False)


async def test_a_run_folder_on_a_full_disk_fails_the_run_saying_so(full_runs_disk, jp_fetch, jp_serverapp):
    runs = services_of(jp_serverapp).runs
    started = time.monotonic()
    run_id = await start(jp_fetch, "loud.py")
    run = await wait_final(jp_fetch, run_id, 60)
    assert run["status"] == "failed" and time.monotonic() - started < 30
    cause = run["root_cause"]["exception"]
    assert "No space left on device" in cause and str(full_runs_disk) in cause and "Free space" in cause
    assert_reaped(run_id, runs.store.pids(run_id))
    await assert_server_answers(jp_fetch)
    status, listed = await rest(jp_fetch, "GET", "runs")
    assert status == 200 and [r["status"] for r in listed["runs"] if r["id"] == run_id] == ["failed"]
    # Once there is space again, runs work.
    shutil.rmtree(full_runs_disk / run_id)
    again = await wait_final(jp_fetch, await start(jp_fetch, "quick.py"))
    assert again["status"] == "succeeded"


@pytest.fixture
def store_timeout_s() -> float:
    """How long the server's run store waits for a lock another process holds (s)."""
    return 1.5


def short_wait_store(jp_serverapp, timeout_s: float) -> Path:
    """Give the server's run service a store that waits ``timeout_s`` for locks (10 s by
    default), so a lock held by another process is a quick 503; the database's path."""
    runs = services_of(jp_serverapp).runs
    path = runs.store.path
    runs.store.close()
    runs.store = RunStore(path, timeout_s=timeout_s)
    return path


async def test_a_locked_database_is_a_503_and_recovers_when_released(jp_fetch, jp_serverapp, store_timeout_s):
    path = short_wait_store(jp_serverapp, store_timeout_s)
    first = await wait_final(jp_fetch, await start(jp_fetch, "quick.py"))
    assert first["status"] == "succeeded"
    sleeper = await start(jp_fetch, "sleeper.py")
    await wait_for(lambda: len(processes_of({sleeper})) == 1, 30, "the sleeper running")

    # Another process holds the write lock: readers go on (WAL); a new run waits, then is refused.
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        status, error = await rest(jp_fetch, "POST", "runs", body={"kind": "script", "path": "quick.py"})
        assert status == 503 and error["error"]["code"] == "runs_store_unavailable"
        assert "locked" in error["error"]["message"] and "try again" in error["error"]["message"]
        assert store_timeout_s <= time.monotonic() - started < store_timeout_s + 5
        # A run that ends meanwhile (cancelled here) ends all the same, shown as it ended.
        status, cancelled = await rest(jp_fetch, "POST", "runs", sleeper, "cancel")
        assert status == 200 and cancelled["status"] == "cancelled"
        assert (await rest(jp_fetch, "GET", "runs", sleeper))[1]["status"] == "cancelled"
        status, listed = await rest(jp_fetch, "GET", "runs")
        assert status == 200
        assert {r["id"]: r["status"] for r in listed["runs"]} == {first["id"]: "succeeded", sleeper: "cancelled"}
        assert processes_of({sleeper}) == []
        await assert_server_answers(jp_fetch)
    finally:
        other.execute("ROLLBACK")
        other.close()

    # Released: the same calls work again, and the run that ended meanwhile is saved.
    again = await wait_final(jp_fetch, await start(jp_fetch, "quick.py"))
    assert again["status"] == "succeeded"
    status, listed = await rest(jp_fetch, "GET", "runs")
    assert status == 200 and {r["id"] for r in listed["runs"]} == {first["id"], sleeper, again["id"]}
    reader = RunStore(path)
    try:
        assert reader.get(sleeper).status == "cancelled"
    finally:
        reader.close()


@pytest.fixture
def corrupt_store(tmp_path) -> tuple[str, Path]:
    """A finished run in the data dir, then its runs.sqlite3 overwritten with garbage (before
    the server starts): the run's id and the database's path."""
    from gpudojo.runs.models import LabRunRequest
    from gpudojo.runs.service import RunService

    data = tmp_path / "gpudojo-data"
    svc = RunService(LABS, data, tmp_path)
    try:
        (run,) = svc.submit(LabRunRequest(lab="lab-test-single"))
        assert svc.wait(run.id, 60).status == "succeeded"
    finally:
        svc.close()
    path = data / "runs.sqlite3"
    path.write_bytes(os.urandom(8192))
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    return run.id, path


async def test_a_corrupt_database_is_moved_aside_and_the_history_rebuilt(corrupt_store, jp_fetch, caplog):
    run_id, path = corrupt_store
    status, listed = await rest(jp_fetch, "GET", "runs")
    assert status == 200
    assert [(r["id"], r["status"]) for r in listed["runs"]] == [(run_id, "succeeded")]
    (aside,) = path.parent.glob("runs.sqlite3.corrupt-*")
    assert aside.stat().st_size == 8192
    # The server's start step (its recovery opens the store) may run while the fixtures are set up.
    said = [r.getMessage() for r in caplog.get_records("setup") + caplog.records]
    assert any("not a readable SQLite database" in m and str(aside) in m for m in said)
    again = await wait_final(jp_fetch, await start(jp_fetch, "quick.py"))
    assert again["status"] == "succeeded"
    await assert_server_answers(jp_fetch)
