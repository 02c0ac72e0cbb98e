"""The whole REST API fuzzed from its own openapi.json (schemathesis, fixed seed), against a real
`jupyter server` with gpudojo: every answer is a status and a body the document declares, never
a 5xx, never a traceback; and the XSRF rule that lets the fuzzer (and any token client) POST.

bench/bench_fuzz.py runs the same harness with more cases (bench/RESULTS.md has its figures).
"""

from __future__ import annotations

import json

import pytest
import requests

from fuzz_harness import API_PREFIX, FuzzServer, fuzz, fuzz_server
from gpudojo.api.openapi import openapi_path, path_parameters
from gpudojo.api.routes import ROUTES

# At least 2,000 cases over every route; ~20 s here (2 cores), so the bound below is generous.
FUZZ_CASES = 3000
FUZZ_SEED = 15
MAX_SECONDS = 180.0

pytestmark = pytest.mark.timeout(420)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> FuzzServer:
    with fuzz_server(tmp_path_factory.mktemp("fuzz-api")) as running:
        yield running


def test_fuzzed_requests_get_documented_answers_without_5xx_or_tracebacks(server, capsys):
    report = fuzz(server, cases=FUZZ_CASES, seed=FUZZ_SEED)
    with capsys.disabled():
        print(f"\nAPI fuzzing (schemathesis, seed {FUZZ_SEED}):\n{report.table()}")
    fuzzed = {op.split(" ", 1)[1] for op in report.operations}
    # Every route but the one serving the document (schemathesis leaves that out; it was read to start).
    assert fuzzed | {f"{API_PREFIX}/openapi.json"} == {f"{API_PREFIX}/{openapi_path(path)}" for path, _ in ROUTES}
    assert all(op.cases >= 1 for op in report.operations.values())
    assert report.cases >= 2000
    assert report.failures == 0, report.failure_text()
    assert report.server_errors == 0
    assert report.log_tracebacks == 0, server.log_path.read_text()[-4000:]
    assert report.seconds < MAX_SECONDS
    # Cases the document calls valid reach the services: some of them succeed on most routes.
    assert sum(n for status, n in report.statuses.items() if 200 <= status < 300) >= report.cases // 10
    assert server.alive()
    assert server.get_json("gpu/devices")[0] == 200


def test_token_requests_need_no_xsrf_but_cookie_requests_do(server):
    """jupyter_server exempts token-authenticated requests from XSRF (no ambient credential a
    page could borrow); a browser session's cookie alone cannot change state."""
    url = f"{server.base_url}{API_PREFIX}/course/progress"
    body = {"kind": "lesson", "id": "no-such-lesson", "status": "completed"}
    by_token = requests.post(url, json=body, headers=server.headers, timeout=10)
    assert by_token.status_code == 404  # reached the course service: no XSRF refusal

    browser = requests.Session()
    assert browser.get(f"{server.base_url}/api/status?token={server.token}", timeout=10).status_code == 200
    cookie_only = browser.post(url, json=body, timeout=10)
    assert cookie_only.status_code == 403
    assert "_xsrf" in json.loads(cookie_only.text)["error"]["message"]
    browser.get(f"{server.base_url}/login", timeout=10)  # a page: sets the _xsrf cookie
    with_xsrf = browser.post(url, json=body, headers={"X-XSRFToken": browser.cookies["_xsrf"]}, timeout=10)
    assert with_xsrf.status_code == 404


def test_unknown_api_paths_are_json_404_and_anonymous_ones_403(server):
    unknown = requests.get(f"{server.base_url}{API_PREFIX}/runs/not-a-run-id", headers=server.headers, timeout=10)
    assert unknown.status_code == 404
    assert unknown.headers["Content-Type"].startswith("application/json")
    assert unknown.json()["error"]["code"] == "not_found"
    anonymous = requests.get(f"{server.base_url}{API_PREFIX}/runs/not-a-run-id", timeout=10)
    assert anonymous.status_code == 403


def test_path_parameters_carry_their_route_regex():
    """What schemathesis generates for a path parameter is the route's own regex: nested groups,
    character classes and escapes included."""
    pattern = r"runs/(?P<run_id>[0-9]{8}-(a|b))/files/(?P<name>[A-Z\](]+)"
    assert openapi_path(pattern) == "runs/{run_id}/files/{name}"
    assert path_parameters(pattern) == {"run_id": "[0-9]{8}-(a|b)", "name": r"[A-Z\](]+"}
