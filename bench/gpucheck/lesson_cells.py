"""A lesson's GPU cells (tagged needs-gpu) and what one did when it ran: what the lessons step
captures and what bench/gpu_check_import.py writes back into the lesson."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

GPU_TAG = "needs-gpu"


def sha(text: str) -> str:
    """A cell source's hash: the importer writes a captured output only where it still matches."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_gpu_cell_meta(meta: Any) -> bool:
    """Whether a code cell's metadata tags it needs-gpu."""
    return GPU_TAG in (meta.get("tags") or [])


def gpudojo_block(meta: Any) -> dict[str, Any]:
    """The cell's `gpudojo:` metadata block, or a new empty one."""
    block = meta.get("gpudojo")
    return block if isinstance(block, dict) else {}


def gpus_needed(cell: Any) -> int:
    """0 for a CPU cell; the `gpus:` of a needs-gpu cell's gpudojo block (default 1)."""
    meta = cell.get("metadata", {})
    if cell.get("cell_type") != "code" or not is_gpu_cell_meta(meta):
        return 0
    extra = gpudojo_block(meta)
    gpus = extra.get("gpus", 1)
    return gpus if isinstance(gpus, int) and gpus >= 1 else 1


def gpu_cells(path: Path) -> list[dict[str, Any]]:
    """The lesson's needs-gpu cells: ordinal among them, notebook index, GPUs, source hash."""
    import jupytext

    nb = jupytext.read(path, fmt="md:myst")
    cells = []
    for index, cell in enumerate(nb.cells):
        need = gpus_needed(cell)
        if need:
            extra = gpudojo_block(cell.metadata)
            cells.append(
                {
                    "lesson": path.name,
                    "ordinal": len(cells),
                    "index": index,
                    "gpus": need,
                    "source_sha": sha(cell.source),
                    "first_line": next((ln for ln in cell.source.splitlines() if ln.strip()), "")[:80],
                    "expected_kind": extra.get("expected_kind"),
                    "expected_on": extra.get("expected_on"),
                }
            )
    return cells


def cell_output(cell: Any) -> tuple[str, str, list[str]]:
    """(what the cell printed and returned as text, its stderr, other output kinds)."""
    out, err, other = [], [], []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            (out if o.get("name") == "stdout" else err).append(o.get("text", ""))
        elif o.get("output_type") in ("execute_result", "display_data"):
            data = o.get("data", {})
            if "text/plain" in data and o["output_type"] == "execute_result":
                out.append(data["text/plain"] + "\n")
            other += [k for k in data if k != "text/plain"]
        elif o.get("output_type") == "error":
            err.append(f"{o.get('ename')}: {o.get('evalue')}\n")
    return "".join(out), "".join(err), sorted(set(other))


def cell_record(cell: Any) -> dict[str, Any]:
    """What a GPU cell did: ok / error / not run, its output, stderr and other output kinds."""
    out, err, other = cell_output(cell)
    errored = any(o.get("output_type") == "error" for o in cell.get("outputs", []))
    ran = cell.get("execution_count") is not None
    timing = cell.metadata.get("execution", {})
    return {
        "status": "error" if errored else ("ok" if ran else "not run"),
        "output": out,
        "stderr": err[-2000:],
        "other_outputs": other,
        "execution": {k: timing.get(k) for k in ("iopub.execute_input", "shell.execute_reply")},
    }
