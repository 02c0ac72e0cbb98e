"""The memory routes through a real Jupyter server."""

from __future__ import annotations

import json
import pickle

import pytest
from tornado.httpclient import HTTPClientError

from memory_data import dump, make_snapshot


async def get(jp_fetch, route, **params):
    r = await jp_fetch("gpudojo", "api", "memory", route, params=params)
    return json.loads(r.body)


async def post(jp_fetch, route, body):
    r = await jp_fetch("gpudojo", "api", "memory", route, method="POST", body=json.dumps(body))
    return json.loads(r.body)


async def error_of(call):
    with pytest.raises(HTTPClientError) as info:
        await call
    return info.value.code, json.loads(info.value.response.body)["error"]


async def test_analyse_a_workspace_snapshot_then_query_it(jp_fetch, jp_root_dir):
    (jp_root_dir / "snap.pickle").write_bytes(dump(make_snapshot(5000, oom=True, seed=4)))
    first = await post(jp_fetch, "analyze", {"path": "snap.pickle"})
    assert first["cached"] is False and first["capture"]["id"] == "file:snap.pickle"
    assert first["axis"] == "time_us" and first["allocations"] > 1000
    assert first["peak"]["total_bytes"] > 0 and len(first["ooms"]) == 1
    again = await get(jp_fetch, "analysis", capture="file:snap.pickle")
    assert again["cached"] is True and again["peak"] == first["peak"]
    window = await get(jp_fetch, "window", capture="file:snap.pickle", px="200", top="20")
    assert len(window["times_us"]) == 200 and len(window["bands"]) == 20
    zoomed = await get(
        jp_fetch,
        "window",
        capture="file:snap.pickle",
        px="100",
        top="5",
        t0=str(first["t_start_us"]),
        t1=str(first["t_start_us"] + 1000),
    )
    assert zoomed["t1_us"] == first["t_start_us"] + 1000 and len(zoomed["bands"]) <= 5
    raw = await jp_fetch("gpudojo", "api", "memory", "raw", params={"capture": "file:snap.pickle"})
    assert raw.body == (jp_root_dir / "snap.pickle").read_bytes()
    (jp_root_dir / "other.pickle").write_bytes(dump(make_snapshot(3000, seed=5)))
    diff = await get(jp_fetch, "diff", a="file:snap.pickle", b="file:other.pickle")
    assert diff["delta_bytes"] == diff["peak_b_bytes"] - diff["peak_a_bytes"]


async def test_refused_missing_and_outside(jp_fetch, jp_root_dir):
    class Evil:
        def __reduce__(self):
            return (eval, ("1",))

    (jp_root_dir / "evil.pickle").write_bytes(pickle.dumps({"device_traces": [Evil()]}))
    status, error = await error_of(post(jp_fetch, "analyze", {"path": "evil.pickle"}))
    assert status == 400 and error["code"] == "refused_pickle" and "builtins.eval" in error["message"]
    (jp_root_dir / "notes.txt").write_text("hello")
    status, error = await error_of(post(jp_fetch, "analyze", {"path": "notes.txt"}))
    assert status == 400 and error["code"] in ("refused_pickle", "not_a_capture")
    status, error = await error_of(post(jp_fetch, "analyze", {"path": "nope.pickle"}))
    assert status == 404
    status, error = await error_of(post(jp_fetch, "analyze", {"path": "../../etc/passwd"}))
    assert status == 403 and error["code"] == "outside_root"
    status, error = await error_of(get(jp_fetch, "analysis", capture="http://x"))
    assert status == 400
    status, error = await error_of(get(jp_fetch, "window", capture="file:snap.pickle", t0="x"))
    assert status == 400


async def test_a_runs_captures_are_listed(jp_fetch, jp_serverapp):
    from pathlib import Path

    data_dir = Path(jp_serverapp.web_app.settings["gpudojo"].settings.data_dir)
    run_id = "20261202-120000-abcdef"
    folder = data_dir / "runs" / run_id / "memory"
    folder.mkdir(parents=True)
    (folder / "rank0.pickle").write_bytes(dump(make_snapshot(1000, seed=1)))
    (folder / "rank1.pickle").write_bytes(dump(make_snapshot(1000, seed=2)))
    (folder / "notes.md").write_text("not a capture")
    doc = await get(jp_fetch, "captures", run=run_id)
    assert [c["id"] for c in doc["captures"]] == [f"run:{run_id}:rank0.pickle", f"run:{run_id}:rank1.pickle"]
    assert doc["captures"][1]["rank"] == 1 and doc["captures"][0]["kind"] == "cuda-snapshot"
    analysis = await get(jp_fetch, "analysis", capture=f"run:{run_id}:rank1.pickle")
    assert analysis["capture"]["run"] == run_id
    status, _ = await error_of(get(jp_fetch, "captures", run="../../x"))
    assert status == 400


async def test_estimate_route(jp_fetch):
    doc = await post(jp_fetch, "estimate", {"parameters": 1000, "optimizer": "adam", "measured_peak_bytes": 20000})
    assert doc["total_bytes"] == 16000 and doc["gap_bytes"] == 4000
    assert [t["component"] for t in doc["terms"]] == ["parameters", "gradients", "optimizer_states", "activations"]
    status, _ = await error_of(post(jp_fetch, "estimate", {"parameters": 0}))
    assert status == 400


async def test_progress_of_an_analysis_and_a_finished_runs_captures_analysed_at_once(jp_fetch, jp_serverapp):
    """GET progress answers before, during (see test_memory_scan) and after an analysis; a run
    that ends has its captures analysed by the server, so opening one is the cached path."""
    import asyncio
    from pathlib import Path
    from types import SimpleNamespace

    services = jp_serverapp.web_app.settings["gpudojo"]
    data_dir = Path(services.settings.data_dir)
    run_id = "20261203-090000-abcdef"
    folder = data_dir / "runs" / run_id / "memory"
    folder.mkdir(parents=True)
    (folder / "rank0.pickle").write_bytes(dump(make_snapshot(2000, seed=3)))
    capture = f"run:{run_id}:rank0.pickle"
    before = await get(jp_fetch, "progress", capture=capture)
    assert before["phase"] == "not_started" and before["fraction"] is None
    services._run_finished(
        SimpleNamespace(
            id=run_id, kind="script", lab=None, user="me", checks=[], status="succeeded", record_profile=False
        )
    )
    for _ in range(300):
        if (await get(jp_fetch, "progress", capture=capture))["phase"] == "done":
            break
        await asyncio.sleep(0.1)
    assert (await get(jp_fetch, "progress", capture=capture))["phase"] == "done"
    assert (await get(jp_fetch, "analysis", capture=capture))["cached"] is True
    status, error = await error_of(get(jp_fetch, "progress", capture="file:nothing.pickle"))
    assert status == 404 and error["code"] == "not_found"
