"""Shapes of the profile API: traces, their analysis (steps, breakdown, operators, kernels,
syncs, findings), windowed timeline queries, event details and comparisons.

Times are microseconds named *_us on the trace's own clock (Kineto's ``ts``, which is
microseconds); ``t_start_us`` is the first event's start, and every *_us position in a
window or an event detail is on the same clock.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# What a profile can be made of, in the order the step chart stacks them.
BREAKDOWN_CATEGORIES = ("compute", "communication", "data_loading", "memcpy", "sync", "idle")
Category = Literal["compute", "communication", "data_loading", "memcpy", "sync", "idle"]
TraceMode = Literal["gpu", "cpu"]
LaneKind = Literal["thread", "stream", "rank"]
Severity = Literal["high", "medium", "info"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Trace(_Model):
    """A trace file: one rank of a run's profile, or a Chrome/Kineto trace from the workspace."""

    id: str = Field(description="'run:<run id>:<file name>' or 'file:<path under the root>'")
    source: str = Field(description="Path relative to the run's profile folder or the server's root")
    run: str | None = None
    rank: int | None = None
    size_bytes: int
    label: str


class TraceList(_Model):
    traces: list[Trace]


class AnalyzeProfileRequest(_Model):
    """POST profile/analyze: a trace in the workspace (.json, .json.gz, .pt.trace.json)."""

    # No NUL: no file name can hold one (it would reach the file system calls as an error).
    path: str = Field(
        min_length=1, max_length=1024, pattern=r"^[^\x00]+$", description="Relative to the server's root_dir"
    )


class Mode(_Model):
    """Where the trace came from and therefore what it can and cannot show."""

    kind: TraceMode = Field(description="gpu: the trace holds device activity (kernels); cpu: host only")
    label: str = Field(description="e.g. 'GPU trace (CUDA kernels, 2 streams)' or 'CPU-only trace'")
    shows: list[str] = Field(description="What this trace's figures cover")
    cannot_show: list[str] = Field(description="What this trace cannot show, and why; empty for a GPU trace")


class CategoryTime(_Model):
    category: Category
    us: float


class Step(_Model):
    """One profiler step (ProfilerStep#N) and where its time went.

    The breakdown's times add up to ``dur_us``: each instant of the step is given to one
    category (communication over memcpy over data_loading over sync over compute; idle is
    what no activity covers on the timeline that defines the step: the device's on a GPU
    trace, the main thread's on a CPU one)."""

    step: int
    start_us: float
    dur_us: float
    breakdown: list[CategoryTime]


class OpRow(_Model):
    """An operator (CPU op, or a kernel's launching op) aggregated over the analysed steps."""

    name: str
    calls: int
    self_us: float = Field(description="CPU time in the op itself, children excluded")
    total_us: float = Field(description="CPU time including children")
    device_self_us: float = Field(0.0, description="GPU kernel time the op launched itself (0 on a CPU trace)")
    device_total_us: float = Field(0.0, description="GPU kernel time of the op and its children")
    input_shapes: list[str] = Field(
        default_factory=list, description="The most frequent input shapes, e.g. '[[64, 512], [512, 512]]'"
    )


class KernelRow(_Model):
    name: str
    calls: int
    total_us: float
    mean_us: float
    share: float = Field(description="Share of all kernel time, 0-1")


class LaunchStats(_Model):
    """How the host feeds the GPU (GPU traces only)."""

    kernels_per_step: float
    short_kernels_per_step: float = Field(description="Kernels under 10 us")
    median_launch_delay_us: float | None = Field(None, description="cudaLaunchKernel start to the kernel's start")
    median_gap_us: float | None = Field(None, description="Idle time between consecutive kernels on a stream")
    source: Literal["hta", "gpudojo"] = Field(description="hta: Holistic Trace Analysis computed it")


class SyncSite(_Model):
    """A place that makes the host wait (aten::item, .cpu(), cudaStreamSynchronize, ...)."""

    op: str
    location: str = Field(description="'train.py:57' from the recorded stack, or '' without with_stack")
    per_step: float
    total_us: float


class Overlap(_Model):
    """Communication hidden behind computation, per rank."""

    rank: int
    communication_us: float
    overlapped_us: float
    share: float = Field(description="Overlapped share of communication time, 0-1")
    source: Literal["hta", "gpudojo"]


class Finding(_Model):
    """Something the profile shows, the measured evidence, and what to try."""

    id: str = Field(description="Stable kind, e.g. 'data-loading', 'host-syncs', 'short-kernels'")
    severity: Severity
    title: str = Field(description="e.g. 'data loading is 41% of the step'")
    evidence: str = Field(description="The measured figures behind it, in words")
    suggestion: str = Field(description="What to try, e.g. 'num_workers=0: try workers and pin_memory'")


class Lane(_Model):
    """A row of the timeline: a thread (CPU), a CUDA stream, or a rank's summary row."""

    id: int
    label: str = Field(description="e.g. 'rank 0 · main thread', 'rank 0 · stream 7'")
    kind: LaneKind
    rank: int | None = None
    events: int
    max_depth: int = Field(description="Deepest nesting level on this lane (0: no nesting)")


class ProfileSummary(_Model):
    """GET profile/summary?trace=ID: what the profile view opens with."""

    trace: Trace
    mode: Mode
    ranks: list[int]
    t_start_us: float
    t_end_us: float
    events: int = Field(description="Complete events read")
    steps: list[Step] = Field(description="Profiler steps in order; empty when the trace has no ProfilerStep spans")
    step_source: Literal["profiler-steps", "whole-trace"] = Field(
        description="whole-trace: no ProfilerStep#N spans, the whole trace is taken as one step"
    )
    mean_step_us: float
    breakdown: list[CategoryTime] = Field(description="Mean over the steps")
    top_ops: list[OpRow] = Field(description="By self CPU time, largest first (at most 50)")
    kernels: list[KernelRow] = Field(default_factory=list, description="GPU kernels by total time (at most 30)")
    launch: LaunchStats | None = None
    syncs: list[SyncSite] = Field(default_factory=list)
    overlap: list[Overlap] = Field(default_factory=list, description="Multi-rank or GPU traces")
    findings: list[Finding] = Field(description="Most important first")
    lanes: list[Lane]
    hta: list[str] = Field(
        default_factory=list, description="The Holistic Trace Analysis functions whose results are used here"
    )
    notes: list[str] = Field(default_factory=list)
    analysis_ms: float
    cached: bool


class ProfileProgress(_Model):
    trace: str
    phase: Literal["not_started", "queued", "reading", "analysing", "indexing", "done"]
    fraction: float | None = None
    elapsed_ms: float


class Span(_Model):
    """One drawn span; ``count`` > 1 when neighbouring spans under a pixel were merged."""

    t_us: float
    dur_us: float
    depth: int
    name: str = Field(description="The op or kernel name; for a merged span, the longest one's")
    cat: str = Field(description="Kineto's category: cpu_op, kernel, gpu_memcpy, python_function, user_annotation, ...")
    count: int = 1
    ref: int = Field(-1, description="The event's index for profile/event (-1 for a merged span)")


class LaneWindow(_Model):
    lane: int
    spans: list[Span]


class ProfileWindow(_Model):
    """GET profile/window?trace=&t0=&t1=&px=: the spans a viewport shows, lane by lane.

    Spans shorter than one pixel ((t1 - t0) / px) that touch are merged, so a lane returns
    at most about 2 * px spans per depth."""

    t0_us: float
    t1_us: float
    px: int
    lanes: list[LaneWindow]


class EventDetail(_Model):
    """GET profile/event?trace=&ref=: what the hover shows for one span."""

    ref: int
    name: str
    cat: str
    lane: int
    t_us: float
    dur_us: float
    input_shapes: str = ""
    stack: list[str] = Field(default_factory=list, description="Innermost first, 'file.py(57): fn'")
    args: dict[str, str] = Field(default_factory=dict, description="Kineto's args, as text")


class BreakdownDiffRow(_Model):
    key: str
    a_us: float
    b_us: float
    delta_us: float


class OpDiffRow(_Model):
    name: str
    a_self_us: float
    b_self_us: float
    delta_us: float
    a_calls: int
    b_calls: int


class RunFacts(_Model):
    """The run a compared trace came from, as the diff names it."""

    id: str
    title: str
    lab: str | None = None
    created_at: float = Field(description="When the run was started, seconds since the epoch")
    device_mode: TraceMode = Field(description="gpu, or cpu: the run fell back to the CPU")


class RunDifference(_Model):
    """One way the two compared runs differ, in the learner's words."""

    key: str = Field(description="'param:<name>', 'lab', 'script', 'mode', 'machine' or 'processes'")
    label: str = Field(description="What differs: 'max_batch', 'lab', 'mode', 'machine', 'processes'")
    a: str = Field(description="Before's value in words ('—' when it has none)")
    b: str = Field(description="After's value in words ('—' when it has none)")


class ProfileDiff(_Model):
    """GET profile/diff?a=&b=: before (a) and after (b) side by side, biggest changes first.

    Operator times are per step (total over the analysed steps divided by their count), so
    profiles of different lengths compare."""

    a: str
    b: str
    a_mode: TraceMode
    b_mode: TraceMode
    step_a_us: float
    step_b_us: float
    speedup: float = Field(description="step_a_us / step_b_us")
    breakdown: list[BreakdownDiffRow]
    ops: list[OpDiffRow] = Field(description="By |delta|, largest first (at most 30)")
    findings_resolved: list[str] = Field(description="Finding ids in a and not in b")
    findings_new: list[str] = Field(description="Finding ids in b and not in a")
    a_run: RunFacts | None = Field(None, description="Before's run; none for a trace file of the workspace")
    b_run: RunFacts | None = Field(None, description="After's run; none for a trace file of the workspace")
    changes: list[RunDifference] = Field(
        default_factory=list,
        description="How the two runs differ (parameters, lab, mode, machine); empty when the runs match or "
        "either trace is no run's",
    )
