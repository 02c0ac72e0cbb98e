"""Follow one Slurm batch job for the run service: submit it, relay its output, report its
state, end with its exit code, cancel it when told to stop.

    python -m gpudojo.worker.follow_slurm --script RUN/artifacts/job.sbatch --run-dir RUN

The job (gpudojo.runs.engines.slurm) writes its output into the run folder: the batch
script's own in slurm-<job>.out/.err, each node's torchrun agent's in
slurm-<job>-node<N>.out/.err. This process tails those files and prints every line on its
own stdout (the .out files) or stderr (the .err files), so the run service sees the ranks'
"[default<rank>]:" lines as if torchrun ran here. Every 0.5 s it asks scontrol for the job's
state and nodes and rewrites engine.json; when the job has left the queue it exits with the
job's exit code. SIGTERM (the run cancelled) scancels the job and waits until Slurm has
ended every process of it.

Only stdlib and gpudojo's run-folder helpers: no torch here.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runfolder import RANK_LINE, RunFolder, whole_line
from ..runs.engines.base import write_engine_state

POLL_S = 0.5
# A Slurm command that takes longer than this is treated as a failed poll (s).
COMMAND_TIMEOUT_S = 15.0
# Job states after which nothing of the job runs any more (COMPLETING is not one of them:
# scontrol shows COMPLETING until every node has ended the job's processes).
FINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
    }
)
# Reasons a pending job will never start without someone changing the request or the
# cluster: the follower gives up on them after --pending-give-up-s.
HOPELESS_REASONS = {
    "PartitionNodeLimit": "the job asks for more nodes than the partition has or allows",
    "PartitionConfig": "the request does not fit the partition (more nodes, CPUs, GPUs or memory than it has)",
    "PartitionTimeLimit": "the job's --time is above the partition's limit",
    "PartitionDown": "the partition is down",
    "PartitionInactive": "the partition is inactive",
    "BadConstraints": "no node can satisfy the job's constraints",
    "InvalidAccount": "the account is not valid",
    "InvalidQOS": "the QOS is not valid",
    "AssocMaxNodesPerJobLimit": "the account may not use that many nodes in one job",
    "AssocMaxWallDurationPerJobLimit": "the account may not run jobs that long",
    "QOSMaxNodePerJobLimit": "the QOS does not allow that many nodes in one job",
    "QOSMaxWallDurationPerJobLimit": "the QOS does not allow jobs that long",
}
# Why Slurm itself ended a job: the root cause the ranks cannot report.
SLURM_ENDINGS = {
    "TIMEOUT": "Slurm ended job {job} at its time limit ({limit})",
    "NODE_FAIL": "a node of job {job} stopped answering ({nodes}), so Slurm ended the job",
    "OUT_OF_MEMORY": "a process of job {job} went over the job's memory and was killed by Slurm",
    "CANCELLED": "job {job} was cancelled outside gpudojo (scancel by its user or an administrator)",
    "PREEMPTED": "job {job} was preempted by a job with a higher priority",
    "BOOT_FAIL": "a node of job {job} failed to boot",
    "DEADLINE": "job {job} reached its deadline before it could run",
    "REVOKED": "job {job} was revoked (it ran on another cluster of a federation)",
}
_NODE_FILE = re.compile(r"^slurm-\d+-node(\d+)\.(out|err)$")
_RENDEZVOUS = re.compile(r"rendezvous at (\S+):(\d+)")
# Keys of `scontrol show job -o`: words such as JobState, AllocNode:Sid or CPUs/Task before "=".
_SCONTROL_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9:/_]*)=")


def parse_scontrol(text: str) -> dict[str, str]:
    """`scontrol show job -o` as {key: value} (a value may hold spaces: Command, WorkDir)."""
    keys = list(_SCONTROL_KEY.finditer(text.strip()))
    out: dict[str, str] = {}
    for m, nxt in zip(keys, [*keys[1:], None], strict=True):
        end = nxt.start() if nxt else len(text.strip())
        out[m[1]] = text.strip()[m.end() : end].strip()
    return out


def exit_code_of(value: str) -> int:
    """scontrol's ExitCode "code:signal" as a process exit code (128 + signal when killed)."""
    code, _, sig = value.partition(":")
    try:
        if sig and int(sig):
            return 128 + int(sig)
        return int(code)
    except ValueError:
        return 1


def run_slurm(argv: list[str], timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """A Slurm client command (argv, no shell); a timeout reads as a failure (rc 124)."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]}: no answer within {timeout:g} s")
    except OSError as err:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: {err.strerror}")


def show_job(job_id: str) -> tuple[dict[str, str] | None, str]:
    """The job's fields, or None with why: "gone" when Slurm no longer knows it, else the error."""
    done = run_slurm(["scontrol", "show", "job", "-o", job_id])
    if done.returncode == 0 and done.stdout.strip():
        return parse_scontrol(done.stdout.splitlines()[0]), ""
    if "Invalid job id" in done.stderr:
        return None, "gone"
    return None, (done.stderr.strip() or f"scontrol exited with {done.returncode}")


def hostnames(nodelist: str) -> list[str]:
    """Slurm's compact node list (node[01-03]) expanded, in the order of the job's node index."""
    if not nodelist or nodelist in ("(null)", "None"):
        return []
    done = run_slurm(["scontrol", "show", "hostnames", nodelist])
    return done.stdout.split() if done.returncode == 0 else [nodelist]


class Tail:
    """New whole lines of a file that grows (a partial last line waits for its end)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def lines(self, final: bool = False) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return []
        self.offset += len(chunk)
        data = self.partial + chunk
        parts = data.split(b"\n")
        self.partial = parts.pop()
        if final and self.partial:
            parts.append(self.partial)
            self.partial = b""
        return [p.decode("utf-8", errors="replace").rstrip("\r") for p in parts]


@dataclass
class JobView:
    """What the follower knows about the job, as engine.json says it."""

    job_id: str | None = None
    state: str = "SUBMITTING"
    reason: str = ""
    nodes: list[str] = field(default_factory=list)
    ranks: dict[int, set[int]] = field(default_factory=dict)  # node index -> global ranks seen
    rendezvous: tuple[str, int] | None = None
    root_cause: dict[str, Any] | None = None
    detail: str = ""
    queued_s: float | None = None  # from sbatch to the first look at the job with its nodes

    def node_state(self) -> str:
        if self.state in ("PENDING", "CONFIGURING", "SUBMITTING"):
            return "waiting"
        if self.state in ("RUNNING", "COMPLETING", "SUSPENDED", "STOPPED"):
            return "running"
        if self.state == "COMPLETED":
            return "succeeded"
        return "lost" if self.state == "NODE_FAIL" else "failed"

    def document(self, nnodes: int) -> dict[str, Any]:
        state = self.node_state()
        detail = self.state if not self.reason or self.reason == "None" else f"{self.state} ({self.reason})"
        nodes = [
            {"name": name, "state": state, "ranks": sorted(self.ranks.get(i, ())), "detail": detail}
            for i, name in enumerate(self.nodes)
        ]
        doc: dict[str, Any] = {"job_id": self.job_id, "job_state": self.state, "nodes": nodes}
        if self.reason and self.reason != "None":
            doc["reason"] = self.reason
        if self.detail:
            doc["detail"] = self.detail
        if self.queued_s is not None:
            doc["queued_s"] = round(self.queued_s, 2)
        if self.rendezvous:
            joined = [name for i, name in enumerate(self.nodes) if self.ranks.get(i)]
            final = self.state in FINAL_STATES
            doc["rendezvous"] = {
                "endpoint": f"{self.rendezvous[0]}:{self.rendezvous[1]}",
                "id": self.job_id,
                "min_nodes": nnodes,
                "max_nodes": nnodes,
                "joined": joined,
                "timeout_s": 600,  # torchrun's default join timeout
                "state": "closed" if final else ("complete" if len(joined) >= nnodes else "waiting"),
            }
        if self.root_cause:
            doc["root_cause"] = self.root_cause
        return doc


class SlurmFollower:
    def __init__(self, script: Path, run_dir: Path, *, poll_s: float, pending_give_up_s: float) -> None:
        self.script = script
        self.folder = RunFolder(run_dir)
        self.poll_s = poll_s
        self.pending_give_up_s = pending_give_up_s
        self.view = JobView()
        self.nnodes = _nodes_asked(script)
        self.tails: dict[str, Tail] = {}
        self.stop_requested = False
        self.cancelled = False
        self.fields: dict[str, str] = {}
        self._written: dict[str, Any] | None = None

    # --- output -----------------------------------------------------------------------

    def pump(self, final: bool = False) -> None:
        """Print the new lines of every output file of the job: the batch script's first, then
        each node's, .out to stdout and .err to stderr."""
        job = self.view.job_id
        for path in sorted(self.folder.path.glob(f"slurm-{job}*.*"), key=_file_order):
            if path.suffix not in (".out", ".err"):
                continue
            tail = self.tails.setdefault(path.name, Tail(path))
            node = _NODE_FILE.match(path.name)
            stream = sys.stdout if path.suffix == ".out" else sys.stderr
            for line in map(whole_line, tail.lines(final)):
                if node and (m := RANK_LINE.match(line)):
                    self.view.ranks.setdefault(int(node[1]), set()).add(int(m[1]))
                elif not node and self.view.rendezvous is None and (r := _RENDEZVOUS.search(line)):
                    self.view.rendezvous = (r[1], int(r[2]))
                stream.write(line + "\n")
            stream.flush()

    def say(self, text: str, *, err: bool = False) -> None:
        stream = sys.stderr if err else sys.stdout
        stream.write(f"gpudojo: {text}\n")
        stream.flush()

    def publish(self) -> None:
        doc = self.view.document(self.nnodes)
        if doc != self._written:
            write_engine_state(self.folder, doc)
            self._written = doc

    # --- the job --------------------------------------------------------------------------

    def submit(self) -> bool:
        done = run_slurm(["sbatch", "--parsable", str(self.script)], timeout=60)
        if done.returncode != 0 or not done.stdout.strip():
            message = " ".join(done.stderr.split()) or f"sbatch exited with {done.returncode}"
            self.say(f"sbatch refused the job: {message}", err=True)
            self.view.state = "SUBMIT_FAILED"
            self.view.root_cause = {"exception": f"sbatch refused the job: {message}", "exit_code": done.returncode}
            self.publish()
            return False
        self.view.job_id = done.stdout.strip().split(";")[0]
        self.view.state = "PENDING"
        self.say(f"submitted Slurm job {self.view.job_id} (sbatch {self.script.name})")
        self.publish()
        return True

    def cancel(self) -> None:
        if self.cancelled or self.view.job_id is None:
            return
        self.cancelled = True
        self.say(f"cancelling Slurm job {self.view.job_id} (scancel)")
        done = run_slurm(["scancel", self.view.job_id])
        if done.returncode != 0:
            self.say(f"scancel failed: {' '.join(done.stderr.split())}", err=True)

    def observe(self, submitted: float) -> bool:
        """One poll of scontrol; True once the job has left the queue (nothing of it runs)."""
        fields, why = show_job(str(self.view.job_id))
        if fields is None:
            if why == "gone":
                # Slurm forgot the job (its record expired): it has ended, how is unknown.
                self.view.detail = "Slurm no longer knows the job (its record expired: MinJobAge)"
                if self.view.state not in FINAL_STATES:
                    self.view.state = "UNKNOWN"
                return True
            self.view.detail = f"scontrol: {why}"
            return False
        self.fields = fields
        state = fields.get("JobState", "UNKNOWN")
        nodelist = fields.get("NodeList", "")
        if state != "PENDING" and nodelist not in ("", "(null)") and not self.view.nodes:
            # The first look at the job with nodes: it has started (the queue wait is a figure
            # a learner compares with a run on this machine).
            self.view.nodes = hostnames(nodelist)
            self.view.queued_s = time.monotonic() - submitted
            self.say(f"job {self.view.job_id} started on {nodelist} after {self.view.queued_s:.1f} s in the queue")
        self.view.state, self.view.reason = state, fields.get("Reason", "")
        self.view.detail = ""
        return state in FINAL_STATES

    def hopeless(self, since: float | None) -> float | None:
        """When a pending job's reason says it can never start: since when (monotonic s)."""
        if self.view.state != "PENDING" or self.view.reason not in HOPELESS_REASONS:
            return None
        return since if since is not None else time.monotonic()

    def follow(self) -> int:
        if not self.submit():
            return 1
        submitted = time.monotonic()
        stuck_since: float | None = None
        gave_up = False
        while True:
            if self.stop_requested and not self.cancelled:
                self.cancel()
            ended = self.observe(submitted)
            self.pump()
            stuck_since = self.hopeless(stuck_since)
            if stuck_since is not None and not gave_up and time.monotonic() - stuck_since > self.pending_give_up_s:
                gave_up = True
                self.give_up()
            self.publish()
            if ended:
                break
            self.sleep()
        self.pump(final=True)
        return self.finish(gave_up)

    def give_up(self) -> None:
        reason = self.view.reason
        text = (
            f"Slurm cannot start job {self.view.job_id}: pending with reason {reason} "
            f"({HOPELESS_REASONS[reason]}); gave up after {self.pending_give_up_s:g} s"
        )
        self.say(text, err=True)
        self.view.root_cause = {"exception": text, "exit_code": 1}
        self.cancel()

    def finish(self, gave_up: bool) -> int:
        """engine.json's last word and the exit code: the job's, never 0 when it did not complete."""
        state = self.view.state
        code = exit_code_of(self.fields.get("ExitCode", "1:0")) if self.fields else 1
        if self.cancelled and not gave_up:
            code = code or 128 + signal.SIGTERM
        elif state != "COMPLETED":
            code = code or 1
            if self.view.root_cause is None and state in SLURM_ENDINGS:
                text = SLURM_ENDINGS[state].format(
                    job=self.view.job_id,
                    limit=self.fields.get("TimeLimit", "?"),
                    nodes=", ".join(self.view.nodes) or self.fields.get("NodeList", "?"),
                )
                self.view.root_cause = {"exception": f"{state}: {text}", "exit_code": code}
        if self.view.root_cause is None and state == "UNKNOWN":
            self.view.root_cause = {"exception": self.view.detail, "exit_code": code}
        self.publish()
        self.say(f"Slurm job {self.view.job_id} ended: {state}, exit code {self.fields.get('ExitCode', '?')}")
        return code

    def sleep(self) -> None:
        """Wait one poll period, waking early when a stop is asked."""
        deadline = time.monotonic() + self.poll_s
        while time.monotonic() < deadline and not (self.stop_requested and not self.cancelled):
            time.sleep(0.05)


def _file_order(path: Path) -> tuple[int, str]:
    """The batch script's files before the nodes' files, nodes in index order."""
    node = _NODE_FILE.match(path.name)
    return (int(node[1]) + 1 if node else 0, path.name)


def _nodes_asked(script: Path) -> int:
    """The #SBATCH --nodes of the script (1 when absent or unreadable)."""
    try:
        m = re.search(r"^#SBATCH\s+--nodes=(\d+)", script.read_text(encoding="utf-8"), re.MULTILINE)
    except OSError:
        return 1
    return int(m[1]) if m else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", type=Path, required=True, help="the batch script to sbatch")
    parser.add_argument("--run-dir", type=Path, required=True, help="the run folder (engine.json, job output)")
    parser.add_argument("--poll-s", type=float, default=POLL_S, help="seconds between two looks at the job")
    parser.add_argument(
        "--pending-give-up-s",
        type=float,
        default=60.0,
        help="cancel a job still pending after this many seconds for a reason that cannot change by itself",
    )
    args = parser.parse_args(argv)
    follower = SlurmFollower(
        args.script.resolve(), args.run_dir.resolve(), poll_s=args.poll_s, pending_give_up_s=args.pending_give_up_s
    )

    def stop(signum: int, frame: object) -> None:
        follower.stop_requested = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return follower.follow()


if __name__ == "__main__":
    sys.exit(main())
