"""The gpudojo-class service in a real JupyterHub (the pinned `jupyterhub`, the proxy from
package.json): registered by docs/jupyterhub_class_service.py, started by the hub, two learners
with gpudojo servers of their own, an instructor in the instructors group. The instructor sees
both learners' progress (JSON, CSV, the page after the hub's OAuth login); a learner without the
role gets 403. Only what this machine needs is changed: ports, a temporary folder,
DummyAuthenticator with a password, SimpleLocalProcessSpawner (tests/python/hub_harness.py's
CLASS_HUB)."""

from __future__ import annotations

import csv
import io
import secrets

import pytest
import requests

from hub_harness import CLASS_HUB, PROXY, running_hub

PUBLIC = 19510  # and the next five: hub API, proxy API, alice's and bob's servers, the service
PASSWORD = "gpudojo-class-" + secrets.token_hex(4)
BASE = f"http://127.0.0.1:{PUBLIC}"
CLASS = f"{BASE}/services/gpudojo-class/"

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(not PROXY.exists(), reason="configurable-http-proxy is not installed: run `jlpm install`"),
]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A hub with the class service, alice's and bob's servers running, and a token per user
    (hub_harness.RunningHub)."""
    with running_hub(tmp_path_factory.mktemp("classhub"), CLASS_HUB, public=PUBLIC, password=PASSWORD) as hub:
        hub.wait_for("the class service", lambda: requests.get(CLASS, allow_redirects=False).status_code < 500, 30)
        yield hub


def as_user(token: str) -> requests.Session:
    s = requests.Session()
    s.headers["Authorization"] = f"token {token}"
    return s


def progress(session: requests.Session, user: str, kind: str, item: str) -> None:
    url = f"{BASE}/user/{user}/gpudojo/api/course/progress"
    r = session.post(url, json={"kind": kind, "id": item, "status": "completed"})
    assert r.status_code == 200, r.text


def test_the_instructor_sees_each_learners_progress_and_a_learner_without_the_role_gets_403(hub):
    alice, bob, ines = (as_user(hub.tokens[u]) for u in ("alice", "bob", "ines"))
    progress(alice, "alice", "lesson", "gpu-intro")
    progress(alice, "alice", "lesson", "cuda-basics")
    progress(alice, "alice", "lab", "lab-01-cuda-hello")
    progress(bob, "bob", "lesson", "gpu-intro")

    r = ines.get(CLASS + "class.json")
    assert r.status_code == 200, r.text
    doc = r.json()
    rows = {x["name"]: x for x in doc["learners"]}
    assert set(rows) == {"alice", "bob"}  # the learners group: not ines, the instructor
    assert rows["alice"]["state"] == "ok" and rows["bob"]["state"] == "ok", rows
    assert (rows["alice"]["lessons_done"], rows["alice"]["labs_done"]) == (2, 1)
    assert (rows["bob"]["lessons_done"], rows["bob"]["labs_done"]) == (1, 0)
    assert rows["alice"]["last_activity"] and rows["alice"]["lessons_total"] == 8
    intro = next(i for i in doc["items"] if i["id"] == "gpu-intro")
    assert (intro["finished"], intro["of"]) == (2, 2)

    # A learner holds no access:services!service=gpudojo-class: refused, whatever the format.
    for path in ("", "class.json", "class.csv"):
        assert alice.get(CLASS + path, allow_redirects=False).status_code == 403, path
    # The learner servers keep their own rule: the instructor's token does not open alice's server.
    assert ines.get(f"{BASE}/user/alice/gpudojo/api/course/summary").status_code == 403

    r = ines.get(CLASS + "class.csv")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/csv")
    assert "attachment" in r.headers["Content-Disposition"]
    table = {row["learner"]: row for row in csv.DictReader(io.StringIO(r.text))}
    assert (table["alice"]["lessons_done"], table["bob"]["lessons_done"]) == ("2", "1")

    # bob stops his server: the class still comes, with bob as stopped.
    r = hub.admin.delete(f"{hub.api}/users/bob/server")
    assert r.status_code in (202, 204), r.text
    hub.wait_for("bob's server to stop", lambda: not hub.admin.get(f"{hub.api}/users/bob").json().get("server"), 30)
    rows = {x["name"]: x for x in ines.get(CLASS + "class.json").json()["learners"]}
    assert rows["bob"]["state"] == "stopped" and rows["alice"]["state"] == "ok"


def open_class_page(user: str) -> requests.Response:
    """What a browser does: open the service, get sent to the hub's login, log in, come back
    through the hub's OAuth (no confirmation page: the service is the hub's own)."""
    browser = requests.Session()
    r = browser.get(CLASS)
    assert "/hub/login" in r.url, r.url
    return browser.post(r.url, data={"username": user, "password": PASSWORD, "_xsrf": browser.cookies.get("_xsrf")})


def test_the_page_comes_after_the_hubs_login_for_an_instructor_only(hub):
    r = open_class_page("ines")
    assert r.status_code == 200 and r.url == CLASS, r.url
    assert "<caption>Learners</caption>" in r.text and '<th scope="row">alice</th>' in r.text
    # alice logs in to the hub all right, but the hub does not hand her login to the service.
    r = open_class_page("alice")
    assert r.status_code == 403 and "/services/gpudojo-class/" not in r.url.removeprefix(BASE).split("?")[0]
