"""The course's exercises, each checked by its own hidden checks: our solution passes every
requirement that runs on this machine, and the untouched starters fail the requirements
tests/python/exercises/<id>.toml names, each for its reason (the rest pass or are skipped).
Each check runs as a learner's would: through the exercise service, in a child process."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gpudojo.course.catalog import CourseCatalog
from gpudojo.course.exercises import ExerciseService
from gpudojo.course.progress import ProgressStore
from gpudojo.paths import material_root

CONTENT = material_root("content")
EXPECT = Path(__file__).resolve().parent / "exercises"
EXERCISES = sorted(p.parent.name for p in (CONTENT / "exercises").glob("*/exercise.toml"))
SECTIONS = ("## Goal", "## Why it matters", "## Requirements", "## CPU variant", "## Hints")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exercises")
    store = ProgressStore(tmp / "gpudojo.sqlite3")
    svc = ExerciseService(CourseCatalog(CONTENT, material_root("labs")), store, tmp / "root", tmp / "checks")
    yield svc
    svc.close()
    store.close()


def run(svc: ExerciseService, exercise: str, folder: str):
    svc.check("tests", exercise, 0, folder=CONTENT / "exercises" / exercise / folder)
    attempt = svc.wait("tests", exercise, timeout_s=900)
    report = "\n".join(f"{r.id}: {r.outcome}: {r.message}" for r in attempt.results)
    return attempt, report


def test_the_course_has_the_eleven_exercises_of_the_syllabus_in_order():
    data = CourseCatalog(CONTENT, material_root("labs")).data()
    assert [(e.meta.order, e.meta.id) for e in data.exercises] == list(
        enumerate(
            [
                "gpu-introspection",
                "cuda-kernel",
                "pytorch-pipeline",
                "gpu-cluster-management",
                "gpu-performance-optimization",
                "distributed-gpu-training",
                "gpu-memory-profiling",
                "mixed-precision",
                "inference-optimization",
                "gpu-sharing-strategies",
                "gpu-cost-optimization",
            ],
            start=1,
        )
    )


def test_every_manifest_loads_and_every_exercise_has_its_parts():
    data = CourseCatalog(CONTENT, material_root("labs")).data()
    assert [p for p in data.problems if "exercises" in p.file] == []
    for item in data.exercises:
        folder = item.path.parent
        meta = item.meta
        assert (folder / "starters" / meta.main).is_file(), meta.id
        starters = {p.relative_to(folder / "starters") for p in (folder / "starters").rglob("*") if p.is_file()}
        solution = {p.relative_to(folder / "solution") for p in (folder / "solution").rglob("*") if p.is_file()}
        assert starters <= solution, f"{meta.id}: the solution lacks {starters - solution}"
        assert list((folder / "checks").glob("test_*.py")), meta.id
        readme = (folder / "README.md").read_text()
        assert all(s in readme for s in SECTIONS), f"{meta.id}: README lacks {[s for s in SECTIONS if s not in readme]}"
        for req in meta.requirements:
            assert req.id in readme, f"{meta.id}: README does not name requirement {req.id}"
        assert meta.cpu_path and meta.cpu_cannot_show, meta.id
        assert (EXPECT / f"{meta.id}.toml").is_file(), meta.id


def test_every_requirement_names_its_files_and_each_is_one_of_its_starters():
    # The exercise view links a failed requirement to these files in the learner's copy, and
    # Start opens them: a requirement naming none leaves the learner without a next step.
    data = CourseCatalog(CONTENT, material_root("labs")).data()
    for item in data.exercises:
        starters = item.path.parent / "starters"
        for req in item.meta.requirements:
            assert req.files, f"{item.meta.id}/{req.id} names no file"
            for name in req.files:
                assert (starters / name).is_file(), f"{item.meta.id}/{req.id} names {name}, not a starter"


@pytest.mark.parametrize("exercise", EXERCISES)
def test_our_solution_passes_every_requirement_that_runs_here(service, exercise):
    attempt, report = run(service, exercise, "solution")
    meta = service.meta(exercise)
    assert attempt.status == "done", f"{attempt.error}\n{report}"
    for r in attempt.results:
        gpu_only = next(q.gpu for q in meta.requirements if q.id == r.id)
        assert r.outcome == ("skipped" if gpu_only else "passed"), report
    assert attempt.completed, report


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_untouched_starter_fails_the_right_requirements_for_their_reasons(service, exercise):
    expect = tomllib.loads((EXPECT / f"{exercise}.toml").read_text())
    attempt, report = run(service, exercise, "starters")
    assert attempt.status == "done", f"{attempt.error}\n{report}"
    failed = {r.id for r in attempt.results if r.outcome == "failed"}
    assert failed == set(expect["starter_fails"]), report
    for r in attempt.results:
        if r.id in failed:
            reason = expect["reasons"][r.id]
            assert reason.lower() in r.message.lower(), f"{r.id}: {r.message!r} does not say {reason!r}"
    assert not attempt.completed
