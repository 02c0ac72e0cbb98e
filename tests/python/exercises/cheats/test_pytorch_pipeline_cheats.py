"""pytorch-pipeline's shortcuts: each is our solution with a few lines changed (the change is
asserted to have happened), checked through the exercise service as a learner's copy would be.
None may complete the exercise; the requirement that tests what the shortcut skips must fail,
saying why in the learner's terms, and the requirements it does not touch must still pass.

- a "resume" that never loads the checkpoint: it notes the step beside it, trains again from
  step 0 with the same seed and prints only the later steps (the losses match an uninterrupted
  run's, which is all the check compared before);
- the same replay after a torch.load of the checkpoint whose result is thrown away.
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

EXERCISE = "pytorch-pipeline"
CONTENT = material_root("content")
SOLUTION = CONTENT / "exercises" / EXERCISE / "solution"
CPU_REQUIREMENTS = (
    "loader-workers-pinned",
    "bf16-autocast-cpu",
    "grad-accumulation",
    "lr-schedule",
    "checkpoint-resume",
    "metrics-json",
)

pytestmark = pytest.mark.timeout(600)


service = shortcuts.service  # the exercise service fixture these tests check through


@dataclass(frozen=True)
class Shortcut:
    file: str
    edits: tuple[tuple[str, str], ...]  # (text of our solution, what the shortcut puts there)
    fails: str  # the requirement that must catch it
    says: tuple[str, ...]  # what its message must say (case-insensitive)


def learner_copy(tmp_path: Path, shortcut: Shortcut) -> Path:
    """Our solution with the shortcut's edits, each asserted to have happened."""
    return solution_copy(tmp_path, EXERCISE, shortcut.file, shortcut.edits)


LOAD = '        start = load_checkpoint(ckpt, model, optimizer, scheduler, scaler, device)["step"]\n'
LOG_LATER = "        if step >= replay_until:\n            log(record)\n            records.append(record)\n"
NOTE_STEP = '    os.replace(tmp, path)\n    path.with_suffix(".step").write_text(str(step))\n'
SHORTCUTS = {
    "replay-instead-of-resume": Shortcut(
        "pipeline.py",
        (
            ("    os.replace(tmp, path)\n", NOTE_STEP),
            ("    start = 0\n", "    start = replay_until = 0\n"),
            (LOAD, '        replay_until = int(ckpt.with_suffix(".step").read_text())\n'),
            ("        log(record)\n        records.append(record)\n", LOG_LATER),
        ),
        fails="checkpoint-resume",
        says=("never called torch.load", "not a resume"),
    ),
    "load-then-replay": Shortcut(
        "pipeline.py",
        (
            ("    start = 0\n", "    start = replay_until = 0\n"),
            (LOAD, '        replay_until = torch.load(ckpt, weights_only=True)["step"]\n'),
            ("        log(record)\n        records.append(record)\n", LOG_LATER),
        ),
        fails="checkpoint-resume",
        says=("optimizer steps", "leaves 6", "instead of training the first steps again"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_shortcut_does_not_complete_the_exercise(service, tmp_path, name):
    shortcut = SHORTCUTS[name]
    attempt, outcomes, report = check(service, EXERCISE, learner_copy(tmp_path, shortcut), timeout_s=600)
    for req in CPU_REQUIREMENTS:
        assert outcomes[req] == ("failed" if req == shortcut.fails else "passed"), report
    assert_says(attempt, shortcut.fails, shortcut.says)
