"""What every engine shares: the context a run gives it, the interface it implements, and
the engine.json file through which the process that follows a job reports on it.

An engine turns a run (a lab or a learner's script, with its arguments, processes per node
and backend) into files (artifacts: commands, a batch script, manifests) and one command
the run service starts under its supervisor. For "local" that command is torchrun itself;
for the others it is a follower: a child process that submits the job to its scheduler,
prints every rank's output to its stdout with torchrun's rank prefix ("[default<global
rank>]:"), keeps engine.json up to date (job id and state, nodes and their ranks, the
rendezvous, a root cause it learned), exits with the job's exit code, and on SIGTERM cancels
the job (scancel, a Kubernetes delete, the nodes' agents) before it exits.

Metric lines: a rank that has no run folder on its machine prints "gpudojo-metric {json}"
(labkit does so when GPUDOJO_RUN_DIR is unset); the supervisor moves such lines from the log
into metrics/rank<N>.jsonl, so charts and checks work the same for every engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ...runfolder import RunFolder

# torchrun prints worker lines with this prefix when the variable is set: the global rank, so
# that ranks of several nodes never collide (torchrun's default prefix is the local rank).
RANK_PREFIX_TEMPLATE_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"
GLOBAL_RANK_PREFIX = "[default${rank}]:"


@dataclass
class EngineContext:
    """A run as an engine sees it (decided by the run service; no argv yet)."""

    run_id: str
    folder: RunFolder
    entry: Path
    args: list[str]
    launcher: Literal["python", "torchrun"]
    nproc: int  # processes per node
    dist_backend: Literal["nccl", "gloo"]
    title: str
    lab_id: str | None = None
    lab_folder: Path | None = None
    record_memory: bool = False
    record_profile: bool = False
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)  # the run's environment (run_env)


@dataclass
class GeneratedFile:
    """One artifact: its file name in the run's artifacts/ folder, a title, and the text.
    ``secret``: it holds a credential (a relay token), so only this user may read the file."""

    name: str
    title: str
    content: str
    media_type: str = "text/plain"
    secret: bool = False


class Engine(Protocol):
    name: str
    title: str

    def availability(self) -> tuple[bool, str] | tuple[bool, str, str]:
        """(True, what was found) when jobs can run from this machine, else (False, why not), the
        reason one sentence; a third item, when there is one, is the detail behind it (what a
        tool said). Sends nothing over the network where no configuration names a cluster."""
        ...

    def generate(self, ctx: EngineContext, where: Any) -> list[GeneratedFile]:
        """The files a user would need to run this job by hand; side-effect free."""
        ...

    def command(self, ctx: EngineContext, where: Any, artifacts_dir: Path) -> tuple[list[str], dict[str, str]]:
        """The argv (never a shell) and environment the run service starts for this job, once
        the generated files are written in ``artifacts_dir``."""
        ...


def cleanup_job(run: Any) -> str | None:
    """Stop what an engine left running for ``run`` when the process following it died with
    the server (Slurm's scancel, a Kubernetes delete): called by recovery at the next start.
    What was done, or None when the engine has nothing to clean (this machine's processes are
    killed by pid; torchrun-nodes' other nodes stop when the relay goes away)."""
    from . import engine

    if run.engine in ("local", "torchrun-nodes"):
        return None
    eng = engine(run.engine)
    clean = getattr(eng, "cleanup", None)
    return clean(run) if clean is not None else None


def write_engine_state(folder: RunFolder, state: dict[str, Any]) -> None:
    """Replace engine.json whole (write a temporary file, then rename), so that a reader never
    sees half a document.

    Keys: job_id (str), job_state (str), nodes ([{name, state, ranks, detail}]),
    rendezvous ({endpoint, id, min_nodes, max_nodes, joined, timeout_s, state}),
    root_cause ({rank, exit_code, exception, traceback}) when the follower knows better than the
    ranks' own errors why the job failed (a node lost, a pod evicted, a job cancelled by the
    scheduler)."""
    folder.path.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder.path, prefix=".engine-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.replace(tmp, folder.engine_state)


def read_engine_state(folder: RunFolder) -> dict[str, Any] | None:
    try:
        doc = json.loads(folder.engine_state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def start_follower(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """Start an engine's command as the run service starts every run: its own session,
    stdout and stderr piped, nothing on stdin."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
