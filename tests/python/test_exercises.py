"""The exercise engine: start, hidden checks in a child, per-requirement results, limits,
progress, the REST routes and the CLI. The course's own exercises are checked against
their solutions and starters in test_exercise_content.py."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from exercise_toy import TOY, TOY_CONTENT, check, outcomes, write_learner
from gpudojo.cli import main as cli_main
from gpudojo.course.catalog import CourseCatalog
from gpudojo.errors import Conflict, NotFound


def test_start_copies_starters_and_readme_and_keeps_an_existing_copy(service):
    first = service.start("ada", "toy-sum")
    ws = first.workspace
    assert first.created and ws.exists and ws.path == "gpudojo-exercises/toy-sum"
    assert ws.main == "gpudojo-exercises/toy-sum/summer.py"
    assert set(ws.files) == {"README.md", "summer.py"}
    mine = service.root_dir / ws.main
    mine.write_text("# my work\n")
    again = service.start("ada", "toy-sum")
    assert not again.created and mine.read_text() == "# my work\n"
    assert service.store.entry("ada", "exercise", "toy-sum").status == "in_progress"


def test_reset_keeps_the_old_copy_beside_the_new_one(service):
    service.start("ada", "toy-sum")
    mine = service.root_dir / "gpudojo-exercises/toy-sum/summer.py"
    mine.write_text("# my work\n")
    reset = service.start("ada", "toy-sum", reset=True)
    assert reset.created and reset.kept_as and reset.kept_as.startswith("gpudojo-exercises/toy-sum.old-")
    assert (service.root_dir / reset.kept_as / "summer.py").read_text() == "# my work\n"
    assert mine.read_text() == (TOY / "starters" / "summer.py").read_text()


def test_the_hidden_checks_are_not_in_the_workspace(service):
    ws = service.start("ada", "toy-sum").workspace
    folder = service.root_dir / ws.path
    names = {p.name for p in folder.rglob("*")}
    assert "checks" not in names and not any(n.startswith("test_") for n in names)
    assert "solution" not in names


def test_solution_passes_every_applicable_requirement_and_completes(service):
    attempt = check(service, folder=TOY / "solution")
    assert outcomes(attempt) == {"sums": "passed", "cli": "passed", "on-gpu": "skipped"}
    assert attempt.status == "done" and attempt.completed and attempt.mode == "cpu"
    assert (attempt.passed, attempt.applicable) == (2, 2)
    skipped = next(r for r in attempt.results if r.id == "on-gpu")
    assert "needs an NVIDIA GPU" in skipped.message
    figures = {f.name: f.value for r in attempt.results for f in r.figures}
    assert figures["exit code"] == 0
    # A check of another folder (an author's solution) is not the learner's attempt.
    assert service.store.last_check("ada", "toy-sum") is None


def test_the_learners_copy_is_checked_and_the_result_stored(service):
    service.start("ada", "toy-sum")
    attempt = check(service)
    assert outcomes(attempt) == {"sums": "failed", "cli": "failed", "on-gpu": "skipped"}
    sums = next(r for r in attempt.results if r.id == "sums")
    assert "returned 0; the sum is" in sums.message
    assert not attempt.completed
    assert service.store.last_check("ada", "toy-sum").id == attempt.id
    assert service.store.entry("ada", "exercise", "toy-sum").status == "in_progress"

    shutil.copy(TOY / "solution" / "summer.py", service.root_dir / "gpudojo-exercises/toy-sum/summer.py")
    done = check(service)
    assert done.completed
    assert service.store.entry("ada", "exercise", "toy-sum").status == "completed"
    history = service.store.check_history("ada", "toy-sum")
    assert [h.id for h in history] == [done.id, attempt.id] and history[0].completed
    # A later failing attempt never undoes the completion.
    write_learner(service, "def total(xs):\n    return -1\n")
    check(service)
    assert service.store.entry("ada", "exercise", "toy-sum").status == "completed"


def test_with_a_gpu_the_gpu_requirement_is_applicable(service):
    attempt = check(service, gpus=1, folder=TOY / "solution")
    assert attempt.mode == "gpu" and outcomes(attempt)["on-gpu"] == "passed"
    assert attempt.applicable == 3


def test_a_learner_program_that_loops_forever_is_stopped_with_a_clear_result(service):
    write_learner(service, "def total(xs):\n    while True:\n        pass\n")
    t0 = time.monotonic()
    attempt = check(service)
    sums = next(r for r in attempt.results if r.id == "sums")
    assert sums.outcome == "failed" and "ran longer than 10 s and was stopped" in sums.message
    assert attempt.status == "done"  # the other requirements were still checked
    assert time.monotonic() - t0 < 60


def test_a_learner_program_printing_a_gigabyte_is_stopped(service):
    write_learner(
        service,
        "import sys\n"
        "def total(xs):\n"
        "    line = 'x' * 65535 + '\\n'\n"
        "    for _ in range(16384):\n"  # 1 GiB, if nobody stopped it
        "        sys.stdout.write(line)\n"
        "    return sum(xs)\n",
    )
    attempt = check(service)
    sums = next(r for r in attempt.results if r.id == "sums")
    assert sums.outcome == "failed" and "printed more than 1 MiB and was stopped" in sums.message


def test_the_whole_check_stops_at_the_time_limit(service, content, monkeypatch):
    manifest = content / "exercises" / "toy-sum" / "exercise.toml"
    manifest.write_text(manifest.read_text().replace("time_limit_s = 30", "time_limit_s = 10"))
    service.catalog.recheck_s = 0
    # The toy check gives each program this long: longer than the whole check's limit.
    monkeypatch.setenv("TOY_RUN_TIMEOUT_S", "600")
    write_learner(service, "import time\ndef total(xs):\n    time.sleep(3600)\n")
    t0 = time.monotonic()
    attempt = check(service)
    assert time.monotonic() - t0 < 40
    assert attempt.status == "error" and "time limit of 10 s" in attempt.error
    sums = next(r for r in attempt.results if r.id == "sums")
    assert sums.outcome == "failed" and sums.message.startswith("Not checked:")
    assert not attempt.completed
    # No process of the check is left.
    assert not list((service.scratch_root).glob("*"))


def test_a_learner_program_cannot_find_the_checks_from_where_it_runs(service):
    """It runs in a scratch copy: nothing under its folder, its HOME, TMPDIR, its
    arguments or environment names the checks or the results file."""
    write_learner(
        service,
        "import os, json, sys\n"
        "def total(xs):\n"
        "    seen = []\n"
        "    for top in {os.getcwd(), os.path.dirname(os.getcwd()), os.environ['HOME'], os.environ['TMPDIR']}:\n"
        "        for d, _, files in os.walk(top):\n"
        "            seen += [os.path.join(d, f) for f in files]\n"
        "    leaks = [s for s in seen + sys.argv + list(os.environ.values())\n"
        "             if 'test_toy_sum' in s or 'results.jsonl' in s or 'checks' in s.split(os.sep)]\n"
        "    return len(leaks)\n",
    )
    attempt = check(service)
    sums = next(r for r in attempt.results if r.id == "sums")
    assert "returned 0;" in sums.message  # no leak found (0), which is not the sum


def test_a_broken_check_is_an_error_not_a_crash(service, content):
    checks = content / "exercises" / "toy-sum" / "checks"
    (checks / "test_toy_sum.py").write_text("import this_module_does_not_exist\n")
    attempt = check(service, folder=TOY / "solution")
    assert attempt.status == "error" and "could not run" in attempt.error
    assert all(r.outcome == "failed" for r in attempt.results)


def test_an_attempt_is_completed_only_when_pytest_itself_passed(service, content):
    """Every requirement's test passed, but a fixture's teardown failed: pytest exits 1,
    and the attempt is not completed."""
    checks = content / "exercises" / "toy-sum" / "checks"
    (checks / "conftest.py").write_text(
        "import pytest\n\n"
        "@pytest.fixture(autouse=True)\ndef broken_teardown():\n    yield\n    raise RuntimeError('x')\n"
    )
    attempt = check(service, folder=TOY / "solution")
    assert outcomes(attempt) == {"sums": "passed", "cli": "passed", "on-gpu": "skipped"}
    assert attempt.status == "error" and "failed outside the requirements (pytest exit 1)" in attempt.error
    assert not attempt.completed


def test_the_checks_run_from_a_read_only_copy_and_the_content_is_left_as_it_was(service, content, monkeypatch):
    checks = content / "exercises" / "toy-sum" / "checks"
    where = service.root_dir.parent / "where.json"
    monkeypatch.setenv("TOY_WHERE", str(where))
    (checks / "conftest.py").write_text(
        "import json, os, stat\nfrom pathlib import Path\n\n"
        "here = Path(__file__).resolve()\n"
        "Path(os.environ['TOY_WHERE']).write_text(json.dumps({'file': str(here), 'cwd': os.getcwd(),\n"
        "    'file_mode': stat.S_IMODE(here.stat().st_mode), 'dir_mode': stat.S_IMODE(here.parent.stat().st_mode)}))\n"
    )
    before = sorted(p.relative_to(content) for p in content.rglob("*"))
    attempt = check(service, folder=TOY / "solution")
    assert attempt.completed
    seen = json.loads(where.read_text())
    control = Path(seen["file"]).parents[1]
    assert control.parent == service.scratch_root.resolve() and control.name.startswith(f".{attempt.id}-")
    assert seen["cwd"] == str(control)  # not the scratch folder, where a learner program may write
    assert (seen["file_mode"], seen["dir_mode"]) == (0o400, 0o500)
    assert sorted(p.relative_to(content) for p in content.rglob("*")) == before  # no __pycache__, nothing planted
    assert not control.exists()


def test_refusals(service):
    with pytest.raises(NotFound):
        service.start("ada", "no-such-exercise")
    with pytest.raises(Conflict, match="Start copies the starters"):
        service.check("ada", "toy-sum", 0)
    service.start("ada", "toy-sum")
    service.check("ada", "toy-sum", 0)
    with pytest.raises(Conflict, match="already running"):
        service.check("ada", "toy-sum", 0)
    service.wait("ada", "toy-sum", timeout_s=60)


def test_the_catalog_loads_exercise_manifests_with_their_problems(tmp_path, content):
    bad = content / "exercises" / "bad"
    bad.mkdir()
    (bad / "exercise.toml").write_text('id = "bad"\ntitle = "Bad"\norder = 2\nminutes = 5\nmain = "x.py"\n')
    data = CourseCatalog(content, tmp_path / "no-labs").data()
    assert [e.meta.id for e in data.exercises] == ["toy-sum"]
    assert any(p.field == "requirements" for p in data.problems)


def test_a_requirement_names_its_files_and_a_path_leading_out_of_starters_is_a_problem(tmp_path, content):
    manifest = content / "exercises" / "toy-sum" / "exercise.toml"
    text = manifest.read_text()
    manifest.write_text(
        text.replace('statement = "total(xs) returns the sum of xs"\n', 'statement = "total"\nfiles = ["summer.py"]\n')
    )
    data = CourseCatalog(content, tmp_path / "no-labs").data()
    reqs = {r.id: r.files for r in data.exercises[0].meta.requirements}
    assert reqs == {"sums": ["summer.py"], "cli": [], "on-gpu": []}

    manifest.write_text(
        text.replace('statement = "total(xs) returns the sum of xs"\n', 'statement = "t"\nfiles = ["../checks/x.py"]\n')
    )
    data = CourseCatalog(content, tmp_path / "no-labs").data()
    assert data.exercises == []
    assert any("relative to starters" in p.message for p in data.problems)


# --- REST ------------------------------------------------------------------------------


@pytest.fixture
def jp_server_config(jp_server_config, tmp_path):
    jp_server_config.GPUDojo.content_dir = str(TOY_CONTENT)
    jp_server_config.GPUDojo.labs_dir = str(tmp_path / "no-labs")
    return jp_server_config


async def api(jp_fetch, *parts, method="GET", body=None):
    kwargs = {"method": method}
    if method == "POST":
        kwargs["body"] = json.dumps(body or {})
    r = await jp_fetch("gpudojo", "api", "exercises", *parts, **kwargs)
    return r.code, json.loads(r.body)


async def test_api_start_check_and_poll_until_done(jp_fetch, jp_root_dir):
    code, doc = await api(jp_fetch, "toy-sum")
    assert code == 200 and doc["meta"]["id"] == "toy-sum" and not doc["workspace"]["exists"]
    assert doc["mode"] == "cpu" and doc["readme"].startswith("# Sum a list")
    assert [r["id"] for r in doc["meta"]["requirements"]] == ["sums", "cli", "on-gpu"]

    code, started = await api(jp_fetch, "toy-sum", "start", method="POST")
    assert code == 200 and started["created"]
    mine = Path(jp_root_dir) / started["workspace"]["main"]
    assert mine.is_file()
    shutil.copy(TOY / "solution" / "summer.py", mine)

    code, attempt = await api(jp_fetch, "toy-sum", "check", method="POST")
    assert code == 202 and attempt["status"] == "running"
    assert {r["outcome"] for r in attempt["results"]} == {"pending"}
    with pytest.raises(HTTPClientError) as busy:
        await api(jp_fetch, "toy-sum", "check", method="POST")
    assert busy.value.code == 409
    seen_running = False
    for _ in range(600):
        _, doc = await api(jp_fetch, "toy-sum")
        if doc["current"] is None:
            break
        seen_running = True
        await asyncio.sleep(0.1)
    assert seen_running
    assert doc["last"]["completed"] and doc["progress"]["status"] == "completed"
    assert len(doc["history"]) == 1 and doc["history"][0]["passed"] == 2

    catalog = json.loads((await jp_fetch("gpudojo", "api", "course", "catalog")).body)
    toy = next(e for e in catalog["exercises"] if e["id"] == "toy-sum")
    assert toy["progress"]["status"] == "completed"


async def test_api_refusals_are_clear_4xx(jp_fetch):
    with pytest.raises(HTTPClientError) as missing:
        await api(jp_fetch, "no-such-exercise")
    assert missing.value.code == 404
    assert "No exercise 'no-such-exercise'" in json.loads(missing.value.response.body)["error"]["message"]
    with pytest.raises(HTTPClientError) as not_started:
        await api(jp_fetch, "toy-sum", "check", method="POST")
    assert not_started.value.code == 409
    assert json.loads(not_started.value.response.body)["error"]["code"] == "not_started"
    with pytest.raises(HTTPClientError) as bad:
        await api(jp_fetch, "toy-sum", "start", method="POST", body={"reset": "maybe"})
    assert bad.value.code == 400


@pytest.mark.parametrize("read_only", [True])
async def test_start_and_check_need_permission_to_execute(jp_fetch):
    code, _ = await api(jp_fetch, "toy-sum")
    assert code == 200  # reading is allowed
    for verb in ("start", "check"):
        with pytest.raises(HTTPClientError) as denied:
            await api(jp_fetch, "toy-sum", verb, method="POST")
        assert denied.value.code == 403


# --- CLI -------------------------------------------------------------------------------


def test_cli_list_start_check(tmp_path, capsys):
    common = ["--content-dir", str(TOY_CONTENT), "--data-dir", str(tmp_path / "data"), "--user", "ada"]
    root = ["--root-dir", str(tmp_path / "root")]
    assert cli_main(["exercise", "list", *common, *root]) == 0
    assert "toy-sum" in capsys.readouterr().out
    assert cli_main(["exercise", "check", "toy-sum", *common, *root]) == 2
    assert "Start copies the starters" in capsys.readouterr().err
    assert cli_main(["exercise", "start", "toy-sum", *common, *root]) == 0
    assert "gpudojo-exercises/toy-sum" in capsys.readouterr().out
    assert cli_main(["exercise", "check", "toy-sum", *common, *root]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] sums" in out and "[SKIP] on-gpu" in out
    assert cli_main(["exercise", "check", "toy-sum", "--json", "--dir", str(TOY / "solution"), *common, *root]) == 0
    attempt = json.loads(capsys.readouterr().out)
    assert attempt["completed"] and attempt["passed"] == 2
