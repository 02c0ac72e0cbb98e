"""The whole server as a user runs it (`jupyter server` with gpudojo, a token, its own data
dir, in a child process): SIGKILLed in the middle of a run and started again, the run is
shown lost, the history is kept and no process of the run is left; then 50 runs started and
cancelled over REST leave no orphan and every run in a final state."""

from __future__ import annotations

import json
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudojo.runs.procs import alive_of
from gpudojo.runs.store import RunStore
from test_faults_runs import FAULTS, FINAL, processes_of

pytestmark = pytest.mark.timeout(240)

TOKEN = "faults-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterServer:
    """`jupyter server` with gpudojo in a session of its own, on a free port, with a token."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.data = base / "data"
        self.log_path = base / "server.log"
        self.config = base / "jupyter_server_config.py"
        self.root.mkdir(parents=True, exist_ok=True)
        for script in FAULTS.glob("*.py"):
            shutil.copy(script, self.root / script.name)
        self.config.write_text('c.ServerApp.jpserver_extensions = {"gpudojo": True}\n')
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self, timeout_s: float = 90.0) -> float:
        """Start it and wait until the runs API answers; the seconds that took."""
        self.port = free_port()
        jupyter = Path(sys.executable).with_name("jupyter")
        argv = [
            str(jupyter) if jupyter.is_file() else "jupyter",
            "server",
            f"--config={self.config}",
            "--allow-root",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root}",
            f"--IdentityProvider.token={TOKEN}",
            f"--GPUDojo.data_dir={self.data}",
            "--GPUDojo.memory_warm_worker=False",
            "--GPUDojo.max_concurrent_runs=4",
        ]
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        while time.monotonic() - started < timeout_s:
            assert self.proc.poll() is None, f"the server exited: {self.log_path.read_text()[-3000:]}"
            try:
                if self.call("GET", "runs/labs")[0] == 200:
                    return time.monotonic() - started
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the server did not answer within {timeout_s} s")

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """One REST call to gpudojo/api/<path>: (status, JSON body)."""
        data = json.dumps(body or {}).encode() if method == "POST" else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/gpudojo/api/{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def assert_answers(self) -> None:
        for path in ("gpu/devices", "runs/labs", "runs"):
            assert self.call("GET", path)[0] == 200, path

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing is cleaned up."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def start_run(self, path: str, *, nproc: int = 1, launcher: str = "python") -> str:
        body = {"kind": "script", "path": path, "nproc": nproc, "launcher": launcher}
        status, doc = self.call("POST", "runs", body)
        assert status == 201, doc
        return doc["runs"][0]["id"]

    def wait_run(self, run_id: str, until, timeout_s: float = 90.0) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status, run = self.call("GET", f"runs/{run_id}")
            assert status == 200, run
            if until(run):
                return run
            time.sleep(0.1)
        raise AssertionError(f"run {run_id}: condition not reached within {timeout_s} s (last: {run['status']})")

    def recorded_pids(self, run_ids: list[str]) -> list[tuple[int, float]]:
        store = RunStore(self.data / "runs.sqlite3")
        try:
            return [pid for run_id in run_ids for pid in store.pids(run_id)]
        finally:
            store.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[JupyterServer]:
    server = JupyterServer(tmp_path_factory.mktemp("faults-server"))
    server.start()
    yield server
    server.stop()


def wait_until(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s} s")
        time.sleep(0.1)


def test_server_sigkilled_mid_run_restarts_with_the_run_lost_and_history_kept(server):
    done = server.start_run("quick.py")
    crashed = server.start_run("crash_rank.py", nproc=2, launcher="torchrun")
    history = {run_id: server.wait_run(run_id, lambda r: r["status"] in FINAL)["status"] for run_id in (done, crashed)}
    assert history == {done: "succeeded", crashed: "failed"}

    running = server.start_run("sleeper.py", nproc=2, launcher="torchrun")
    server.wait_run(running, lambda r: r["status"] == "running")
    wait_until(lambda: len(processes_of({running})) == 3, 60, "torchrun and its 2 workers")
    pids = server.recorded_pids([running])
    server.kill()
    # Nobody supervises the run now; its processes live on until the server comes back.
    assert alive_of(pids) and len(processes_of({running})) == 3

    took = server.start()
    lost = server.wait_run(running, lambda r: r["status"] == "lost", 30)
    assert "server stopped" in lost["root_cause"]["exception"]
    wait_until(lambda: processes_of({running}) == [], 15, "the run's processes killed")
    assert alive_of(pids) == []
    status, listed = server.call("GET", "runs")
    assert status == 200
    assert {r["id"]: r["status"] for r in listed["runs"]} == {**history, running: "lost"}
    crash = next(r for r in listed["runs"] if r["id"] == crashed)
    assert crash["root_cause"]["rank"] == 1 and "ZeroDivisionError" in crash["root_cause"]["exception"]
    server.assert_answers()
    print(f"restarted server answered after {took:.1f} s")


def test_fifty_start_cancel_cycles_leave_no_orphan(server):
    rng = random.Random(15)
    ids: list[str] = []
    started = time.monotonic()
    for cycle in range(50):
        # Every tenth run is torchrun with two workers: a cancel can land while it starts them.
        torchrun = cycle % 10 == 9
        run_id = server.start_run(
            "sleeper.py", nproc=2 if torchrun else 1, launcher="torchrun" if torchrun else "python"
        )
        ids.append(run_id)
        delay = 0.0 if cycle % 2 == 0 else rng.uniform(0.0, 1.5)  # at once, or after a random moment
        time.sleep(delay)
        status, run = server.call("POST", f"runs/{run_id}/cancel")
        assert status == 200 and run["status"] in FINAL, (cycle, run)
    took = time.monotonic() - started

    status, listed = server.call("GET", "runs?limit=1000")
    assert status == 200
    statuses = {r["id"]: r["status"] for r in listed["runs"] if r["id"] in ids}
    assert len(statuses) == 50 and set(statuses.values()) == {"cancelled"}, statuses
    wait_until(lambda: processes_of(set(ids)) == [], 15, "no process of the 50 runs")
    assert alive_of(server.recorded_pids(ids)) == []
    server.assert_answers()
    print(f"50 start/cancel cycles in {took:.1f} s, 0 orphans")
