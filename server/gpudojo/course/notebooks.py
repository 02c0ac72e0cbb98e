"""Open as notebook: a lesson copied into the user's workspace as .ipynb (content/ untouched)."""

from __future__ import annotations

import platform
from pathlib import Path

from ..errors import Forbidden
from ..labkit.gpu_cells import magic_line
from .catalog import GPU_TAG
from .links import notebook_cells_without_product_links
from .models import NotebookCopy

WORKSPACE_FOLDER = "gpudojo-lessons"


def copy_lesson_as_notebook(lesson_path: Path, root_dir: Path, *, overwrite: bool = False) -> NotebookCopy:
    """Write the lesson as a notebook under root_dir/gpudojo-lessons/; keep an existing copy unless told."""
    import jupytext

    root = root_dir.resolve()
    target = (root / WORKSPACE_FOLDER / f"{lesson_path.stem}.ipynb").resolve()
    if not target.is_relative_to(root):  # gpudojo-lessons/ (or the copy) is a symlink out of the workspace
        where = f"{WORKSPACE_FOLDER}/{lesson_path.stem}.ipynb"
        raise Forbidden(f"{where} leads outside the server's root folder (a symlink?)", "outside_root")
    relative = target.relative_to(root).as_posix()
    if target.exists() and not overwrite:
        return NotebookCopy(path=relative, created=False)
    nb = jupytext.read(lesson_path, fmt="md:myst")
    nb.metadata.pop("jupytext", None)  # a plain notebook, not paired with the packaged file
    # Complete as JupyterLab would make it on opening (kernelspec, language_info), so that a
    # fresh copy opens unmodified.
    nb.metadata.setdefault(
        "kernelspec", {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    )
    nb.metadata["language_info"] = _python_language_info()
    cells = _with_expected_outputs(_guarded_gpu_cells(notebook_cells_without_product_links(nb.cells)))
    if any(_is_gpu_cell(c) for c in cells):
        # Before the first code cell: where the learner starts running.
        first_code = next((i for i, c in enumerate(cells) if c.cell_type == "code"), 0)
        cells.insert(first_code, _setup_cell())
    nb.cells = cells
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(jupytext.writes(nb, fmt="ipynb"), encoding="utf-8")
    tmp.replace(target)
    return NotebookCopy(path=relative, created=True)


def expected_output_label(extra: dict) -> str:
    """How a GPU cell's expected output is introduced: written from docs, or captured on a GPU."""
    gpus = extra.get("gpus") if isinstance(extra.get("gpus"), int) else 1
    needs = f"needs {gpus} GPUs" if gpus > 1 else "needs a GPU"
    on = extra.get("expected_on")
    if extra.get("expected_kind") == "captured":
        return f"The cell above {needs}. Output captured on {on or 'a GPU'}:"
    source = extra.get("expected_source")
    if extra.get("expected_kind") == "written" and source:
        what = f" for {on}" if on else ""
        return f"The cell above {needs}. Expected output{what}, written from {source}: no GPU ran this."
    return f"The cell above {needs}. Expected output on {on or 'a GPU'}:"


SETUP_TAG = "gpudojo-setup"
SETUP_SOURCE = (
    "# gpudojo: cells that need a GPU start with %%needs_gpu. Where this machine has too few GPUs\n"
    "# they print one line and leave their expected output to the note below them;\n"
    "# %%needs_gpu --run runs one anyway.\n"
    "%load_ext gpudojo\n"
    "%needs_gpu"
)


def _setup_cell():
    from nbformat.v4 import new_code_cell

    return new_code_cell(SETUP_SOURCE, metadata={"tags": [SETUP_TAG]})


def _is_gpu_cell(cell) -> bool:
    return cell.cell_type == "code" and GPU_TAG in cell.get("metadata", {}).get("tags", [])


def _gpus_of(cell) -> int:
    extra = cell.get("metadata", {}).get("gpudojo")
    gpus = extra.get("gpus") if isinstance(extra, dict) else None
    return gpus if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus >= 1 else 1


def _guarded_gpu_cells(cells: list) -> list:
    """Start each GPU cell with %%needs_gpu, and tag the multi-GPU ones needs-N-gpus."""
    for cell in cells:
        if not _is_gpu_cell(cell):
            continue
        gpus = _gpus_of(cell)
        cell.source = f"{magic_line(gpus)}\n{cell.source}"
        tags = list(cell.metadata.get("tags", []))
        if gpus > 1 and f"needs-{gpus}-gpus" not in tags:
            tags.append(f"needs-{gpus}-gpus")
        cell.metadata["tags"] = tags
    return cells


def _python_language_info() -> dict:
    """What ipykernel reports for this Python (the kernel the copy opens with)."""
    major = platform.python_version_tuple()[0]
    return {
        "codemirror_mode": {"name": "ipython", "version": int(major)},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": f"ipython{major}",
        "version": platform.python_version(),
    }


def _with_expected_outputs(cells: list) -> list:
    """Follow each GPU cell with a note of what it prints on a GPU, for learners without one."""
    from nbformat.v4 import new_markdown_cell

    out = []
    for cell in cells:
        out.append(cell)
        meta = cell.get("metadata", {})
        extra = meta.get("gpudojo") if isinstance(meta.get("gpudojo"), dict) else {}
        if cell.cell_type == "code" and GPU_TAG in meta.get("tags", []) and extra.get("expected_output"):
            fence = "````" if "```" in extra["expected_output"] else "```"
            note = f"*{expected_output_label(extra)}*\n\n{fence}text\n"
            note += f"{extra['expected_output'].rstrip()}\n{fence}"
            out.append(new_markdown_cell(note, metadata={"tags": ["gpudojo-expected-output"]}))
    return out
