"""What differs between the runs two compared traces came from: their parameters, lab or
script, mode (GPU or CPU fallback), machine and process count, in words a learner reads
("max_batch 4 → 8"), so a profile diff says what changed rather than which run ids.

Pure functions over runs (no store, no HTTP): the diff route looks the runs up and hands
them here.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import NotFound
from ..runs.models import ParamValue, Run
from .models import ProfileDiff, RunDifference, RunFacts

NONE = "—"
MODE_WORDS = {"gpu": "GPU", "cpu": "CPU fallback"}


def run_id_of(trace_id: str) -> str | None:
    """The run of a trace id ('run:<run>:<file>' or 'run:<run>:*'); None for a file trace."""
    if not trace_id.startswith("run:"):
        return None
    parts = trace_id.split(":", 2)
    return parts[1] if len(parts) == 3 and parts[1] else None


def run_facts(run: Run) -> RunFacts:
    return RunFacts(id=run.id, title=run.title, lab=run.lab, created_at=run.created_at, device_mode=run.device_mode)


def param_words(value: ParamValue | None) -> str:
    """A parameter's value as the run form shows it: 'yes'/'no' for a switch, numbers as typed."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def machine_words(run: Run) -> str:
    """Where a run ran: 'this machine', or the engine and its nodes ('slurm on gpu01, gpu02')."""
    names = sorted({n.name for n in run.nodes if n.name})
    if run.engine == "local" and len(names) <= 1:
        return "this machine"
    return f"{run.engine} on {', '.join(names)}" if names else str(run.engine)


def run_changes(a: Run, b: Run) -> list[RunDifference]:
    """How run b differs from run a: what it ran (lab or script), each parameter whose value
    differs (in a's order, then b's new ones), the mode, the machine and the process count."""
    changes: list[RunDifference] = []

    def differ(key: str, label: str, before: str, after: str) -> None:
        if before != after:
            changes.append(RunDifference(key=key, label=label, a=before, b=after))

    differ("lab", "lab", a.lab or NONE, b.lab or NONE)
    differ("script", "script", a.script_path or NONE, b.script_path or NONE)
    for name in [*a.params, *(n for n in b.params if n not in a.params)]:
        differ(f"param:{name}", name, param_words(a.params.get(name)), param_words(b.params.get(name)))
    if a.script_args != b.script_args:
        differ("param:args", "arguments", " ".join(a.script_args) or NONE, " ".join(b.script_args) or NONE)
    differ("mode", "mode", MODE_WORDS[a.device_mode], MODE_WORDS[b.device_mode])
    differ("machine", "machine", machine_words(a), machine_words(b))
    differ("processes", "processes", f"{a.nnodes * a.nproc}", f"{b.nnodes * b.nproc}")
    return changes


def with_runs(diff: ProfileDiff, get_run: Callable[[str], Run]) -> ProfileDiff:
    """`diff` with the runs of its two traces and what differs between them; a trace file of
    the workspace has no run, nor has one whose run is gone (`get_run` raised NotFound)."""

    def find(trace_id: str) -> Run | None:
        run_id = run_id_of(trace_id)
        try:
            return get_run(run_id) if run_id else None
        except NotFound:
            return None  # the run was deleted: its trace still compares

    a, b = find(diff.a), find(diff.b)
    return diff.model_copy(
        update={
            "a_run": run_facts(a) if a else None,
            "b_run": run_facts(b) if b else None,
            "changes": run_changes(a, b) if a and b and a.id != b.id else [],
        }
    )
