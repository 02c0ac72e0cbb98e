"""The packaged course: every lesson loads, has its quiz, and every CPU cell runs here."""

from __future__ import annotations

import re

import pytest

from gpudojo.course.catalog import lesson_cells, load_catalog, load_lesson
from gpudojo.course.notebooks import copy_lesson_as_notebook
from gpudojo.paths import material_root
from lesson_runner import run_lesson, runnable_notebook

CONTENT = material_root("content")
CATALOG = load_catalog(CONTENT, material_root("labs"))
LESSONS = CATALOG.lessons
WRITTEN = [
    "gpu-intro",
    "cuda-basics",
    "pytorch-gpu",
    "distributed-basics",
    "multi-gpu",
    "parallelism",
    "memory",
    "optimization",
]


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
    # The syllabus says 2,500-5,000 words; 10% over is tolerated. Lessons 7 (memory) and 6
    # (parallelism) are the exceptions: issue 28 added transformer memory, sized and measured, and
    # MFU to lesson 7, and FSDP x TP on a 2-D mesh, HSDP, DCP resharding, and context and expert
    # parallelism to lesson 6.
    cap = {"memory": 7000, "parallelism": 6000}.get(lesson.meta.id, 5500)
    assert 2500 <= words <= cap, words


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.meta.id)
def test_gpu_cells_carry_their_expected_output(lesson):
    cells = lesson_cells(lesson.path)
    assert any(c.type == "code" and not c.needs_gpu for c in cells), "a lesson needs runnable CPU cells"
    for cell in cells:
        if cell.needs_gpu:
            assert cell.expected_output and cell.expected_on, cell.source[:80]
            # Said plainly: composed from docs (and which), or printed by a real GPU.
            assert cell.expected_kind in ("written", "captured"), cell.source[:80]
            assert cell.expected_source and cell.expected_source.strip(), cell.source[:80]
            assert cell.gpus >= 1
            # Not run here (no GPU), but at least valid Python for the machine that has one.
            compile(cell.source, f"{lesson.path.name}: GPU cell", "exec")


# A whole lesson runs in one test (torchrun workers, torch.compile): more than pytest's 300 s default.
@pytest.mark.timeout(900)
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


_FRONT = """---
gpudojo:
  id: gpu-cells
  title: GPU cells
  order: 1
  minutes: 5
---

# GPU cells

```{code-cell} ipython3
print("cpu")
```
"""


def _gpu_cell(block: str, source: str = "print('gpu')") -> str:
    return f"\n```{{code-cell}} ipython3\n---\ntags: [needs-gpu]\ngpudojo:\n{block}---\n{source}\n```\n"


WRITTEN_BLOCK = """  gpus: 2
  expected_output: |
    world 2
  expected_on: NVIDIA H100 80GB HBM3
  expected_kind: written
  expected_source: "NCCL docs (https://docs.nvidia.com/deeplearning/nccl/)"
"""
CAPTURED_BLOCK = """  expected_output: "cuda:0"
  expected_on: NVIDIA H200
  expected_kind: captured
  expected_source: "lent H200, 2026-12-03"
"""


def _lesson(tmp_path, *blocks: str):
    path = tmp_path / "01-gpu-cells.md"
    path.write_text(_FRONT + "".join(_gpu_cell(b) for b in blocks))
    return path


def test_gpu_cell_fields_are_parsed_into_the_lesson_api(tmp_path):
    path = _lesson(tmp_path, WRITTEN_BLOCK, CAPTURED_BLOCK)
    lesson, problems = load_lesson(path)
    assert lesson is not None and problems == []
    two, one = [c for c in lesson_cells(path) if c.needs_gpu]
    assert (two.gpus, two.expected_kind, two.expected_on) == (2, "written", "NVIDIA H100 80GB HBM3")
    assert two.expected_source.startswith("NCCL docs") and two.expected_output == "world 2\n"
    assert (one.gpus, one.expected_kind, one.expected_output) == (1, "captured", "cuda:0")
    cpu = next(c for c in lesson_cells(path) if c.type == "code" and not c.needs_gpu)
    assert cpu.expected_kind is None and cpu.gpus == 1


@pytest.mark.parametrize(
    ("block", "field", "words"),
    [
        (WRITTEN_BLOCK.replace("kind: written", "kind: measured"), "expected_kind", "'written' or 'captured'"),
        (WRITTEN_BLOCK.replace("  expected_kind: written\n", ""), "expected_kind", "required"),
        (WRITTEN_BLOCK.replace("  expected_source:", "  # expected_source:"), "expected_source", "required"),
        (WRITTEN_BLOCK.replace("gpus: 2", "gpus: 0"), "gpus", "greater than or equal to 1"),
        (CAPTURED_BLOCK + "  expected_kinds: captured\n", "expected_kinds", "not permitted"),
    ],
)
def test_a_bad_gpu_cell_block_is_a_catalog_problem_naming_file_and_field(tmp_path, block, field, words):
    path = _lesson(tmp_path, CAPTURED_BLOCK, block)
    lesson, problems = load_lesson(path)
    # The lesson still loads (its other cells are fine); the problem says where to look.
    assert lesson is not None
    assert [(p.file, p.field) for p in problems] == [(str(path), f"cells.3.gpudojo.{field}")]
    assert words in problems[0].message and "print('gpu')" in problems[0].message
    data = load_catalog(tmp_path, tmp_path / "no-labs")
    assert data.problems == []  # load_catalog reads content_root/lessons, not this folder
    (tmp_path / "lessons").mkdir()
    path.rename(tmp_path / "lessons" / path.name)
    data = load_catalog(tmp_path, tmp_path / "no-labs")
    assert [p.field for p in data.problems] == [f"cells.3.gpudojo.{field}"]
    assert [lesson.meta.id for lesson in data.lessons] == ["gpu-cells"]


def test_the_runner_runs_a_gpu_cell_only_where_its_gpus_exist(tmp_path):
    path = _lesson(tmp_path, CAPTURED_BLOCK, WRITTEN_BLOCK)

    def sources(gpus):
        return [c.source for c in runnable_notebook(path, gpus).cells if c.cell_type == "code"]

    assert sources(0) == ['print("cpu")']
    assert sources(1) == ['print("cpu")', "print('gpu')"]
    assert sources(2) == ['print("cpu")', "print('gpu')", "print('gpu')"]


def test_the_notebook_copy_says_whether_its_expected_output_was_written_or_captured(tmp_path):
    path = _lesson(tmp_path, WRITTEN_BLOCK, CAPTURED_BLOCK)
    copy = copy_lesson_as_notebook(path, tmp_path / "work")
    import nbformat

    nb = nbformat.read(tmp_path / "work" / copy.path, as_version=4)
    notes = [c.source for c in nb.cells if "gpudojo-expected-output" in c.metadata.get("tags", [])]
    assert len(notes) == 2
    assert notes[0].startswith(
        "*The cell above needs 2 GPUs. Expected output for NVIDIA H100 80GB HBM3, written from NCCL docs"
    )
    assert "no GPU ran this" in notes[0] and "world 2" in notes[0]
    assert notes[1].startswith("*The cell above needs a GPU. Output captured on NVIDIA H200:*")
    assert "cuda:0" in notes[1] and "no GPU ran this" not in notes[1]
