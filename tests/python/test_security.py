"""The security review (docs/SECURITY.md): each property of DESIGN.md's Security section, and
each finding of the review, pinned through a real Jupyter server with gpudojo.

Authentication on every route, authorization (`gpudojo`, `execute` on `kernels` where
processes start, `contents` where workspace files are read or written), XSRF on state
changes, the websocket origin check, every path kept under its root (symlinks included), the
pickle loader, and every cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import copyreg
import json
import os
import pickle
import re
import time
import tracemalloc
from pathlib import Path
from urllib.parse import quote, unquote

import psutil
import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from gpudojo.api.openapi import openapi_path
from gpudojo.api.routes import ROUTES

LABS = Path(__file__).resolve().parents[1] / "data" / "labs"
BODY_CAP = 16 * 1024
SOURCE_CAP = 2048
RUN_TIMEOUT_S = 4.0
LOG_CAP = 256 * 1024
RUN_ID = "20261202-120000-abcdef"
pytestmark = pytest.mark.timeout(120)

# Routes that start (or stop) processes running the learner's code: `execute` on `kernels`.
EXECUTE_ROUTES = {
    ("POST", "kernels/compile"),
    ("POST", "kernels/run"),
    ("POST", "runs"),
    ("POST", f"runs/{RUN_ID}/cancel"),
    ("POST", "exercises/cuda-kernel/start"),
    ("POST", "exercises/cuda-kernel/check"),
}
# A value for each path parameter of the routes, so that every pattern names a real path.
PATH_VALUES = {
    "lesson_id": "gpu-intro",
    "lab_id": "lab-01-cuda-hello",
    "exercise_id": "cuda-kernel",
    "run_id": RUN_ID,
    "group": "sweep-0123456789",
    "name": "job.yaml",
}


def concrete(pattern: str) -> str:
    path = openapi_path(pattern)
    for name, value in PATH_VALUES.items():
        path = path.replace("{" + name + "}", value)
    assert "{" not in path and re.fullmatch(pattern, path), f"no test value for a parameter of {pattern}"
    return path


def calls() -> list[tuple[str, str, bool]]:
    """(method, path, takes_a_body) of every REST verb, ("WS", path, False) of every websocket."""
    out = []
    for pattern, handler in ROUTES:
        for verb, doc in getattr(handler, "api_doc", {}).items():
            method = "WS" if doc.get("websocket") else verb.upper()
            out.append((method, concrete(pattern), "request" in doc))
    return out


class NoGPUDojo(Authorizer):
    """A user of the server who is not allowed gpudojo at all."""

    def is_authorized(self, handler, user, action, resource):
        return resource != "gpudojo"


class ReadOnly(Authorizer):
    """A read-only user of a shared server: may read anything, may not execute code."""

    def is_authorized(self, handler, user, action, resource):
        return action != "execute"


class NoContentsRead(Authorizer):
    """May use gpudojo, may not read the workspace's files."""

    def is_authorized(self, handler, user, action, resource):
        return resource != "contents"


class NoContentsWrite(Authorizer):
    """May use gpudojo and read the workspace, may not write into it."""

    def is_authorized(self, handler, user, action, resource):
        return not (resource == "contents" and action == "write")


@pytest.fixture
def authorizer() -> type[Authorizer] | None:
    """The server's authorizer; parametrize with one of the classes above."""
    return None


@pytest.fixture
def jp_server_config(jp_server_config, authorizer):
    c = jp_server_config.GPUDojo
    c.labs_dir = str(LABS)
    c.max_body_bytes = BODY_CAP
    c.kernel_max_source_bytes = SOURCE_CAP
    c.max_concurrent_runs = 1
    c.run_timeout_s = RUN_TIMEOUT_S
    c.max_run_log_bytes = LOG_CAP
    c.max_concurrent_checks = 1
    if authorizer is not None:
        jp_server_config.ServerApp.authorizer_class = authorizer
    return jp_server_config


# --- helpers ---------------------------------------------------------------------------------


async def status_of(call) -> tuple[int, dict]:
    """Status and decoded body of a request that may fail."""
    try:
        r = await call
    except HTTPClientError as err:
        body = err.response.body if err.response is not None else b"{}"
        return err.code, json.loads(body or b"{}")
    return r.code, json.loads(r.body) if r.body and r.headers.get("Content-Type", "").startswith(
        "application/json"
    ) else {}


def api(jp_fetch, method: str, path: str, body: object = None, **kwargs):
    if method == "POST" and body is None:
        body = {}
    return jp_fetch(
        "gpudojo",
        "api",
        *path.split("?")[0].split("/"),
        method=method,
        body=json.dumps(body) if isinstance(body, dict | list) else body,
        params=dict(p.split("=", 1) for p in path.split("?")[1].split("&")) if "?" in path else None,
        **kwargs,
    )


async def ws_status(jp_ws_fetch, path: str, **kwargs) -> int:
    """101 when the socket opened, else the refusal's status."""
    try:
        ws = await jp_ws_fetch("gpudojo", "api", *path.split("/"), **kwargs)
    except HTTPClientError as err:
        return err.code
    ws.close()
    return 101


class CookieSession:
    """A browser's session: the login cookie Jupyter sets after a token login, no token after."""

    def __init__(self, client, base_url: str, cookie: str) -> None:
        self.client = client  # pytest-jupyter's client of the test server (http://127.0.0.1:PORT)
        self.origin = client.get_url("").rstrip("/")
        self.base_url = base_url
        self.cookie = cookie

    @classmethod
    async def login(cls, serverapp, client, base_url: str) -> CookieSession:
        token = serverapp.identity_provider.token
        r = await client.fetch(f"{base_url}api/status?token={token}")
        cookies = [c.split(";", 1)[0] for c in r.headers.get_list("Set-Cookie")]
        assert cookies, "a token login sets Jupyter's login cookie"
        return cls(client, base_url, "; ".join(cookies))

    async def fetch(self, method: str, path: str, body: str | None = None, headers: dict | None = None) -> int:
        try:
            r = await self.client.fetch(
                f"{self.base_url}gpudojo/api/{path}",
                method=method,
                body=body if method == "POST" else None,
                headers={"Cookie": self.cookie, **(headers or {})},
            )
        except HTTPClientError as err:
            return err.code
        return r.code

    async def websocket(self, path: str, origin: str):
        url = f"{self.origin.replace('http', 'ws', 1)}{self.base_url}gpudojo/api/{path}"
        return await websocket_connect(HTTPRequest(url, headers={"Cookie": self.cookie, "Origin": origin}))


@pytest.fixture
def login(jp_serverapp, http_server_client, jp_base_url):
    """``await login()``: a CookieSession of this server (pytest-jupyter runs no async fixtures)."""
    return lambda: CookieSession.login(jp_serverapp, http_server_client, jp_base_url)


async def wait_run(jp_fetch, run_id: str, statuses: set[str], timeout_s: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        run = json.loads((await api(jp_fetch, "GET", f"runs/{run_id}")).body)
        if run["status"] in statuses or time.monotonic() > deadline:
            return run
        await asyncio.sleep(0.1)


async def run_events(jp_ws_fetch, run_id: str) -> list[dict]:
    """Every event of a run's stream, until the server closes it at the run's end."""
    ws = await jp_ws_fetch("gpudojo", "api", "runs", run_id, "stream")
    events: list[dict] = []
    while (message := await asyncio.wait_for(ws.read_message(), 60)) is not None:
        events.extend(json.loads(message)["events"])
    return events


async def start_script(jp_fetch, root: Path, source: str, name: str = "job.py") -> str:
    (root / name).write_text(source)
    r = await api(jp_fetch, "POST", "runs", {"kind": "script", "path": name, "launcher": "python"})
    return json.loads(r.body)["runs"][0]["id"]


# --- authentication ----------------------------------------------------------------------------


async def test_every_route_refuses_callers_without_credentials(jp_fetch, jp_ws_fetch):
    no_token = {"headers": {"Authorization": ""}}
    got = {}
    for method, path, _ in calls():
        if method == "WS":
            got[(method, path)] = await ws_status(jp_ws_fetch, path, **no_token)
        else:
            got[(method, path)] = (await status_of(api(jp_fetch, method, path, **no_token)))[0]
    assert {k: v for k, v in got.items() if v != 403} == {}


# --- authorization -----------------------------------------------------------------------------


@pytest.mark.parametrize("authorizer", [NoGPUDojo])
async def test_every_route_checks_the_gpudojo_resource(jp_fetch, jp_ws_fetch):
    got = {}
    for method, path, _ in calls():
        if method == "WS":
            got[(method, path)] = await ws_status(jp_ws_fetch, path)
        else:
            got[(method, path)] = (await status_of(api(jp_fetch, method, path)))[0]
    assert {k: v for k, v in got.items() if v != 403} == {}


@pytest.mark.parametrize("authorizer", [ReadOnly])
async def test_only_routes_that_start_processes_need_execute(jp_fetch, jp_root_dir):
    refused = set()
    for method, path, _ in calls():
        if method == "WS":
            continue
        status, body = await status_of(api(jp_fetch, method, path))
        if status == 403:
            assert "execute" in body["error"]["message"], (method, path, body)
            refused.add((method, path))
    assert refused == EXECUTE_ROUTES
    assert not (jp_root_dir / "gpudojo-exercises").exists()  # nothing started, nothing copied


@pytest.mark.parametrize("authorizer", [NoContentsWrite])
async def test_copying_a_lesson_into_the_workspace_needs_write_on_contents(jp_fetch, jp_root_dir):
    status, body = await status_of(api(jp_fetch, "POST", "course/lessons/gpu-intro/notebook"))
    assert status == 403 and "write" in body["error"]["message"]
    assert not (jp_root_dir / "gpudojo-lessons").exists()
    assert (await status_of(api(jp_fetch, "GET", "course/lessons/gpu-intro")))[0] == 200


@pytest.mark.parametrize("authorizer", [NoContentsRead])
async def test_workspace_files_need_read_on_contents(jp_fetch, jp_root_dir):
    (jp_root_dir / "snap.pickle").write_bytes(pickle.dumps({"segments": [], "device_traces": []}))
    (jp_root_dir / "t.json").write_text('{"traceEvents": []}')
    for method, path, body in [
        ("GET", "memory/raw?capture=file:snap.pickle", None),
        ("GET", "memory/analysis?capture=file:snap.pickle", None),
        ("GET", "memory/diff?a=run:20261202-120000-abcdef:rank0.pickle&b=file:snap.pickle", None),
        ("POST", "memory/analyze", {"path": "snap.pickle"}),
        ("GET", "profile/raw?trace=file:t.json", None),
        ("POST", "profile/analyze", {"path": "t.json"}),
    ]:
        status, doc = await status_of(api(jp_fetch, method, path, body))
        assert status == 403 and "read files" in doc["error"]["message"], (path, doc)
    # A run's own files are gpudojo's, not the workspace's.
    assert (await status_of(api(jp_fetch, "GET", f"memory/captures?run={RUN_ID}")))[0] == 200


# --- XSRF and origin ---------------------------------------------------------------------------


async def test_cookie_authenticated_posts_need_the_xsrf_token(login):
    browser = await login()
    posts = [path for method, path, _ in calls() if method == "POST"]
    refused = {path: await browser.fetch("POST", path, "{}") for path in posts}
    assert {p: s for p, s in refused.items() if s != 403} == {}
    # With the token in the header and the cookie, as ServerConnection.makeRequest sends them:
    body = json.dumps({"kind": "lesson", "id": "gpu-intro", "status": "in_progress"})
    xsrf = {"X-XSRFToken": "0123abcd", "Cookie": f"{browser.cookie}; _xsrf=0123abcd"}
    assert await browser.fetch("POST", "course/progress", body, xsrf) == 200
    assert await browser.fetch("GET", "gpu/devices") == 200  # reads need no token


def test_state_changes_are_posts_only():
    verbs = {}
    for pattern, handler in ROUTES:
        defined = {m for m in ("get", "post", "put", "patch", "delete") if m in vars(handler)}
        verbs[pattern] = defined - {"get", "post"}
        assert set(handler.api_doc) <= {"get", "post"}
    assert {p: v for p, v in verbs.items() if v} == {}


@pytest.mark.parametrize("path", [p for m, p, _ in calls() if m == "WS"])
async def test_cross_origin_websockets_are_refused(login, path):
    browser = await login()
    with pytest.raises(HTTPClientError) as info:
        await browser.websocket(path, "http://evil.example")
    assert info.value.code == 403


async def test_same_origin_websocket_with_the_cookie_opens(login):
    browser = await login()
    ws = await browser.websocket("gpu/telemetry", browser.origin)
    assert json.loads(await asyncio.wait_for(ws.read_message(), 10))["type"] == "history"
    ws.close()


async def test_raw_downloads_check_the_referer_as_jupyters_files_do(login, jp_fetch, jp_root_dir):
    browser = await login()
    (jp_root_dir / "snap.pickle").write_bytes(b"\x80\x04N.")
    path = "memory/raw?capture=file:snap.pickle"
    assert await browser.fetch("GET", path, headers={"Referer": "http://evil.example/page"}) == 403
    assert await browser.fetch("GET", path) == 403  # no Referer, no token: not this site's page
    assert await browser.fetch("GET", path, headers={"Referer": f"{browser.origin}/lab"}) == 200
    assert (await api(jp_fetch, "GET", path)).body == b"\x80\x04N."  # token-authenticated


# --- paths -------------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder beside the server's root, with a file a learner must not reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.py").write_text("print('outside')\n")
    (folder / "secret.pickle").write_bytes(pickle.dumps({"segments": [], "device_traces": []}))
    (folder / "secret.trace.json").write_text('{"traceEvents": []}')
    return folder


async def test_script_runs_stay_under_the_root(jp_fetch, jp_root_dir, outside):
    (jp_root_dir / "link.py").symlink_to(outside / "secret.py")
    (jp_root_dir / "dirlink").symlink_to(outside)
    for path in ["../outside/secret.py", str(outside / "secret.py"), "link.py", "dirlink/secret.py"]:
        status, body = await status_of(api(jp_fetch, "POST", "runs", {"kind": "script", "path": path}))
        assert (status, body["error"]["code"]) == (403, "outside_root"), path
    assert json.loads((await api(jp_fetch, "GET", "runs")).body)["runs"] == []


async def test_an_exercise_folder_symlinked_out_of_the_root_is_refused(jp_fetch, jp_root_dir, outside):
    (jp_root_dir / "gpudojo-exercises").symlink_to(outside)
    for method, path in [
        ("POST", "exercises/cuda-kernel/start"),
        ("POST", "exercises/cuda-kernel/check"),
        ("GET", "exercises/cuda-kernel"),
    ]:
        status, body = await status_of(api(jp_fetch, method, path))
        assert (status, body["error"]["code"]) == (403, "outside_root"), path
    assert sorted(p.name for p in outside.iterdir()) == ["secret.pickle", "secret.py", "secret.trace.json"]


async def test_a_lesson_notebook_symlinked_out_of_the_root_is_refused(jp_fetch, jp_root_dir, outside):
    # Finding: this was a 500 with "unexpected error"; now a 403 naming the problem.
    (jp_root_dir / "gpudojo-lessons").symlink_to(outside)
    status, body = await status_of(api(jp_fetch, "POST", "course/lessons/gpu-intro/notebook"))
    assert (status, body["error"]["code"]) == (403, "outside_root")
    assert not list(outside.glob("*.ipynb"))
    (jp_root_dir / "gpudojo-lessons").unlink()
    (jp_root_dir / "gpudojo-lessons").mkdir()
    (jp_root_dir / "gpudojo-lessons" / "01-gpu-intro.ipynb").symlink_to(outside / "secret.py")
    body = {"overwrite": True}
    status, doc = await status_of(api(jp_fetch, "POST", "course/lessons/gpu-intro/notebook", body))
    assert (status, doc["error"]["code"]) == (403, "outside_root")
    assert (outside / "secret.py").read_text() == "print('outside')\n"


@pytest.mark.parametrize(
    ("service", "arg", "name"), [("memory", "capture", "secret.pickle"), ("profile", "trace", "secret.trace.json")]
)
async def test_memory_and_profile_files_stay_under_the_root(jp_fetch, jp_root_dir, outside, service, arg, name):
    (jp_root_dir / f"link-{name}").symlink_to(outside / name)
    (jp_root_dir / "dirlink").symlink_to(outside)
    for given in [f"../outside/{name}", str(outside / name), f"link-{name}", f"dirlink/{name}"]:
        for route in ("raw", "analysis" if service == "memory" else "summary"):
            status, body = await status_of(api(jp_fetch, "GET", f"{service}/{route}?{arg}=file:{given}"))
            assert (status, body["error"]["code"]) == (403, "outside_root"), (route, given)
        status, body = await status_of(api(jp_fetch, "POST", f"{service}/analyze", {"path": given}))
        assert (status, body["error"]["code"]) == (403, "outside_root"), given


@pytest.mark.parametrize(("service", "arg"), [("memory", "capture"), ("profile", "trace")])
async def test_hidden_workspace_files_are_not_opened(jp_fetch, jp_root_dir, service, arg):
    # Finding: any file under the root was served, hidden ones (.ssh/, .env) included, which
    # Jupyter's contents API refuses unless ContentsManager.allow_hidden.
    (jp_root_dir / ".secret").mkdir()
    (jp_root_dir / ".secret" / "key.json").write_text('{"traceEvents": []}')
    (jp_root_dir / ".env.json").write_text('{"traceEvents": []}')
    (jp_root_dir / "innocent.json").symlink_to(jp_root_dir / ".secret" / "key.json")
    for given in [".secret/key.json", ".env.json", "innocent.json", "sub/../.env.json"]:
        status, body = await status_of(api(jp_fetch, "GET", f"{service}/raw?{arg}=file:{given}"))
        assert (status, body["error"]["code"]) == (403, "hidden"), given
        status, body = await status_of(api(jp_fetch, "POST", f"{service}/analyze", {"path": given}))
        assert (status, body["error"]["code"]) == (403, "hidden"), given
    # A name no file system takes is no file, not a crash of the check.
    assert (await status_of(api(jp_fetch, "GET", f"{service}/raw?{arg}=file:{'a' * 300}")))[0] == 404


@pytest.mark.parametrize(
    ("service", "arg", "folder", "name"),
    [("memory", "capture", "memory", "rank0.pickle"), ("profile", "trace", "profile", "rank0.trace.json")],
)
async def test_run_files_symlinked_out_of_their_run_folder_are_refused(
    jp_fetch, jp_serverapp, outside, service, arg, folder, name
):
    # Finding: a run's processes run the learner's code and could leave memory/rank0.pickle
    # pointing at any file; raw then served it to anyone allowed to read gpudojo.
    data_dir = Path(jp_serverapp.config.GPUDojo.data_dir)
    run_folder = data_dir / "runs" / RUN_ID / folder
    run_folder.mkdir(parents=True)
    (run_folder / name).symlink_to(outside / ("secret.pickle" if service == "memory" else "secret.trace.json"))
    status, body = await status_of(api(jp_fetch, "GET", f"{service}/raw?{arg}=run:{RUN_ID}:{name}"))
    assert (status, body["error"]["code"]) == (403, "outside_run")
    listing = "captures" if service == "memory" else "traces"
    listed = json.loads((await api(jp_fetch, "GET", f"{service}/{listing}?run={RUN_ID}")).body)
    assert not listed[listing]


@pytest.mark.parametrize(
    ("service", "arg", "folder", "name"),
    [("memory", "capture", "memory", "rank0.pickle"), ("profile", "trace", "profile", "rank0.trace.json")],
)
async def test_a_run_folder_swapped_for_a_link_serves_nothing_from_elsewhere(
    jp_fetch, jp_serverapp, tmp_path, service, arg, folder, name
):
    # Finding (issue 22, 5): the link check was on the file name only, so a run's folder (or the
    # folder of its files) replaced by a link to another folder had that folder's files served.
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / folder).mkdir(parents=True)
    (elsewhere / folder / name).write_bytes(b"not for the API")
    runs = Path(jp_serverapp.config.GPUDojo.data_dir) / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / RUN_ID).symlink_to(elsewhere)
    other = "20261202-120000-fedcba"
    (runs / other).mkdir()
    (runs / other / folder).symlink_to(elsewhere / folder)
    for run in (RUN_ID, other):
        status, body = await status_of(api(jp_fetch, "GET", f"{service}/raw?{arg}=run:{run}:{name}"))
        assert (status, body["error"]["code"]) == (403, "outside_run"), run
        assert "not for the API" not in json.dumps(body)
        listing = "captures" if service == "memory" else "traces"
        listed = json.loads((await api(jp_fetch, "GET", f"{service}/{listing}?run={run}")).body)
        assert not listed[listing], run


@pytest.mark.parametrize(("service", "arg"), [("memory", "capture"), ("profile", "trace")])
async def test_raw_download_of_a_file_whose_name_is_not_latin1_names_it_in_utf8(jp_fetch, jp_root_dir, service, arg):
    # Finding (issue 22, 5): "fullwidth\uff0e\uff0e.json" (two fullwidth full stops) was a 500:
    # HTTP headers are Latin-1, and the name went into Content-Disposition as it was.
    for name, fallback in [
        ("fullwidth\uff0e\uff0e.json", "fullwidth__.json"),
        ('say "hi"\\.json', "say _hi__.json"),
        ("caf\u00e9 \U0001f600.json", "caf_ _.json"),
    ]:
        (jp_root_dir / name).write_bytes(b'{"traceEvents": []}')
        r = await api(jp_fetch, "GET", f"{service}/raw?{arg}=file:{name}")
        assert r.code == 200 and r.body == b'{"traceEvents": []}'
        disposition = r.headers["Content-Disposition"]
        assert disposition == f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name.encode())}"
        assert unquote(disposition.split("UTF-8''")[1]) == name


async def test_course_ids_never_name_files(jp_fetch):
    for path in [
        "course/lessons/..%2F..%2Fetc%2Fpasswd",
        "course/lessons/01-gpu-intro.md",
        "course/lessons/nope",
        "exercises/..%2Fcuda-kernel",
        "exercises/nope",
    ]:
        status, _ = await status_of(jp_fetch("gpudojo", "api", *path.split("/")))
        assert status == 404, path


def test_lab_files_symlinked_out_of_their_lab_are_not_read(tmp_path, outside):
    from gpudojo.kernels.examples import load_examples
    from gpudojo.runs.manifest import load_labs

    lab = tmp_path / "labs" / "lab-x"
    lab.mkdir(parents=True)
    (outside / "k.cu").write_text("// the secret kernel\n")
    (lab / "k.cu").symlink_to(outside / "k.cu")
    (lab / "main.py").symlink_to(outside / "secret.py")
    (lab / "lab.toml").write_text(
        'id = "lab-x"\ntitle = "x"\norder = 1\nminutes = 1\nentry = "main.py"\nlauncher = "python"\n'
        '[[kernels]]\ntitle = "k"\nfile = "k.cu"\nkernel = "k"\ngrid = [1]\nblock = [32]\n'
    )
    examples = load_examples(tmp_path / "labs")
    assert examples.examples == [] and "not in the lab" in examples.problems[0].message
    labs, problems = load_labs(tmp_path / "labs")
    assert labs == {} and "not a file of the lab" in problems[0].message


# --- the pickle loader -------------------------------------------------------------------------


class Payload:
    """What a crafted snapshot carries: unpickling it would run a shell command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def crafted_pickles(marker: Path) -> dict[str, bytes]:
    doc = {"segments": [], "device_traces": [[Payload(marker)]]}
    out = {f"protocol {p}": pickle.dumps(doc, protocol=p) for p in range(6)}
    out["INST opcode"] = f"(S'touch {marker}'\nios\nsystem\n.".encode()
    out["persistent id"] = b"\x80\x02Ptouch\n."

    with extension_code():
        out["extension code"] = pickle.dumps(Payload(marker), protocol=2)
    return out


@contextlib.contextmanager
def extension_code():
    """os.system registered in copyreg's extension registry (pickled as EXT2 0xF00D)."""
    copyreg.add_extension(os.system.__module__, "system", 0xF00D)
    try:
        yield
    finally:
        copyreg.remove_extension(os.system.__module__, "system", 0xF00D)


def test_a_crafted_pickle_executes_nothing(tmp_path):
    from gpudojo.memory.snapshot import RefusedPickle, read_capture

    marker = tmp_path / "pwned"
    for name, data in crafted_pickles(marker).items():
        path = tmp_path / "evil.pickle"
        path.write_bytes(data)
        with extension_code(), pytest.raises(RefusedPickle):  # even with the code registered
            read_capture(path)
        assert not marker.exists(), name


async def test_a_crafted_snapshot_opened_through_the_server_executes_nothing(jp_fetch, jp_root_dir, tmp_path):
    marker = tmp_path / "pwned"
    (jp_root_dir / "evil.pickle").write_bytes(crafted_pickles(marker)["protocol 4"])
    status, body = await status_of(api(jp_fetch, "POST", "memory/analyze", {"path": "evil.pickle"}))
    assert (status, body["error"]["code"]) == (400, "refused_pickle") and "system" in body["error"]["message"]
    assert not marker.exists()


# --- caps --------------------------------------------------------------------------------------


async def test_request_bodies_over_the_cap_are_refused(jp_fetch):
    big = json.dumps({"pad": "x" * BODY_CAP})
    got = {}
    for method, path, takes_body in calls():
        if method == "POST" and takes_body:
            status, body = await status_of(api(jp_fetch, method, path, big))
            got[path] = (status, body.get("error", {}).get("code"))
    assert got and all(v == (413, "too_large") for v in got.values()), got


async def test_kernel_sources_over_the_cap_are_refused(jp_fetch):
    source = "// pad\n" * (SOURCE_CAP // 7 + 1)
    status, body = await status_of(api(jp_fetch, "POST", "kernels/compile", {"source": source}))
    assert (status, body["error"]["code"]) == (413, "too_large")
    run = {"source": source, "kernel": "k", "grid": [1], "block": [1], "args": []}
    status, body = await status_of(api(jp_fetch, "POST", "kernels/run", run))
    assert status == 413


NUMBA_PRINTS = """from numba import cuda

@cuda.jit("void(float32[:])")
def k(x):
    i = cuda.grid(1)
    print("a hundred characters from every thread, to fill the output cap of twenty thousand characters....")
    if i < x.size:
        x[i] = 1.0
"""


async def test_kernel_output_is_capped(jp_fetch):
    run = {
        "source": NUMBA_PRINTS,
        "language": "numba",
        "kernel": "k",
        "grid": [1],
        "block": [256],
        "args": [{"kind": "array", "name": "x", "shape": [256], "output": True}],
        "warmup": 0,
        "repeats": 1,
    }
    doc = json.loads((await api(jp_fetch, "POST", "kernels/run", run, request_timeout=120)).body)
    assert doc["status"] == "ran" and doc["mode"] == "simulator"
    assert 19_000 < len(doc["stdout"]) <= 20_000  # 256 threads printed ~26,000 characters


NUMBA_FLOODS = """import os
from numba import cuda

for _ in range(100):
    os.write(2, b"x" * (1 << 20))

@cuda.jit("void(float32[:])")
def k(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = 1.0
"""


def test_a_kernel_flooding_its_output_costs_the_server_no_memory(tmp_path):
    # Finding: the server read a kernel run's whole stdout and stderr (communicate): 100 MiB
    # written by the kernel's module were 200 MiB held by the server.
    from gpudojo.kernels.models import RunRequest
    from gpudojo.kernels.service import KernelLimits, KernelService

    svc = KernelService(tmp_path / "cache", KernelLimits(max_source_bytes=SOURCE_CAP))
    req = RunRequest(
        source=NUMBA_FLOODS,
        language="numba",
        kernel="k",
        grid=[1],
        block=[32],
        args=[{"kind": "array", "name": "x", "shape": [32], "output": True}],
        warmup=0,
        repeats=1,
    )
    tracemalloc.start()
    try:
        result = svc.run(req, None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        svc.close()
    assert result.status == "ran"
    assert peak < 32 * 2**20


async def test_runs_over_the_concurrency_cap_wait_queued(jp_fetch, jp_root_dir):
    first = await start_script(jp_fetch, jp_root_dir, "import time\ntime.sleep(60)\n", "a.py")
    second = await start_script(jp_fetch, jp_root_dir, "import time\ntime.sleep(60)\n", "b.py")
    assert (await wait_run(jp_fetch, first, {"running"}))["status"] == "running"
    assert (await wait_run(jp_fetch, second, set(), timeout_s=0))["status"] == "queued"
    for run_id in (second, first):
        await api(jp_fetch, "POST", f"runs/{run_id}/cancel")


async def test_exercise_checks_over_the_concurrency_cap_are_refused(jp_fetch):
    for exercise in ("gpu-introspection", "cuda-kernel"):
        await api(jp_fetch, "POST", f"exercises/{exercise}/start")
    first = await api(jp_fetch, "POST", "exercises/gpu-introspection/check")
    assert first.code == 202
    status, body = await status_of(api(jp_fetch, "POST", "exercises/cuda-kernel/check"))
    # Finding (wording): the refusal said "Two checks are already running" whatever the limit.
    assert (status, body["error"]["code"]) == (409, "conflict")
    assert body["error"]["message"].startswith("A check is already running on this server")


SPAWNS_AND_SLEEPS = """import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
open("child.pid", "w").write(str(child.pid))
print("spawned", flush=True)
time.sleep(300)
"""


async def test_a_run_past_its_time_limit_is_stopped_and_every_process_reaped(jp_fetch, jp_ws_fetch, jp_root_dir):
    run_id = await start_script(jp_fetch, jp_root_dir, SPAWNS_AND_SLEEPS)
    events = await run_events(jp_ws_fetch, run_id)
    assert events[-1]["run"]["status"] == "timed_out"
    assert events[-1]["run"]["ended_at"] - events[-1]["run"]["started_at"] < RUN_TIMEOUT_S + 10
    pid = int((jp_root_dir / "child.pid").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_run_output_past_the_log_cap_is_not_streamed(jp_fetch, jp_ws_fetch, jp_root_dir):
    run_id = await start_script(jp_fetch, jp_root_dir, "for i in range(6000):\n    print(f'{i:06d}' + 'y' * 93)\n")
    events = await run_events(jp_ws_fetch, run_id)
    kinds = [e["type"] for e in events]
    assert kinds.count("truncated") == 1 and "log" not in kinds[kinds.index("truncated") :]
    streamed = sum(len(e["text"]) + 1 for e in events if e["type"] == "log")
    assert LOG_CAP - 200 <= streamed <= LOG_CAP


async def test_a_line_without_end_is_read_in_bounded_pieces(jp_fetch, jp_ws_fetch, jp_root_dir):
    # Finding: a line was read whole (readline with no limit): a rank printing gigabytes
    # without a newline made the server hold them all before the log cap could apply.
    from gpudojo.runs.supervisor import MAX_LINE_BYTES

    n = 3 * MAX_LINE_BYTES + 123
    run_id = await start_script(jp_fetch, jp_root_dir, f"import sys\nsys.stdout.write('z' * {n})\nprint()\n")
    events = await run_events(jp_ws_fetch, run_id)
    pieces = [e["text"] for e in events if e["type"] == "log"]
    assert max(len(p) for p in pieces) <= MAX_LINE_BYTES and "".join(pieces) == "z" * n


async def test_the_telemetry_rate_is_clamped_and_oversized_controls_refused(jp_ws_fetch):
    ws = await jp_ws_fetch("gpudojo", "api", "gpu", "telemetry", params={"hz": "1000"})

    async def answer(message: str | None = None) -> dict:
        if message is not None:
            await ws.write_message(message)
        while True:
            doc = json.loads(await asyncio.wait_for(ws.read_message(), 10))
            if doc["type"] not in ("sample",):
                return doc

    history = await answer()
    assert history["type"] == "history" and history["rate_hz"] == history["max_hz"] == 20.0
    assert (await answer(json.dumps({"type": "rate", "hz": 1e9})))["rate_hz"] == 20.0
    assert (await answer(json.dumps({"type": "rate", "hz": 1e-9})))["rate_hz"] == 0.1
    refused = await answer("x" * (BODY_CAP + 1))
    assert refused["type"] == "error" and refused["error"]["code"] == "too_large"
    assert (await answer(json.dumps({"type": "pause"})))["paused"] is True  # the socket lives on
    ws.close()


async def test_the_simulator_thread_cap_is_enforced(jp_fetch):
    run = {
        "source": NUMBA_PRINTS,
        "language": "numba",
        "kernel": "k",
        "grid": [64],
        "block": [128],
        "args": [{"kind": "array", "name": "x", "shape": [8], "output": True}],
    }
    status, body = await status_of(api(jp_fetch, "POST", "kernels/run", run))
    assert (status, body["error"]["code"]) == (400, "too_many_threads")
