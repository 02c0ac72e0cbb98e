"""Step 2: the GPU tests under pytest (test_kernels_gpu.py first, then the tests that take
another branch on a GPU), counted per file from pytest's JUnit XML."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from gpucheck.step import REPO, TESTS, Ctx, Result, run_cmd, skipped

# The tests that prove a GPU path, or take another branch on a GPU; files using
# `pytest.mark.gpu` are added to these when the step runs.
GPU_TEST_FILES = ("test_kernels_gpu.py",)
GPU_BRANCH_TEST_FILES = ("test_memory_capture.py", "test_labkit.py", "test_labs_scripts.py")


def gpu_test_files() -> list[str]:
    files = list(GPU_TEST_FILES) + list(GPU_BRANCH_TEST_FILES)
    for path in sorted(TESTS.glob("test_*.py")):
        if path.name not in files and "mark.gpu" in path.read_text(encoding="utf-8"):
            files.append(path.name)
    return [f for f in files if (TESTS / f).is_file()]


def junit_counts(path: Path) -> dict[str, dict[str, int]]:
    """Per test file: passed, failed, skipped (from pytest's JUnit XML)."""
    import xml.etree.ElementTree as ET

    per: dict[str, dict[str, int]] = {}
    if not path.is_file():
        return per
    for case in ET.parse(path).getroot().iter("testcase"):
        # classname is the test's module path, dotted ("tests.python.test_x" or "test_x.TestY")
        parts = (case.get("classname") or "").split(".")
        name = next((p for p in parts if p.startswith("test_")), parts[0]) + ".py"
        counts = per.setdefault(name, {"passed": 0, "failed": 0, "skipped": 0})
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return per


def step_tests(ctx: Ctx) -> Result:
    files = gpu_test_files()
    log = ctx.log / "tests.log"
    details: dict[str, Any] = {"files": files}
    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", "--rootdir", str(REPO)]
    if not ctx.gpu:
        rc, out = run_cmd([*pytest, "--collect-only", *(str(TESTS / f) for f in files)], ctx.left(), log, cwd=REPO)
        m = re.search(r"(\d+) tests? collected", out)
        details["collected"] = int(m.group(1)) if m else None
        return skipped(
            f"{details['collected']} tests in {', '.join(files)} collect (exit {rc}); on a GPU "
            f"{', '.join(GPU_TEST_FILES)} must pass, not skip",
            details,
            rc == 0,
        )
    results: dict[str, dict[str, int]] = {}
    codes = []
    for group, share in ((list(GPU_TEST_FILES), 0.6), ([f for f in files if f not in GPU_TEST_FILES], 1.0)):
        if not group:
            continue
        xml = ctx.work / f"junit-{len(codes)}.xml"
        limit = ctx.left() * share
        rc, _ = run_cmd(
            [*pytest, f"--junitxml={xml}", "--timeout=120", *(str(TESTS / f) for f in group)], limit, log, cwd=REPO
        )
        codes.append(rc)
        results.update(junit_counts(xml))
    details["results"] = results
    details["exit_codes"] = codes
    gpu_file = results.get(GPU_TEST_FILES[0][:-3] + ".py", {})
    totals = {k: sum(r[k] for r in results.values()) for k in ("passed", "failed", "skipped")}
    ok = all(c == 0 for c in codes) and gpu_file.get("passed", 0) >= 4 and not gpu_file.get("skipped")
    note = f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped; exit codes {codes}"
    if 124 in codes:
        note += " (a pytest run hit its time limit)"
    return ("passed" if ok else "failed"), note, details
