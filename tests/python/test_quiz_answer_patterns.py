"""Quizzes measure knowledge, not position: the course's files favour no position (a lint),
the server serves every learner's attempt in its own order, and answering the module test by
position over the REST API scores what guessing scores."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from jupyter_server.auth.identity import IdentityProvider, User

from gpudojo.course.models import ModuleTest, Quiz, QuizQuestion
from gpudojo.course.moduletest import load_cached, pass_score
from gpudojo.paths import material_root

CONTENT = material_root("content")
QUIZ_FILES = [*sorted((CONTENT / "lessons").glob("*.quiz.toml")), CONTENT / "module-test.toml"]

# The lint's limits. Across the course, no position may hold the right answer of more than
# this share of the single-answer questions (a fair four-way split gives 25%).
COURSE_SHARE = 0.40
# In one file, a position may hold at most half of its single-answer questions; the course-wide
# share once a file has enough of them for a share to mean something.
FILE_SHARE_SMALL, FILE_SHARE_LARGE, LARGE_FILE = 0.5, COURSE_SHARE, 10


def load(path: Path) -> Quiz:
    quiz, problems = load_cached(path, ModuleTest if path.name == "module-test.toml" else Quiz)
    assert problems == [] and isinstance(quiz, Quiz), (path, problems)
    return quiz


def right_positions(q: QuizQuestion) -> list[int]:
    return [i for i, c in enumerate(q.choices) if c.correct]


def position_problems(quizzes: dict[str, Quiz]) -> list[str]:
    """What makes the answers of these quiz files guessable by position, one line per finding."""
    problems = []
    course: Counter[int] = Counter()
    for name, quiz in quizzes.items():
        singles = [right_positions(q)[0] for q in quiz.questions if q.kind == "single"]
        course.update(singles)
        share = FILE_SHARE_LARGE if len(singles) >= LARGE_FILE else FILE_SHARE_SMALL
        for pos, count in sorted(Counter(singles).items()):
            if len(singles) > 1 and count > share * len(singles):
                problems.append(
                    f"{name}: choice {pos + 1} is the right one in {count} of {len(singles)} single-answer questions"
                )
        for q in quiz.questions:
            right = right_positions(q)
            if q.kind == "multiple" and len(right) < len(q.choices):
                k = len(right)
                if right == list(range(k)) or right == list(range(len(q.choices) - k, len(q.choices))):
                    problems.append(
                        f"{name}: {q.id}: the right choices are the {'first' if right[0] == 0 else 'last'} {k}"
                    )
    total = sum(course.values())
    for pos, count in sorted(course.items()):
        if count > COURSE_SHARE * total:
            problems.append(
                f"the course: choice {pos + 1} is the right one in {count} of {total} single-answer questions"
            )
    return problems


def test_no_quiz_file_favours_a_position_for_the_right_answer():
    quizzes = {p.name: load(p) for p in QUIZ_FILES}
    assert len(quizzes) == 9  # the eight lessons' quizzes and the module test
    assert position_problems(quizzes) == []


def test_the_lint_catches_right_answers_that_come_first():
    # The course as it was written at first: the right answer first, "select all" ones leading.
    def right_first(quiz: Quiz) -> Quiz:
        questions = [
            q.model_copy(update={"choices": sorted(q.choices, key=lambda c: not c.correct)}) for q in quiz.questions
        ]
        return quiz.model_copy(update={"questions": questions})

    quizzes = {p.name: right_first(load(p)) for p in QUIZ_FILES}
    problems = position_problems(quizzes)
    singles = {name: sum(q.kind == "single" for q in quiz.questions) for name, quiz in quizzes.items()}
    course, module = sum(singles.values()), singles["module-test.toml"]
    assert module >= 17 and course - module >= 28  # the files as written, at least: the lint sees all of them
    assert f"the course: choice 1 is the right one in {course} of {course} single-answer questions" in problems
    assert f"module-test.toml: choice 1 is the right one in {module} of {module} single-answer questions" in problems
    assert "module-test.toml: l2-syncthreads: the right choices are the first 2" in problems
    assert {p.split(":")[0] for p in problems} == {p.name for p in QUIZ_FILES} | {"the course"}


# --- the module test over the REST API, answered by position -----------------------------------


class LearnerNamedInHeader(IdentityProvider):
    """The token login of a plain server, but for the learner the X-Learner header names: the
    several learners a JupyterHub would give one server's data, without a hub."""

    async def get_user(self, handler):
        user = await self._get_user(handler)
        name = handler.request.headers.get("X-Learner")
        return User(username=name) if user is not None and name else user


@pytest.fixture
def jp_server_config(jp_server_config):
    jp_server_config.ServerApp.identity_provider_class = LearnerNamedInHeader
    return jp_server_config


async def as_learner(jp_fetch, learner: str, body: dict | None = None) -> dict:
    kwargs = {"method": "POST", "body": json.dumps(body)} if body is not None else {}
    r = await jp_fetch("gpudojo", "api", "course", "module-test", headers={"X-Learner": learner}, **kwargs)
    return json.loads(r.body)


def first(q: dict) -> list[str]:
    return [q["choices"][0]["id"]]


def first_and_first_two(q: dict) -> list[str]:
    return [c["id"] for c in q["choices"][: 2 if q["kind"] == "multiple" else 1]]


def last(q: dict) -> list[str]:
    return [q["choices"][-1]["id"]]


STRATEGIES = {"always first": first, "first, first two of select-all": first_and_first_two, "always last": last}


def chance(test: ModuleTest, strategy) -> tuple[float, float]:
    """Mean and variance of the score a strategy gets when every order is equally likely
    (right answers)."""
    mean = var = 0.0
    for q in test.questions:
        served = {"kind": q.kind, "choices": [{"id": c.id} for c in q.choices]}
        picked = len(strategy(served))
        right = sum(c.correct for c in q.choices)
        # A position strategy picks a fixed number of choices; it is right only when that many are
        # right and the shuffle put exactly those where it looks.
        p = 1 / math.comb(len(q.choices), right) if picked == right else 0.0
        mean += p
        var += p * (1 - p)
    return mean, var


LEARNERS, ATTEMPTS = 4, 6


async def test_answering_the_module_test_by_position_scores_what_guessing_scores(jp_fetch):
    test = load(CONTENT / "module-test.toml")
    assert isinstance(test, ModuleTest)
    needed = pass_score(test)
    scores: dict[str, list[int]] = {name: [] for name in STRATEGIES}
    for n in range(LEARNERS):
        learner = f"learner-{n}"
        for _ in range(ATTEMPTS):
            for name, strategy in STRATEGIES.items():
                doc = await as_learner(jp_fetch, learner)
                answers = {q["id"]: strategy(q) for q in doc["questions"]}
                graded = await as_learner(jp_fetch, learner, {"answers": answers})
                scores[name].append(graded["result"]["score"])
        final = await as_learner(jp_fetch, learner)
        assert final["scores"]["attempts"] == ATTEMPTS * len(STRATEGIES)
        assert not final["scores"]["passed"], f"{learner} passed the module test by position"
    for name, strategy in STRATEGIES.items():
        mean, var = chance(test, strategy)
        got = sum(scores[name]) / len(scores[name])
        # Four standard errors above guessing: a fair shuffle lands below it but for 1 run in 30,000.
        margin = 4 * math.sqrt(var / len(scores[name]))
        print(
            f"{name}: mean {got:.2f} / 25 over {len(scores[name])} attempts, chance {mean:.2f}, max {max(scores[name])}"
        )
        assert got <= mean + margin, (name, got, mean, margin)
        assert max(scores[name]) < needed, (name, scores[name])

    # The same server grades knowledge: the answer key passes, whatever order it was served in.
    doc = await as_learner(jp_fetch, "learner-0")
    key = {q.id: [c.id for c in q.choices if c.correct] for q in test.questions}
    assert {q["id"] for q in doc["questions"]} == set(key)
    graded = await as_learner(jp_fetch, "learner-0", {"answers": key})
    assert graded["result"]["score"] == len(test.questions) and graded["scores"]["passed"]


def orders(doc: dict) -> list[list[str]]:
    return [[c["id"] for c in q["choices"]] for q in doc["questions"]]


async def test_each_attempt_has_its_own_order_and_a_reload_keeps_it(jp_fetch):
    test = load(CONTENT / "module-test.toml")
    in_file = [[c.id for c in q.choices] for q in test.questions]
    ada = await as_learner(jp_fetch, "ada")
    # The same attempt, reloaded: the same order. Every choice is served, once.
    assert orders(await as_learner(jp_fetch, "ada")) == orders(ada)
    assert [sorted(o) for o in orders(ada)] == [sorted(o) for o in in_file]
    assert orders(ada) != in_file
    # Another learner, and the next attempt of the same one: other orders.
    assert orders(await as_learner(jp_fetch, "grace")) != orders(ada)
    await as_learner(jp_fetch, "ada", {"answers": {}})
    assert orders(await as_learner(jp_fetch, "ada")) != orders(ada)
    # Explanations stay with their choice, whatever the order.
    graded = await as_learner(jp_fetch, "ada", {"answers": {}})
    for q, r in zip(test.questions, graded["result"]["results"], strict=True):
        assert r["explanations"] == {c.id: c.why for c in q.choices}
