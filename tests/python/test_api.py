"""The REST and websocket API as a client sees it."""

from __future__ import annotations

import asyncio
import json

import pytest
from tornado.httpclient import HTTPClientError

from conftest import needs_no_driver
from gpudojo.api.openapi import openapi_path
from gpudojo.api.routes import ROUTES


async def _devices(jp_fetch):
    r = await jp_fetch("gpudojo", "api", "gpu", "devices")
    assert r.code == 200 and r.headers["Content-Type"].startswith("application/json")
    return json.loads(r.body)


def _frame(text):
    """A telemetry frame, checked against the model the OpenAPI document names for its type."""
    from gpudojo.api.models import SocketError
    from gpudojo.gpu.models import TelemetryHistory, TelemetrySample, TelemetryState

    msg = json.loads(text)
    model = {"history": TelemetryHistory, "sample": TelemetrySample, "state": TelemetryState, "error": SocketError}
    assert model[msg["type"]].model_validate_json(text).model_dump(mode="json") == msg
    return msg


async def _next(ws, kind, timeout=5.0):
    while True:
        msg = _frame(await asyncio.wait_for(ws.read_message(), timeout))
        if msg["type"] == kind:
            return msg


async def test_devices_from_a_replayed_two_gpu_node(jp_fetch):
    d = await _devices(jp_fetch)
    assert d["available"] is True and d["mode"] == "replay"
    assert [g["index"] for g in d["gpus"]] == [0, 1]
    assert d["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert d["gpus"][0]["sample"]["memory_used_bytes"] > 0
    assert d["topology"]["matrix"][0][1] == "NV18"
    assert d["host"]["cores_logical"] >= 1


@pytest.mark.parametrize("gpu_replay", ["8gpu-a100-mig"])
async def test_devices_from_an_eight_gpu_node_with_mig(jp_fetch):
    d = await _devices(jp_fetch)
    assert len(d["gpus"]) == 8
    assert d["gpus"][0]["mig"]["current"] == "enabled"
    assert len(d["gpus"][0]["mig"]["instances"]) == 3


@needs_no_driver
@pytest.mark.parametrize("gpu_replay", [None])
async def test_devices_without_a_gpu_say_why_and_report_the_host(jp_fetch):
    d = await _devices(jp_fetch)
    assert d["available"] is False and d["mode"] == "cpu" and d["gpus"] == []
    assert "No NVIDIA driver found" in d["reason"]
    assert d["host"]["memory_total_bytes"] > 0


async def test_telemetry_socket_sends_history_then_samples(jp_ws_fetch):
    ws = await jp_ws_fetch("gpudojo", "api", "gpu", "telemetry", params={"hz": "10"})
    first = _frame(await asyncio.wait_for(ws.read_message(), 5))
    assert first["type"] == "history" and first["mode"] == "replay"
    assert first["rate_hz"] == 10 and first["max_hz"] == 20
    ticks = [await _next(ws, "sample") for _ in range(3)]
    assert all(len(t["gpus"]) == 2 for t in ticks)
    assert ticks[0]["t"] < ticks[1]["t"] < ticks[2]["t"]
    assert "cpu_pct" in ticks[0]["host"]
    ws.close()
    # A later subscriber starts with what the first one saw.
    ws2 = await jp_ws_fetch("gpudojo", "api", "gpu", "telemetry")
    history = _frame(await asyncio.wait_for(ws2.read_message(), 5))
    assert history["type"] == "history" and len(history["samples"]) >= 3
    ws2.close()


async def test_telemetry_controls_rate_pause_and_resume(jp_ws_fetch):
    ws = await jp_ws_fetch("gpudojo", "api", "gpu", "telemetry")
    await _next(ws, "history")
    await ws.write_message(json.dumps({"type": "rate", "hz": 500}))
    state = await _next(ws, "state")
    assert state == {"type": "state", "paused": False, "rate_hz": 20.0}
    await ws.write_message(json.dumps({"type": "pause"}))
    assert (await _next(ws, "state"))["paused"] is True
    # Drain what was already in flight, then nothing more arrives while paused.
    await asyncio.sleep(0.2)
    while True:
        try:
            await asyncio.wait_for(ws.read_message(), 0.05)
        except TimeoutError:
            break
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(ws.read_message(), 0.4)
    await ws.write_message(json.dumps({"type": "resume"}))
    assert (await _next(ws, "state"))["paused"] is False
    assert (await _next(ws, "sample"))["gpus"]
    ws.close()


@pytest.mark.parametrize(
    "message", ['{"type": "explode"}', "not json", '{"type": "rate"}', '{"type": "rate", "hz": -1}']
)
async def test_telemetry_bad_control_messages_get_an_error_and_the_stream_goes_on(jp_ws_fetch, message):
    ws = await jp_ws_fetch("gpudojo", "api", "gpu", "telemetry")
    await _next(ws, "history")
    await ws.write_message(message)
    err = await _next(ws, "error")
    assert err["error"]["code"] == "invalid_message" and err["error"]["message"]
    assert (await _next(ws, "sample"))["type"] == "sample"
    ws.close()


async def test_subscribers_share_one_sampler(jp_ws_fetch, jp_serverapp):
    sockets = [await jp_ws_fetch("gpudojo", "api", "gpu", "telemetry", params={"hz": "10"}) for _ in range(5)]
    for ws in sockets:
        await _next(ws, "history")
    sampler = jp_serverapp.web_app.settings["gpudojo"].sampler
    before = sampler.readings
    await asyncio.sleep(1.0)
    assert sampler.subscribers == 5
    assert 7 <= sampler.readings - before <= 13  # ~10 Hz in all, not 50
    for ws in sockets:
        ws.close()
    await asyncio.sleep(0.5)
    assert sampler.subscribers == 0 and not sampler.running


async def test_openapi_document_describes_every_route(jp_fetch):
    r = await jp_fetch("gpudojo", "api", "openapi.json")
    doc = json.loads(r.body)
    assert doc["openapi"].startswith("3.")
    assert set(doc["paths"]) == {f"/gpudojo/api/{openapi_path(path)}" for path, _ in ROUTES}
    assert "/gpudojo/api/course/lessons/{lesson_id}/quiz" in doc["paths"]
    devices = doc["paths"]["/gpudojo/api/gpu/devices"]["get"]
    assert devices["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("DevicesResponse")
    schemas = doc["components"]["schemas"]
    assert {"DevicesResponse", "GpuSample", "TelemetryHistory", "TelemetryControl", "Error"} <= set(schemas)


async def test_errors_are_json_without_traceback(jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "gpu", "devices", method="POST", body="{}")
    assert info.value.code == 405
    body = json.loads(info.value.response.body)
    assert body["error"]["code"] == "method_not_allowed"
    assert "Traceback" not in info.value.response.body.decode()


def _concrete(pattern: str) -> str:
    path = openapi_path(pattern).replace("{lesson_id}", "gpu-intro").replace("{exercise_id}", "cuda-kernel")
    path = path.replace("{run_id}", "20261202-120000-abcdef").replace("{group}", "sweep-0123456789")
    return path.replace("{name}", "job.sbatch")


REST_CALLS = [
    (_concrete(path), verb.upper())
    for path, handler in ROUTES
    for verb, doc in getattr(handler, "api_doc", {}).items()
    if not doc.get("websocket")
]
WS_ROUTES = [
    _concrete(path) for path, handler in ROUTES if getattr(handler, "api_doc", {}).get("get", {}).get("websocket")
]


@pytest.mark.parametrize(("path", "method"), REST_CALLS)
async def test_rest_routes_refuse_requests_without_credentials(jp_fetch, path, method):
    body = "{}" if method == "POST" else None
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", *path.split("/"), method=method, body=body, headers={"Authorization": ""})
    assert info.value.code == 403
    assert json.loads(info.value.response.body)["error"]["code"] == "forbidden"


@pytest.mark.parametrize("path", WS_ROUTES)
async def test_websockets_refuse_upgrades_without_credentials(jp_ws_fetch, path):
    with pytest.raises(HTTPClientError) as info:
        await jp_ws_fetch("gpudojo", "api", *path.split("/"), headers={"Authorization": ""})
    assert info.value.code == 403


def test_websocket_keeps_jupyters_origin_check():
    # Token-in-header requests skip the origin check by design (no ambient credentials), so
    # the browser case is pinned here: the socket must use Jupyter's check, never its own.
    from jupyter_server.base.websocket import WebSocketMixin

    from gpudojo.api.gpu import TelemetryHandler

    assert TelemetryHandler.check_origin is WebSocketMixin.check_origin
