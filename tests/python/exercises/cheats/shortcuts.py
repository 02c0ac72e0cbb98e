"""What every per-exercise cheat suite does: make a learner's copy from our solution with a
shortcut's edits (each asserted to have happened), check it through the exercise service as a
learner's copy is checked, and read what the failing requirement told the learner."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

from gpudojo.course.catalog import CourseCatalog
from gpudojo.course.exercises import ExerciseService
from gpudojo.course.progress import ProgressStore
from gpudojo.paths import material_root

CONTENT = material_root("content")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """One exercise service per cheat module (import it as ``service``)."""
    tmp = tmp_path_factory.mktemp("cheats")
    store = ProgressStore(tmp / "gpudojo.sqlite3")
    svc = ExerciseService(CourseCatalog(CONTENT, material_root("labs")), store, tmp / "root", tmp / "checks")
    yield svc
    svc.close()
    store.close()


def solution_copy(
    tmp_path: Path,
    exercise: str,
    file: str,
    edits: Iterable[tuple[str, str]],
    plant: Iterable[tuple[str, str]] = (),
    start: str = "solution",
) -> Path:
    """Our solution of ``exercise`` (or, with ``start="starters"``, its untouched starter) with
    ``edits`` made to ``file`` (each (old, new) must occur exactly once) and ``plant``'s files
    added: the learner's folder a shortcut makes."""
    folder = tmp_path / "learner"
    shutil.copytree(CONTENT / "exercises" / exercise / start, folder)
    path = folder / file
    text = path.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, f"{exercise}/{start}/{file} no longer holds {old!r}"
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    for name, planted in plant:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(planted, encoding="utf-8")
    return folder


def check(svc: ExerciseService, exercise: str, folder: Path, gpus: int = 0, timeout_s: float = 900):
    """Check ``folder`` as a learner's copy of ``exercise``; returns (attempt, outcomes, report)."""
    svc.check("cheater", exercise, gpus, folder=folder)
    attempt = svc.wait("cheater", exercise, timeout_s=timeout_s)
    assert attempt.status == "done", attempt.error
    outcomes = {r.id: r.outcome for r in attempt.results}
    report = "\n".join(f"{r.id}: {r.outcome}: {r.message}" for r in attempt.results)
    assert not attempt.completed, report
    return attempt, outcomes, report


def assert_says(attempt, requirement: str, says: Iterable[str]) -> None:
    """The message ``requirement`` gave the learner holds every phrase of ``says`` (any case)."""
    message = next(r.message for r in attempt.results if r.id == requirement)
    for phrase in says:
        assert phrase.lower() in message.lower(), f"{requirement}: {message!r} does not say {phrase!r}"
