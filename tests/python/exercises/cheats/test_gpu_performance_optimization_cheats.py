"""gpu-performance-optimization's shortcuts: each is our solution with a few lines changed (the
change is asserted to have happened), checked through the exercise service as a learner's copy
would be. None may complete the exercise; the requirement that tests what the shortcut skips
must fail, saying why in the learner's terms.

- the clock replaced from the learner's module (time.perf_counter slowed down, the way a module
  that reaches the driver through `import __main__` would have replaced its clock before);
- the timed runs special-cased: the documented size (8192) trains fully, any other size on half
  of its samples (the check's sizes are drawn per attempt, so the timed runs see other sizes);
- samples skipped: one pass over half the data;
- the loop reordered: a slow DataLoader kept (each sample costs time to build), but the next
  batch fetched just before opt.step(), so the gap from a step to the next forward vanishes.

Two more start from the untouched starter, whose speed-up is about 1.0x:
- made-up figures: train.py --json prints a throughput a thousand times the real one (what a
  learner prints is information; the check's driver measures);
- the starter slowed down: train() leaves two processes running in sessions of their own, idle
  until the learner's program ends and busy-looping after, meant to be still running while the
  starter's next timed run is measured (starter and learner take turns, each in a fresh sandbox,
  so nothing the learner starts outlives its turn).
"""

from __future__ import annotations

import subprocess
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

EXERCISE = "gpu-performance-optimization"
CONTENT = material_root("content")
SOLUTION = CONTENT / "exercises" / EXERCISE / "solution"

pytestmark = pytest.mark.timeout(600)


service = shortcuts.service  # the exercise service fixture these tests check through


@dataclass(frozen=True)
class Shortcut:
    edits: tuple[tuple[str, str], ...]  # (text of our solution, what the shortcut puts there)
    fails: str  # the requirement that must catch it
    says: tuple[str, ...]  # what its message must say (case-insensitive)
    start: str = "solution"  # or "starters": the untouched starter with the edits


def learner_copy(tmp_path: Path, shortcut: Shortcut) -> Path:
    """Our solution (or the starter) with the shortcut's edits, each asserted to have happened."""
    return solution_copy(tmp_path, EXERCISE, "train.py", shortcut.edits, start=shortcut.start)


IMPORTS = "import time\n\nimport torch\n"
LOOP = "    for i in range(0, samples, BATCH_SIZE):\n"
SLOW_LOADER = """    from torch.utils.data import DataLoader, TensorDataset

    class Slow(TensorDataset):
        def __getitem__(self, i):
            time.sleep(0.0002)  # a sample that is slow to build
            return super().__getitem__(i)

    batches = iter(DataLoader(Slow(x, y), batch_size=BATCH_SIZE))
    xb, yb = next(batches)
"""
FETCH_FIRST = """        ahead = next(batches, None)  # the next batch, fetched before the step
        opt.step()
        if ahead is not None:
            xb, yb = ahead
"""
# What the left processes run: idle while the learner's program lives (so the learner's own
# timed run is not slowed), then a busy loop, meant for the starter's turn that comes next.
LEFT_BEHIND = "import os, time\np = os.getppid()\nwhile os.getppid() == p:\n    time.sleep(0.05)\nwhile True: pass"
SHORTCUTS = {
    "slowed-clock": Shortcut(
        (
            (
                IMPORTS,
                IMPORTS + "import __main__\n\n_real = time.perf_counter\ntime.perf_counter = lambda: _real() / 4\n"
                "__main__.now = time.perf_counter\n",
            ),
        ),
        fails="faster",
        says=("replaced what the check measures", "perf_counter"),
    ),
    "special-cased-size": Shortcut(
        ((LOOP, "    for i in range(0, samples if samples == 8192 else samples // 2, BATCH_SIZE):\n"),),
        fails="faster",
        says=("samples", "at random"),
    ),
    "skipped-samples": Shortcut(
        ((LOOP, "    for i in range(0, samples, 2 * BATCH_SIZE):\n"),),
        fails="same-learning",
        says=("trained the model on", "samples it was asked for"),
    ),
    "reordered-loop": Shortcut(
        (
            (LOOP, SLOW_LOADER + LOOP),
            ("        idx = order[i : i + BATCH_SIZE]\n        xb, yb = x[idx], y[idx]\n", ""),
            ("        opt.step()\n", FETCH_FIRST),
        ),
        fails="loader",
        says=("inside the DataLoader's iterator", "wherever in the loop"),
    ),
    "made-up-json-on-the-starter": Shortcut(
        (
            (
                "        print(json.dumps(metrics))\n",
                '        print(json.dumps({**metrics, "samples_per_s": 1000 * metrics["samples_per_s"]}))\n',
            ),
        ),
        fails="faster",
        says=("needs >= 2", "x"),
        start="starters",
    ),
    "starter-slowed-by-left-processes": Shortcut(
        (
            (
                "    dev = pick_device(device)\n    t_start = time.perf_counter()\n",
                "    import subprocess\n\n"
                "    for _ in range(2):  # busy loops in sessions of their own, left running\n"
                '        subprocess.Popen([sys.executable, "-c", LEFT_BEHIND], start_new_session=True)\n'
                "    dev = pick_device(device)\n    t_start = time.perf_counter()\n",
            ),
            ("import torch\n", f"import torch\n\nLEFT_BEHIND = {LEFT_BEHIND!r}\n"),
        ),
        fails="faster",
        says=("needs >= 2",),
        start="starters",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_shortcut_does_not_complete_the_exercise(service, tmp_path, name):
    shortcut = SHORTCUTS[name]
    attempt, outcomes, report = check(service, EXERCISE, learner_copy(tmp_path, shortcut), timeout_s=600)
    assert outcomes[shortcut.fails] == "failed", report
    assert_says(attempt, shortcut.fails, shortcut.says)
    if shortcut.start == "starters":  # the starter against itself, whatever it prints or leaves behind
        faster = next(r for r in attempt.results if r.id == "faster")
        speedup = next(f.value for f in faster.figures if f.name == "speedup (CPU)")
        assert speedup < 1.3, report
    left = subprocess.run(["pgrep", "-f", "while True: pass"], capture_output=True, text=True).stdout
    assert not left.strip(), f"processes the learner's code started outlived the check: {left}"
