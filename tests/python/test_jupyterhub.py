"""gpudojo for a class, tested for real: a JupyterHub (the pinned `jupyterhub` and the proxy from
package.json's configurable-http-proxy) with two learners, each on a server of their own, all
through the proxy. The hub loads docs/deploy/jupyterhub_config.py, the file docs/deploy.md gives an
instructor, and changes only what this machine needs: ports, a temporary folder, DummyAuthenticator
with a password and SimpleLocalProcessSpawner (servers as this OS user, one home folder each):
tests/python/hub_harness.py's DEPLOY_HUB."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from pathlib import Path

import pytest
import requests
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from hub_harness import DEPLOY_CONFIG, DEPLOY_HUB, PROXY, data_dir, running_hub

# The proxy's public port (GPUDOJO_HUB_TEST_PORT moves it); the hub's own API, the proxy's API and
# alice's and bob's servers take the next four.
PUBLIC = int(os.environ.get("GPUDOJO_HUB_TEST_PORT", "19311"))
PASSWORD = "gpudojo-class-" + secrets.token_hex(4)
BASE = f"http://127.0.0.1:{PUBLIC}"
LAB03_TINY = {"nproc": 1, "epochs": 1, "samples": 256, "batch_size": 64, "hidden": 16}

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(not PROXY.exists(), reason="configurable-http-proxy is not installed: run `jlpm install`"),
]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A running hub with alice's and bob's servers started, a token each (hub_harness.RunningHub)."""
    started = time.monotonic()
    gpus = {"GPUDOJO_CLASS_GPUS": "0,1", "GPUDOJO_GPU_OF": "alice=0,bob=1"}
    with running_hub(tmp_path_factory.mktemp("hub"), DEPLOY_HUB, public=PUBLIC, password=PASSWORD, env=gpus) as hub:
        print(f"hub and both servers ready in {time.monotonic() - started:.1f} s")
        yield hub


def as_user(token: str) -> requests.Session:
    s = requests.Session()
    s.headers["Authorization"] = f"token {token}"
    return s


def gpudojo(user: str, *path: str) -> str:
    return f"{BASE}/user/{user}/gpudojo/api/" + "/".join(path)


async def stream_run(user: str, run_id: str, token: str, timeout: float = 120) -> list[dict]:
    url = gpudojo(user, "runs", run_id, "stream").replace("http://", "ws://") + "?after=-1"
    events: list[dict] = []
    async with websockets.connect(url, additional_headers={"Authorization": f"token {token}"}) as ws:
        try:
            while True:
                doc = json.loads(await asyncio.wait_for(ws.recv(), timeout))
                events += doc["events"]
        except ConnectionClosed:
            pass
    return events


async def ws_refused(user: str, run_id: str, token: str) -> int:
    url = gpudojo(user, "runs", run_id, "stream").replace("http://", "ws://")
    try:
        async with websockets.connect(url, additional_headers={"Authorization": f"token {token}"}):
            return 101
    except InvalidStatus as err:
        return err.response.status_code


def test_two_learners_each_get_their_own_gpudojo_behind_the_hub(hub):
    alice, bob = as_user(hub.tokens["alice"]), as_user(hub.tokens["bob"])

    # alice's gpudojo answers under /user/alice/ with her token; bob's token is refused there.
    r = alice.get(gpudojo("alice", "course", "catalog"))
    assert r.status_code == 200, r.text
    lesson = r.json()["lessons"][0]["id"]
    assert bob.get(gpudojo("alice", "course", "catalog")).status_code == 403
    assert bob.post(gpudojo("alice", "runs"), json={"kind": "lab", "lab": "lab-03-ddp"}).status_code == 403

    # A lab run launched on alice's server streams over the websocket through the proxy.
    r = alice.post(gpudojo("alice", "runs"), json={"kind": "lab", "lab": "lab-03-ddp", "params": LAB03_TINY})
    assert r.status_code == 201, r.text
    (run,) = r.json()["runs"]
    assert asyncio.run(ws_refused("alice", run["id"], hub.tokens["bob"])) == 403
    events = asyncio.run(stream_run("alice", run["id"], hub.tokens["alice"]))
    assert events[-1]["type"] == "status" and events[-1]["run"]["status"] == "succeeded", events[-5:]
    assert any(e["type"] == "metric" for e in events) and any(e["type"] == "log" for e in events)

    # Progress lands in alice's own data dir; bob's server shows none of it.
    r = alice.post(gpudojo("alice", "course", "progress"), json={"kind": "lesson", "id": lesson, "status": "completed"})
    assert r.status_code == 200, r.text
    mine = {i["id"]: i for i in alice.get(gpudojo("alice", "course", "catalog")).json()["lessons"]}
    theirs = {i["id"]: i for i in bob.get(gpudojo("bob", "course", "catalog")).json()["lessons"]}
    assert mine[lesson]["progress"]["status"] == "completed"
    assert theirs[lesson]["progress"]["status"] == "not_started"
    assert [r["id"] for r in alice.get(gpudojo("alice", "runs")).json()["runs"]] == [run["id"]]
    assert bob.get(gpudojo("bob", "runs")).json()["runs"] == []
    alice_files = [p.name for p in data_dir(hub.folder, "alice").rglob("*")]
    assert run["id"] in alice_files and "gpudojo.sqlite3" in alice_files
    assert run["id"] not in [p.name for p in data_dir(hub.folder, "bob").rglob("*")]


def test_a_learner_logs_in_with_the_class_password_and_reaches_only_their_server(hub):
    browser = requests.Session()
    login = browser.get(f"{BASE}/hub/login")
    xsrf = browser.cookies.get("_xsrf")
    wrong = browser.post(f"{BASE}/hub/login", data={"username": "alice", "password": "nope", "_xsrf": xsrf})
    assert wrong.status_code == 403 and login.ok
    r = browser.post(f"{BASE}/hub/login", data={"username": "alice", "password": PASSWORD, "_xsrf": xsrf})
    assert r.ok and "/user/alice/" in r.url, r.url
    # The hub's OAuth hands the browser's login to alice's server, which serves gpudojo and the lab.
    r = browser.get(gpudojo("alice", "course", "catalog"))
    assert r.status_code == 200 and r.json()["lessons"], r.text[:300]
    assert browser.get(f"{BASE}/user/alice/lab").ok
    # Her login opens nothing of bob's.
    assert browser.get(gpudojo("bob", "course", "catalog")).status_code == 403


def test_each_spawned_server_sees_the_gpu_the_class_config_names(hub):
    """The class config's pre-spawn hook reached the servers: GPUDOJO_GPU_OF pinned alice to 0, bob to 1."""
    for user, gpu in (("alice", "0"), ("bob", "1")):
        environ = Path(f"/proc/{hub.server(user)['state']['pid']}/environ").read_bytes().split(b"\0")
        assert f"CUDA_VISIBLE_DEVICES={gpu}".encode() in environ
        assert f"HOME={hub.folder / 'home' / user}".encode() in environ


def test_the_class_config_spreads_learners_over_gpus_and_mig_slices():
    """Learners not pinned by name get a device by a stable hash of their name."""
    namespace: dict = {"get_config": lambda: _Config(), "__file__": str(DEPLOY_CONFIG)}
    os.environ.update(GPUDOJO_CLASS_GPUS="0,1,MIG-abc", GPUDOJO_GPU_OF="alice=MIG-abc")
    try:
        exec(compile(DEPLOY_CONFIG.read_text(encoding="utf-8"), str(DEPLOY_CONFIG), "exec"), namespace)
    finally:
        for key in ("GPUDOJO_CLASS_GPUS", "GPUDOJO_GPU_OF"):
            os.environ.pop(key)
    assert namespace["gpu_for"]("alice") == "MIG-abc"
    assert {namespace["gpu_for"](f"learner{i}") for i in range(50)} <= {"0", "1", "MIG-abc"}
    assert namespace["gpu_for"]("bob") == namespace["gpu_for"]("bob")


class _Config:
    """Enough of traitlets' Config for the class file to set its values on (attribute chains)."""

    def __getattr__(self, name):
        value = _Config()
        object.__setattr__(self, name, value)
        return value
