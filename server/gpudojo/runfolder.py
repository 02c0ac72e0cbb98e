"""The contract between the run service and the processes it starts: environment variables
and the names of the files in a run's folder.

The run service (runs/), the memory and profile services (memory/, profile/) and labkit,
which runs inside the training processes, all read these names from here. Keep this module import-light (stdlib
only, no pydantic, no torch): every rank of every lab imports it.

A run's folder, ``<data dir>/runs/<run id>/``::

    events.jsonl           every event of the run's stream, in order (the websocket replays it)
    launcher.log           torchrun's (or the script's) own output, as it printed it
    torchrun/              torchrun's --log-dir: per-rank stdout.log, stderr.log, error.json
    metrics/rankN.jsonl    what labkit.report and labkit.check wrote, one JSON object a line
    memory/rankN.pickle    a CUDA memory snapshot (labkit.memory_capture), rankN.phases.json beside it
    memory/rankN.cpu.json  a CPU memory timeline from the profiler (labkit.memory_capture)
    profile/rankN.trace.json  a Chrome trace from torch.profiler (labkit.profile), one per rank
    cancel-requested       left by `gpudojo runs cancel` for a run another process supervises
    artifacts/             what an engine generated for the run: commands, a batch script, manifests
    engine.json            an engine's view of the job (job id and state, nodes, rendezvous, root
                           cause), rewritten whole (write + rename) by the process that follows it
"""

from __future__ import annotations

import re
from pathlib import Path

# Set by the run service in every process of a run.
RUN_ID_ENV = "GPUDOJO_RUN_ID"
RUN_DIR_ENV = "GPUDOJO_RUN_DIR"
# "nccl" with GPUs, "gloo" without: what labkit.backend() returns.
BACKEND_ENV = "GPUDOJO_BACKEND"
# "1" when the learner ticked "record memory": labkit.memory_capture() records then.
RECORD_MEMORY_ENV = "GPUDOJO_RECORD_MEMORY"
# "1" when the learner ticked "record profile": labkit.profile() records then.
RECORD_PROFILE_ENV = "GPUDOJO_RECORD_PROFILE"

# labkit prints a metric line to stdout, after this word, when no run folder is set (a node or
# pod of a job on another machine): whoever follows the job's output writes it to metrics/.
METRIC_LINE_PREFIX = "gpudojo-metric"

# torchrun's prefix of a rank's line in its own output, under the template the engines set
# (runs/engines/base.GLOBAL_RANK_PREFIX): "[default<global rank>]:".
RANK_LINE = re.compile(r"^\[default(\d+)\]:")


def rank_line(text: str) -> tuple[int, str] | None:
    """(global rank, what the rank printed) of a line of torchrun's output; None for torchrun's
    own lines.

    torchrun copies a rank's output by tailing its log file with readline()
    (torch.distributed.elastic.multiprocessing.tail_log), which returns a line the rank has not
    finished writing yet. print() with PYTHONUNBUFFERED (set in every run) writes the text and
    the newline as two writes, so when the tailer reads between them it prints the text, then
    the rest of the line, the newline, behind the prefix again: "[default0]:loss 0.5[default0]:".
    The prefix's copy at the end is that split, not the rank's text, and is dropped here: a
    metric line stays parseable and a log line reads as it was printed.
    """
    m = RANK_LINE.match(text)
    if m is None:
        return None
    prefix = m.group(0)
    return int(m.group(1)), text[len(prefix) :].removesuffix(prefix)


def whole_line(text: str) -> str:
    """A line of torchrun's output as the rank printed it: without the copy of its prefix that
    a split read left at its end (rank_line). The followers of jobs on other machines pass
    their lines through it, so the tails they keep for a root cause read as printed too."""
    ranked = rank_line(text)
    return text if ranked is None else text[: text.index(":") + 1] + ranked[1]


EVENTS_FILE = "events.jsonl"
LAUNCHER_LOG = "launcher.log"
TORCHRUN_DIR = "torchrun"
METRICS_DIR = "metrics"
MEMORY_DIR = "memory"
PROFILE_DIR = "profile"
CANCEL_FILE = "cancel-requested"
ARTIFACTS_DIR = "artifacts"
ENGINE_STATE_FILE = "engine.json"
# Where labkit.memory_capture() writes when no run service started the script.
HAND_RUN_MEMORY_DIR = "gpudojo-memory"
# Where labkit.profile() writes when no run service started the script.
HAND_RUN_PROFILE_DIR = "gpudojo-profiles"

# Run ids: creation time and 6 hex digits, e.g. 20260101-120000-0a1b2c.
RUN_ID_PATTERN = r"[0-9]{8}-[0-9]{6}-[0-9a-f]{6}"
RUN_ID = re.compile(f"^{RUN_ID_PATTERN}$")
# The captures the memory viewer opens: rank<N>.pickle (CUDA) or rank<N>.cpu.json (CPU).
CUDA_SNAPSHOT_SUFFIX = ".pickle"
CPU_TIMELINE_SUFFIX = ".cpu.json"
CAPTURE_NAME = re.compile(r"^rank(\d+)\.(pickle|cpu\.json)$")
# The traces the profile view opens: rank<N>.trace.json as labkit.profile writes it; a gzipped
# copy (rank<N>.trace.json.gz) is read the same way.
TRACE_SUFFIX = ".trace.json"
TRACE_NAME = re.compile(r"^rank(\d+)\.trace\.json(?:\.gz)?$")


def metrics_name(rank: int) -> str:
    return f"rank{rank}.jsonl"


def capture_name(rank: int, suffix: str) -> str:
    """rank<N><suffix>, e.g. rank0.pickle or rank1.cpu.json."""
    return f"rank{rank}{suffix}"


def trace_name(rank: int) -> str:
    """rank<N>.trace.json: one rank's Chrome trace in a run's profile folder."""
    return f"rank{rank}{TRACE_SUFFIX}"


class RunFolder:
    """The paths of one run's folder (nothing is created until someone writes)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    @property
    def events(self) -> Path:
        return self.path / EVENTS_FILE

    @property
    def launcher_log(self) -> Path:
        return self.path / LAUNCHER_LOG

    @property
    def torchrun_dir(self) -> Path:
        return self.path / TORCHRUN_DIR

    @property
    def metrics_dir(self) -> Path:
        return self.path / METRICS_DIR

    @property
    def memory_dir(self) -> Path:
        return self.path / MEMORY_DIR

    @property
    def profile_dir(self) -> Path:
        return self.path / PROFILE_DIR

    @property
    def cancel_file(self) -> Path:
        return self.path / CANCEL_FILE

    @property
    def artifacts_dir(self) -> Path:
        return self.path / ARTIFACTS_DIR

    @property
    def engine_state(self) -> Path:
        return self.path / ENGINE_STATE_FILE

    def metrics_file(self, rank: int) -> Path:
        return self.metrics_dir / metrics_name(rank)

    def metrics_files(self) -> list[Path]:
        """Every rank's metrics file so far, in name order."""
        folder = self.metrics_dir
        return sorted(folder.glob("rank*.jsonl")) if folder.is_dir() else []


def runs_dir(data_dir: Path) -> Path:
    """Where the run folders live under gpudojo's data dir."""
    return Path(data_dir) / "runs"
