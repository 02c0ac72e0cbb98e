"""Progress events on the server's event bus (a lesson marked, a quiz graded, a lab run or an
exercise check that completes), the course's place for labs and exercises, and lab READMEs."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest
from tornado.httpclient import HTTPClientError

from course_api import course_get, course_post, serve_course
from gpudojo.course.events import PROGRESS_EVENT_SCHEMA_ID
from gpudojo.course.models import CheckAttempt, choice_id
from gpudojo.course.progress import ProgressChange, ProgressStore
from gpudojo.services import Services, Settings
from test_course import write_two_lessons

README = "# Lab one\n\nRun it, then read its output.\n"


@pytest.fixture
def course_dirs(tmp_path):
    content, labs = tmp_path / "content", tmp_path / "labs"
    write_two_lessons(content)
    for lab, order in (("lab-one", 1), ("lab-two", 2)):
        (labs / lab).mkdir(parents=True)
        (labs / lab / "lab.toml").write_text(
            f'id = "{lab}"\ntitle = "Lab {lab[4:]}"\norder = {order}\nminutes = 45\nneeds = "cpu"\n'
        )
    (labs / "lab-one" / "README.md").write_text(README)
    return content, labs


@pytest.fixture
def jp_server_config(jp_server_config, course_dirs):
    return serve_course(jp_server_config, *course_dirs)


@pytest.fixture
def progress_events(jp_serverapp):
    """The gpudojo progress events the server emits from now on, as the events socket sends them."""
    heard: list[dict] = []

    async def listener(logger, schema_id, data):
        heard.append(dict(data))

    jp_serverapp.event_logger.add_listener(schema_id=PROGRESS_EVENT_SCHEMA_ID, listener=listener)
    yield heard
    jp_serverapp.event_logger.remove_listener(schema_id=PROGRESS_EVENT_SCHEMA_ID, listener=listener)


async def until(predicate, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_marking_a_lesson_complete_emits_a_progress_event(jp_fetch, progress_events):
    await course_get(jp_fetch, "catalog")  # the course service exists before the write, as in use
    entry = await course_post(jp_fetch, "progress", body={"kind": "lesson", "id": "first", "status": "completed"})
    assert entry["status"] == "completed"
    await until(lambda: progress_events)
    assert progress_events == [{"kind": "lesson", "id": "first", "status": "completed", "score": None, "total": None}]


async def test_a_graded_quiz_emits_its_score(jp_fetch, progress_events):
    answers = {"sum": [choice_id("sum", "2")], "evens": [choice_id("evens", "2"), choice_id("evens", "4")]}
    result = await course_post(jp_fetch, "lessons", "first", "quiz", body={"answers": answers})
    assert result["score"] == 2
    await until(lambda: any(e["score"] is not None for e in progress_events))
    graded = [e for e in progress_events if e["score"] is not None]
    assert graded == [{"kind": "lesson", "id": "first", "status": None, "score": 2, "total": 2}]
    # The first attempt also starts the lesson: that write is an event too.
    await until(lambda: len(progress_events) == 2)
    assert {"kind": "lesson", "id": "first", "status": "in_progress", "score": None, "total": None} in progress_events


def test_a_lab_run_that_passed_its_checks_completes_the_lab_and_tells_listeners(tmp_path, course_dirs):
    content, labs = course_dirs
    services = Services(Settings(data_dir=str(tmp_path / "data"), content_dir=str(content), labs_dir=str(labs)))
    heard: list[ProgressChange] = []
    services.progress_listeners.append(heard.append)
    try:
        run = SimpleNamespace(
            kind="lab",
            lab="lab-one",
            user="learner",
            status="succeeded",
            checks=[SimpleNamespace(applies=True, ok=True)],
        )
        services._lab_progress(run)
        assert heard == [ProgressChange(user="learner", kind="lab", item_id="lab-one", status="completed")]
        assert services.course.catalog("learner").labs[0].progress.status == "completed"
    finally:
        services.shutdown()


def test_an_exercise_check_that_completes_tells_listeners(tmp_path):
    store = ProgressStore(tmp_path / "progress.sqlite3")
    heard: list[ProgressChange] = []
    store.add_listener(heard.append)
    attempt = CheckAttempt(
        id="a1",
        exercise="cuda-kernel",
        status="done",
        mode="cpu",
        started_at=time.time(),
        finished_at=time.time(),
        passed=3,
        applicable=3,
        completed=True,
        results=[],
    )
    store.record_check("learner", attempt)
    assert heard == [ProgressChange(user="learner", kind="exercise", item_id="cuda-kernel", status="completed")]


def test_a_failing_listener_never_fails_the_write(tmp_path, caplog):
    store = ProgressStore(tmp_path / "progress.sqlite3")

    def broken(change):
        raise RuntimeError("boom")

    store.add_listener(broken)
    assert store.set_status("learner", "lesson", "first", "completed").status == "completed"
    assert "progress listener failed" in caplog.text


async def test_labs_and_exercises_take_their_place_after_the_first_lesson_that_names_them(jp_fetch):
    cat = await course_get(jp_fetch, "catalog")
    places = {lab["id"]: lab["lesson"] for lab in cat["labs"]}
    # Both lessons name lab-one: it belongs after the first; lab-two is named by none.
    assert places == {"lab-one": "first", "lab-two": None}
    assert all(lesson["lesson"] is None for lesson in cat["lessons"])


async def test_a_lab_readme_is_served_as_markdown(jp_fetch):
    doc = await course_get(jp_fetch, "labs", "lab-one", "readme")
    assert doc == {"id": "lab-one", "title": "Lab one", "markdown": README}
    # A lab without a README says so with an empty text, not an error.
    assert (await course_get(jp_fetch, "labs", "lab-two", "readme"))["markdown"] == ""


async def test_an_unknown_lab_readme_is_a_404_that_names_it(jp_fetch):
    with pytest.raises(HTTPClientError) as err:
        await course_get(jp_fetch, "labs", "lab-nope", "readme")
    assert err.value.code == 404
    assert "lab-nope" in err.value.response.body.decode()
