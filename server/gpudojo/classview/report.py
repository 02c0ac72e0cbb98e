"""The class from the learners' answers: rows per learner, rows per item, the CSV export.

Pure functions over LearnerAnswer lists: no HTTP here (gather.py fetches, app.py serves)."""

from __future__ import annotations

import csv
import io
import time
from collections import Counter
from datetime import UTC, datetime

from .models import ClassReport, ItemRow, LearnerAnswer, LearnerRow, TestScore

KINDS = (("lesson", "lessons"), ("lab", "labs"), ("exercise", "exercises"))


def learner_row(answer: LearnerAnswer) -> LearnerRow:
    s = answer.summary
    best = s.module_test.best if s and s.module_test else None
    return LearnerRow(
        name=answer.name,
        state=answer.state,
        detail=answer.detail,
        lessons_done=s.lessons.done if s else None,
        lessons_total=s.lessons.total if s else None,
        labs_done=s.labs.done if s else None,
        labs_total=s.labs.total if s else None,
        exercises_done=s.exercises.done if s else None,
        exercises_total=s.exercises.total if s else None,
        module_test_best=(
            TestScore(score=best.score, total=best.total, passed=s.module_test.passed)
            if s and s.module_test and best
            else None
        ),
        last_activity=s.last_activity if s else None,
        failed_requirements=[
            f"{c.exercise}/{r.id}"
            for c in (s.last_checks if s else [])
            for r in c.requirements
            if r.outcome == "failed"
        ],
    )


def item_rows(answers: list[LearnerAnswer]) -> list[ItemRow]:
    """Per item of the course (the union of what the learners' servers list, in their order):
    how many finished it and the requirement most often failed in the last checks."""
    summaries = [a.summary for a in answers if a.summary is not None]
    rows: list[ItemRow] = []
    for kind, field in KINDS:
        order: dict[str, None] = {}
        finished: Counter[str] = Counter()
        for s in summaries:
            done = getattr(s, field)
            order.update(dict.fromkeys(done.course))
            finished.update(done.ids)
        failed: dict[str, Counter[str]] = {}
        if kind == "exercise":
            for s in summaries:
                for check in s.last_checks:
                    failed.setdefault(check.exercise, Counter()).update(
                        r.id for r in check.requirements if r.outcome == "failed"
                    )
        for item in order:
            # most_common breaks ties by first seen: the order of the exercise's requirements.
            top = failed.get(item, Counter()).most_common(1)
            rows.append(
                ItemRow(
                    kind=kind,  # type: ignore[arg-type]
                    id=item,
                    finished=finished[item],
                    of=len(summaries),
                    most_failed=top[0][0] if top else None,
                    most_failed_count=top[0][1] if top else 0,
                )
            )
    tests = [s.module_test for s in summaries if s.module_test is not None]
    if tests:
        rows.append(
            ItemRow(kind="module-test", id="module-test", finished=sum(t.passed for t in tests), of=len(summaries))
        )
    return rows


def class_report(answers: list[LearnerAnswer], gather_ms: float) -> ClassReport:
    states = Counter(a.state for a in answers)
    return ClassReport(
        generated_at=time.time(),
        gather_ms=gather_ms,
        learners=[learner_row(a) for a in sorted(answers, key=lambda a: a.name)],
        items=item_rows(answers),
        answered=states["ok"],
        stopped=states["stopped"],
        timed_out=states["timeout"],
        errors=states["error"],
    )


CSV_COLUMNS = [
    "learner",
    "state",
    "lessons_done",
    "lessons_total",
    "labs_done",
    "labs_total",
    "exercises_done",
    "exercises_total",
    "module_test_best",
    "module_test_total",
    "module_test_passed",
    "last_activity_utc",
    "failed_requirements",
    "detail",
]


def iso(t: float | None) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if t is not None else ""


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    # A spreadsheet would run a cell starting with one of these as a formula (CSV injection).
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_csv(report: ClassReport) -> str:
    """One row per learner, the columns of CSV_COLUMNS; times in UTC (ISO 8601)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in report.learners:
        best = row.module_test_best
        writer.writerow(
            _cell(v)
            for v in (
                row.name,
                row.state,
                row.lessons_done,
                row.lessons_total,
                row.labs_done,
                row.labs_total,
                row.exercises_done,
                row.exercises_total,
                best.score if best else None,
                best.total if best else None,
                ("yes" if best.passed else "no") if best else None,
                iso(row.last_activity),
                " ".join(row.failed_requirements),
                row.detail,
            )
        )
    return out.getvalue()
