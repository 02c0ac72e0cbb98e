"""The Slurm engine: the batch script it generates (parsed, syntax-checked, run by bash with
recording stand-ins for srun and scontrol), its availability probe, and, against a real
one-host cluster (Debian's slurm-wlm and munge, started by slurm_cluster.py), the follower on
its own and lab-03 through the run service: success, a job Slurm cannot start, a job cancelled
outside gpudojo, and a cancel that leaves no process of the job behind."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

import slurm_cluster as one_host
from gpudojo.errors import Invalid, Unavailable
from gpudojo.runfolder import RunFolder
from gpudojo.runs.engines.base import EngineContext, read_engine_state, start_follower
from gpudojo.runs.engines.slurm import SCRIPT_FILE, SlurmEngine
from gpudojo.runs.models import LabRunRequest, SlurmWhere
from gpudojo.runs.service import RunService

# The one-host cluster's fixtures (slurm_cluster.py): `slurm` is the cluster with SLURM_CONF set.
slurm_cluster = one_host.slurm_cluster
slurm = one_host.slurm

REPO = Path(__file__).resolve().parents[2]
LAB03 = REPO / "labs" / "lab-03-ddp"
RUN_ID = "20260101-120000-abc123"
FOLLOWER = [sys.executable, "-m", "gpudojo.worker.follow_slurm"]
pytestmark = pytest.mark.timeout(120)


def context(folder: Path, entry: Path, args: list[str], nproc: int = 2, backend: str = "gloo") -> EngineContext:
    env = {
        "GPUDOJO_RUN_ID": RUN_ID,
        "GPUDOJO_RUN_DIR": str(folder),
        "GPUDOJO_BACKEND": backend,
        "PATH": os.environ["PATH"],
        "SECRET_OF_THE_SERVER": "not for the script",
    }
    return EngineContext(
        run_id=RUN_ID,
        folder=RunFolder(folder),
        entry=entry,
        args=args,
        launcher="torchrun",
        nproc=nproc,
        dist_backend=backend,  # type: ignore[arg-type]
        title="Multi-GPU training with DDP",
        lab_id="lab-03-ddp",
        python=sys.executable,
        env=env,
    )


def script_of(ctx: EngineContext, where: SlurmWhere) -> str:
    (generated,) = SlurmEngine().generate(ctx, where)
    assert generated.name == SCRIPT_FILE and generated.media_type == "text/x-shellscript"
    return generated.content


def sbatch_lines(script: str) -> list[str]:
    return [line.removeprefix("#SBATCH ") for line in script.splitlines() if line.startswith("#SBATCH ")]


def srun_words(script: str) -> list[str]:
    """The srun command, continuation lines joined, split as bash would (quotes removed)."""
    joined = script.replace("\\\n", " ")
    (line,) = [ln for ln in joined.splitlines() if ln.startswith("srun ")]
    return shlex.split(line)


def bash_syntax_ok(script: str, tmp_path: Path) -> None:
    path = tmp_path / "syntax.sbatch"
    path.write_text(script)
    done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --- the generated script ------------------------------------------------------------------


def test_one_node_cpu_script_asks_for_one_torchrun_agent_and_its_cores(tmp_path):
    folder = tmp_path / "run"
    ctx = context(folder, LAB03 / "train_ddp.py", ["--epochs", "2"])
    script = script_of(ctx, SlurmWhere(engine="slurm", nodes=1, time_limit_min=90))
    assert script.startswith("#!/bin/bash\n")
    assert sbatch_lines(script) == [
        "--job-name=gpudojo-lab-03-ddp",
        "--nodes=1",
        "--ntasks-per-node=1",
        "--cpus-per-task=2",
        "--time=1:30:00",
        f"--output={folder}/slurm-%j.out",
        f"--error={folder}/slurm-%j.err",
    ]
    # The job works in the script's folder, as a run on this machine does.
    assert "\nset -euo pipefail\n\n# The working folder of the job, as for a run on this machine" in script
    assert f"\ncd -- {LAB03}\n" in script
    assert srun_words(script) == [
        "srun",
        "--nodes=$SLURM_NNODES",
        "--ntasks-per-node=1",
        "--cpus-per-task=$SLURM_CPUS_PER_TASK",
        "--kill-on-bad-exit=1",
        f"--output={folder}/slurm-%j-node%n.out",
        f"--error={folder}/slurm-%j-node%n.err",
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "$SLURM_NNODES",
        "--nproc-per-node",
        "2",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        "$head_node:$port",
        "--rdzv-id",
        "$SLURM_JOB_ID",
        "--log-dir",
        f"{folder}/torchrun",
        "--tee",
        "3",
        str(LAB03 / "train_ddp.py"),
        "--epochs",
        "2",
    ]
    # The run's own variables travel with the script, the server's others do not.
    assert f"export GPUDOJO_RUN_ID={RUN_ID}\n" in script and f"export GPUDOJO_RUN_DIR={folder}\n" in script
    assert "export TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[default${rank}]:'\n" in script
    assert "SECRET_OF_THE_SERVER" not in script
    assert 'head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)' in script
    # Every #SBATCH line is explained, and the shared filesystem is said.
    lines = script.splitlines()
    assert all(lines[i - 1].startswith("# ") for i, ln in enumerate(lines) if ln.startswith("#SBATCH"))
    assert "shared" in script and "filesystem" in script
    bash_syntax_ok(script, tmp_path)


def test_four_node_gpu_script_asks_for_gpus_partition_and_account(tmp_path):
    folder = tmp_path / "run"
    ctx = context(folder, LAB03 / "train_ddp.py", [], nproc=8, backend="nccl")
    where = SlurmWhere(engine="slurm", nodes=4, gpus_per_node=8, time_limit_min=5, partition="gpu", account="ml-team")
    script = script_of(ctx, where)
    options = sbatch_lines(script)
    assert options[:5] == [
        "--job-name=gpudojo-lab-03-ddp",
        "--nodes=4",
        "--ntasks-per-node=1",
        "--cpus-per-task=8",
        "--gpus-per-node=8",
    ]
    assert "--time=0:05:00" in options and "--partition=gpu" in options and "--account=ml-team" in options
    words = srun_words(script)
    assert words[:5] == [
        "srun",
        "--nodes=$SLURM_NNODES",
        "--ntasks-per-node=1",
        "--cpus-per-task=$SLURM_CPUS_PER_TASK",
        "--gpus-per-node=8",
    ]
    torchrun = words[words.index("torch.distributed.run") :]
    assert torchrun[1:5] == ["--nnodes", "$SLURM_NNODES", "--nproc-per-node", "8"]
    assert "export GPUDOJO_BACKEND=nccl\n" in script
    bash_syntax_ok(script, tmp_path)


def test_script_expands_the_rendezvous_but_keeps_arguments_literal(tmp_path):
    """bash runs the generated script with recording stand-ins for srun and scontrol (only
    the script's own logic is under test here): Slurm's variables and the rendezvous are
    expanded, the run's arguments reach torchrun untouched, whatever they contain."""
    shims = tmp_path / "bin"
    shims.mkdir()
    record = tmp_path / "srun-argv.json"
    (shims / "srun").write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'prefix': os.environ['TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE']}},"
        f" open({str(record)!r}, 'w'))\n"
    )
    (shims / "scontrol").write_text("#!/bin/sh\necho node-a\necho node-b\n")
    for shim in shims.iterdir():
        shim.chmod(0o755)
    folder = tmp_path / "run"
    folder.mkdir()
    tricky = ["--note", 'it\'s $HOME; `touch pwned` "q"', "--x", "a b"]
    ctx = context(folder, LAB03 / "train_ddp.py", tricky)
    path = tmp_path / "job.sbatch"
    path.write_text(script_of(ctx, SlurmWhere(engine="slurm", nodes=2)))
    env = {
        "PATH": f"{shims}:{os.environ['PATH']}",
        "SLURM_JOB_NODELIST": "node-[a-b]",
        "SLURM_NNODES": "2",
        "SLURM_JOB_ID": "4242",
        "SLURM_CPUS_PER_TASK": "2",
        "HOME": "/nowhere",
    }
    done = subprocess.run(["bash", str(path)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "rendezvous at node-a:" in done.stdout
    got = json.loads(record.read_text())
    argv = got["argv"]
    assert argv[:3] == ["--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=2"]
    endpoint = argv[argv.index("--rdzv-endpoint") + 1]
    assert endpoint.startswith("node-a:") and int(endpoint.split(":")[1]) > 0
    assert argv[argv.index("--rdzv-id") + 1] == "4242" and argv[argv.index("--nnodes") + 1] == "2"
    assert argv[-len(tricky) :] == tricky
    assert got["prefix"] == "[default${rank}]:"
    assert not (tmp_path / "pwned").exists()


def run_with_stand_ins(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """bash runs ``script`` from tmp_path/cwd with stand-ins for srun (which records its argv and
    its working folder) and scontrol; the record is tmp_path/srun.json."""
    shims = tmp_path / "bin"
    shims.mkdir(exist_ok=True)
    (shims / "srun").write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}, open({str(tmp_path / 'srun.json')!r}, 'w'))\n"
    )
    (shims / "scontrol").write_text("#!/bin/sh\necho node-a\n")
    for shim in shims.iterdir():
        shim.chmod(0o755)
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    env = {
        "PATH": f"{shims}:{os.environ['PATH']}",
        "SLURM_JOB_NODELIST": "node-a",
        "SLURM_NNODES": "1",
        "SLURM_JOB_ID": "7",
        "SLURM_CPUS_PER_TASK": "2",
    }
    return subprocess.run(["bash", str(path)], env=env, cwd=cwd, capture_output=True, text=True, timeout=30)


def preamble(script: str) -> str:
    """The script's lines before ``set -euo pipefail``: what bash runs before it stops at errors."""
    return script[: script.index("\nset -euo pipefail\n")] + "\n"


@pytest.mark.parametrize(
    "folder_name",
    ["my dir", 'it\'s "q" #1 $HOME `id` %j hetjob', "my dir\ntouch pwned\n", "tab\there\r\x7fdel"],
)
def test_a_script_in_an_oddly_named_folder_runs_there_and_its_header_runs_nothing(tmp_path, folder_name):
    # Finding (issue 22, 2): a folder "my dir\ntouch X\n" put shell lines into the header comment
    # and after an unquoted #SBATCH --chdir; running the script created X before `set -euo
    # pipefail`. The API refuses such paths (test_engines_api); the script is safe regardless.
    scripts = tmp_path / folder_name
    scripts.mkdir()
    entry = scripts / "train.py"
    entry.write_text("print('hi')\n")
    ctx = context(tmp_path / "run", entry, ["--x", "a\nb"])
    ctx.title = f"{folder_name}/train.py"
    script = script_of(ctx, SlurmWhere(engine="slurm"))
    bash_syntax_ok(script, tmp_path)
    # The header is comments and #SBATCH lines only: running it creates nothing.
    head = preamble(script)
    assert all(line.startswith("#") or not line for line in head.splitlines()), head
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run(["bash", "-c", head], cwd=cwd, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and list(cwd.iterdir()) == [], done.stderr
    # The whole script works in the script's folder and hands the entry to torchrun as it is.
    done = run_with_stand_ins(script, tmp_path)
    assert done.returncode == 0, done.stderr
    got = json.loads((tmp_path / "srun.json").read_text())
    assert got["cwd"] == str(scripts) and got["argv"][-3:] == [str(entry), "--x", "a\nb"]
    assert list(cwd.iterdir()) == [] and not (scripts / "pwned").exists()


def sbatch_reads(line: str) -> list[str]:
    """The words of one #SBATCH line as sbatch reads them (src/sbatch/opt.c, _get_argument):
    whitespace ends a word unless quoted, "..." or '...' group, a backslash escapes the next
    character anywhere, an unquoted # ends the line."""
    words: list[str] = []
    word: list[str] | None = None
    quote, i = "", 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            word = (word or []) + [line[i + 1]]
            i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
            else:
                word = (word or []) + [c]
        elif c in "\"'":
            quote, word = c, word or []
        elif c == "#":
            break
        elif c.isspace():
            if word is not None:
                words.append("".join(word))
            word = None
        else:
            word = (word or []) + [c]
        i += 1
    assert not quote, f"sbatch would stop at an unmatched quote: {line}"
    return [*words, "".join(word)] if word is not None else words


def test_sbatch_options_with_spaces_quotes_and_hashes_read_back_as_the_path(tmp_path):
    folder = tmp_path / "run dir 'q' \"d\" #1 100%"
    ctx = context(folder, LAB03 / "train_ddp.py", [])
    script = script_of(ctx, SlurmWhere(engine="slurm"))
    read = [sbatch_reads(line) for line in sbatch_lines(script)]
    assert ["--output=" + str(folder).replace("%", "%%") + "/slurm-%j.out"] in read, read
    assert ["--error=" + str(folder).replace("%", "%%") + "/slurm-%j.err"] in read, read
    bash_syntax_ok(script, tmp_path)


@pytest.mark.parametrize("folder_name", ["run\nx", "HetJob-data"])
def test_a_run_folder_no_sbatch_line_can_carry_is_refused_with_the_reason(tmp_path, folder_name):
    ctx = context(tmp_path / folder_name, LAB03 / "train_ddp.py", [])
    with pytest.raises(Invalid, match="--output") as info:
        script_of(ctx, SlurmWhere(engine="slurm"))
    assert "newline" in info.value.message or "hetjob" in info.value.message


def test_follower_command_uses_the_server_interpreter_and_the_run_folder(tmp_path):
    folder = tmp_path / "run"
    ctx = context(folder, LAB03 / "train_ddp.py", [])
    argv, env = SlurmEngine().command(ctx, SlurmWhere(engine="slurm"), folder / "artifacts")
    assert argv == [
        sys.executable,
        "-m",
        "gpudojo.worker.follow_slurm",
        "--script",
        str(folder / "artifacts" / SCRIPT_FILE),
        "--run-dir",
        str(folder),
    ]
    assert env["GPUDOJO_RUN_ID"] == RUN_ID


# --- availability ---------------------------------------------------------------------------


def test_unavailable_without_slurm_client_tools(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    ok, reason, _ = SlurmEngine().availability()
    assert not ok
    assert reason == "sbatch not found: install Slurm's client tools (Debian: slurm-client)"


def test_unavailable_when_slurm_conf_points_nowhere_and_says_so_quickly(tmp_path, monkeypatch):
    if any(not shutil.which(t) for t in ("sbatch", "squeue", "scontrol", "scancel")):
        pytest.skip("Slurm's client tools are not installed")
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-such-slurm.conf"))
    start = time.monotonic()
    ok, reason, _ = SlurmEngine().availability()
    assert not ok and "no-such-slurm.conf is not a file" in reason
    assert time.monotonic() - start < 2


def test_without_any_slurm_configuration_no_tool_runs_and_the_reason_is_one_sentence(tmp_path, monkeypatch):
    # Finding (issue 22, 6): with the tools and no configuration, scontrol ping asked DNS for
    # _slurmctld._tcp SRV records on every GET runs/engines; its multi-line error was the reason.
    from gpudojo.runs.engines import slurm

    tools, called = one_host.recording_tools(tmp_path)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.delenv("SLURM_CONF_SERVER", raising=False)
    monkeypatch.setattr(
        slurm, "DEFAULT_CONF_FILES", (tmp_path / "etc-slurm.conf", tmp_path / "run-slurm.conf"), raising=False
    )
    ok, reason, detail = SlurmEngine().availability()
    assert not ok and not called.exists()
    assert reason == "No Slurm configuration on this machine: set SLURM_CONF to the cluster's slurm.conf."
    assert "etc-slurm.conf" in detail and "SLURM_CONF_SERVER" in detail
    # Any of the places Slurm's tools read is a configuration: then the controller is asked.
    (tmp_path / "run-slurm.conf").write_text("ClusterName=x\n")
    ok, reason, _ = SlurmEngine().availability()
    assert ok and reason == "scontrol ping: Slurmctld(primary) at fake-head is UP"
    assert called.read_text() == "scontrol ping\n"


def test_available_with_a_cluster_and_not_when_its_controller_is_down(slurm, tmp_path, monkeypatch):
    ok, reason, _ = SlurmEngine().availability()
    assert ok, reason
    assert "is UP" in reason
    # The same cluster's configuration with the controller on a port nobody listens on.
    (dead_port,) = one_host.free_ports(1)
    text = slurm.conf.read_text()
    lines = [f"SlurmctldPort={dead_port}" if ln.startswith("SlurmctldPort=") else ln for ln in text.splitlines()]
    dead = tmp_path / "dead.conf"
    dead.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("SLURM_CONF", str(dead))
    start = time.monotonic()
    ok, reason, detail = SlurmEngine().availability()
    assert not ok and "scontrol ping" in reason, reason
    assert "\n" not in reason and detail, detail
    assert time.monotonic() - start < 2


# --- the follower against the real cluster ---------------------------------------------------


def follow(folder: Path, *extra: str, timeout: float = 90) -> tuple[int, str, str]:
    proc = start_follower(
        [
            *FOLLOWER,
            "--script",
            str(folder / "artifacts" / SCRIPT_FILE),
            "--run-dir",
            str(folder),
            *extra,
        ],
        dict(os.environ),
        folder,
    )
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out.decode(), err.decode()


def prepare(tmp_path: Path, body: str, where: SlurmWhere, nproc: int = 2, run: str = "run", scripts: str = "") -> Path:
    """A run folder (tmp_path/run) with a tiny entry script (in tmp_path/scripts) and the
    engine's batch script for it."""
    folder = tmp_path / run
    (folder / "artifacts").mkdir(parents=True)
    entry = tmp_path / scripts / "tiny.py"
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(textwrap.dedent(body))
    ctx = context(folder, entry, ["--greeting", "hello there"], nproc=nproc)
    (folder / "artifacts" / SCRIPT_FILE).write_text(script_of(ctx, where))
    return folder


TINY = """
    import os, sys
    rank = int(os.environ["RANK"])
    print(f"{sys.argv[2]} from rank {rank} of {os.environ['WORLD_SIZE']}", flush=True)
    print(f"rank {rank} says so on stderr", file=sys.stderr, flush=True)
    sys.exit(int(os.environ.get("TINY_EXIT", "0")) if rank == 1 else 0)
"""


def test_follower_submits_a_job_and_follows_it_to_success(slurm, tmp_path):
    folder = prepare(tmp_path, TINY, SlurmWhere(engine="slurm"))
    code, out, err = follow(folder)
    assert code == 0, out + err
    lines = out.splitlines()
    job_id = lines[0].removeprefix("gpudojo: submitted Slurm job ").split()[0]
    assert job_id.isdigit()
    assert "[default0]:hello there from rank 0 of 2" in lines
    assert "[default1]:hello there from rank 1 of 2" in lines
    assert "[default1]:rank 1 says so on stderr" in err.splitlines()
    assert f"gpudojo: Slurm job {job_id} ended: COMPLETED, exit code 0:0" in lines
    state = read_engine_state(RunFolder(folder))
    assert state is not None
    assert state["job_id"] == job_id and state["job_state"] == "COMPLETED"
    assert state["nodes"] == [{"name": slurm.node, "state": "succeeded", "ranks": [0, 1], "detail": "COMPLETED"}]
    assert state["rendezvous"]["endpoint"].startswith(f"{slurm.node}:") and state["rendezvous"]["joined"] == [
        slurm.node
    ]
    assert "root_cause" not in state
    assert 0 <= state["queued_s"] < 10
    # Per-node output files, in the run folder as the script says.
    assert (folder / f"slurm-{job_id}-node0.out").is_file() and (folder / f"slurm-{job_id}.out").is_file()


def test_a_job_in_folders_with_spaces_quotes_and_hashes_runs_there_and_writes_where_it_says(slurm, tmp_path):
    """sbatch itself reads the quoted --output and --error (spaces, quotes, "#", "%"), and the job
    works in the script's folder, whatever its name."""
    body = TINY.replace("import os, sys", "import os, sys\n    print('cwd', os.getcwd(), flush=True)")
    scripts = 'my scripts "q" it\'s #2 $HOME'
    folder = prepare(tmp_path, body, SlurmWhere(engine="slurm"), nproc=1, run="run dir 'r' #1 50%", scripts=scripts)
    code, out, err = follow(folder)
    assert code == 0, out + err
    assert f"[default0]:cwd {tmp_path / scripts}" in out.splitlines(), out
    job_id = out.splitlines()[0].removeprefix("gpudojo: submitted Slurm job ").split()[0]
    assert (folder / f"slurm-{job_id}.out").is_file() and (folder / f"slurm-{job_id}-node0.out").is_file()


def test_follower_exits_with_the_jobs_failure(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv("TINY_EXIT", "3")
    folder = prepare(tmp_path, TINY, SlurmWhere(engine="slurm"))
    code, out, err = follow(folder)
    assert code == 1, out + err  # torchrun's exit code when a rank failed, as Slurm's ExitCode says
    state = read_engine_state(RunFolder(folder))
    assert state["job_state"] == "FAILED" and state["nodes"][0]["state"] == "failed"
    assert "root_cause" not in state  # the ranks' own errors explain a FAILED job
    assert "exitcode  : 3" in err  # torchrun's failure summary, on the follower's stderr


def test_follower_gives_up_on_a_job_slurm_cannot_start(slurm, tmp_path):
    # Two nodes on a one-node cluster: sbatch accepts it, Slurm keeps it pending forever.
    folder = prepare(tmp_path, TINY, SlurmWhere(engine="slurm", nodes=2))
    code, _, err = follow(folder, "--pending-give-up-s", "1")
    assert code == 1
    state = read_engine_state(RunFolder(folder))
    # Slurm 22.05 says PartitionConfig or PartitionNodeLimit, depending on what it checks first.
    assert state["job_state"] == "CANCELLED" and state["reason"] in ("PartitionConfig", "PartitionNodeLimit")
    assert f"pending with reason {state['reason']}" in state["root_cause"]["exception"]
    assert "more nodes" in state["root_cause"]["exception"]
    assert "gave up after 1 s" in err


def test_follower_reports_a_job_cancelled_outside_gpudojo(slurm, tmp_path):
    folder = prepare(tmp_path, "import time\ntime.sleep(120)\n", SlurmWhere(engine="slurm"))
    proc = start_follower(
        [*FOLLOWER, "--script", str(folder / "artifacts" / SCRIPT_FILE), "--run-dir", str(folder)],
        dict(os.environ),
        folder,
    )
    try:
        wait_for(lambda: (read_engine_state(RunFolder(folder)) or {}).get("job_state") == "RUNNING", 30)
        job_id = read_engine_state(RunFolder(folder))["job_id"]
        assert slurm.run("scancel", job_id).returncode == 0
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    state = read_engine_state(RunFolder(folder))
    assert state["job_state"] == "CANCELLED"
    assert state["root_cause"]["exception"].startswith(f"CANCELLED: job {job_id} was cancelled outside gpudojo")


# --- lab-03 through the run service --------------------------------------------------------


def wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition not reached")


@pytest.fixture
def service(tmp_path):
    svc = RunService(REPO / "labs", tmp_path / "data", tmp_path / "root", cancel_grace_s=8.0)
    yield svc
    svc.close()


def slurm_lab03(**params) -> LabRunRequest:
    return LabRunRequest(lab="lab-03-ddp", params=params, where=SlurmWhere(engine="slurm", nodes=1))


def test_lab03_runs_as_a_slurm_job_to_success_with_logs_metrics_and_checks(slurm, service):
    (run,) = service.submit(slurm_lab03(nproc=2, epochs=2, samples=2048))
    assert run.engine == "slurm" and run.nnodes == 1 and [a.name for a in run.artifacts] == [SCRIPT_FILE]
    assert run.argv[1:3] == ["-m", "gpudojo.worker.follow_slurm"]
    done = service.wait(run.id, 90)
    assert done.status == "succeeded", (done.root_cause, service.folder(run.id).launcher_log.read_text())
    assert done.exit_code == 0 and done.root_cause is None
    assert done.job_id and done.job_id.isdigit() and done.job_state == "COMPLETED"
    assert [(n.name, n.state, n.ranks) for n in done.nodes] == [(slurm.node, "succeeded", [0, 1])]
    assert {c.id: c.ok for c in done.checks} == {"loss-decreases": True, "ranks-in-sync": True, "succeeded": True}
    past, _, unsubscribe = service.subscribe(run.id, -1, lambda e: None)
    unsubscribe()
    logs = [e for e in past if e["type"] == "log"]
    for rank in (0, 1):
        assert any(e["rank"] == rank and f"rank {rank} epoch 1:" in e["text"] for e in logs), rank
    assert any(e["rank"] is None and e["text"].startswith("gpudojo: submitted Slurm job") for e in logs)
    metrics = [e for e in past if e["type"] == "metric"]
    assert {e["rank"] for e in metrics} == {0, 1}
    assert any("param_checksum" in e["values"] for e in metrics if e["rank"] == 1)
    script = service.artifact(run.id, SCRIPT_FILE).content
    assert "#SBATCH --nodes=1" in script and f"GPUDOJO_RUN_ID={run.id}" in script


def test_a_crashing_rank_in_a_slurm_job_is_the_runs_root_cause(slurm, service):
    (run,) = service.submit(slurm_lab03(nproc=2, epochs=1, samples=1024, crash_rank=1))
    done = service.wait(run.id, 90)
    assert done.status == "failed" and done.job_state == "FAILED"
    # torchrun's error.json, written on the shared run folder, names the rank and its error.
    assert done.root_cause is not None and done.root_cause.rank == 1
    assert done.root_cause.exception.startswith("RuntimeError"), done.root_cause
    assert {c.id: c.ok for c in done.checks}["succeeded"] is False


def run_processes(run_id: str) -> list[psutil.Process]:
    """Every live process whose environment says it belongs to the run."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("GPUDOJO_RUN_ID") == run_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_cancelling_a_slurm_run_scancels_the_job_and_reaps_every_process(slurm, service):
    (run,) = service.submit(slurm_lab03(nproc=2, epochs=50, samples=65536))
    # Running for real: both ranks have printed.
    wait_for(lambda: {n.name: n.ranks for n in service.get(run.id).nodes}.get(slurm.node) == [0, 1], 60)
    job_id = service.get(run.id).job_id
    before = run_processes(run.id)
    assert len(before) >= 3, before  # the torchrun agent and its two ranks at least
    cancelled = service.cancel(run.id)
    assert cancelled.status == "cancelled"
    assert run_processes(run.id) == []
    shown = slurm.run("scontrol", "show", "job", "-o", job_id).stdout
    assert "JobState=CANCELLED" in shown
    assert slurm.job_processes() == []


def test_submitting_to_slurm_without_a_cluster_is_refused_with_the_reason(service, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(Unavailable, match="sbatch not found"):
        service.submit(slurm_lab03(nproc=2))


def test_a_slurm_job_left_by_a_killed_cli_is_scancelled_when_the_next_service_starts(slurm, tmp_path):
    """The process following a job dies with its server (here the CLI, SIGKILLed): the job
    would run on in Slurm; the next start of the run service marks the run lost and cancels it."""
    data = tmp_path / "cli-data"
    cli = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gpudojo")),
            "lab",
            "run",
            "lab-03-ddp",
            "--engine",
            "slurm",
            "--set",
            "epochs=50",
            "--set",
            "samples=65536",
            "--data-dir",
            str(data),
        ],
        env=slurm.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    svc = RunService(REPO / "labs", data, tmp_path / "root")
    try:
        wait_for(lambda: any(r.job_state == "RUNNING" for r in svc.list()), 60)
        (run,) = svc.list()
        cli.kill()
        cli.wait(10)
        assert svc.start() == [run.id]
        lost = svc.get(run.id)
        assert lost.status == "lost" and f"scancel {run.job_id}" in lost.root_cause.exception

        # Recovery kills the run's processes it finds, then scancels: the job ends CANCELLED, or
        # FAILED when its tasks died first; either way it no longer runs.
        def job_over() -> bool:
            shown = slurm.run("scontrol", "show", "job", "-o", run.job_id).stdout
            return not any(f"JobState={s} " in shown for s in ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING"))

        wait_for(job_over, 30)
        wait_for(lambda: run_processes(run.id) == [], 30)
    finally:
        svc.close()
