"""The gpudojo-class service's gathering, report, CSV and page, against stand-in learner servers
and a stand-in hub API (tests/python/class_standins.py: real HTTP, recorded gpudojo summaries).
The access rule is tested with a real JupyterHub in test_classview_hub.py."""

from __future__ import annotations

import asyncio
import csv
import io
import time
from pathlib import Path

import pytest
from tornado.template import Loader

from class_standins import TOKEN, Plan, StandIn, StandInClassThread, record
from gpudojo.classview import app as classview
from gpudojo.classview.app import ClassSettings, gather_report
from gpudojo.classview.gather import HubError
from gpudojo.classview.report import CSV_COLUMNS, to_csv

# alice: two lessons, a lab, an exercise passed and one failing its "registers" requirement;
# bob: one lesson, the same exercise failing "registers" and "bounds-check", the test failed.
PLANS = {
    "alice": Plan(
        lessons=["gpu-intro", "cuda-basics"],
        labs=["lab-01-cuda-hello"],
        checks={
            "gpu-introspection": {"gpu-facts": "passed", "topology": "passed", "benchmarks": "skipped"},
            "cuda-kernel": {"compiles": "passed", "registers": "failed", "bandwidth": "skipped"},
        },
        tests=[(12, 20), (17, 20)],
    ),
    "bob": Plan(
        lessons=["gpu-intro"],
        checks={"cuda-kernel": {"compiles": "passed", "registers": "failed", "bounds-check": "failed"}},
        tests=[(9, 20)],
    ),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, bytes]:
    return record(tmp_path_factory.mktemp("class"), PLANS)


def settings(api_url: str, **kw) -> ClassSettings:
    return ClassSettings(api_url=api_url, token=kw.pop("token", TOKEN), proxy_url="http://127.0.0.1:1", **kw)


def test_the_class_shows_each_learner_and_says_which_servers_are_stopped_hung_or_without_gpudojo(recorded):
    learners = [
        StandIn("alice", recorded["alice"]),
        StandIn("bob", recorded["bob"]),
        StandIn("carol", running=False),
        StandIn("dave", recorded["bob"], latency_s=5.0),  # hung: answers long after the timeout
        StandIn("erin", gpudojo=False),
    ]
    with StandInClassThread(learners) as standins:
        started = time.monotonic()
        report = asyncio.run(gather_report(settings(standins.api_url, timeout_s=0.5)))
        took = time.monotonic() - started
    assert took < 2.5, "the hung server held up the class"
    rows = {r.name: r for r in report.learners}
    assert [r.name for r in report.learners] == ["alice", "bob", "carol", "dave", "erin"]
    assert {n: r.state for n, r in rows.items()} == {
        "alice": "ok",
        "bob": "ok",
        "carol": "stopped",
        "dave": "timeout",
        "erin": "error",
    }
    assert (report.answered, report.stopped, report.timed_out, report.errors) == (2, 1, 1, 1)
    assert "0.5 s" in rows["dave"].detail and "gpudojo" in rows["erin"].detail
    alice = rows["alice"]
    assert (alice.lessons_done, alice.lessons_total, alice.labs_done, alice.exercises_done) == (2, 8, 1, 1)
    assert alice.module_test_best is not None and (alice.module_test_best.score, alice.module_test_best.total) == (
        17,
        20,
    )
    assert alice.failed_requirements == ["cuda-kernel/registers"]
    assert alice.last_activity is not None
    assert rows["bob"].failed_requirements == ["cuda-kernel/registers", "cuda-kernel/bounds-check"]
    assert rows["carol"].lessons_done is None and rows["carol"].module_test_best is None

    items = {(i.kind, i.id): i for i in report.items}
    assert (items["lesson", "gpu-intro"].finished, items["lesson", "gpu-intro"].of) == (2, 2)
    assert items["lesson", "cuda-basics"].finished == 1 and items["lesson", "optimization"].finished == 0
    assert items["exercise", "gpu-introspection"].finished == 1 and items["exercise", "cuda-kernel"].finished == 0
    kernel = items["exercise", "cuda-kernel"]
    assert (kernel.most_failed, kernel.most_failed_count) == ("registers", 2)
    assert items["exercise", "gpu-introspection"].most_failed is None
    test = items["module-test", "module-test"]
    assert (test.finished, test.of) == (1, 2)  # alice passed (17 of 20), bob did not


def test_a_hub_that_refuses_the_service_token_says_which_scopes_its_role_needs(recorded):
    with (
        StandInClassThread([StandIn("alice", recorded["alice"])]) as standins,
        pytest.raises(HubError, match="list:users"),
    ):
        asyncio.run(gather_report(settings(standins.api_url, token="not-the-service")))


def test_only_the_learners_group_is_gathered_when_one_is_named(recorded):
    learners = [StandIn("alice", recorded["alice"], groups=["learners"]), StandIn("teacher", recorded["bob"])]
    with StandInClassThread(learners) as standins:
        report = asyncio.run(gather_report(settings(standins.api_url, learners_group="learners")))
    assert [r.name for r in report.learners] == ["alice"]


def test_concurrency_is_bounded_and_every_page_of_users_is_read(recorded):
    # 250 stand-ins: two pages of the hub's users API (200 a page); each takes 50 ms to answer.
    learners = [StandIn(f"learner{i:03d}", recorded["bob"], latency_s=0.05) for i in range(250)]
    with StandInClassThread(learners) as standins:
        report = asyncio.run(gather_report(settings(standins.api_url, concurrency=8, timeout_s=5)))
        peak, served = standins.gauge.peak, standins.gauge.served
    assert report.answered == 250 and served == 250
    assert peak <= 8


def test_csv_has_a_row_per_learner_in_utc_and_defuses_formulas(recorded):
    learners = [StandIn("alice", recorded["alice"]), StandIn("=HYPERLINK(1)", running=False)]
    with StandInClassThread(learners) as standins:
        report = asyncio.run(gather_report(settings(standins.api_url)))
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert list(rows[0]) == CSV_COLUMNS
    by_name = {r["learner"]: r for r in rows}
    alice = by_name["alice"]
    assert (alice["state"], alice["lessons_done"], alice["lessons_total"], alice["labs_done"]) == ("ok", "2", "8", "1")
    assert (alice["module_test_best"], alice["module_test_total"], alice["module_test_passed"]) == ("17", "20", "yes")
    assert alice["failed_requirements"] == "cuda-kernel/registers"
    assert alice["last_activity_utc"].endswith("Z") and alice["last_activity_utc"][:2] == "20"
    # A name a spreadsheet would run as a formula is written as text.
    stopped = by_name["'=HYPERLINK(1)"]
    assert (stopped["state"], stopped["lessons_done"], stopped["detail"]) == ("stopped", "", "No server running")


def test_the_page_is_an_accessible_table_and_escapes_what_learners_control(recorded):
    learners = [StandIn("alice", recorded["alice"]), StandIn("<b>mallory</b>", running=False)]
    with StandInClassThread(learners) as standins:
        report = asyncio.run(gather_report(settings(standins.api_url)))
    template = Loader(str(Path(classview.__file__).with_name("templates"))).load("class.html")
    page = template.generate(
        report=report, iso=classview.iso, gathered="now", prefix="/services/gpudojo-class/"
    ).decode()
    assert "<b>mallory</b>" not in page and "&lt;b&gt;mallory&lt;/b&gt;" in page
    assert "<caption>Learners</caption>" in page and '<th scope="row">alice</th>' in page
    assert "2 of 8" in page and "17 of 20 (passed)" in page and "cuda-kernel/registers" in page
    assert 'href="/services/gpudojo-class/class.csv"' in page
