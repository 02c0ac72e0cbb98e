"""The runs routes and the run stream through a real Jupyter server (torchrun on gloo)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError
from tornado.websocket import WebSocketClosedError

LABS = Path(__file__).resolve().parents[1] / "data" / "labs"
pytestmark = pytest.mark.timeout(180)


ORPHAN = "20261201-080000-0a0b0c"


@pytest.fixture
def orphan() -> bool:
    """Leave a run a dead server had 'running' in the store before this server starts."""
    return False


@pytest.fixture
def jp_server_config(jp_server_config, orphan, tmp_path):
    jp_server_config.GPUDojo.labs_dir = str(LABS)
    if orphan:
        import time

        from gpudojo.runs.models import Run
        from gpudojo.runs.store import RunStore

        store = RunStore(tmp_path / "gpudojo-data" / "runs.sqlite3")
        run = Run(
            id=ORPHAN,
            kind="script",
            title="left behind",
            launcher="torchrun",
            nproc=2,
            status="running",
            backend="gloo",
            device_mode="cpu",
            mode_note="",
            created_at=time.time(),
        )
        store.save(run, owner=(2**22 + 12345, 1.0))  # a pid and start time no live process has
        store.close()
    return jp_server_config


async def post(jp_fetch, *path, body):
    r = await jp_fetch("gpudojo", "api", "runs", *path, method="POST", body=json.dumps(body))
    return r.code, json.loads(r.body)


async def get(jp_fetch, *path, **params):
    r = await jp_fetch("gpudojo", "api", "runs", *path, params=params)
    return json.loads(r.body)


async def error_of(call):
    with pytest.raises(HTTPClientError) as info:
        await call
    return info.value.code, json.loads(info.value.response.body)["error"]


async def read_stream(jp_ws_fetch, run_id, after=-1, timeout=120):
    """Every event the stream sends until the server closes it."""
    from gpudojo.runs.models import EventBatch

    ws = await jp_ws_fetch("gpudojo", "api", "runs", run_id, "stream", params={"after": str(after)})
    events = []
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        left = deadline - asyncio.get_running_loop().time()
        try:
            message = await asyncio.wait_for(ws.read_message(), left)
        except WebSocketClosedError:
            break
        if message is None:
            break
        doc = json.loads(message)
        assert doc["type"] == "batch"
        # Every frame is an EventBatch as the OpenAPI document describes it, event by event.
        assert EventBatch.model_validate_json(message).model_dump(mode="json") == doc
        events += doc["events"]
    return events


async def test_labs_list_their_forms_and_problems(jp_fetch):
    doc = await get(jp_fetch, "labs")
    ddp = next(lab for lab in doc["labs"] if lab["id"] == "lab-test-ddp")
    assert ddp["launcher"] == "torchrun" and {p["name"] for p in ddp["parameters"]} >= {"nproc", "steps", "sync"}
    assert doc["problems"] == [{"lab": "lab-broken", "message": doc["problems"][0]["message"]}]


async def test_launch_stream_and_finish(jp_fetch, jp_ws_fetch):
    code, doc = await post(jp_fetch, body={"kind": "lab", "lab": "lab-test-ddp", "params": {"nproc": 2, "steps": 4}})
    assert code == 201
    (run,) = doc["runs"]
    assert run["backend"] == "gloo" and run["device_mode"] == "cpu"  # the replayed GPUs are not real
    events = await read_stream(jp_ws_fetch, run["id"])
    assert events[-1]["type"] == "status" and events[-1]["run"]["status"] == "succeeded"
    ranks = {e["rank"] for e in events if e["type"] == "log" and e["text"].startswith("step 3")}
    assert ranks == {0, 1}
    assert {e["rank"] for e in events if e["type"] == "metric"} == {0, 1}
    final = await get(jp_fetch, run["id"])
    assert final["status"] == "succeeded" and all(c["ok"] for c in final["checks"])
    # A late subscriber gets the whole run again; ?after resumes.
    again = await read_stream(jp_ws_fetch, run["id"])
    assert again == events
    tail = await read_stream(jp_ws_fetch, run["id"], after=events[-3]["seq"])
    assert tail == events[-2:]
    listed = await get(jp_fetch, lab="lab-test-ddp")
    assert [r["id"] for r in listed["runs"]] == [run["id"]]
    # Every check passed: the lab is completed in the learner's course progress.
    catalog = json.loads((await jp_fetch("gpudojo", "api", "course", "catalog")).body)
    entry = next(item for item in catalog["labs"] if item["id"] == "lab-test-ddp")
    assert entry["progress"]["status"] == "completed"


async def test_bad_parameters_are_400s_naming_the_field(jp_fetch):
    status, error = await error_of(
        post(jp_fetch, body={"kind": "lab", "lab": "lab-test-ddp", "params": {"nproc": 99, "steps": "x"}})
    )
    assert status == 400 and {d["param"] for d in error["detail"]} == {"nproc", "steps"}
    status, error = await error_of(post(jp_fetch, body={"kind": "lab", "lab": "lab-test-ddp", "command": "rm"}))
    assert status == 400 and error["code"] == "invalid_request"
    status, error = await error_of(post(jp_fetch, body={"kind": "lab", "lab": "lab-nope"}))
    assert status == 404
    status, error = await error_of(post(jp_fetch, body={"kind": "script", "path": "../../etc/passwd"}))
    assert status == 403 and error["code"] == "outside_root"


async def test_nan_and_infinite_parameters_are_400s_naming_the_parameter(jp_fetch):
    # Finding (issue 22, 5): JSON's NaN passed a float parameter's bounds (NaN compares false with
    # both), and Infinity for an int parameter was a 500.
    for name in ("lr", "steps"):
        for value in ("NaN", "Infinity", "-Infinity"):
            body = f'{{"kind": "lab", "lab": "lab-test-ddp", "params": {{"{name}": {value}}}}}'
            with pytest.raises(HTTPClientError) as info:
                await jp_fetch("gpudojo", "api", "runs", method="POST", body=body)
            error = json.loads(info.value.response.body)["error"]
            assert info.value.code == 400, error
            assert error["detail"] == [{"param": name, "message": f"expected a finite number, got {float(value)!r}"}]
    sweep = '{"kind": "lab", "lab": "lab-test-ddp", "sweep": {"param": "lr", "values": [0.1, NaN]}}'
    status, error = await error_of(jp_fetch("gpudojo", "api", "runs", method="POST", body=sweep))
    assert status == 400 and error["detail"][0]["param"] == "lr"
    assert (await get(jp_fetch, lab="lab-test-ddp"))["runs"] == []


async def test_cancel_through_rest(jp_fetch, jp_ws_fetch):
    code, doc = await post(jp_fetch, body={"kind": "lab", "lab": "lab-test-ddp", "params": {"sleep_s": 120}})
    run_id = doc["runs"][0]["id"]
    for _ in range(600):
        if any(c["ok"] for c in (await get(jp_fetch, run_id))["checks"] if c["id"] == "loss-falls"):
            break
        await asyncio.sleep(0.1)
    code, cancelled = await post(jp_fetch, run_id, "cancel", body={})
    assert code == 200 and cancelled["status"] == "cancelled"
    events = await read_stream(jp_ws_fetch, run_id)
    assert events[-1]["run"]["status"] == "cancelled"


async def test_sweep_and_unknown_run(jp_fetch):
    body = {"kind": "lab", "lab": "lab-test-ddp", "params": {"steps": 2}, "sweep": {"param": "nproc", "values": [1, 2]}}
    code, doc = await post(jp_fetch, body=body)
    group = doc["runs"][0]["group"]
    assert code == 201 and [r["params"]["nproc"] for r in doc["runs"]] == [1, 2]
    sweep = await get(jp_fetch, "sweeps", group)
    assert sweep["param"] == "nproc" and [r["id"] for r in sweep["runs"]] == [r["id"] for r in doc["runs"]]
    status, _ = await error_of(get(jp_fetch, "20990101-000000-abcdef"))
    assert status == 404
    for run in doc["runs"]:
        await post(jp_fetch, run["id"], "cancel", body={})


@pytest.mark.parametrize("read_only", [True])
async def test_launch_and_cancel_need_execute(jp_fetch):
    status, error = await error_of(post(jp_fetch, body={"kind": "lab", "lab": "lab-test-ddp"}))
    assert status == 403 and "execute" in error["message"]
    status, _ = await error_of(post(jp_fetch, "20990101-000000-abcdef", "cancel", body={}))
    assert status == 403
    assert (await get(jp_fetch, "labs"))["labs"]


@pytest.mark.parametrize("orphan", [True])
async def test_a_restarted_server_marks_orphaned_runs_lost_at_start(jp_fetch, tmp_path):
    from gpudojo.runs.store import RunStore

    # Read the store itself: no request of this test may be what triggers the recovery.
    store = RunStore(tmp_path / "gpudojo-data" / "runs.sqlite3")
    try:
        for _ in range(200):
            if store.get(ORPHAN).status == "lost":
                break
            await asyncio.sleep(0.05)
        assert store.get(ORPHAN).status == "lost"
    finally:
        store.close()
    run = await get(jp_fetch, ORPHAN)
    assert run["status"] == "lost" and "server stopped" in run["root_cause"]["exception"]
