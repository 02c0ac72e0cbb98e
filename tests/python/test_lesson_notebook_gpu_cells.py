"""A lesson's notebook copy keeps its GPU cells honest: tagged, guarded, with their expected output."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from gpudojo.course.notebooks import SETUP_TAG, copy_lesson_as_notebook
from gpudojo.labkit.gpu_cells import GpuCount, machine_note, needs_gpu, skip_note
from gpudojo.paths import material_root

LESSON_1 = material_root("content") / "lessons" / "01-gpu-intro.md"

_LESSON = """---
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

```{code-cell} ipython3
---
tags: [needs-gpu]
gpudojo:
  gpus: 2
  expected_output: |
    world 2
  expected_on: NVIDIA H100 80GB HBM3
  expected_kind: written
  expected_source: "NCCL docs"
---
import torch
print(torch.cuda.device_count())
```
"""


def _copy(tmp_path):
    path = tmp_path / "01-gpu-cells.md"
    path.write_text(_LESSON)
    copy = copy_lesson_as_notebook(path, tmp_path / "work")
    return nbformat.read(tmp_path / "work" / copy.path, as_version=4)


def test_the_copy_tags_each_gpu_cell_and_starts_it_with_the_guard(tmp_path):
    nb = _copy(tmp_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    setup, cpu, gpu = code
    assert SETUP_TAG in setup.metadata["tags"] and "%load_ext gpudojo" in setup.source
    assert cpu.source == 'print("cpu")' and "tags" not in cpu.metadata
    assert gpu.metadata["tags"] == ["needs-gpu", "needs-2-gpus"]
    assert gpu.source.splitlines()[0] == "%%needs_gpu 2"
    assert gpu.source.splitlines()[1:] == ["import torch", "print(torch.cuda.device_count())"]
    # The expected output follows the cell, labelled as written from docs.
    note = nb.cells[nb.cells.index(gpu) + 1]
    assert note.cell_type == "markdown" and "needs 2 GPUs" in note.source and "world 2" in note.source


def test_the_copy_is_written_complete_so_that_it_opens_unmodified(tmp_path):
    nb = _copy(tmp_path)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    info = nb.metadata["language_info"]
    assert info["name"] == "python" and info["codemirror_mode"] == {"name": "ipython", "version": 3}
    assert "jupytext" not in nb.metadata
    assert all(c.get("id") for c in nb.cells)
    nbformat.validate(nb)


def test_a_lesson_without_gpu_cells_gets_no_setup_cell(tmp_path):
    path = tmp_path / "01-cpu.md"
    path.write_text(_LESSON.split("```{code-cell} ipython3\n---")[0])
    copy = copy_lesson_as_notebook(path, tmp_path / "work")
    nb = json.loads((tmp_path / "work" / copy.path).read_text())
    assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "code"]


@pytest.mark.parametrize(
    ("needed", "here", "words"),
    [
        (1, GpuCount(0), "Skipped: needs a GPU (this machine has none)."),
        (2, GpuCount(1), "Skipped: needs 2 GPUs (this machine has 1 GPU)."),
        (1, GpuCount(0, "CUDA_VISIBLE_DEVICES hides every GPU"), "(CUDA_VISIBLE_DEVICES hides every GPU)"),
        (4, GpuCount(2, "CUDA_VISIBLE_DEVICES"), "(this machine has 2 GPUs (CUDA_VISIBLE_DEVICES))"),
    ],
)
def test_a_cell_needing_more_gpus_than_here_gets_one_line_saying_so(needed, here, words):
    note = skip_note(needed, here)
    assert note is not None and words in note and "\n" not in note
    assert "Expected output below. Run anyway: %%needs_gpu" in note and note.endswith(" --run")


def test_a_cell_runs_where_its_gpus_are_or_when_asked():
    ran: list[str] = []

    class Shell:
        def run_cell(self, cell):
            ran.append(cell)

    assert skip_note(2, GpuCount(2)) is None
    needs_gpu("2", "print(1)", shell=Shell(), count_gpus=lambda cell: GpuCount(2))
    needs_gpu("--run", "print(2)", shell=Shell(), count_gpus=lambda cell: GpuCount(0))
    needs_gpu("", "print(3)", shell=Shell(), count_gpus=lambda cell: GpuCount(0))
    assert ran == ["print(1)", "print(2)"]
    assert machine_note(GpuCount(0)).startswith("This machine has no GPU: cells that need one print a note")
    assert machine_note(GpuCount(2)).startswith("This machine has 2 GPUs: cells that need up to 2 run")


@pytest.mark.timeout(300)
def test_lesson_1s_gpu_cell_prints_the_skip_note_in_a_kernel_without_a_gpu(tmp_path, monkeypatch):
    """The copy's setup cell and first GPU cell, in a real kernel that sees no GPU: one line, no traceback."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the same on a machine with GPUs
    copy = copy_lesson_as_notebook(LESSON_1, tmp_path)
    nb = nbformat.read(tmp_path / copy.path, as_version=4)
    setup = next(c for c in nb.cells if SETUP_TAG in c.metadata.get("tags", []))
    gpu = next(c for c in nb.cells if "needs-gpu" in c.metadata.get("tags", []))
    anyway = nbformat.v4.new_code_cell("%%needs_gpu 8 --run\nprint('ran anyway')")
    nb.cells = [setup, gpu, anyway]
    NotebookClient(nb, timeout=240, kernel_name="python3", allow_errors=False).execute()

    def text(cell):
        return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")

    assert text(setup).startswith("This machine has no GPU (CUDA_VISIBLE_DEVICES hides every GPU)")
    lines = text(gpu).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Skipped: needs a GPU (CUDA_VISIBLE_DEVICES hides every GPU)")
    assert not [o for o in gpu.outputs if o.get("output_type") == "error" or o.get("name") == "stderr"]
    assert text(anyway).strip() == "ran anyway"
