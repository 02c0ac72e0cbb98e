"""The generic cheats: learner code that attacks the check engine instead of doing the work.

Each test writes one cheat as the learner's ``total(xs)`` of the toy exercise (run by the
check's ``sums`` requirement through ``learner.drive``), checks it, and asserts that the
attempt is not completed and that what the cheat tried was refused or cleaned up. The
cheat reports what it saw as ``total``'s return value, which the check shows as the
figure "total returned" and in the reason a learner reads ("total of a hidden list
returned ...; the sum is ..."). The per-exercise shortcuts live beside this file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import threading
import time
import tomllib
import uuid
from pathlib import Path

import psutil
import pytest

from exercise_toy import TOY, check, outcomes, write_learner
from gpudojo.cli import format_attempt
from gpudojo.course.catalog import CourseCatalog
from gpudojo.course.exercises import ExerciseService
from gpudojo.course.progress import ProgressStore
from gpudojo.paths import material_root
from gpudojo.worker import checkenv, sandbox

needs_sandbox = pytest.mark.skipif(
    not sandbox.support().available, reason=f"no sandbox here: {sandbox.support().reason}"
)
# The names a check process holds in its environment; a learner program must see none.
CHECK_VARS = (
    checkenv.ENV_WORK,
    checkenv.ENV_RESULTS_FD,
    checkenv.ENV_MANIFEST,
    checkenv.ENV_GPUS,
    checkenv.ENV_SCRATCH,
    checkenv.ENV_SANDBOX,
)
REFUSED = {"EROFS", "EACCES", "EPERM", "ENOENT"}


def cheat(svc: ExerciseService, body: str, **constants) -> None:
    """Make the learner's total(xs) run ``body``, which fills the dict ``report``."""
    head = "".join(f"{k} = {v!r}\n" for k, v in constants.items())
    indented = "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
    write_learner(
        svc,
        "import errno, glob, json, os, signal, socket, subprocess, sys, time\n"
        f"{head}\n"
        "def total(xs):\n"
        "    report = {}\n"
        f"{indented}"
        "    return json.dumps(report)\n",
    )


def report(attempt) -> dict:
    """What the cheat saw (its total's return value, shown as a figure of ``sums``)."""
    sums = next(r for r in attempt.results if r.id == "sums")
    got = next((f.value for f in sums.figures if f.name == "total returned"), None)
    assert isinstance(got, str), f"the cheat did not run to the end: {sums.message}"
    return json.loads(got)


def assert_not_completed(attempt) -> None:
    """The cheat earned nothing: its own requirements failed, for the reason a learner reads."""
    assert attempt.status == "done", attempt.error
    assert not attempt.completed and attempt.passed == 0
    assert outcomes(attempt) == {"sums": "failed", "cli": "failed", "on-gpu": "skipped"}
    sums = next(r for r in attempt.results if r.id == "sums")
    assert "total of a hidden list returned" in sums.message and "the sum is" in sums.message


@needs_sandbox
def test_reading_the_parents_and_every_environ_in_proc_finds_no_check_variable(service):
    cheat(
        service,
        """
found, read = {}, []
for path in ["/proc/%d/environ" % os.getppid(), "/proc/1/environ", *glob.glob("/proc/[0-9]*/environ")]:
    try:
        data = open(path, "rb").read().decode(errors="replace")
    except OSError:
        continue
    read.append(path)
    for item in data.split("\\0"):
        name = item.split("=", 1)[0]
        if name in CHECK_VARS or name.startswith(("GPUDOJO_EXERCISE", "GPUDOJO_CHECK", "PYTEST")):
            found[name] = path
found.update({k: "os.environ" for k in os.environ if k in CHECK_VARS})
report["found"], report["read"] = found, sorted(set(read))
""",
        CHECK_VARS=CHECK_VARS,
    )
    attempt = check(service)
    assert attempt.sandbox == "bubblewrap" and attempt.sandbox_reason == ""
    seen = report(attempt)
    assert "/proc/1/environ" in seen["read"]  # it could read its parents: they hold nothing of the check's
    assert seen["found"] == {}
    assert_not_completed(attempt)


@needs_sandbox
def test_listing_proc_shows_no_check_process_and_no_server(service):
    cheat(
        service,
        """
report["cmdlines"] = []
for d in glob.glob("/proc/[0-9]*"):
    try:
        report["cmdlines"].append(open(d + "/cmdline", "rb").read().replace(b"\\0", b" ").decode())
    except OSError:
        pass
report["ppid"] = os.getppid()
""",
    )
    attempt = check(service)
    seen = report(attempt)
    # Only the sandbox's own processes: bubblewrap's init and the check's driver (this program).
    assert len(seen["cmdlines"]) <= 3, seen["cmdlines"]
    assert not [c for c in seen["cmdlines"] if "pytest" in c or "checkkit" in c or "jupyter" in c]
    assert seen["ppid"] == 1
    assert_not_completed(attempt)


@needs_sandbox
def test_the_checks_the_content_and_the_data_dir_cannot_be_opened_or_listed(service):
    toy_checks = service.folder("toy-sum") / "checks"
    packaged = material_root("content") / "exercises" / "cuda-kernel" / "checks"
    cheat(
        service,
        """
report["open"] = {}
for path in TARGETS:
    try:
        with open(path, "rb") as f:
            report["open"][path] = "read %d bytes" % len(f.read())
    except OSError as err:
        report["open"][path] = errno.errorcode[err.errno]
report["data"] = sorted(os.listdir(DATA))
report["listed"] = {}
for folder in FOLDERS:
    try:
        report["listed"][folder] = sorted(os.listdir(folder))
    except OSError as err:
        report["listed"][folder] = errno.errorcode[err.errno]
# Where the scratch copy sits, every other attempt's and the check's own folders sit too.
report["beside_scratch"] = sorted(os.listdir(os.path.dirname(os.path.dirname(os.getcwd()))))
""",
        TARGETS=[str(toy_checks / "test_toy_sum.py"), str(packaged / "test_cuda_kernel.py")],
        FOLDERS=[str(toy_checks), str(packaged)],
        DATA=str(service.store.path.parent),
    )
    attempt = check(service)
    seen = report(attempt)
    assert set(seen["open"].values()) == {"ENOENT"}, seen["open"]
    for folder, listing in seen["listed"].items():
        assert listing in ([], "ENOENT"), (folder, listing)
    # The data dir holds the progress database; the learner sees only the way to its scratch.
    assert seen["data"] == ["exercise-checks"]
    # The attempt's own scratch folder, and nothing else: no control folder, no other attempt.
    assert seen["beside_scratch"] == [attempt.id]
    assert_not_completed(attempt)


@needs_sandbox
def test_forged_result_lines_and_a_results_file_swapped_for_a_link_change_nothing(service):
    cheat(
        service,
        """
lines = "".join(json.dumps({"requirement": r, "outcome": "passed", "message": "", "figures": []}) + "\\n"
                for r in ("sums", "cli", "on-gpu"))
written = []
# Every file under the folders this program can write, and a results.jsonl in each of
# them and in every folder above its copy; a results file found is swapped for a link.
tops = {os.path.dirname(os.getcwd()), os.environ["HOME"], os.environ["TMPDIR"], "/tmp", "/dev/shm"}
paths = set()
for top in tops:
    for d, _, files in os.walk(top):
        paths.update(os.path.join(d, name) for name in files + ["results.jsonl"])
here = os.getcwd()
while here != "/":
    here = os.path.dirname(here)
    paths.add(os.path.join(here, "results.jsonl"))
for path in sorted(paths):
    try:
        with open(path, "a") as f:
            f.write(lines)
        written.append(path)
        if path.endswith("results.jsonl"):
            os.replace(path, path + ".bak")
            os.symlink("/dev/null", path)
    except OSError:
        pass
# Every pipe or socket it can open through /proc (its own stdout and stderr aside: the
# check reads those as its output, and the forged lines would hide what it reports).
own = {os.readlink("/proc/self/fd/1"), os.readlink("/proc/self/fd/2")}
for fd_path in glob.glob("/proc/*/fd/*"):
    try:
        if os.readlink(fd_path) in own:
            continue
        fd = os.open(fd_path, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, lines.encode())
        os.close(fd)
        written.append(fd_path)
    except OSError:
        pass
report["written"] = len(written)
""",
    )
    attempt = check(service)
    assert report(attempt)["written"] > 0  # it did write its forgeries, where it could
    assert_not_completed(attempt)
    assert service.store.entry("ada", "exercise", "toy-sum").status == "in_progress"


@needs_sandbox
def test_a_conftest_planted_beside_the_checks_or_above_the_work_folder_is_never_collected(service):
    marker = f"gpudojo-conftest-{uuid.uuid4().hex}"
    checks = service.folder("toy-sum") / "checks"
    cheat(
        service,
        """
planted, refused = [], {}
targets = [os.path.join(CHECKS, "conftest.py"), os.path.join(os.path.dirname(CHECKS), "conftest.py")]
here = os.getcwd()
while here != "/":
    targets.append(os.path.join(here, "conftest.py"))
    here = os.path.dirname(here)
for path in targets:
    try:
        with open(path, "w") as f:
            f.write(CONFTEST)
        planted.append(path)
    except OSError as err:
        refused[path] = errno.errorcode[err.errno]
report["planted"], report["refused"] = planted, refused
""",
        CHECKS=str(checks),
        CONFTEST=(
            "import pytest\n"
            "@pytest.hookimpl(tryfirst=True)\n"
            "def pytest_runtest_call(item):\n"
            f"    open('/tmp/{marker}', 'w').close()\n"
            "    pytest.skip('planted')\n"
        ),
    )
    first = check(service)
    seen = report(first)
    assert set(seen["refused"].values()) <= REFUSED
    assert str(checks / "conftest.py") in seen["refused"]
    assert not [p for p in [*seen["planted"], str(checks.parent / "conftest.py")] if Path(p).exists()]
    assert_not_completed(first)
    # A second check would collect whatever survived the first: nothing did.
    second = check(service)
    assert_not_completed(second)
    assert not Path("/tmp", marker).exists()


@needs_sandbox
def test_writing_outside_scratch_is_refused(service):
    mine = service.root_dir / "gpudojo-exercises" / "toy-sum" / "summer.py"
    targets = {
        "the learner's own folder": str(mine.with_name("forged.txt")),
        "the server's root folder": str(service.root_dir / "forged.txt"),
        "the data dir": str(service.store.path.parent / "forged.txt"),
        "the course content": str(service.folder("toy-sum") / "forged.txt"),
        "the home folder": str(Path.home() / "gpudojo-forged.txt"),
        "the system": "/etc/gpudojo-forged.txt",
        "the Python": str(Path(os.__file__).parent / "gpudojo_forged.py"),
    }
    cheat(
        service,
        """
report["outside"] = {}
for what, path in TARGETS.items():
    try:
        with open(path, "w") as f:
            f.write("forged")
        report["outside"][what] = "written"
    except OSError as err:
        report["outside"][what] = errno.errorcode[err.errno]
with open("inside.txt", "w") as f:  # its scratch copy is writable
    report["inside"] = f.write("fine")
""",
        TARGETS=targets,
    )
    attempt = check(service)
    seen = report(attempt)
    assert seen["inside"] == 4
    assert set(seen["outside"].values()) <= REFUSED, seen["outside"]
    assert not [p for p in targets.values() if Path(p).exists()]
    assert_not_completed(attempt)


def _host_addresses() -> list[str]:
    return [
        a.address
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]


@needs_sandbox
def test_no_connection_leaves_the_sandbox_and_no_port_opened_in_it_is_reachable(service):
    outside = socket.socket()
    outside.bind(("0.0.0.0", 0))
    outside.listen()
    outside.settimeout(0.2)
    out_port = outside.getsockname()[1]
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        in_port = s.getsockname()[1]  # free now; the cheat listens on it inside
    hosts = ["127.0.0.1", *_host_addresses()]
    cheat(
        service,
        """
report["out"] = {}
for host in HOSTS + ["1.1.1.1"]:
    try:
        socket.create_connection((host, OUT_PORT), timeout=1).close()
        report["out"][host] = "connected"
    except OSError as err:
        report["out"][host] = type(err).__name__
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", IN_PORT))
server.listen()
server.settimeout(4)
try:
    server.accept()
    report["in"] = "someone connected"
except OSError as err:
    report["in"] = type(err).__name__
""",
        HOSTS=hosts,
        OUT_PORT=out_port,
        IN_PORT=in_port,
    )
    accepted, reached = [], []
    done = threading.Event()

    def knock() -> None:  # from outside, at the port the cheat listens on, while the check runs
        while not done.is_set():
            for host in hosts:
                try:
                    socket.create_connection((host, in_port), timeout=0.2).close()
                    reached.append(host)
                except OSError:
                    pass
            with contextlib.suppress(OSError):
                accepted.append(outside.accept()[0].close())

    knocker = threading.Thread(target=knock, daemon=True)
    knocker.start()
    try:
        attempt = check(service)
    finally:
        done.set()
        knocker.join(5)
        outside.close()
    seen = report(attempt)
    assert "connected" not in seen["out"].values(), seen["out"]
    assert seen["in"] == "TimeoutError" and reached == [] and accepted == []
    assert_not_completed(attempt)


@needs_sandbox
def test_a_double_forked_daemon_is_gone_when_the_check_ends(service):
    marker = f"gpudojo-daemon-{uuid.uuid4().hex}"
    cheat(
        service,
        """
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(1000)", MARKER])
    os._exit(0)
os.wait()
time.sleep(0.5)
report["started"] = any(MARKER in open(p, "rb").read().decode(errors="replace")
                        for p in glob.glob("/proc/[0-9]*/cmdline"))
""",
        MARKER=marker,
    )
    attempt = check(service)
    assert report(attempt)["started"]

    def left() -> list[int]:
        return [p.pid for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]

    deadline = time.monotonic() + 3
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left() == []
    assert_not_completed(attempt)


def test_without_bubblewrap_checks_still_run_and_the_attempt_says_not_sandboxed(service, tmp_path, monkeypatch):
    empty = tmp_path / "no-bwrap-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    attempt = check(service, folder=TOY / "solution")
    assert attempt.completed and outcomes(attempt) == {"sums": "passed", "cli": "passed", "on-gpu": "skipped"}
    assert attempt.sandbox == "none" and "bubblewrap (bwrap) is not installed" in attempt.sandbox_reason
    assert "Not sandboxed: bubblewrap (bwrap) is not installed" in format_attempt(attempt)


def test_a_bubblewrap_that_cannot_make_namespaces_is_reported_with_its_reason(service, tmp_path, monkeypatch):
    fake = tmp_path / "fake-bwrap"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    attempt = check(service, folder=TOY / "solution")
    assert attempt.completed and attempt.sandbox == "none"
    assert "No permissions to create new namespace" in attempt.sandbox_reason
    assert "user namespaces" in attempt.sandbox_reason


@pytest.mark.parametrize("service_options", [{"sandbox": False}])
def test_the_sandbox_can_be_turned_off_only_by_whoever_builds_the_service(service):
    attempt = check(service, folder=TOY / "solution")
    assert attempt.completed and attempt.sandbox == "none" and "sandbox=False" in attempt.sandbox_reason


# The exploit as it was reported: ~20 lines at the end of a learner's module that find the
# check process through /proc, forge a "passed" line for every requirement into its results
# channel, swap the results file for a link, and plant a conftest.py beside its checks.
EXPLOIT = """
def _forge(requirements, log):
    import glob, json, os
    lines = "".join(json.dumps({"requirement": r, "outcome": "passed", "message": "", "figures": []}) + "\\n"
                    for r in requirements)
    for pid in sorted({os.getppid(), 1, *(int(p.split("/")[2]) for p in glob.glob("/proc/[0-9]*"))}):
        try:
            env = dict(kv.split("=", 1) for kv in open(f"/proc/{pid}/environ").read().split("\\0") if "=" in kv)
            argv = open(f"/proc/{pid}/cmdline").read().split("\\0")
        except OSError:
            continue
        for name, value in env.items():
            try:
                if name.endswith("RESULTS"):
                    open(value, "a").write(lines)
                    os.replace(value, value + ".old")
                    os.symlink("/dev/null", value)
                elif name.endswith("RESULTS_FD"):
                    open(f"/proc/{pid}/fd/{value}", "w").write(lines)
                else:
                    continue
                open(log, "a").write(f"forged into {name} of {pid}\\n")
            except OSError:
                pass
        for arg in argv:
            if arg.endswith("checks") and os.path.isdir(arg):
                try:
                    open(os.path.join(arg, "conftest.py"), "w").write(
                        "import pytest\\n@pytest.hookimpl(tryfirst=True)\\n"
                        "def pytest_runtest_call(item):\\n    pass\\n")
                except OSError:
                    pass
"""


@pytest.mark.parametrize(
    "sandboxed",
    [pytest.param(True, marks=needs_sandbox, id="sandboxed"), pytest.param(False, id="not-sandboxed")],
)
def test_the_reported_exploit_no_longer_completes_a_real_exercise(tmp_path, sandboxed):
    """cuda-kernel's untouched starters with the exploit added: the attempt fails exactly
    the requirements the untouched starters fail, for the same reasons. Unsandboxed too: a
    forged "passed" never outranks a real failure, and pytest's own exit status decides."""
    content = material_root("content")
    expect = tomllib.loads((Path(__file__).parents[1] / "cuda-kernel.toml").read_text())
    store = ProgressStore(tmp_path / "data" / "gpudojo.sqlite3")
    catalog = CourseCatalog(content, material_root("labs"))
    svc = ExerciseService(catalog, store, tmp_path / "root", tmp_path / "data" / "checks", sandbox=sandboxed)
    try:
        folder = tmp_path / "cheater"
        log = tmp_path / "exploit.log"  # outside the sandbox's private /tmp: written only unsandboxed
        shutil.copytree(content / "exercises" / "cuda-kernel" / "starters", folder)
        ids = [r.id for r in svc.meta("cuda-kernel").requirements]
        for name in ("kernel_numba.py", "ops.py", "bench.py"):
            source = (folder / name).read_text()
            (folder / name).write_text(f"{source}\n{EXPLOIT}\n_forge({ids!r}, {str(log)!r})\n")
        svc.check("tests", "cuda-kernel", 0, folder=folder)
        attempt = svc.wait("tests", "cuda-kernel", timeout_s=600)
    finally:
        svc.close()
        store.close()
    assert attempt.status == "done", attempt.error
    assert attempt.sandbox == ("bubblewrap" if sandboxed else "none")
    assert not attempt.completed
    failed = {r.id: r.message for r in attempt.results if r.outcome == "failed"}
    assert set(failed) == set(expect["starter_fails"])
    for rid, reason in expect["reasons"].items():
        assert reason.lower() in failed[rid].lower(), (rid, failed[rid])
    assert not (content / "exercises" / "cuda-kernel" / "checks" / "conftest.py").exists()
    forged = log.read_text() if log.exists() else ""
    if not sandboxed and os.geteuid() == 0:  # root reads any /proc: the forgery reached the pipe, to no avail
        assert "forged into GPUDOJO_EXERCISE_RESULTS_FD" in forged
    else:  # in the sandbox, or as a user: the check process's environ and fds could not be read
        assert "RESULTS" not in forged


# --- the sandbox's options, where the machine cannot show them -------------------------------


def _options(fd: int) -> list[str]:
    try:
        data = b""
        while chunk := os.read(fd, 65536):
            data += chunk
    finally:
        os.close(fd)
    return data.decode().split("\0")[:-1]


def test_the_gpu_variant_gets_the_nvidia_device_nodes_and_the_cpu_variant_none(monkeypatch, tmp_path):
    nodes = ["/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl"]
    monkeypatch.setattr(sandbox.glob, "glob", lambda pattern: nodes if pattern == "/dev/nvidia*" else [])
    argv, fd = sandbox.wrap("bwrap", ["python", "x.py"], cwd=tmp_path, writable=[tmp_path], hidden=[], gpu=True)
    options = _options(fd)
    assert argv == ["bwrap", "--args", str(fd), "--", "python", "x.py"]
    binds = [options[i + 1] for i, o in enumerate(options) if o == "--dev-bind-try"]
    assert binds == sorted(nodes)
    _, fd = sandbox.wrap("bwrap", ["python"], cwd=tmp_path, writable=[tmp_path], hidden=[], gpu=False)
    assert "--dev-bind-try" not in _options(fd)


def test_a_folder_holding_the_python_is_never_hidden(tmp_path):
    python = Path(os.__file__).parents[2]
    data = tmp_path / "data"
    (data / "scratch").mkdir(parents=True)
    hidden = sandbox.hidden_folders([python.parent, data, data / "scratch", tmp_path / "missing"], keep=[python])
    assert hidden == [data.resolve()]  # the Python's parent is kept; the scratch inside data is covered
