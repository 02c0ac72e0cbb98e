"""Learner.drive: the check's driver imports the learner's modules, and nothing the learner
plants in its folder replaces a module the driver imports."""

from __future__ import annotations

import json

from gpudojo.worker.checkkit import Learner


def test_a_module_planted_in_the_learners_folder_shadows_nothing_the_driver_imports(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    # What a learner could plant to fake the figures a driver computes, or to run code of its own
    # before the driver has taken its clock.
    (work / "statistics.py").write_text("def median(xs):\n    return 42\n")
    (work / "json.py").write_text("raise SystemExit('the planted json.py was imported')\n")
    (work / "mine.py").write_text("import statistics\n\nVALUE = statistics.median([1, 2, 3])\n")
    learner = Learner(work, tmp_path / "scratch", gpus=0)
    res = learner.drive(
        "import json, statistics, sys\nimport mine\nprint(json.dumps([statistics.median([1, 5, 9]), mine.VALUE]))\n"
        "print(json.dumps([p for p in sys.path if p]))\n",
        timeout_s=60,
    )
    assert res.returncode == 0, res.stderr
    first, path = res.stdout.splitlines()[:2]
    assert json.loads(first) == [5, 2]  # the learner's own module imports, beside the real statistics
    assert json.loads(path)[-1] == str(work)  # the learner's folder comes last
