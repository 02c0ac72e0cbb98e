"""distributed-gpu-training's shortcuts: each is our solution with a few lines changed (the
change is asserted to have happened), checked through the exercise service as a learner's copy
would be. None may complete the exercise; the requirement that tests what the shortcut skips
must fail, saying why in the learner's terms, and the requirements it does not touch must still
pass (the shortcut is caught by the check meant for it, not by accident).

- a "resume" that never loads the checkpoint and trains again from step 0 with the same seed,
  printing only the steps after the checkpoint (the losses match an uninterrupted run's);
- the same replay after a torch.load whose result is thrown away;
- a resume where rank 0 alone loads and tells the others where to start;
- a scaling report of made-up figures that agree with each other, with and without the runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import shortcuts
from shortcuts import (
    assert_says,
    check,
    solution_copy,
)

from gpudojo.paths import material_root

EXERCISE = "distributed-gpu-training"
CONTENT = material_root("content")
SOLUTION = CONTENT / "exercises" / EXERCISE / "solution"
CPU_REQUIREMENTS = (
    "sharded-in-sync",
    "rank0-atomic-checkpoints",
    "resume-exact",
    "elastic-restart",
    "metrics-json",
    "scaling-report",
)

pytestmark = pytest.mark.timeout(900)


service = shortcuts.service  # the exercise service fixture these tests check through


@dataclass(frozen=True)
class Shortcut:
    file: str
    edits: tuple[tuple[str, str], ...]  # (text of our solution, what the shortcut puts there)
    fails: tuple[str, ...]  # the requirements that must catch it
    says: tuple[str, ...]  # what each of their messages must say (case-insensitive)


def learner_copy(tmp_path: Path, shortcut: Shortcut) -> Path:
    """Our solution with the shortcut's edits, each asserted to have happened."""
    return solution_copy(tmp_path, EXERCISE, shortcut.file, shortcut.edits)


LOAD = "        state = torch.load(ckpt, map_location=device, weights_only=True)\n"
RESTORE = """\
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, start_epoch, position = state["step"], state["epoch"], state["sampler_position"]
"""
# Train from step 0 again (same seed, same shuffle: the same losses), print only from the
# checkpoint's step on, so the output looks like a resume.
REPLAY_FROM = "    step, start_epoch, position = 0, 0, 0\n    replay_until = 0\n"
LOG_LATER = "            if rank == 0 and step >= replay_until:\n                log(\n"
THROUGHPUT = '                "samples_per_s": throughput(lines),\n'
MADE_UP = '                "samples_per_s": 5000.0 * n**0.9,\n'
NO_RUN = '        lines = [{"world_size": n, "epoch": 1, "samples_per_s": 0.0}]\n'
SHORTCUTS = {
    "replay-instead-of-resume": Shortcut(
        "ddp_train.py",
        (
            ("    step, start_epoch, position = 0, 0, 0\n", REPLAY_FROM),
            (LOAD, '        replay_until = int(ckpt.stem.split("_")[1])\n        state = {}\n'),
            (RESTORE, ""),
            ("            if rank == 0:\n                log(\n", LOG_LATER),
        ),
        fails=("resume-exact", "elastic-restart"),
        says=("never called torch.load", "not a resume"),
    ),
    "load-then-replay": Shortcut(
        "ddp_train.py",
        (
            ("    step, start_epoch, position = 0, 0, 0\n", REPLAY_FROM),
            (RESTORE, '        replay_until = state["step"]\n'),
            ("            if rank == 0:\n                log(\n", LOG_LATER),
        ),
        fails=("resume-exact", "elastic-restart"),
        says=("optimizer steps", "leaves", "instead of training the first steps again"),
    ),
    # Rank 0 loads and broadcasts where to start; rank 1 keeps its fresh model and optimizer
    # (DDP copies rank 0's weights when it wraps the model, but not Adam's moments).
    "resume-on-rank-0-only": Shortcut(
        "ddp_train.py",
        (
            ("    if ckpt is not None:\n        state = torch.load(",
             "    if ckpt is not None and rank == 0:\n        state = torch.load("),
            (
                "    dist.barrier()  # nobody trains (or overwrites checkpoints) before everyone has loaded\n",
                "    where = [step, start_epoch, position]\n"
                "    dist.broadcast_object_list(where, src=0)\n"
                "    step, start_epoch, position = where\n"
                "    dist.barrier()\n",
            ),
        ),
        fails=("resume-exact", "elastic-restart"),
        says=("rank 1 never called torch.load", "every rank must load"),
    ),
    # No runs at all: throughputs written into the report, speedup and efficiency consistent.
    "made-up-scaling-figures": Shortcut(
        "scaling.py",
        (
            ("        lines = run(n, args)\n", NO_RUN),
            (THROUGHPUT, MADE_UP),
        ),
        fails=("scaling-report",),
        says=("never launched ddp_train.py", "must come from a run it made"),
    ),
    # The runs are made, but the report's throughputs are written in, not read from them.
    "scaling-figures-not-from-the-runs": Shortcut(
        "scaling.py",
        ((THROUGHPUT, MADE_UP),),
        fails=("scaling-report",),
        says=("samples/s, but every metrics line that run printed", "does not count"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_shortcut_does_not_complete_the_exercise(service, tmp_path, name):
    shortcut = SHORTCUTS[name]
    attempt, outcomes, report = check(service, EXERCISE, learner_copy(tmp_path, shortcut), timeout_s=900)
    for req in CPU_REQUIREMENTS:
        assert outcomes[req] == ("failed" if req in shortcut.fails else "passed"), report
    for req in shortcut.fails:
        assert_says(attempt, req, shortcut.says)
