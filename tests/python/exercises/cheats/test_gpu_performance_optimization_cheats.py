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
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpudojo.course.catalog import CourseCatalog
from gpudojo.course.exercises import ExerciseService
from gpudojo.course.progress import ProgressStore
from gpudojo.paths import material_root

EXERCISE = "gpu-performance-optimization"
CONTENT = material_root("content")
SOLUTION = CONTENT / "exercises" / EXERCISE / "solution"

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("perf-cheats")
    store = ProgressStore(tmp / "gpudojo.sqlite3")
    svc = ExerciseService(CourseCatalog(CONTENT, material_root("labs")), store, tmp / "root", tmp / "checks")
    yield svc
    svc.close()
    store.close()


@dataclass(frozen=True)
class Shortcut:
    edits: tuple[tuple[str, str], ...]  # (text of our solution, what the shortcut puts there)
    fails: str  # the requirement that must catch it
    says: tuple[str, ...]  # what its message must say (case-insensitive)


def learner_copy(tmp_path: Path, shortcut: Shortcut) -> Path:
    """Our solution with the shortcut's edits, each asserted to have happened."""
    folder = tmp_path / "learner"
    shutil.copytree(SOLUTION, folder)
    path = folder / "train.py"
    text = path.read_text(encoding="utf-8")
    for old, new in shortcut.edits:
        assert text.count(old) == 1, f"train.py of our solution no longer holds {old!r}"
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return folder


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
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_shortcut_does_not_complete_the_exercise(service, tmp_path, name):
    shortcut = SHORTCUTS[name]
    folder = learner_copy(tmp_path, shortcut)
    service.check("cheater", EXERCISE, 0, folder=folder)
    attempt = service.wait("cheater", EXERCISE, timeout_s=600)
    assert attempt.status == "done", attempt.error
    report = "\n".join(f"{r.id}: {r.outcome}: {r.message}" for r in attempt.results)
    outcomes = {r.id: r.outcome for r in attempt.results}
    assert not attempt.completed, report
    assert outcomes[shortcut.fails] == "failed", report
    message = next(r.message for r in attempt.results if r.id == shortcut.fails)
    for phrase in shortcut.says:
        assert phrase.lower() in message.lower(), f"{shortcut.fails}: {message!r} does not say {phrase!r}"
