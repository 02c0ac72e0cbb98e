"""Slurm: a batch script generated from the run, submitted with sbatch and followed until the
job leaves the queue.

The script asks for ``where.nodes`` nodes with one task each (the torchrun agent, which starts
the ranks of its node itself), finds the rendezvous host in SLURM_JOB_NODELIST and lets srun
start the agents, each writing its output to a file of its own in the run folder. The run
service starts gpudojo.worker.follow_slurm, which submits the script, tails those files into
the run's log, keeps engine.json current from scontrol and cancels the job with scancel.

Slurm jobs write where they run, so the run folder must be on a filesystem the nodes share
(always true on a one-host cluster; on a real cluster, put gpudojo's data dir there).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ...runfolder import RUN_DIR_ENV
from ..models import Run, SlurmWhere
from .base import GLOBAL_RANK_PREFIX, RANK_PREFIX_TEMPLATE_ENV, EngineContext, GeneratedFile

SCRIPT_FILE = "job.sbatch"
CLIENT_TOOLS = ("sbatch", "squeue", "scontrol", "scancel")
# scontrol ping is asked from the API's worker thread: a controller that does not answer in
# this time counts as unreachable (s).
PING_TIMEOUT_S = 1.5


def batch_output(folder: Path) -> tuple[str, str]:
    """The batch script's own stdout and stderr files (sbatch patterns: %j is the job id)."""
    return str(folder / "slurm-%j.out"), str(folder / "slurm-%j.err")


def task_output(folder: Path) -> tuple[str, str]:
    """Each node's torchrun agent's stdout and stderr (srun patterns: %n is the node's index)."""
    return str(folder / "slurm-%j-node%n.out"), str(folder / "slurm-%j-node%n.err")


def time_limit(minutes: int) -> str:
    """#SBATCH --time as H:MM:SS."""
    return f"{minutes // 60}:{minutes % 60:02d}:00"


def job_name(ctx: EngineContext) -> str:
    """What squeue shows: gpudojo- and the lab id (or the script's name)."""
    base = ctx.lab_id or Path(ctx.title).stem or "run"
    return "gpudojo-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", base)[:60]


def sbatch_options(ctx: EngineContext, where: SlurmWhere) -> list[tuple[str, str]]:
    """(option, why) for every #SBATCH line, in order."""
    out, err = batch_output(ctx.folder.path)
    options = [
        (f"--job-name={job_name(ctx)}", "the name squeue and sacct show"),
        (f"--nodes={where.nodes}", "machines for the job: torchrun runs one agent on each"),
        ("--ntasks-per-node=1", "one task per node, the torchrun agent; it starts the node's ranks itself"),
        (f"--cpus-per-task={max(1, ctx.nproc)}", f"CPU cores for the agent and its {ctx.nproc} rank(s), one per rank"),
    ]
    if where.gpus_per_node > 0:
        options.append((f"--gpus-per-node={where.gpus_per_node}", "GPUs on each node: NCCL gives every rank its own"))
    options.append(
        (f"--time={time_limit(where.time_limit_min)}", "wall-clock limit; past it Slurm ends the job (TIMEOUT)")
    )
    if where.partition:
        options.append((f"--partition={where.partition}", "the partition (queue) to run in"))
    if where.account:
        options.append((f"--account={where.account}", "the account the job's time is charged to"))
    options += [
        (f"--chdir={ctx.entry.parent}", "the working folder of the job, as for a run on this machine"),
        (f"--output={out}", "what this script itself prints (the rendezvous); %j is the job id"),
        (f"--error={err}", "its errors, srun's messages among them (the ranks' output has files of its own)"),
    ]
    return options


class Var(str):
    """A word of the script that names shell variables set by Slurm or the script itself
    ($SLURM_NNODES, $head_node): double-quoted, so bash expands it. Every other word, the run's
    own arguments included, is single-quoted and reaches torchrun as it is."""


def shell_word(word: str) -> str:
    return f'"{word}"' if isinstance(word, Var) else shlex.quote(word)


def srun_lines(ctx: EngineContext, where: SlurmWhere) -> list[list[str]]:
    """The srun line, as groups of words that go on one line each: srun and its options, then
    one node's torchrun agent and its options, then the entry script with its arguments."""
    out, err = task_output(ctx.folder.path)
    srun: list[list[str]] = [
        ["srun", Var("--nodes=$SLURM_NNODES"), "--ntasks-per-node=1", Var("--cpus-per-task=$SLURM_CPUS_PER_TASK")],
    ]
    if where.gpus_per_node > 0:
        srun.append([f"--gpus-per-node={where.gpus_per_node}"])
    srun += [["--kill-on-bad-exit=1"], [f"--output={out}"], [f"--error={err}"]]
    torchrun: list[list[str]] = [
        [ctx.python, "-m", "torch.distributed.run"],
        ["--nnodes", Var("$SLURM_NNODES"), "--nproc-per-node", str(ctx.nproc)],
        ["--rdzv-backend", "c10d", "--rdzv-endpoint", Var("$head_node:$port"), "--rdzv-id", Var("$SLURM_JOB_ID")],
        ["--log-dir", str(ctx.folder.torchrun_dir), "--tee", "3"],
        [str(ctx.entry), *ctx.args],
    ]
    return srun + torchrun


def continued(groups: list[list[str]], indent: str = "  ") -> str:
    """A command over several lines, a backslash at the end of all but the last."""
    lines = [" ".join(map(shell_word, group)) for group in groups]
    return " \\\n".join([lines[0], *(indent + line for line in lines[1:])])


def run_exports(ctx: EngineContext) -> list[str]:
    """The run's gpudojo variables (run id, run folder, backend, what to record): sbatch would
    pass them on from the submitting shell too, but the script stays runnable by hand."""
    names = sorted(k for k in ctx.env if k.startswith("GPUDOJO_"))
    env = {"PYTHONUNBUFFERED": "1", **{k: ctx.env[k] for k in names}}
    env.setdefault(RUN_DIR_ENV, str(ctx.folder.path))
    lines = [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    # Single quotes: torchrun fills in ${rank} itself, for every line of every rank.
    lines.append(f"export {RANK_PREFIX_TEMPLATE_ENV}={shlex.quote(GLOBAL_RANK_PREFIX)}")
    return lines


def batch_script(ctx: EngineContext, where: SlurmWhere) -> str:
    head = [
        "#!/bin/bash",
        f"# gpudojo run {ctx.run_id}: {ctx.title}, as a Slurm batch job.",
        f"# {where.nodes} node(s) x {ctx.nproc} rank(s), torch.distributed backend {ctx.dist_backend}.",
        "# gpudojo submits it (sbatch job.sbatch) and follows it; you can submit it by hand the same way.",
        "#",
        "# Every path below is in the run folder, which must be on a filesystem all the nodes share:",
        "# the ranks write their logs and metrics there and gpudojo reads them back. On one machine that",
        "# is always so; on a cluster, put gpudojo's data dir on the shared filesystem (home, /scratch).",
        f"# {ctx.python} must exist on every node (the same virtual environment path, with torch).",
        "",
    ]
    for option, why in sbatch_options(ctx, where):
        head += [f"# {why}", f"#SBATCH {option}"]
    body = [
        "",
        "set -euo pipefail",
        "",
        "# The rendezvous: the first node of the allocation hosts torchrun's c10d store. This script",
        "# runs on that node, so it can also pick a port that is free there.",
        'head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)',
        f"port=$({shlex.quote(ctx.python)} -c "
        "'import socket; s = socket.socket(); s.bind((\"\", 0)); print(s.getsockname()[1])')",
        'echo "gpudojo: job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, rendezvous at $head_node:$port"',
        "",
        "# The run's environment, and torchrun's log prefix with the global rank (node 1's first rank",
        "# is not rank 0), so that gpudojo can tell every rank's lines apart.",
        *run_exports(ctx),
        "",
        "# One torchrun agent per node; each node's output goes to a file of its own (%n: the node's",
        "# index in the job). --kill-on-bad-exit stops every node when one of them fails.",
        continued(srun_lines(ctx, where)),
        "",
    ]
    return "\n".join(head + body)


def ping() -> tuple[bool, str]:
    """Whether the controller answers scontrol ping within PING_TIMEOUT_S."""
    try:
        done = subprocess.run(
            ["scontrol", "ping"],
            capture_output=True,
            text=True,
            timeout=PING_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return False, f"scontrol ping got no answer within {PING_TIMEOUT_S:g} s: is slurmctld running and reachable?"
    except OSError as err:
        return False, f"scontrol could not run: {err.strerror}"
    text = " ".join((done.stdout + " " + done.stderr).split())
    if done.returncode != 0 or " is UP" not in done.stdout:
        return False, f"scontrol ping: {text[-300:] or f'exit code {done.returncode}'}"
    return True, text


class SlurmEngine:
    name = "slurm"
    title = "Slurm"

    def availability(self) -> tuple[bool, str]:
        """Slurm's client tools on PATH and a controller that answers; never blocks > 2 s."""
        for tool in CLIENT_TOOLS:
            if shutil.which(tool) is None:
                return False, f"{tool} not found: install Slurm's client tools (Debian: slurm-client)"
        conf = os.environ.get("SLURM_CONF")
        if conf is not None and not Path(conf).is_file():
            # scontrol would retry for a minute before it says so.
            return False, f"SLURM_CONF={conf} is not a file"
        return ping()

    def cleanup(self, run: Run) -> str:
        """Cancel a job whose follower died with the server (recovery at the next start)."""
        if not run.job_id:
            return "no Slurm job id was recorded"
        try:
            done = subprocess.run(["scancel", run.job_id], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"scancel {run.job_id} failed: {err}"
        return f"scancel {run.job_id}" + (f": {done.stderr.strip()}" if done.returncode else "")

    def generate(self, ctx: EngineContext, where: SlurmWhere) -> list[GeneratedFile]:
        return [
            GeneratedFile(
                name=SCRIPT_FILE,
                title=f"Slurm batch script ({where.nodes} node(s), sbatch {SCRIPT_FILE})",
                content=batch_script(ctx, where),
                media_type="text/x-shellscript",
            )
        ]

    def command(self, ctx: EngineContext, where: SlurmWhere, artifacts_dir: Path) -> tuple[list[str], dict[str, str]]:
        # The follower needs gpudojo, not torch: the server's own interpreter.
        argv = [
            sys.executable,
            "-m",
            "gpudojo.worker.follow_slurm",
            "--script",
            str(artifacts_dir / SCRIPT_FILE),
            "--run-dir",
            str(ctx.folder.path),
        ]
        return argv, dict(ctx.env)
