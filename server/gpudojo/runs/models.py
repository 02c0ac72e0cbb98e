"""Shapes of the runs API: lab manifests, run requests, runs, their events and sweeps.

Times are Unix seconds (float) unless the name says otherwise.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationInfo, field_validator

RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "timed_out", "lost"]
FINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled", "timed_out", "lost"})
Launcher = Literal["python", "torchrun"]
Needs = Literal["cpu", "gpu", "multi-gpu"]
# What a lab's script records when the run asks: "memory" (it calls labkit.memory_capture()),
# "profile" (labkit.profile()), so that the run form can offer "Record <it>" only where it works.
Recording = Literal["memory", "profile"]
ParamValue = bool | int | float | str


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Text that goes into the lines of generated files (paths, titles): no C0 control character
# (newline and tab among them) and no DEL.
CONTROL_FREE = r"^[^\x00-\x1f\x7f]+$"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def control_character(text: str) -> str | None:
    """The first control character of ``text`` as a person would name it ("a newline",
    "U+0009"), or None when there is none."""
    m = _CONTROL.search(text)
    if m is None:
        return None
    names = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "a NUL"}
    return names.get(m[0], f"U+{ord(m[0]):04X}")


# --- manifests -----------------------------------------------------------------------------


class ParamSpec(_Model):
    """One typed parameter of a lab. Each becomes ``--name value`` on the entry script's
    command line (bool: ``--name`` / ``--no-name``), except ``nproc``, which torchrun takes."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    type: Literal["int", "float", "choice", "bool"]
    default: ParamValue
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: list[ParamValue] | None = None


class MetricSpec(_Model):
    name: str
    unit: str = ""
    help: str = ""
    chart: bool = Field(True, description="False for a label such as an epoch number: recorded, not charted")


class CheckSpec(_Model):
    """What decides that a lab was completed.

    kind:
    - ``reported``: the script reports it (``labkit.check(id, ok, detail)``);
    - ``decreases``: ``metric`` at the last step is below its value at the first (rank 0);
    - ``ranks_equal``: every rank reported the same last value of ``metric``;
    - ``succeeded``: every process exited with 0.
    ``when`` limits a check to runs whose parameters have these values."""

    id: str
    title: str
    kind: Literal["reported", "decreases", "ranks_equal", "succeeded"] = "reported"
    metric: str | None = None
    needs: Needs = "cpu"
    when: dict[str, ParamValue] = Field(default_factory=dict)


class LabManifest(_Model):
    """labs/<id>/lab.toml as the run service reads it (the course catalog reads the same file)."""

    model_config = ConfigDict(extra="ignore")
    id: str
    title: str = Field(pattern=CONTROL_FREE)
    order: int = 0
    minutes: int = 0
    needs: Needs = "cpu"
    cpu_path: str | None = None
    entry: str = Field(pattern=r"^[A-Za-z0-9_.-]+\.py$")
    launcher: Launcher = "python"
    parameters: list[ParamSpec] = Field(default_factory=list)
    metrics: list[MetricSpec] = Field(default_factory=list)
    checks: list[CheckSpec] = Field(default_factory=list)
    records: list[Recording] = Field(
        default_factory=list,
        description='What the script records when the run asks (lab.toml `records = ["profile"]`)',
    )


class LabSummary(_Model):
    id: str
    title: str
    needs: Needs
    cpu_path: str | None
    launcher: Launcher
    parameters: list[ParamSpec]
    metrics: list[MetricSpec]
    checks: list[CheckSpec]
    records: list[Recording] = Field(
        default_factory=list, description="Offer 'Record memory' / 'Record profile' for these; the script records them"
    )


class LabProblem(_Model):
    lab: str
    message: str


class LabList(_Model):
    """GET runs/labs: the runnable labs with their parameter forms, and manifests that failed."""

    labs: list[LabSummary]
    problems: list[LabProblem] = Field(default_factory=list)


# --- where a run runs: the engines -------------------------------------------------------

EngineName = Literal["local", "torchrun-nodes", "slurm", "kubernetes"]
# Kubernetes names: RFC 1123 labels (namespaces, ConfigMaps, jobs).
K8S_NAME = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"


class LocalWhere(_Model):
    """This machine: torchrun (or python) under the run service, as before engines existed."""

    engine: Literal["local"] = "local"


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback (127.0.0.0/8, ::1, localhost), read as written."""
    name = host.strip().lower().rstrip(".")
    if name in ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class NodesWhere(_Model):
    """torchrun on several machines, joined by a c10d rendezvous hosted by this one.

    This machine runs node 0's agent under the run service; every other node runs the join
    command the run gives (``gpudojo node join``), which starts its own torchrun agent and
    relays its ranks' output and metrics back here."""

    engine: Literal["torchrun-nodes"]
    nnodes: int = Field(2, ge=1, le=64, description="Nodes the job waits for (the maximum when elastic)")
    min_nodes: int | None = Field(
        None, ge=1, le=64, description="Elastic: start with at least this many nodes (torchrun --nnodes MIN:MAX)"
    )
    same_machine: bool = Field(
        False,
        description="Every node runs on this machine (practice): the one case where host may be loopback",
    )
    host: str = Field(
        "127.0.0.1",
        validate_default=True,
        max_length=253,
        pattern=r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$",
        description=(
            "This machine's address as the other nodes reach it (rendezvous and relay); "
            "loopback only with same_machine or a single node"
        ),
    )
    max_restarts: int = Field(0, ge=0, le=10, description="torchrun --max-restarts: whole-job restarts after a failure")
    join_timeout_s: int = Field(
        120, ge=10, le=3600, description="How long the rendezvous waits for the nodes before it gives up"
    )

    @field_validator("host")
    @classmethod
    def _one_address(cls, host: str) -> str:
        # The relay listens on exactly this address: "every interface" would open it to every
        # network this machine is on. inet_aton reads the short forms too ("0", "0.0").
        try:
            unspecified = socket.inet_aton(host) == bytes(4)
        except OSError:
            unspecified = False
        if unspecified:
            raise ValueError("give one address of this machine that the other nodes reach, not 0.0.0.0")
        return host

    @field_validator("host")
    @classmethod
    def _reachable_by_other_machines(cls, host: str, info: ValidationInfo) -> str:
        # Loopback is right only when no node is another machine: one node, or the practice setup.
        nnodes = info.data.get("nnodes") or 1
        if nnodes > 1 and not info.data.get("same_machine") and is_loopback(host):
            raise ValueError(
                f"{host} is this machine's loopback: a node on another machine cannot reach it. "
                "Give an address of this machine the other nodes reach, or tick "
                '"every node on this machine (practice)" (same_machine: true)'
            )
        return host


class SlurmWhere(_Model):
    """A batch job: sbatch a script generated from the lab, srun starting torchrun per node."""

    engine: Literal["slurm"]
    nodes: int = Field(1, ge=1, le=64)
    gpus_per_node: int = Field(0, ge=0, le=16, description="--gpus-per-node; 0 runs the ranks on CPUs (gloo)")
    time_limit_min: int = Field(30, ge=1, le=1440, description="#SBATCH --time, in minutes")
    partition: str | None = Field(None, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    account: str | None = Field(None, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")


class KubernetesWhere(_Model):
    """A job on a Kubernetes cluster, in one of three shapes."""

    engine: Literal["kubernetes"]
    flavor: Literal["trainjob", "pytorchjob", "job"] = Field(
        "trainjob",
        description="trainjob: Kubeflow Trainer v2 (torch-distributed runtime); pytorchjob: the training "
        "operator's v1 PyTorchJob; job: a plain indexed Job with a headless Service (no operator)",
    )
    nodes: int = Field(1, ge=1, le=64)
    gpus_per_node: int = Field(0, ge=0, le=16, description="nvidia.com/gpu per pod (the NVIDIA device plugin)")
    namespace: str = Field("default", max_length=63, pattern=K8S_NAME)
    image: str = Field(
        "pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime",
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$",
        description="The container image; it must have torch. The lab's code comes in a ConfigMap",
    )
    cpu: int = Field(4, ge=1, le=256, description="CPU cores requested per pod")
    memory_gi: int = Field(16, ge=1, le=4096, description="Memory requested per pod, GiB")
    shm_gi: int = Field(2, ge=0, le=512, description="/dev/shm size for the data loader's workers, GiB")
    max_restarts: int = Field(0, ge=0, le=10, description="Restarts (backoffLimit / elasticPolicy.maxRestarts)")


Where = Annotated[LocalWhere | NodesWhere | SlurmWhere | KubernetesWhere, Field(discriminator="engine")]


class EngineInfo(_Model):
    name: EngineName
    title: str
    available: bool
    reason: str = Field("", description="Why it cannot run here (when not available), or what it found: one sentence")
    detail: str = Field(
        "", description="What lies behind the reason, e.g. what scontrol said (several lines); often empty"
    )
    can_generate: bool = Field(True, description="Its artifacts (commands, script, manifests) can be made here")
    addresses: list[str] = Field(
        default_factory=list,
        description="torchrun-nodes: this machine's non-loopback IPv4 addresses, where other nodes may reach it",
    )


class EngineList(_Model):
    """GET runs/engines: every engine, whether it can run on this machine and why not."""

    engines: list[EngineInfo]


class Artifact(_Model):
    """A file an engine generated for a run: a command, a batch script, manifests."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
    title: str
    media_type: str = "text/plain"
    content: str | None = Field(None, description="The text (GET runs/{id}/artifacts/{name}); absent in lists")


class ArtifactList(_Model):
    artifacts: list[Artifact]


class NodeStatus(_Model):
    """One node (machine, Slurm node or pod) of a run, with the global ranks it runs."""

    name: str
    state: Literal["waiting", "joined", "running", "succeeded", "failed", "lost", "missing"]
    ranks: list[int] = Field(default_factory=list)
    detail: str = ""


class Rendezvous(_Model):
    endpoint: str
    id: str
    min_nodes: int
    max_nodes: int
    joined: list[str] = Field(default_factory=list)
    timeout_s: int
    state: Literal["waiting", "complete", "timed_out", "closed"] = "waiting"


# --- requests ------------------------------------------------------------------------------


class LabRunRequest(_Model):
    kind: Literal["lab"] = "lab"
    lab: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,99}$")
    params: dict[str, ParamValue] = Field(default_factory=dict)
    sweep: SweepSpec | None = None
    record_memory: bool = Field(False, description="labkit records memory (CUDA snapshot or CPU profiler) per rank")
    record_profile: bool = Field(False, description="labkit records a torch.profiler trace per rank")
    where: Where = Field(default_factory=LocalWhere, description="The engine: this machine, several nodes, Slurm...")


class SweepSpec(_Model):
    """Run the lab once per value of one parameter (e.g. nproc over 1, 2, 4), in order."""

    param: str
    values: list[ParamValue] = Field(min_length=1, max_length=8)


class ScriptRunRequest(_Model):
    """A learner's own script: a path inside the server's root_dir."""

    kind: Literal["script"] = "script"
    # No control characters: no file name can hold a NUL, and a newline or a tab in a path would
    # reach the lines of generated scripts and manifests (a Slurm batch script's comments and
    # options), where it could start a line of its own.
    path: str = Field(
        min_length=1,
        max_length=1024,
        pattern=CONTROL_FREE,
        description="Relative to the server's root_dir; no control characters (newline, tab, ...)",
    )
    nproc: int = Field(1, ge=1, le=64)
    args: list[str] = Field(default_factory=list, max_length=64)
    launcher: Launcher = "torchrun"
    record_memory: bool = Field(False, description="labkit.memory_capture() in the script records memory")
    record_profile: bool = Field(False, description="labkit.profile() in the script records a torch.profiler trace")
    where: Where = Field(default_factory=LocalWhere, description="The engine: this machine, several nodes, Slurm...")

    @field_validator("path", mode="before")
    @classmethod
    def _no_control_characters(cls, path: Any) -> Any:
        # Before the pattern, so that the 400 says why in words rather than as a regex.
        if isinstance(path, str):
            bad = control_character(path)
            if bad is not None:
                raise ValueError(f"a path cannot hold control characters; this one has {bad}")
        return path


RunRequest = Annotated[LabRunRequest | ScriptRunRequest, Field(discriminator="kind")]


class RunRequestBody(RootModel[RunRequest]):
    """POST runs: {kind: "lab", lab, params, sweep?} or {kind: "script", path, nproc, args}."""


# --- runs ----------------------------------------------------------------------------------


class RootCause(_Model):
    """The first failing rank's error (torchrun's error.json), shown before anything else."""

    rank: int | None = None
    exit_code: int | None = None
    exception: str = Field(description="e.g. 'RuntimeError: boom'")
    traceback: str = ""
    timestamp: float | None = None
    others: list[dict[str, Any]] = Field(default_factory=list, description="Other ranks' errors, folded")


class CheckResult(_Model):
    id: str
    title: str
    ok: bool | None = Field(description="None: not decided yet, or does not apply")
    detail: str = ""
    applies: bool = True


class Run(_Model):
    id: str
    kind: Literal["lab", "script"]
    lab: str | None = None
    title: str
    params: dict[str, ParamValue] = Field(default_factory=dict)
    launcher: Launcher
    nproc: int
    status: RunStatus
    backend: Literal["nccl", "gloo", "none"]
    device_mode: Literal["gpu", "cpu"]
    mode_note: str
    argv: list[str] = Field(default_factory=list, description="The command that ran (for the learner to copy)")
    created_at: float
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    root_cause: RootCause | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    record_memory: bool = False
    record_profile: bool = False
    script_path: str | None = Field(None, description="A script run's path, relative to the server's root")
    script_args: list[str] = Field(default_factory=list, description="A script run's arguments")
    group: str | None = Field(None, description="Sweep group id")
    group_param: str | None = None
    user: str = ""
    engine: EngineName = "local"
    where: dict[str, Any] = Field(default_factory=dict, description="The engine's options as the request gave them")
    nnodes: int = Field(1, description="Nodes (machines, Slurm nodes, pods); nproc is per node")
    job_id: str | None = Field(None, description="The engine's own id: Slurm job id, Kubernetes job name")
    job_state: str | None = Field(None, description="The engine's own state word (e.g. PENDING, RUNNING)")
    nodes: list[NodeStatus] = Field(default_factory=list)
    rendezvous: Rendezvous | None = None
    artifacts: list[Artifact] = Field(default_factory=list, description="Generated files, without their text")


class RunList(_Model):
    runs: list[Run]


class Sweep(_Model):
    group: str
    lab: str
    param: str
    runs: list[Run]


# --- stream --------------------------------------------------------------------------------


class LogEvent(_Model):
    type: Literal["log"] = "log"
    seq: int = Field(description="Position in the run's event stream (resume from here)")
    rank: int | None = Field(description="None: the launcher's own output")
    stream: Literal["stdout", "stderr"]
    text: str
    t: float


class MetricEvent(_Model):
    type: Literal["metric"] = "metric"
    seq: int
    rank: int
    step: int | None = None
    values: dict[str, float | int | str | bool | None]
    t: float


class StatusEvent(_Model):
    type: Literal["status"] = "status"
    seq: int
    run: Run


class TruncatedEvent(_Model):
    type: Literal["truncated"] = "truncated"
    seq: int
    message: str


RunEvent = Annotated[LogEvent | MetricEvent | StatusEvent | TruncatedEvent, Field(discriminator="type")]


class EventBatch(_Model):
    """What the run stream sends: events in order. Reconnect with ?after=<last seq> to resume."""

    type: Literal["batch"] = "batch"
    events: list[RunEvent]


LabRunRequest.model_rebuild()
