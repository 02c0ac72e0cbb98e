"""One learner's progress summarised for an instructor (GET course/summary).

What the class service (gpudojo.classview) gathers from every learner's server: counts and ids
of finished items, the module test's best and last scores, each exercise's last check as
requirement ids and outcomes (never the learner's code or the checker's messages), and the time
of the latest progress write. Read-only: it writes nothing, not even a status.
"""

from __future__ import annotations

import time

from .catalog import CatalogData
from .models import (
    CheckAttempt,
    ItemsDone,
    LastCheck,
    ModuleTestScores,
    ProgressEntry,
    ProgressSummary,
    RequirementOutcome,
)
from .progress import ProgressStore


def items_done(kind: str, ids_in_order: list[str], progress: dict[tuple[str, str], ProgressEntry]) -> ItemsDone:
    """The items of ``kind`` this learner completed, in course order; items no longer in the
    course do not count."""
    done = [i for i in ids_in_order if (e := progress.get((kind, i))) is not None and e.status == "completed"]
    return ItemsDone(done=len(done), total=len(ids_in_order), ids=done, course=ids_in_order)


def last_check(attempt: CheckAttempt) -> LastCheck:
    return LastCheck(
        exercise=attempt.exercise,
        at=attempt.finished_at or attempt.started_at,
        mode=attempt.mode,
        status=attempt.status,
        completed=attempt.completed,
        passed=attempt.passed,
        applicable=attempt.applicable,
        requirements=[RequirementOutcome(id=r.id, outcome=r.outcome) for r in attempt.results],
    )


def summarise(
    data: CatalogData, store: ProgressStore, user: str, test_scores: ModuleTestScores | None
) -> ProgressSummary:
    """``user``'s progress over the course in ``data``, from ``store``."""
    progress = store.entries(user)

    def ordered(items: list) -> list[str]:
        return [x.meta.id for x in sorted(items, key=lambda x: x.meta.order)]

    exercises = ordered(data.exercises)
    checks = [last_check(a) for ex in exercises if (a := store.last_check(user, ex)) is not None]
    return ProgressSummary(
        user=user,
        lessons=items_done("lesson", ordered(data.lessons), progress),
        labs=items_done("lab", ordered(data.labs), progress),
        exercises=items_done("exercise", exercises, progress),
        module_test=test_scores,
        last_checks=checks,
        last_activity=store.last_activity(user),
        generated_at=time.time(),
    )
