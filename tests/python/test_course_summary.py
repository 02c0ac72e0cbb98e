"""GET course/summary: one learner's progress as the class service (gpudojo.classview) reads it,
over a small course written here (a lesson with a quiz, a lab, the toy exercise, a module test)."""

from __future__ import annotations

import json
import shutil
import time

import pytest
from tornado.httpclient import HTTPClientError

from course_api import course_get, course_post, serve_course
from exercise_toy import TOY_CONTENT
from gpudojo.course.models import CheckAttempt, ProgressSummary, RequirementResult
from gpudojo.course.progress import ProgressStore
from test_course import LESSON, QUIZ
from test_course_module import ALL_RIGHT, MODULE_TEST, ONE_RIGHT


@pytest.fixture
def course_dirs(tmp_path):
    content, labs = tmp_path / "content", tmp_path / "labs"
    shutil.copytree(TOY_CONTENT, content)
    (content / "lessons").mkdir()
    (content / "lessons" / "01-first.md").write_text(LESSON.format(id="first", title="First steps", order=1))
    (content / "lessons" / "01-first.quiz.toml").write_text(QUIZ)
    (content / "lessons" / "02-second.md").write_text(LESSON.format(id="second", title="Second steps", order=2))
    (content / "module-test.toml").write_text(MODULE_TEST)
    (labs / "lab-one").mkdir(parents=True)
    (labs / "lab-one" / "lab.toml").write_text(
        'id = "lab-one"\ntitle = "Lab one"\norder = 1\nminutes = 45\nneeds = "cpu"\nentry = "run.py"\n'
    )
    return content, labs


@pytest.fixture
def jp_server_config(jp_server_config, course_dirs):
    return serve_course(jp_server_config, *course_dirs)


def attempt(outcomes: dict[str, str], finished_at: float) -> CheckAttempt:
    results = [RequirementResult(id=i, statement=i, gpu=i == "on-gpu", outcome=o) for i, o in outcomes.items()]
    passed = sum(o == "passed" for o in outcomes.values())
    applicable = sum(o != "skipped" for o in outcomes.values())
    return CheckAttempt(
        id=f"a{finished_at}",
        exercise="toy-sum",
        status="done",
        mode="cpu",
        started_at=finished_at - 1,
        finished_at=finished_at,
        passed=passed,
        applicable=applicable,
        completed=passed == applicable,
        results=results,
    )


async def test_a_new_learner_has_nothing_done_and_no_activity(jp_fetch):
    doc = await course_get(jp_fetch, "summary")
    ProgressSummary.model_validate(doc)
    assert {k: doc[k] for k in ("lessons", "labs", "exercises")} == {
        "lessons": {"done": 0, "total": 2, "ids": [], "course": ["first", "second"]},
        "labs": {"done": 0, "total": 1, "ids": [], "course": ["lab-one"]},
        "exercises": {"done": 0, "total": 1, "ids": [], "course": ["toy-sum"]},
    }
    assert doc["last_checks"] == [] and doc["last_activity"] is None
    assert doc["module_test"]["attempts"] == 0 and doc["module_test"]["best"] is None


async def test_summary_counts_finished_items_best_test_score_and_last_check_outcomes(jp_fetch, tmp_path):
    before = time.time()
    await course_post(jp_fetch, "progress", body={"kind": "lesson", "id": "second", "status": "completed"})
    await course_post(jp_fetch, "progress", body={"kind": "lesson", "id": "first", "status": "completed"})
    await course_post(jp_fetch, "progress", body={"kind": "lab", "id": "lab-one", "status": "in_progress"})
    await course_post(jp_fetch, "module-test", body={"answers": ALL_RIGHT})
    await course_post(jp_fetch, "module-test", body={"answers": ONE_RIGHT})
    # Two checks of the toy exercise, as the check service stores them; the summary shows the last.
    store = ProgressStore(tmp_path / "gpudojo-data" / "gpudojo.sqlite3")
    user = (await course_get(jp_fetch, "summary"))["user"]
    now = time.time()
    store.record_check(user, attempt({"sums": "passed", "cli": "passed", "on-gpu": "skipped"}, now))
    store.record_check(user, attempt({"sums": "passed", "cli": "failed", "on-gpu": "skipped"}, now + 1))
    store.close()

    doc = await course_get(jp_fetch, "summary")
    ProgressSummary.model_validate(doc)
    assert doc["lessons"]["ids"] == ["first", "second"] and doc["lessons"]["done"] == 2  # course order
    assert (doc["labs"]["done"], doc["labs"]["ids"]) == (0, [])  # in progress is not done
    # The first check completed the exercise; a later failing one does not undo that.
    assert (doc["exercises"]["done"], doc["exercises"]["ids"]) == (1, ["toy-sum"])
    (check,) = doc["last_checks"]
    assert check["exercise"] == "toy-sum" and check["completed"] is False and check["at"] == pytest.approx(now + 1)
    assert check["requirements"] == [
        {"id": "sums", "outcome": "passed"},
        {"id": "cli", "outcome": "failed"},
        {"id": "on-gpu", "outcome": "skipped"},
    ]
    # Nothing of the learner's code or the checker's words goes out: ids and outcomes only.
    assert "statement" not in json.dumps(check) and "message" not in json.dumps(check)
    test = doc["module_test"]
    assert (test["attempts"], test["best"]["score"], test["last"]["score"], test["passed"]) == (2, 3, 1, True)
    assert doc["last_activity"] == pytest.approx(now + 1)
    assert before <= doc["generated_at"] and doc["last_activity"] > before


async def test_summary_is_read_only_and_refuses_callers_without_credentials(jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "course", "summary", headers={"Authorization": ""})
    assert info.value.code == 403
    # No write path: a POST to the summary is not a route that changes anything.
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "course", "summary", method="POST", body="{}")
    assert info.value.code == 405
    doc = await course_get(jp_fetch, "summary")
    assert doc["last_activity"] is None  # reading the summary is not activity


async def test_outside_jupyterhub_the_summary_is_the_callers_whatever_the_environment_says(jp_fetch, monkeypatch):
    """Only JupyterHub's identity provider makes JUPYTERHUB_USER the learner (the server's owner,
    whoever calls: the class service or an instructor); a plain server keeps the caller's progress."""
    monkeypatch.setenv("JUPYTERHUB_USER", "someone-else")
    doc = await course_get(jp_fetch, "summary")
    assert doc["user"] != "someone-else"
