"""The course API over a small course written here: catalog, lessons, quizzes, progress, notebooks."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from course_api import course_get, course_post, serve_course
from gpudojo.course.models import choice_id
from gpudojo.course.progress import ProgressStore

LESSON = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
gpudojo:
  id: {id}
  title: {title}
  order: {order}
  minutes: 30
  needs: cpu
  cpu_path: Everything runs on the CPU.
  objectives: [Count to two]
  labs: [lab-one, lab-not-written-yet]
  exercises: []
---

# {title}

| a | b |
|---|---|
| 1 | 2 |

## Counting

```{{code-cell}} ipython3
print(1 + 1)
```

## On a GPU

```{{code-cell}} ipython3
---
tags: [needs-gpu]
gpudojo:
  expected_output: "cuda:0"
  expected_on: NVIDIA H100 80GB HBM3
  expected_kind: captured
  expected_source: "a test fixture"
---
print(torch.device("cuda:0"))
```
"""

QUIZ = """\
[[questions]]
id = "sum"
kind = "single"
prompt = "What is 1 + 1?"
[[questions.choices]]
text = "2"
correct = true
why = "Arithmetic."
[[questions.choices]]
text = "3"
correct = false
why = "Off by one."

[[questions]]
id = "evens"
kind = "multiple"
prompt = "Which are even?"
[[questions.choices]]
text = "2"
correct = true
why = "2 = 2 x 1."
[[questions.choices]]
text = "3"
correct = false
why = "Odd."
[[questions.choices]]
text = "4"
correct = true
why = "4 = 2 x 2."
"""


def write_two_lessons(content: Path) -> None:
    """Lessons "first" (with QUIZ) and "second" under ``content/lessons``."""
    (content / "lessons").mkdir(parents=True)
    (content / "lessons" / "01-first.md").write_text(LESSON.format(id="first", title="First steps", order=1))
    (content / "lessons" / "01-first.quiz.toml").write_text(QUIZ)
    (content / "lessons" / "02-second.md").write_text(LESSON.format(id="second", title="Second steps", order=2))


@pytest.fixture
def course_dirs(tmp_path):
    content, labs = tmp_path / "content", tmp_path / "labs"
    write_two_lessons(content)
    # Broken: a wrong type in the front matter, and a lab with a missing title.
    (content / "lessons" / "03-broken.md").write_text(
        LESSON.format(id="broken", title="Broken", order=3).replace("minutes: 30", "minutes: lots")
    )
    (labs / "lab-one").mkdir(parents=True)
    (labs / "lab-one" / "lab.toml").write_text(
        'id = "lab-one"\ntitle = "Lab one"\norder = 1\nminutes = 45\nneeds = "gpu"\n'
    )
    (labs / "lab-bad").mkdir(parents=True)
    (labs / "lab-bad" / "lab.toml").write_text('id = "lab-bad"\norder = 2\nminutes = 10\n')
    return content, labs


@pytest.fixture
def jp_server_config(jp_server_config, course_dirs):
    return serve_course(jp_server_config, *course_dirs)


async def test_catalog_lists_items_in_order_and_reports_broken_manifests(jp_fetch):
    cat = await course_get(jp_fetch, "catalog")
    assert [(i["id"], i["order"], i["minutes"]) for i in cat["lessons"]] == [("first", 1, 30), ("second", 2, 30)]
    assert cat["labs"][0]["id"] == "lab-one" and cat["labs"][0]["needs"] == "gpu"
    assert all(i["progress"]["status"] == "not_started" for i in cat["lessons"])
    problems = {(Path(p["file"]).name, p["field"]) for p in cat["problems"]}
    assert ("03-broken.md", "gpudojo.minutes") in problems
    assert ("lab.toml", "title") in problems


async def test_lesson_has_cells_contents_and_a_quiz_without_answers(jp_fetch):
    doc = await course_get(jp_fetch, "lessons", "first")
    assert doc["meta"]["title"] == "First steps"
    code = [c for c in doc["cells"] if c["type"] == "code"]
    assert code[0]["source"] == "print(1 + 1)" and not code[0]["needs_gpu"]
    assert code[1]["needs_gpu"] and code[1]["expected_output"] == "cuda:0"
    assert code[1]["expected_on"] == "NVIDIA H100 80GB HBM3"
    assert (code[1]["expected_kind"], code[1]["gpus"]) == ("captured", 1)
    assert [t["title"] for t in doc["toc"]] == ["First steps", "Counting", "On a GPU"]
    assert [q["id"] for q in doc["quiz"]] == ["sum", "evens"]
    assert {c["text"]: c["id"] for c in doc["quiz"][1]["choices"]} == {t: choice_id("evens", t) for t in "234"}
    assert "correct" not in json.dumps(doc["quiz"]) and "why" not in json.dumps(doc["quiz"])
    # Related items that exist are linked; ones not written yet are not.
    assert doc["related"] == [{"kind": "lab", "id": "lab-one", "title": "Lab one"}]
    assert doc["next"]["id"] == "second"


def ids(question: str, *texts: str) -> list[str]:
    return [choice_id(question, t) for t in texts]


async def test_quiz_is_graded_by_choice_id_with_every_choice_explained_and_remembered(jp_fetch):
    right = {"sum": ids("sum", "2"), "evens": ids("evens", "4", "2")}
    result = await course_post(jp_fetch, "lessons", "first", "quiz", body={"answers": right})
    assert (result["score"], result["total"]) == (2, 2)
    assert result["results"][1]["explanations"] == dict(
        zip(ids("evens", "2", "3", "4"), ["2 = 2 x 1.", "Odd.", "4 = 2 x 2."], strict=True)
    )
    wrong = {"sum": ids("sum", "3"), "evens": ids("evens", "2")}
    result = await course_post(jp_fetch, "lessons", "first", "quiz", body={"answers": wrong})
    assert result["score"] == 0
    assert result["results"][0]["correct_choices"] == ids("sum", "2")
    assert result["results"][0]["chosen"] == ids("sum", "3")
    doc = await course_get(jp_fetch, "lessons", "first")
    assert doc["last_quiz"]["score"] == 0
    assert doc["progress"]["status"] == "in_progress" and doc["progress"]["quiz_score"] == 0


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"answers": {"nope": ids("sum", "2")}}, "invalid_answers"),
        ({"answers": {"sum": ["not-a-choice"]}}, "invalid_answers"),
        ({"answers": {"sum": ids("sum", "2", "3")}}, "invalid_answers"),
        ({"answers": {"sum": [0]}}, "invalid_request"),  # a position is not an answer
        ({"answers": "all of them"}, "invalid_request"),
        ({"answer": {}}, "invalid_request"),
    ],
)
async def test_bad_quiz_answers_are_400s_that_say_why(jp_fetch, body, code):
    with pytest.raises(HTTPClientError) as info:
        await course_post(jp_fetch, "lessons", "first", "quiz", body=body)
    assert info.value.code == 400
    err = json.loads(info.value.response.body)["error"]
    assert err["code"] == code and err["message"]


async def test_malformed_json_and_oversized_bodies_are_refused(jp_fetch, jp_serverapp):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "course", "progress", method="POST", body="{not json")
    assert info.value.code == 400 and json.loads(info.value.response.body)["error"]["code"] == "invalid_json"
    big = json.dumps({"kind": "lesson", "id": "first", "status": "completed", "pad": "x" * (2 << 20)})
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "course", "progress", method="POST", body=big)
    assert info.value.code == 413


async def test_unknown_items_are_404s(jp_fetch):
    for call in (
        lambda: course_get(jp_fetch, "lessons", "nope"),
        lambda: course_post(jp_fetch, "lessons", "second", "quiz", body={"answers": {}}),  # second has no quiz
        lambda: course_post(jp_fetch, "progress", body={"kind": "lab", "id": "nope", "status": "completed"}),
    ):
        with pytest.raises(HTTPClientError) as info:
            await call()
        assert info.value.code == 404


async def test_progress_is_stored_and_shown_in_the_catalog(jp_fetch):
    entry = await course_post(jp_fetch, "progress", body={"kind": "lesson", "id": "first", "status": "completed"})
    assert entry["status"] == "completed" and entry["completed_at"] > 0
    cat = await course_get(jp_fetch, "catalog")
    assert cat["lessons"][0]["progress"]["status"] == "completed"
    assert cat["lessons"][1]["progress"]["status"] == "not_started"


async def test_open_as_notebook_copies_into_the_workspace_and_never_touches_content(jp_fetch, jp_root_dir, course_dirs):
    source = course_dirs[0] / "lessons" / "01-first.md"
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    copy = await course_post(jp_fetch, "lessons", "first", "notebook", body={})
    assert copy == {"path": "gpudojo-lessons/01-first.ipynb", "created": True}
    nb = json.loads((Path(jp_root_dir) / copy["path"]).read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    # A setup cell first (the %%needs_gpu magic), then the lesson's cells.
    assert "gpudojo-setup" in code[0]["metadata"]["tags"]
    code = code[1:]
    assert "".join(code[0]["source"]) == "print(1 + 1)"
    assert "needs-gpu" in code[1]["metadata"]["tags"]
    assert "".join(code[1]["source"]).startswith("%%needs_gpu\n")
    note = nb["cells"][nb["cells"].index(code[1]) + 1]
    assert note["cell_type"] == "markdown" and "Output captured on NVIDIA H100 80GB HBM3" in "".join(note["source"])
    # The learner edits the copy; opening again keeps the edits unless asked to start over.
    (Path(jp_root_dir) / copy["path"]).write_text(json.dumps({**nb, "metadata": {**nb["metadata"], "mine": 1}}))
    again = await course_post(jp_fetch, "lessons", "first", "notebook", body={})
    assert again["created"] is False
    assert json.loads((Path(jp_root_dir) / copy["path"]).read_text())["metadata"]["mine"] == 1
    fresh = await course_post(jp_fetch, "lessons", "first", "notebook", body={"overwrite": True})
    assert fresh["created"] is True
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in source.parent.iterdir()) == [
        "01-first.md",
        "01-first.quiz.toml",
        "02-second.md",
        "03-broken.md",
    ]


def test_progress_survives_a_restart(tmp_path):
    db = tmp_path / "gpudojo.sqlite3"
    store = ProgressStore(db)
    store.set_status("ada", "lesson", "first", "completed")
    store.close()
    again = ProgressStore(db)
    entry = again.entry("ada", "lesson", "first")
    assert entry.status == "completed" and entry.completed_at is not None
    assert again.entry("grace", "lesson", "first").status == "not_started"  # per user


def test_a_corrupt_database_is_moved_aside_and_recreated(tmp_path, caplog):
    db = tmp_path / "gpudojo.sqlite3"
    db.write_bytes(b"this is not an sqlite database" * 100)
    with caplog.at_level(logging.WARNING):
        store = ProgressStore(db)
    assert "unreadable" in caplog.text and "recreated" in caplog.text
    assert store.set_status("ada", "lesson", "first", "in_progress").status == "in_progress"
    assert list(tmp_path.glob("gpudojo.sqlite3.corrupt-*"))


def test_a_missing_database_folder_is_created(tmp_path):
    store = ProgressStore(tmp_path / "new" / "dir" / "gpudojo.sqlite3")
    assert store.entries("ada") == {}


def test_completing_twice_keeps_the_first_completion_time(tmp_path):
    store = ProgressStore(tmp_path / "p.sqlite3")
    first = store.set_status("ada", "lesson", "x", "completed").completed_at
    assert store.set_status("ada", "lesson", "x", "completed").completed_at == first
    assert store.set_status("ada", "lesson", "x", "in_progress").completed_at is None


def test_catalog_problem_for_a_quiz_with_no_right_answer(tmp_path):
    from gpudojo.course.catalog import load_catalog

    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "01-a.md").write_text(LESSON.format(id="a", title="A", order=1))
    (tmp_path / "lessons" / "01-a.quiz.toml").write_text(QUIZ.replace("correct = true", "correct = false"))
    data = load_catalog(tmp_path, tmp_path / "labs")
    assert [p.field for p in data.problems] == ["questions.0.choices", "questions.1.choices"]
    assert [lesson.meta.id for lesson in data.lessons] == ["a"]


def test_choices_keep_their_ids_when_reordered_and_two_alike_are_a_problem(tmp_path):
    from gpudojo.course.catalog import load_catalog

    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "01-a.md").write_text(LESSON.format(id="a", title="A", order=1))
    quiz = tmp_path / "lessons" / "01-a.quiz.toml"
    two = 'text = "2"\ncorrect = true\nwhy = "Arithmetic."\n'
    three = 'text = "3"\ncorrect = false\nwhy = "Off by one."\n'
    assert two + "[[questions.choices]]\n" + three in QUIZ
    quiz.write_text(QUIZ.replace(two + "[[questions.choices]]\n" + three, three + "[[questions.choices]]\n" + two))
    (lesson,) = load_catalog(tmp_path, tmp_path / "labs").lessons
    served = [(c.id, c.correct) for c in lesson.quiz.questions[0].choices]  # type: ignore[union-attr]
    assert served == [(choice_id("sum", "3"), False), (choice_id("sum", "2"), True)]
    # An author may name a choice, so that fixing a typo in its text keeps its id.
    quiz.write_text(QUIZ.replace('why = "Odd."', 'why = "Odd."\nid = "three"'))
    (lesson,) = load_catalog(tmp_path, tmp_path / "labs").lessons
    assert lesson.quiz.questions[1].choices[1].id == "three"  # type: ignore[union-attr]
    quiz.write_text(QUIZ.replace('text = "4"', 'text = "2"'))
    data = load_catalog(tmp_path, tmp_path / "labs")
    assert [(Path(p.file).name, p.field) for p in data.problems] == [("01-a.quiz.toml", "questions.1")]
    assert "share an id" in data.problems[0].message


def test_a_quiz_graded_before_choices_had_ids_keeps_its_score(tmp_path):
    store = ProgressStore(tmp_path / "p.sqlite3")
    old = {"score": 1, "total": 1, "results": [{"id": "sum", "correct": True, "chosen": [0], "correct_choices": [0],
                                                 "explanations": ["Arithmetic.", "Off by one."]}]}  # fmt: skip
    store._db.execute(
        "INSERT INTO quiz_attempts (user, lesson_id, at, score, total, result) VALUES ('ada', 'first', 1, 1, 1, ?)",
        (json.dumps(old),),
    )
    assert store.last_quiz("ada", "first") is None  # positions in files since reordered: not shown
    assert store.entry("ada", "lesson", "first").quiz_score == 1
    assert store.attempt_count("ada", "first") == 1


def test_the_secret_that_orders_choices_is_made_once_per_installation(tmp_path):
    store = ProgressStore(tmp_path / "p.sqlite3")
    secret = store.secret("quiz-order")
    assert len(secret) == 32 and store.secret("quiz-order") == secret
    store.close()
    assert ProgressStore(tmp_path / "p.sqlite3").secret("quiz-order") == secret
    assert ProgressStore(tmp_path / "q.sqlite3").secret("quiz-order") != secret


def test_an_edited_lesson_is_served_fresh(tmp_path):
    from gpudojo.course.catalog import CourseCatalog, lesson_cells

    (tmp_path / "lessons").mkdir()
    path = tmp_path / "lessons" / "01-a.md"
    path.write_text(LESSON.format(id="a", title="A", order=1))
    catalog = CourseCatalog(tmp_path, tmp_path / "labs")
    catalog.recheck_s = 0
    assert catalog.data().lessons[0].meta.title == "A"
    assert next(c for c in lesson_cells(path) if c.type == "code").source == "print(1 + 1)"
    path.write_text(LESSON.format(id="a", title="A, revised", order=1).replace("1 + 1", "2 + 2"))
    assert catalog.data().lessons[0].meta.title == "A, revised"
    assert next(c for c in lesson_cells(path) if c.type == "code").source == "print(2 + 2)"


def test_a_locked_progress_database_is_never_moved_aside(tmp_path):
    """Locked is not damaged: the progress of every user stays where it is."""
    import sqlite3

    db = tmp_path / "gpudojo.sqlite3"
    ProgressStore(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError):
            ProgressStore(db, timeout_s=0.2)
    finally:
        holder.close()
    assert not list(tmp_path.glob("*.corrupt-*"))
