"""Step 6: every lesson with GPU cells run in a fresh kernel in its folder, all lessons side by
side, one GPU cell at a time across them; each GPU cell's output kept."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gpucheck.lesson_cells import cell_output, cell_record, gpu_cells, gpus_needed
from gpucheck.step import ENTRY, LESSONS, Ctx, Result, run_cmd, skipped


def execute_lesson(
    path: Path, gpus: int, timeout: int, partial: Path | None = None, gpu_lock: Path | None = None
) -> dict[str, Any]:
    """Run the lesson the way lesson_runner does (fresh kernel in the lesson's folder), leaving
    out GPU cells that need more GPUs than there are; keep going past errors. Each GPU cell's
    record is also appended to ``partial`` as it finishes, in case the lesson runs out of time.
    With ``gpu_lock`` (a file every lesson process shares) GPU cells run one at a time across
    lessons, so the timings they print are not shared with another lesson's GPU work; the CPU
    cells of all lessons run side by side."""
    import fcntl

    import jupytext
    from nbclient import NotebookClient

    nb = jupytext.read(path, fmt="md:myst")
    listed = gpu_cells(path)
    keep = [i for i, c in enumerate(nb.cells) if gpus_needed(c) <= gpus]
    index_map = {old: new for new, old in enumerate(keep)}
    original = {new: old for old, new in index_map.items()}
    nb.cells = [nb.cells[i] for i in keep]

    lock = open(gpu_lock, "a") if gpu_lock is not None else None  # noqa: SIM115 (held for the run)

    def on_cell_execute(cell: Any, cell_index: int, **_: Any) -> None:
        if lock is not None and gpus_needed(cell):
            fcntl.flock(lock, fcntl.LOCK_EX)

    def on_cell_executed(cell: Any, cell_index: int, **_: Any) -> None:
        if not gpus_needed(cell):
            return
        if partial is not None:
            with open(partial, "a", encoding="utf-8") as f:
                f.write(json.dumps({"index": original[cell_index], **cell_record(cell)}) + "\n")
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_UN)

    t0 = time.perf_counter()
    problem = None
    try:
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
            allow_errors=True,
            on_cell_execute=on_cell_execute,
            on_cell_executed=on_cell_executed,
        ).execute()
    except Exception as err:  # a cell past its timeout, or a dead kernel
        problem = f"{type(err).__name__}: {str(err)[:300]}"
    cpu_errors = []
    for cell in nb.cells:
        if cell.cell_type == "code" and not gpus_needed(cell):
            _, err, _ = cell_output(cell)
            if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                cpu_errors.append(err.strip()[:200])
    for c in listed:
        if c["index"] not in index_map:
            c["status"] = "skipped"
            c["why"] = f"needs {c['gpus']} GPUs, this machine has {gpus}"
            continue
        c.update(cell_record(nb.cells[index_map[c["index"]]]))
    return {
        "lesson": path.name,
        "seconds": round(time.perf_counter() - t0, 1),
        "problem": problem,
        "cpu_cell_errors": cpu_errors,
        "cells": listed,
    }


def step_lessons(ctx: Ctx) -> Result:
    lessons = sorted(p for p in LESSONS.glob("[0-9]*.md") if gpu_cells(p))
    if not ctx.gpu:
        cells = [c for p in lessons for c in gpu_cells(p)]
        for c in cells:
            c["status"] = "skipped"
            c["why"] = "no GPU"
        doc = {"gpu": None, "date": None, "lessons": [{"lesson": p.name} for p in lessons], "cells": cells}
        (ctx.work / "cells.json").write_text(json.dumps(doc, indent=1))
        by = ", ".join(f"{p.name} {sum(c['lesson'] == p.name for c in cells)}" for p in lessons)
        return skipped(f"{len(cells)} GPU cells listed in {len(lessons)} lessons ({by})", {"cells": len(cells)})
    env = json.loads((ctx.work / "environment.json").read_text())
    gpus = int(env.get("gpus") or 0)

    def one(path: Path) -> dict[str, Any]:
        limit = ctx.left()
        partial = ctx.log / f"lesson-{path.stem}.partial.jsonl"
        argv = [sys.executable, str(ENTRY), "--lesson", str(path), "--gpus", str(gpus)]
        argv += ["--cell-timeout", str(max(int(limit) - 5, 20)), "--partial", str(partial)]
        argv += ["--gpu-lock", str(ctx.work / "gpu-cells.lock")]
        code, out = run_cmd(argv, limit, ctx.log / f"lesson-{path.stem}.log")
        try:
            return json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            # Out of time or crashed: the cells that finished are in the partial file.
            done = {}
            if partial.is_file():
                for line in partial.read_text().splitlines():
                    rec = json.loads(line)
                    done[rec.pop("index")] = rec
            cells = gpu_cells(path)
            for c in cells:
                if c["index"] in done:
                    c.update(done[c["index"]])
                else:
                    c["status"] = "not run"
                    c["why"] = f"the lesson's process ended with exit {code} before this cell"
            return {"lesson": path.name, "problem": f"exit {code}", "cells": cells, "cpu_cell_errors": []}

    with ThreadPoolExecutor(max_workers=max(len(lessons), 1)) as pool:
        results = list(pool.map(one, lessons))
    cells = [c for r in results for c in r["cells"]]
    doc = {
        "gpu": env.get("gpu_name"),
        "gpus": gpus,
        "date": dt.date.today().isoformat(),
        "lessons": [{k: v for k, v in r.items() if k != "cells"} for r in results],
        "cells": cells,
    }
    (ctx.work / "cells.json").write_text(json.dumps(doc, indent=1))
    counts = {s: sum(c["status"] == s for c in cells) for s in ("ok", "error", "skipped", "not run")}
    cpu_errors = sum(len(r.get("cpu_cell_errors", [])) for r in results)
    note = ", ".join(f"{n} {s}" for s, n in counts.items() if n) + f" of {len(cells)} GPU cells"
    if cpu_errors:
        note += f"; {cpu_errors} CPU cells raised"
    ok = counts["error"] == 0 and counts["not run"] == 0 and counts["ok"] > 0
    return ("passed" if ok else "failed"), note, {"counts": counts, "lessons": doc["lessons"]}
