"""A server under a base_url, and one that refuses unauthenticated access outright."""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest
from jupyter_server.utils import JupyterServerAuthWarning
from tornado.httpclient import HTTPClientError


@pytest.fixture
def jp_base_url():
    return "/hub/user/ada/"


async def test_routes_live_under_a_non_root_base_url(jp_fetch, jp_ws_fetch, jp_base_url):
    r = await jp_fetch("gpudojo", "api", "gpu", "devices")
    assert json.loads(r.body)["mode"] == "replay"
    assert r.effective_url.split("?")[0].endswith("/hub/user/ada/gpudojo/api/gpu/devices")
    ws = await jp_ws_fetch("gpudojo", "api", "gpu", "telemetry")
    assert json.loads(await asyncio.wait_for(ws.read_message(), 5))["type"] == "history"
    ws.close()
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "gpu", "devices", headers={"Authorization": ""})
    assert info.value.code == 403


async def test_a_download_link_works_under_the_base_url_with_the_token_in_its_query(
    jp_fetch, jp_root_dir, jp_serverapp, jp_base_url
):
    """The client's download links (profile/raw, memory/raw) are {baseUrl}gpudojo/api/...?token=:
    a browser follows them with no Authorization header."""
    trace = jp_root_dir / "step.json"
    trace.write_text(json.dumps({"traceEvents": [], "schemaVersion": 1}), encoding="utf-8")
    token = jp_serverapp.identity_provider.token
    params = {"trace": "file:step.json", "token": token}
    r = await jp_fetch("gpudojo", "api", "profile", "raw", params=params, headers={"Authorization": ""})
    assert r.body == trace.read_bytes() and "attachment" in r.headers["Content-Disposition"]
    assert r.effective_url.split("?")[0].endswith(f"{jp_base_url}gpudojo/api/profile/raw")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "profile", "raw", params=params | {"token": ""}, headers={"Authorization": ""})
    assert info.value.code == 403


@pytest.fixture
def jp_server_config(jp_server_config):
    jp_server_config.ServerApp.allow_unauthenticated_access = False
    return jp_server_config


@pytest.fixture
def jp_serverapp(jp_server_config, jp_argv, jp_configurable_serverapp):
    # Any handler without @web.authenticated / @ws_authenticated fails the start.
    with warnings.catch_warnings():
        warnings.simplefilter("error", JupyterServerAuthWarning)
        app = jp_configurable_serverapp(config=jp_server_config, argv=jp_argv)
    return app


async def test_server_starts_with_unauthenticated_access_refused_and_no_auth_warning(jp_fetch, jp_serverapp):
    assert jp_serverapp.allow_unauthenticated_access is False
    assert "gpudojo" in jp_serverapp.extension_manager.extension_apps
    r = await jp_fetch("gpudojo", "api", "gpu", "devices")
    assert r.code == 200
