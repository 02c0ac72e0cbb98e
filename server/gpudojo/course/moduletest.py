"""The module test (content/module-test.toml) and the acceptance list (content/acceptance.toml).

The module test has the lesson quizzes' question schema and is graded by the same code
(quiz.grade); its attempts are stored with the quizzes' (ProgressStore.record_attempt) under
a key no lesson id can take. The acceptance list ticks an item from the learner's own
progress: lessons and labs completed, exercises completed, the module test passed. An item
the course does not have yet (an exercise not written) is listed as not available and does
not count, for or against.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from pydantic import BaseModel

from .catalog import CatalogData, load_toml
from .models import (
    Acceptance,
    AcceptanceItem,
    AcceptanceRequirement,
    AcceptanceSpec,
    ModuleTest,
    ModuleTestAttempt,
    ModuleTestScores,
    Problem,
    ProgressEntry,
)
from .progress import ProgressStore

MODULE_TEST_FILE = "module-test.toml"
ACCEPTANCE_FILE = "acceptance.toml"
# The key of the module test's attempts in quiz_attempts: a colon never appears in a lesson id.
MODULE_TEST_KEY = ":module-test"


def load_cached(path: Path, model: type[BaseModel]) -> tuple[BaseModel | None, list[Problem]]:
    """``path`` read as ``model``, parsed again only when the file changes; (None, []) when absent."""
    try:
        st = path.stat()
    except OSError:
        return None, []
    return _load(path, model, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=16)
def _load(path: Path, model: type[BaseModel], mtime_ns: int, size: int) -> tuple[BaseModel | None, list[Problem]]:
    loaded, problems = load_toml(path, model)
    if isinstance(loaded, ModuleTest):
        for i, q in enumerate(loaded.questions):
            right = sum(c.correct for c in q.choices)
            if right == 0 or (q.kind == "single" and right != 1):
                problems.append(
                    Problem(file=str(path), field=f"questions.{i}.choices", message=f"{right} correct choices")
                )
        ids = [q.id for q in loaded.questions]
        if len(set(ids)) != len(ids):
            problems.append(Problem(file=str(path), field="questions", message="duplicate question ids"))
    return loaded, problems


def pass_score(test: ModuleTest) -> int:
    """Right answers needed to pass: pass_percent of the questions, rounded up."""
    return math.ceil(len(test.questions) * test.pass_percent / 100)


def scores(store: ProgressStore, user: str, test: ModuleTest) -> ModuleTestScores:
    count, last, best = store.attempt_stats(user, MODULE_TEST_KEY)
    needed = pass_score(test)

    def attempt(row: tuple[int, int, float] | None) -> ModuleTestAttempt | None:
        return ModuleTestAttempt(score=row[0], total=row[1], at=row[2]) if row else None

    return ModuleTestScores(
        title=test.title,
        questions=len(test.questions),
        pass_score=needed,
        attempts=count,
        last=attempt(last),
        best=attempt(best),
        # An attempt graded against an older, shorter test still has to reach today's share.
        passed=best is not None and best[1] > 0 and best[0] / best[1] >= needed / len(test.questions),
    )


_WHAT_DONE = {
    "lesson": "Completed (Mark complete in the lesson)",
    "lab": "Completed: a run that passed every check that applies here",
    "exercise": "Completed: every requirement passed the checker",
}


def acceptance(
    spec: AcceptanceSpec,
    data: CatalogData,
    progress: dict[tuple[str, str], ProgressEntry],
    test: ModuleTest | None,
    test_scores: ModuleTestScores | None,
) -> Acceptance:
    """The acceptance list with a tick per requirement and per item, from this user's progress."""
    items = []
    for spec_item in spec.items:
        reqs = []
        for req in spec_item.requires:
            if req.kind == "module-test":
                available = test is not None and test_scores is not None
                done = bool(available and test_scores and test_scores.passed)
                detail = (
                    f"Passed: {test_scores.pass_score} of {test_scores.questions} right or better"
                    if available and test_scores
                    else "The module test is not in the course yet"
                )
                title = test.title if test else "Module test"
            else:
                title_found = data.title_of(req.kind, req.id or "")
                available = title_found is not None
                entry = progress.get((req.kind, req.id or ""))
                done = available and entry is not None and entry.status == "completed"
                detail = _WHAT_DONE[req.kind] if available else f"This {req.kind} is not in the course yet"
                title = title_found or (req.id or req.kind)
            reqs.append(
                AcceptanceRequirement(
                    kind=req.kind, id=req.id, title=title, available=available, done=done, detail=detail
                )
            )
        counted = [r for r in reqs if r.available]
        items.append(
            AcceptanceItem(
                id=spec_item.id,
                text=spec_item.text,
                requires=reqs,
                done=bool(counted) and all(r.done for r in counted),
                available=len(counted),
                completed=sum(r.done for r in counted),
            )
        )
    return Acceptance(items=items)
