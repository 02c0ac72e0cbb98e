"""The packaged course: every lesson loads, has its quiz, and every CPU cell runs here."""

from __future__ import annotations

import re

import pytest

from gpudojo.course.catalog import lesson_cells, load_catalog
from gpudojo.paths import material_root
from lesson_runner import run_lesson

CONTENT = material_root("content")
CATALOG = load_catalog(CONTENT, material_root("labs"))
LESSONS = CATALOG.lessons
WRITTEN = ["gpu-intro", "cuda-basics", "pytorch-gpu", "distributed-basics"]


def test_the_packaged_catalog_loads_without_problems():
    assert CATALOG.problems == []
    ids = [lesson.meta.id for lesson in LESSONS]
    assert ids[: len(WRITTEN)] == WRITTEN
    assert [lesson.meta.order for lesson in LESSONS] == sorted(lesson.meta.order for lesson in LESSONS)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.meta.id)
def test_lesson_has_objectives_sections_and_a_five_question_quiz(lesson):
    assert lesson.meta.objectives
    assert lesson.quiz is not None and len(lesson.quiz.questions) == 5
    for q in lesson.quiz.questions:
        assert all(choice.why.strip() for choice in q.choices)
    text = lesson.path.read_text()
    sections = re.findall(r"^## ", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.M)
    assert 3 <= len(sections) <= 8


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.meta.id)
def test_lesson_length_is_within_the_syllabus_range(lesson):
    prose = re.sub(r"```.*?```", "", lesson.path.read_text(), flags=re.S)
    words = len(prose.split())
    assert 2500 <= words <= 5500, words


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.meta.id)
def test_gpu_cells_carry_their_expected_output(lesson):
    cells = lesson_cells(lesson.path)
    assert any(c.type == "code" and not c.needs_gpu for c in cells), "a lesson needs runnable CPU cells"
    for cell in cells:
        if cell.needs_gpu:
            assert cell.expected_output and cell.expected_on, cell.source[:80]
            # Not run here (no GPU), but at least valid Python for the machine that has one.
            compile(cell.source, f"{lesson.path.name}: GPU cell", "exec")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.meta.id)
def test_every_cpu_cell_runs(lesson, tmp_path, monkeypatch):
    """Every untagged cell executes in a fresh kernel (and the GPU cells too where a GPU is)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    before = {p: p.stat().st_mtime for p in CONTENT.rglob("*")}
    nb = run_lesson(lesson.path, timeout=300)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert outputs, "the lesson's cells printed nothing"
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert {p: p.stat().st_mtime for p in CONTENT.rglob("*")} == before, "a cell wrote into content/"
