"""The toy exercise (tests/data/exercises/toy-sum) the exercise engine is tested with: a
copy of its course, a service over it, and helpers to write the learner's code and check
it. A pytest plugin (tests/python/conftest.py loads it): test modules use its fixtures and
import its helpers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpudojo.course.catalog import CourseCatalog
from gpudojo.course.exercises import ExerciseService
from gpudojo.course.progress import ProgressStore

HERE = Path(__file__).resolve().parent
TOY_CONTENT = HERE.parent / "data" / "exercises"
TOY = TOY_CONTENT / "exercises" / "toy-sum"


@pytest.fixture
def content(tmp_path) -> Path:
    """A copy of the toy course (tests may edit its manifest)."""
    dest = tmp_path / "content"
    shutil.copytree(TOY_CONTENT, dest)
    return dest


@pytest.fixture
def service_options() -> dict:
    """Keyword arguments of the ExerciseService under test (override to change them)."""
    return {}


@pytest.fixture
def service(tmp_path, content, service_options):
    store = ProgressStore(tmp_path / "data" / "gpudojo.sqlite3")
    catalog = CourseCatalog(content, tmp_path / "no-labs")
    root = tmp_path / "root"
    root.mkdir()
    svc = ExerciseService(catalog, store, root, tmp_path / "data" / "exercise-checks", **service_options)
    yield svc
    svc.close()
    store.close()


def check(svc: ExerciseService, user="ada", gpus=0, folder=None, exercise="toy-sum"):
    svc.check(user, exercise, gpus, folder=folder)
    return svc.wait(user, exercise, timeout_s=120)


def outcomes(attempt) -> dict[str, str]:
    return {r.id: r.outcome for r in attempt.results}


def write_learner(svc: ExerciseService, source: str) -> Path:
    """Start the toy exercise and replace the learner's summer.py."""
    start = svc.start("ada", "toy-sum")
    path = svc.root_dir / start.workspace.path / "summer.py"
    path.write_text(source)
    return path
