"""The profile routes through a real Jupyter server, on traces recorded here with
torch.profiler on the CPU (tests/python/profile_traces.py)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from tornado.httpclient import HTTPClientError

from profile_traces import make_fast_trace, make_loader_trace


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("api-traces")
    return {"slow": make_loader_trace(folder / "slow.json"), "fast": make_fast_trace(folder / "fast.json")}


async def get(jp_fetch, route, **params):
    r = await jp_fetch("gpudojo", "api", "profile", route, params=params)
    return json.loads(r.body)


async def post(jp_fetch, route, body):
    r = await jp_fetch("gpudojo", "api", "profile", route, method="POST", body=json.dumps(body))
    return json.loads(r.body)


async def error_of(call):
    with pytest.raises(HTTPClientError) as info:
        await call
    return info.value.code, json.loads(info.value.response.body)["error"]


async def test_analyse_a_workspace_trace_then_window_hover_download_and_compare(jp_fetch, jp_root_dir, traces):
    shutil.copy(traces["slow"], jp_root_dir / "slow.json")
    shutil.copy(traces["fast"], jp_root_dir / "fast.json")
    first = await post(jp_fetch, "analyze", {"path": "slow.json"})
    assert first["cached"] is False and first["trace"]["id"] == "file:slow.json"
    assert first["mode"]["kind"] == "cpu" and first["mode"]["cannot_show"]
    assert first["step_source"] == "profiler-steps" and len(first["steps"]) == 3
    assert "data-loading" in [f["id"] for f in first["findings"]]
    again = await get(jp_fetch, "summary", trace="file:slow.json")
    assert again["cached"] is True and again["steps"] == first["steps"]
    assert (await get(jp_fetch, "progress", trace="file:slow.json"))["phase"] == "done"

    whole = await get(jp_fetch, "window", trace="file:slow.json", px="300")
    assert whole["px"] == 300 and {w["lane"] for w in whole["lanes"]} <= {lane["id"] for lane in first["lanes"]}
    step = first["steps"][1]
    narrow = await get(
        jp_fetch, "window", trace="file:slow.json", px="2000", t0=str(step["start_us"]), t1=str(step["start_us"] + 200)
    )
    spans = [s for lane in narrow["lanes"] for s in lane["spans"]]
    refs = [s["ref"] for s in spans if s["ref"] >= 0]
    assert spans and refs, "a 200 us window at 2000 px shows single spans with their refs"
    detail = await get(jp_fetch, "event", trace="file:slow.json", ref=str(refs[0]))
    assert detail["ref"] == refs[0] and detail["dur_us"] >= 0 and detail["name"]

    raw = await jp_fetch("gpudojo", "api", "profile", "raw", params={"trace": "file:slow.json"})
    assert raw.body == (jp_root_dir / "slow.json").read_bytes()
    assert "attachment" in raw.headers["Content-Disposition"]

    diff = await get(jp_fetch, "diff", a="file:slow.json", b="file:fast.json")
    assert diff["speedup"] > 1 and diff["step_a_us"] > diff["step_b_us"]
    assert "data-loading" in diff["findings_resolved"]


async def test_bad_input_gets_a_clear_4xx_and_the_server_goes_on(jp_fetch, jp_root_dir, traces):
    shutil.copy(traces["fast"], jp_root_dir / "fast.json")
    (jp_root_dir / "garbage.json").write_text("{not json at all")
    (jp_root_dir / "empty.json").write_text("[]")
    cases = [
        (get(jp_fetch, "summary"), 400),
        (get(jp_fetch, "summary", trace="nope"), 400),
        (get(jp_fetch, "summary", trace="file:missing.json"), 404),
        (get(jp_fetch, "summary", trace="file:../outside.json"), 403),
        (get(jp_fetch, "summary", trace="file:garbage.json"), 400),
        (get(jp_fetch, "summary", trace="file:empty.json"), 400),
        (get(jp_fetch, "traces", run="../../x"), 400),
        (get(jp_fetch, "window", trace="file:fast.json", t0="abc"), 400),
        (get(jp_fetch, "window", trace="file:fast.json", t0="nan"), 400),
        (get(jp_fetch, "window", trace="file:fast.json", t0="10", t1="5"), 400),
        (get(jp_fetch, "event", trace="file:fast.json", ref="-1"), 400),
        (get(jp_fetch, "event", trace="file:fast.json", ref="1.5"), 400),
        (get(jp_fetch, "event", trace="file:fast.json", ref="999999999"), 400),
        (post(jp_fetch, "analyze", {"path": ""}), 400),
        (post(jp_fetch, "analyze", {"path": "fast.json", "extra": 1}), 400),
    ]
    for call, status in cases:
        got, error = await error_of(call)
        assert got == status, (got, error)
        assert error["message"] and "Traceback" not in error["message"]
    garbage = (await error_of(get(jp_fetch, "summary", trace="file:garbage.json")))[1]
    assert garbage["code"] == "not_a_trace"
    # The analysis worker survived the garbage: a good trace still analyses.
    assert (await get(jp_fetch, "summary", trace="file:fast.json"))["steps"]


async def test_a_runs_traces_are_listed_merged_and_analysed_when_it_ends(jp_fetch, jp_serverapp, traces):
    services = jp_serverapp.web_app.settings["gpudojo"]
    run_id = "20261204-090000-abcdef"
    folder = Path(services.settings.data_dir) / "runs" / run_id / "profile"
    folder.mkdir(parents=True)
    shutil.copy(traces["slow"], folder / "rank0.trace.json")
    shutil.copy(traces["fast"], folder / "rank1.trace.json")
    (folder / "notes.md").write_text("not a trace")
    listed = await get(jp_fetch, "traces", run=run_id)
    ids = [t["id"] for t in listed["traces"]]
    assert ids == [f"run:{run_id}:*", f"run:{run_id}:rank0.trace.json", f"run:{run_id}:rank1.trace.json"]
    assert listed["traces"][2]["rank"] == 1 and listed["traces"][0]["label"] == "all 2 ranks"

    merged_id = f"run:{run_id}:*"
    assert (await get(jp_fetch, "progress", trace=merged_id))["phase"] == "not_started"
    services._run_finished(
        SimpleNamespace(
            id=run_id, kind="script", lab=None, user="me", checks=[], status="succeeded", record_profile=True
        )
    )
    for _ in range(600):
        if (await get(jp_fetch, "progress", trace=merged_id))["phase"] == "done":
            break
        await asyncio.sleep(0.1)
    merged = await get(jp_fetch, "summary", trace=merged_id)
    assert merged["cached"] is True and merged["ranks"] == [0, 1]
    assert {lane["rank"] for lane in merged["lanes"]} == {0, 1}
    status, error = await error_of(jp_fetch("gpudojo", "api", "profile", "raw", params={"trace": merged_id}))
    assert status == 400 and "one rank" in error["message"]
