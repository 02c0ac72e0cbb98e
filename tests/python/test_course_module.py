"""The module test, the acceptance list and product links in notebook copies, over a small course
written here; and the course's own module-test.toml and acceptance.toml."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from course_api import course_get, course_post, serve_course
from gpudojo.course.catalog import load_catalog
from gpudojo.course.links import NOTEBOOK_NOTE, links_as_plain_text
from gpudojo.course.models import AcceptanceSpec, ModuleTest, choice_id
from gpudojo.course.moduletest import MODULE_TEST_KEY, load_cached, pass_score
from gpudojo.course.progress import ProgressStore
from test_course import LESSON, QUIZ

REPO = Path(__file__).resolve().parents[2]

# The small course's module test: QUIZ's two questions and one more, pass at 2 of 3.
MODULE_TEST = (
    'title = "Small module test"\npass_percent = 60\n\n'
    + QUIZ
    + """
[[questions]]
id = "odd"
kind = "single"
prompt = "Which is odd?"
[[questions.choices]]
text = "3"
correct = true
why = "3 = 2 x 1 + 1."
[[questions.choices]]
text = "4"
correct = false
why = "4 = 2 x 2."
"""
)

ACCEPTANCE = """\
[[items]]
id = "count"
text = "Count to two"
requires = [
  { kind = "lesson", id = "first" },
  { kind = "lab", id = "lab-one" },
  { kind = "exercise", id = "not-written-yet" },
  { kind = "module-test" },
]

[[items]]
id = "later"
text = "Things the course does not have yet"
requires = [{ kind = "exercise", id = "also-not-written" }]
"""

LINKS = """
## Try it

Start [lab one's sweep](gpudojo:run-lab?lab=lab-one&sweep=nproc:1,2) and [the runs](gpudojo:open-runs "Runs").
A link written as code stays: `[x](gpudojo:open-runs)`.

```text
[in a fence](gpudojo:open-memory?estimator=1)
```
"""


@pytest.fixture
def course_dirs(tmp_path):
    content, labs = tmp_path / "content", tmp_path / "labs"
    (content / "lessons").mkdir(parents=True)
    lesson = LESSON.format(id="first", title="First steps", order=1).replace("## Counting", LINKS + "\n## Counting")
    (content / "lessons" / "01-first.md").write_text(lesson)
    (content / "lessons" / "01-first.quiz.toml").write_text(QUIZ)
    (content / "module-test.toml").write_text(MODULE_TEST)
    (content / "acceptance.toml").write_text(ACCEPTANCE)
    (labs / "lab-one").mkdir(parents=True)
    (labs / "lab-one" / "lab.toml").write_text(
        'id = "lab-one"\ntitle = "Lab one"\norder = 1\nminutes = 45\nneeds = "multi-gpu"\n'
        'cpu_path = "gloo on the CPU"\nentry = "run.py"\nlauncher = "torchrun"\n'
    )
    return content, labs


@pytest.fixture
def jp_server_config(jp_server_config, course_dirs):
    return serve_course(jp_server_config, *course_dirs)


def ids(question: str, *texts: str) -> list[str]:
    return [choice_id(question, t) for t in texts]


ALL_RIGHT = {"sum": ids("sum", "2"), "evens": ids("evens", "2", "4"), "odd": ids("odd", "3")}
ONE_RIGHT = {"sum": ids("sum", "2"), "evens": ids("evens", "2"), "odd": ids("odd", "4")}


async def test_module_test_has_no_answers_until_graded(jp_fetch):
    doc = await course_get(jp_fetch, "module-test")
    assert doc["title"] == "Small module test"
    assert [q["id"] for q in doc["questions"]] == ["sum", "evens", "odd"]
    assert "correct" not in json.dumps(doc["questions"]) and "why" not in json.dumps(doc["questions"])
    assert doc["scores"] == {
        "title": "Small module test",
        "questions": 3,
        "pass_score": 2,
        "attempts": 0,
        "last": None,
        "best": None,
        "passed": False,
    }
    assert doc["last_result"] is None


async def test_retakes_keep_the_best_and_the_last_score(jp_fetch):
    graded = await course_post(jp_fetch, "module-test", body={"answers": ALL_RIGHT})
    assert (graded["result"]["score"], graded["result"]["total"]) == (3, 3)
    assert graded["result"]["results"][1]["explanations"] == dict(
        zip(ids("evens", "2", "3", "4"), ["2 = 2 x 1.", "Odd.", "4 = 2 x 2."], strict=True)
    )
    assert graded["scores"]["passed"] is True and graded["scores"]["attempts"] == 1

    retake = await course_post(jp_fetch, "module-test", body={"answers": ONE_RIGHT})
    assert retake["result"]["score"] == 1
    assert [r["correct"] for r in retake["result"]["results"]] == [True, False, False]
    assert retake["result"]["results"][2]["correct_choices"] == ids("odd", "3")
    scores = retake["scores"]
    assert scores["attempts"] == 2
    assert (scores["last"]["score"], scores["best"]["score"]) == (1, 3)
    assert scores["passed"] is True  # passing once is enough; the best attempt counts

    doc = await course_get(jp_fetch, "module-test")
    assert doc["last_result"]["score"] == 1 and doc["scores"]["best"]["score"] == 3
    cat = await course_get(jp_fetch, "catalog")
    assert cat["module_test"]["best"]["score"] == 3 and cat["module_test"]["last"]["score"] == 1
    # The module test is not a lesson: no phantom entry appears among the lessons' progress.
    assert [i["id"] for i in cat["lessons"]] == ["first"]
    assert cat["lessons"][0]["progress"]["quiz_score"] is None


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"answers": {"nope": ids("odd", "3")}}, "invalid_answers"),
        ({"answers": {"odd": ids("sum", "2")}}, "invalid_answers"),  # another question's choice
        ({"answers": {"odd": ids("odd", "3", "4")}}, "invalid_answers"),
        ({"answers": {"odd": [0]}}, "invalid_request"),  # a position is not an answer
        ({"answers": {"odd": -1}}, "invalid_request"),
        ({"answer": {}}, "invalid_request"),
    ],
)
async def test_bad_module_test_answers_are_400s_and_not_stored(jp_fetch, body, code):
    with pytest.raises(HTTPClientError) as info:
        await course_post(jp_fetch, "module-test", body=body)
    assert info.value.code == 400
    err = json.loads(info.value.response.body)["error"]
    assert err["code"] == code and err["message"]
    assert (await course_get(jp_fetch, "module-test"))["scores"]["attempts"] == 0


@pytest.mark.parametrize(("method", "path"), [("GET", "module-test"), ("POST", "module-test"), ("GET", "acceptance")])
async def test_module_test_and_acceptance_refuse_requests_without_credentials(jp_fetch, method, path):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(
            "gpudojo", "api", "course", path, method=method, body="{}" if method == "POST" else None,
            headers={"Authorization": ""},
        )  # fmt: skip
    assert info.value.code == 403


async def test_a_course_without_module_test_or_acceptance_list_says_so(jp_fetch, course_dirs):
    (course_dirs[0] / "module-test.toml").unlink()
    (course_dirs[0] / "acceptance.toml").unlink()
    for path in ("module-test", "acceptance"):
        with pytest.raises(HTTPClientError) as info:
            await course_get(jp_fetch, path)
        assert info.value.code == 404
        assert "no " in json.loads(info.value.response.body)["error"]["message"]
    assert (await course_get(jp_fetch, "catalog"))["module_test"] is None


async def test_acceptance_ticks_come_from_progress_and_missing_items_do_not_count(jp_fetch):
    acc = await course_get(jp_fetch, "acceptance")
    count, later = acc["items"]
    assert [(r["kind"], r["id"], r["available"], r["done"]) for r in count["requires"]] == [
        ("lesson", "first", True, False),
        ("lab", "lab-one", True, False),
        ("exercise", "not-written-yet", False, False),
        ("module-test", None, True, False),
    ]
    assert count["requires"][0]["title"] == "First steps"
    assert "not in the course yet" in count["requires"][2]["detail"]
    assert (count["done"], count["available"], count["completed"]) == (False, 3, 0)
    # An item whose every requirement is missing is never ticked.
    assert (later["done"], later["available"]) == (False, 0)

    await course_post(jp_fetch, "progress", body={"kind": "lesson", "id": "first", "status": "completed"})
    await course_post(jp_fetch, "progress", body={"kind": "lab", "id": "lab-one", "status": "completed"})
    await course_post(jp_fetch, "module-test", body={"answers": ONE_RIGHT})  # 1 of 3: not passed
    count = (await course_get(jp_fetch, "acceptance"))["items"][0]
    assert (count["done"], count["completed"]) == (False, 2)
    await course_post(jp_fetch, "module-test", body={"answers": ALL_RIGHT})
    count = (await course_get(jp_fetch, "acceptance"))["items"][0]
    # The exercise does not exist: it neither blocks the tick nor counts as done.
    assert (count["done"], count["completed"], count["available"]) == (True, 3, 3)
    assert count["requires"][2]["done"] is False


async def test_catalog_says_what_each_lab_runs_with(jp_fetch):
    cat = await course_get(jp_fetch, "catalog")
    lab = cat["labs"][0]
    assert (lab["needs"], lab["launcher"], lab["cpu_path"]) == ("multi-gpu", "torchrun", "gloo on the CPU")
    assert cat["gpus"] == 0  # a replayed recording has no GPU a run can use
    assert cat["lessons"][0]["launcher"] is None


async def test_notebook_copies_turn_product_links_into_plain_text(jp_fetch, jp_root_dir):
    copy = await course_post(jp_fetch, "lessons", "first", "notebook", body={})
    nb = json.loads((Path(jp_root_dir) / copy["path"]).read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert f"Start lab one's sweep {NOTEBOOK_NOTE} and the runs {NOTEBOOK_NOTE}." in text
    assert "](gpudojo:run-lab" not in text and '](gpudojo:open-runs "Runs")' not in text
    # Code shows the syntax as written: a code span and a fenced block are left alone.
    assert "`[x](gpudojo:open-runs)`" in text
    assert "[in a fence](gpudojo:open-memory?estimator=1)" in text
    # The lesson itself, as the panel serves it, keeps its links.
    doc = await course_get(jp_fetch, "lessons", "first")
    assert any("(gpudojo:run-lab?lab=lab-one&sweep=nproc:1,2)" in c["source"] for c in doc["cells"])


@pytest.mark.parametrize(
    ("markdown", "plain"),
    [
        ("[Run it](gpudojo:run-lab?lab=lab-03-ddp)", f"Run it {NOTEBOOK_NOTE}"),
        ("see [the monitor](gpudojo:open-gpu-monitor).", f"see the monitor {NOTEBOOK_NOTE}."),
        ("[web](https://pytorch.org) stays", "[web](https://pytorch.org) stays"),
        ("![an image](gpudojo:open-runs)", "![an image](gpudojo:open-runs)"),
        ("``[a](gpudojo:open-runs)``", "``[a](gpudojo:open-runs)``"),
        ("[lesson `memory`](gpudojo:open-lesson?id=memory)", f"lesson `memory` {NOTEBOOK_NOTE}"),
        ("`x` then [`y`](gpudojo:open-runs) and `z`", f"`x` then `y` {NOTEBOOK_NOTE} and `z`"),
        (
            "~~~\n[a](gpudojo:open-runs)\n~~~\n[b](gpudojo:open-runs)",
            f"~~~\n[a](gpudojo:open-runs)\n~~~\nb {NOTEBOOK_NOTE}",
        ),
    ],
)
def test_links_as_plain_text(markdown, plain):
    assert links_as_plain_text(markdown) == plain


def test_module_test_attempts_survive_a_restart_and_stay_out_of_lesson_progress(tmp_path):
    from gpudojo.course.quiz import grade

    test = ModuleTest.model_validate(tomllib.loads(MODULE_TEST))
    store = ProgressStore(tmp_path / "p.sqlite3")
    store.record_attempt("ada", MODULE_TEST_KEY, grade(test, ONE_RIGHT))
    store.record_attempt("ada", MODULE_TEST_KEY, grade(test, ALL_RIGHT))
    store.record_attempt("ada", MODULE_TEST_KEY, grade(test, ALL_RIGHT))
    store.close()
    again = ProgressStore(tmp_path / "p.sqlite3")
    count, last, best = again.attempt_stats("ada", MODULE_TEST_KEY)
    assert count == 3 and last[0] == 3 and best[0] == 3
    assert best[2] < last[2]  # of equal scores, the first to reach it is the best
    assert again.attempt_stats("grace", MODULE_TEST_KEY) == (0, None, None)
    assert again.entries("ada") == {}


# --- the course's own files -------------------------------------------------------------------


def test_the_course_notebook_copies_have_no_product_link_left(tmp_path):
    from gpudojo.course.notebooks import copy_lesson_as_notebook

    linked = 0
    for path in sorted((REPO / "content" / "lessons").glob("0*.md")):
        copy = copy_lesson_as_notebook(path, tmp_path)
        nb = json.loads((tmp_path / copy.path).read_text())
        text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        assert "](gpudojo:" not in text, path.name
        assert text.count(NOTEBOOK_NOTE) == path.read_text().count("](gpudojo:"), path.name
        linked += text.count(NOTEBOOK_NOTE)
    assert linked > 0  # the lessons do link to the product


def test_the_module_test_covers_all_eight_lessons_and_explains_every_choice():
    test, problems = load_cached(REPO / "content" / "module-test.toml", ModuleTest)
    assert problems == []
    assert isinstance(test, ModuleTest) and len(test.questions) == 32
    lessons = {int(re.match(r"l(\d)-", q.id).group(1)) for q in test.questions}  # type: ignore[union-attr]
    assert lessons == set(range(1, 9))
    assert all(len(c.why) > 20 for q in test.questions for c in q.choices)
    assert pass_score(test) == 26  # 80% of 32, rounded up


def test_the_acceptance_list_is_the_syllabus_last_section_and_the_llm_job():
    spec, problems = load_cached(REPO / "content" / "acceptance.toml", AcceptanceSpec)
    assert problems == [] and isinstance(spec, AcceptanceSpec)
    assert [i.id for i in spec.items] == [
        "gpu-architecture",
        "cuda-kernels",
        "ddp",
        "model-parallelism",
        "profiling-and-oom",
        "llm-training-job",  # issue 28: the newer material, which the module test asks about
    ]
    assert all(any(r.kind == "module-test" for r in i.requires) for i in spec.items)
    # Every lesson and lab it names is one the course has or the syllabus plans.
    data = load_catalog(REPO / "content", REPO / "labs")
    planned_lessons = {"gpu-intro", "cuda-basics", "pytorch-gpu", "distributed-basics"}
    planned_lessons |= {"multi-gpu", "parallelism", "memory", "optimization"}
    named = {(r.kind, r.id) for i in spec.items for r in i.requires if r.kind in ("lesson", "lab")}
    for kind, item_id in named:
        assert (kind == "lesson" and item_id in planned_lessons) or data.title_of(kind, item_id), (kind, item_id)
    # Every exercise of the course counts towards one of the items.
    counted = {r.id for i in spec.items for r in i.requires if r.kind == "exercise"}
    assert {e.meta.id for e in data.exercises} <= counted
