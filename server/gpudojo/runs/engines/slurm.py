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

from ...errors import Invalid
from ...runfolder import RUN_DIR_ENV
from ..models import Run, SlurmWhere, control_character
from .base import GLOBAL_RANK_PREFIX, RANK_PREFIX_TEMPLATE_ENV, EngineContext, GeneratedFile

SCRIPT_FILE = "job.sbatch"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# #SBATCH values that sbatch reads as they are, unquoted.
_SBATCH_PLAIN = re.compile(r"^[A-Za-z0-9_./%=:+,@-]*\Z")
_HETJOB = re.compile(r"hetjob|packjob", re.IGNORECASE)
CLIENT_TOOLS = ("sbatch", "squeue", "scontrol", "scancel")
# scontrol ping is asked from the API's worker thread: a controller that does not answer in
# this time counts as unreachable (s).
PING_TIMEOUT_S = 1.5
# Where Slurm's tools look for their configuration when SLURM_CONF is unset, in their order
# (Slurm 20.11 on, Debian's build): the default file, then the copy the slurmd of a configless
# cluster keeps; then SLURM_CONF_SERVER; and past all of these, DNS SRV records.
DEFAULT_CONF_FILES = (Path("/etc/slurm/slurm.conf"), Path("/run/slurm/conf/slurm.conf"))
CONF_SERVER_ENV = "SLURM_CONF_SERVER"
# What scontrol said, kept for EngineInfo.detail (characters).
MAX_DETAIL_CHARS = 2000


def batch_output(folder: Path) -> tuple[str, str]:
    """The batch script's own stdout and stderr files (sbatch patterns: %j is the job id)."""
    base = pattern_literal(str(folder))
    return f"{base}/slurm-%j.out", f"{base}/slurm-%j.err"


def task_output(folder: Path) -> tuple[str, str]:
    """Each node's torchrun agent's stdout and stderr (srun patterns: %n is the node's index)."""
    base = pattern_literal(str(folder))
    return f"{base}/slurm-%j-node%n.out", f"{base}/slurm-%j-node%n.err"


def pattern_literal(path: str) -> str:
    """A path as Slurm's file name patterns read it literally: "%" itself is "%%"."""
    return path.replace("%", "%%")


def one_line(text: str) -> str:
    """Text for a comment of the script: a control character (a newline above all, which would
    end the comment and make the rest a command) shown as an escape instead."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


def sbatch_word(value: str, what: str) -> str:
    """A value of the #SBATCH option ``what`` as sbatch's own parser of those lines reads it back.

    That parser is not the shell's: whitespace ends a word, an unquoted "#" starts a comment,
    "..." or '...' group (the older releases know only "..."), a backslash escapes the next
    character everywhere; so the value is double-quoted with \\, ", ' and # escaped, which every
    release reads the same. Two things it cannot carry are refused: a line break (the line ends)
    and "hetjob" or "packjob" in any case (sbatch blanks those words out of #SBATCH lines)."""
    bad = control_character(value)
    if bad is not None:
        raise Invalid(f"#SBATCH {what}={value!r} has {bad}, which a batch script cannot carry.", "not_for_slurm")
    if _HETJOB.search(value):
        raise Invalid(
            f"#SBATCH {what}={value} holds the word hetjob or packjob, which sbatch blanks out of #SBATCH "
            "lines: this path cannot go there as it is.",
            "not_for_slurm",
        )
    if _SBATCH_PLAIN.match(value):
        return value
    return '"' + re.sub(r"""([\\"'#])""", r"\\\1", value) + '"'


def time_limit(minutes: int) -> str:
    """#SBATCH --time as H:MM:SS."""
    return f"{minutes // 60}:{minutes % 60:02d}:00"


def job_name(ctx: EngineContext) -> str:
    """What squeue shows: gpudojo- and the lab id (or the script's name)."""
    base = ctx.lab_id or Path(ctx.title).stem or "run"
    return "gpudojo-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", base)[:60]


def sbatch_options(ctx: EngineContext, where: SlurmWhere) -> list[tuple[str, str]]:
    """(option, why) for every #SBATCH line, in order, each value as sbatch_word writes it.

    The working folder is not among them: it is the learner's folder, whose name is theirs to
    choose, so it is a ``cd`` of the script (quoted for bash) rather than an #SBATCH --chdir."""
    out, err = batch_output(ctx.folder.path)
    options: list[tuple[str, object, str]] = [
        ("job-name", job_name(ctx), "the name squeue and sacct show"),
        ("nodes", where.nodes, "machines for the job: torchrun runs one agent on each"),
        ("ntasks-per-node", 1, "one task per node, the torchrun agent; it starts the node's ranks itself"),
        ("cpus-per-task", max(1, ctx.nproc), f"CPU cores for the agent and its {ctx.nproc} rank(s), one per rank"),
    ]
    if where.gpus_per_node > 0:
        options.append(("gpus-per-node", where.gpus_per_node, "GPUs on each node: NCCL gives every rank its own"))
    options.append(("time", time_limit(where.time_limit_min), "wall-clock limit; past it Slurm ends the job (TIMEOUT)"))
    if where.partition:
        options.append(("partition", where.partition, "the partition (queue) to run in"))
    if where.account:
        options.append(("account", where.account, "the account the job's time is charged to"))
    options += [
        ("output", out, "what this script itself prints (the rendezvous); %j is the job id"),
        ("error", err, "its errors, srun's messages among them (the ranks' output has files of its own)"),
    ]
    return [(f"--{name}={sbatch_word(str(value), f'--{name}')}", why) for name, value, why in options]


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
        f"# gpudojo run {ctx.run_id}: {one_line(ctx.title)}, as a Slurm batch job.",
        f"# {where.nodes} node(s) x {ctx.nproc} rank(s), torch.distributed backend {ctx.dist_backend}.",
        "# gpudojo submits it (sbatch job.sbatch) and follows it; you can submit it by hand the same way.",
        "#",
        "# Every path below is in the run folder, which must be on a filesystem all the nodes share:",
        "# the ranks write their logs and metrics there and gpudojo reads them back. On one machine that",
        "# is always so; on a cluster, put gpudojo's data dir on the shared filesystem (home, /scratch).",
        f"# {one_line(ctx.python)} must exist on every node (the same virtual environment path, with torch).",
        "",
    ]
    for option, why in sbatch_options(ctx, where):
        head += [f"# {why}", f"#SBATCH {option}"]
    body = [
        "",
        "set -euo pipefail",
        "",
        "# The working folder of the job, as for a run on this machine (srun's tasks start here too).",
        f"cd -- {shlex.quote(str(ctx.entry.parent))}",
        "",
        "# The rendezvous: the first node of the allocation hosts torchrun's c10d store. This script",
        "# runs on that node, so it can also pick a port that is free there. (sed reads every line:",
        "# head would leave scontrol writing into a closed pipe, which pipefail makes an error.)",
        'head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)',
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


def configuration() -> tuple[str | None, str]:
    """Where Slurm's client tools would find their configuration without asking the network:
    (what, "") when they would, (None, the places looked at) when they would not. Reads the
    environment and the file system only."""
    conf = os.environ.get("SLURM_CONF")
    if conf:
        return f"SLURM_CONF={conf}", ""
    for path in DEFAULT_CONF_FILES:
        if path.is_file():
            return str(path), ""
    if os.environ.get(CONF_SERVER_ENV):
        return f"{CONF_SERVER_ENV}={os.environ[CONF_SERVER_ENV]}", ""
    looked = ", ".join(["SLURM_CONF", *map(str, DEFAULT_CONF_FILES), CONF_SERVER_ENV])
    return None, (
        f"Looked for {looked}: none is set or there. scontrol was not run, because without them Slurm's "
        "tools ask DNS for the controller (_slurmctld._tcp SRV records) and wait for the answer."
    )


def ping() -> tuple[bool, str, str]:
    """Whether the controller answers scontrol ping within PING_TIMEOUT_S: (ok, one sentence,
    what scontrol said)."""
    try:
        done = subprocess.run(
            ["scontrol", "ping"],
            capture_output=True,
            text=True,
            timeout=PING_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        reason = f"The Slurm controller did not answer scontrol ping within {PING_TIMEOUT_S:g} s"
        return False, reason + ": is slurmctld running and reachable?", ""
    except OSError as err:
        return False, f"scontrol could not run: {err.strerror}.", ""
    said = (done.stdout + done.stderr).strip()[-MAX_DETAIL_CHARS:]
    answer = next((line.strip() for line in done.stdout.splitlines() if " is UP" in line), None)
    if done.returncode != 0 or answer is None:
        return False, "scontrol ping found no Slurm controller that answers: is slurmctld running and reachable?", said
    return True, f"scontrol ping: {answer}", said


class SlurmEngine:
    name = "slurm"
    title = "Slurm"

    def availability(self) -> tuple[bool, str, str]:
        """Slurm's client tools on PATH, a configuration, and a controller that answers: (ok,
        why in one sentence, scontrol's own words). Never blocks > 2 s, and sends nothing over
        the network unless a configuration says where the controller is."""
        for tool in CLIENT_TOOLS:
            if shutil.which(tool) is None:
                return False, f"{tool} not found: install Slurm's client tools (Debian: slurm-client)", ""
        conf = os.environ.get("SLURM_CONF")
        if conf and not Path(conf).is_file():
            # scontrol would retry for a minute before it says so.
            return False, f"SLURM_CONF={conf} is not a file", ""
        found, looked = configuration()
        if found is None:
            return False, "No Slurm configuration on this machine: set SLURM_CONF to the cluster's slurm.conf.", looked
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
