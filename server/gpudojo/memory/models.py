"""Shapes of the memory API: captures, analyses, windowed timeline queries, peak and OOM
breakdowns, diffs and the estimator.

Bytes are ints named *_bytes; times are microseconds named *_us on the capture's own clock
(wall clock when the capture had one, else the event index: ``axis`` says which).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

CaptureKind = Literal["cuda-snapshot", "cpu-profiler"]
Axis = Literal["time_us", "event_index"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Frame(_Model):
    filename: str
    line: int
    name: str


class Capture(_Model):
    """A memory capture file: one rank of a run, or a snapshot from the workspace."""

    id: str = Field(description="Stable id: run id + file name, or 'file:' + workspace path")
    kind: CaptureKind
    source: str = Field(description="Path relative to the run folder or the server's root")
    run: str | None = None
    rank: int | None = None
    size_bytes: int
    label: str


class CaptureList(_Model):
    captures: list[Capture]


class AnalyzeRequest(_Model):
    """POST memory/analyze: a snapshot in the workspace (e.g. uploaded through the file browser)."""

    # No NUL: no file name can hold one (it would reach the file system calls as an error).
    path: str = Field(
        min_length=1, max_length=1024, pattern=r"^[^\x00]+$", description="Relative to the server's root_dir"
    )


class CategoryTotal(_Model):
    category: str
    bytes: int


class FrameTotal(_Model):
    frame: int = Field(description="Index into the analysis' frames table (-1: no user frame)")
    bytes: int
    count: int


class Breakdown(_Model):
    t_us: float
    total_bytes: int
    by_category: list[CategoryTotal]
    by_frame: list[FrameTotal] = Field(description="Top user frames, largest first (at most 20)")


class Fix(_Model):
    """One way out of an OOM, with what the estimator says it saves."""

    action: str = Field(description="e.g. 'halve the micro-batch'")
    saving_bytes: int
    detail: str


class Oom(_Model):
    t_us: float
    simulated: bool = Field(False, description="A CPU run's budget check (labkit), not a real out-of-memory error")
    requested_bytes: int
    device_free_bytes: int | None = None
    device_total_bytes: int | None = None
    live: Breakdown
    fixes: list[Fix] = Field(default_factory=list, description="Cheapest first; empty without model context")


class Analysis(_Model):
    """GET memory/captures/{id}/analysis: the summary the viewer opens with."""

    capture: Capture
    axis: Axis
    t_start_us: float
    t_end_us: float
    entries: int = Field(description="Trace entries read")
    allocations: int
    categories: list[str]
    category_source: Literal["profiler", "phases", "none"] = Field(
        description="profiler: CPU captures; phases: labkit's phase labels on CUDA; none: uncategorised"
    )
    frames: list[Frame] = Field(description="De-duplicated user frames; bands and breakdowns index into it")
    peak: Breakdown
    ooms: list[Oom] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="What this capture cannot show, and why")
    context: dict[str, Any] | None = Field(
        None, description="What labkit recorded about the model (EstimateRequest's fields), for the estimator"
    )
    analysis_ms: float
    cached: bool


class AnalysisProgress(_Model):
    """How far a capture's first analysis is (the viewer polls it while it waits)."""

    capture: str
    phase: Literal["not_started", "queued", "reading", "pairing", "indexing", "done"]
    fraction: float | None = Field(None, description="share of the file read, while reading (0-1)")
    elapsed_ms: float


class Band(_Model):
    id: int = Field(description="Allocation index in the analysis")
    start_us: float
    end_us: float
    size_bytes: int
    category: int = Field(description="Index into categories (-1: none)")
    frame: int = Field(description="Index into frames (-1: none)")
    addr: int


class Window(_Model):
    """GET memory/captures/{id}/window?t0=&t1=&px=&top=: what a viewport draws.

    ``times_us`` has ``px`` sample times; at each, ``by_category[c][i]`` bytes of category c
    are live and ``other_bytes[i]`` is what the listed bands leave out, so that
    other_bytes[i] + sum(size of bands live at times_us[i]) == sum_c by_category[c][i]."""

    t0_us: float
    t1_us: float
    times_us: list[float]
    by_category: list[list[int]]
    other_bytes: list[int]
    bands: list[Band]
    frames: dict[int, Frame] = Field(description="The frames the bands reference")


class DiffRow(_Model):
    key: str = Field(description="A category, or a frame as 'file:line name'")
    a_bytes: int
    b_bytes: int
    delta_bytes: int


class Diff(_Model):
    """GET memory/diff?a=&b=: two captures' peaks side by side."""

    a: str
    b: str
    peak_a_bytes: int
    peak_b_bytes: int
    delta_bytes: int
    by_category: list[DiffRow]
    by_frame: list[DiffRow]


class EstimateRequest(_Model):
    """POST memory/estimate: what training a model should take, by component."""

    parameters: int = Field(gt=0, description="Parameter count")
    optimizer: Literal["sgd", "sgd-momentum", "adam", "adamw"] = "adam"
    precision: Literal["fp32", "mixed-fp16", "mixed-bf16", "bf16"] = "fp32"
    zero_stage: Literal[0, 1, 2, 3] = 0
    data_parallel: int = Field(1, ge=1, le=4096)
    micro_batch: int = Field(1, ge=1)
    activation_bytes_per_sample: int = Field(
        0, ge=0, description="Activations kept for backward per sample, in fp32, without checkpointing"
    )
    checkpointing: bool = False
    layers: int = Field(1, ge=1, description="For checkpointing: activations kept ~ 1/sqrt(layers) of the total")
    measured_peak_bytes: int | None = Field(None, description="A run's peak, to name the gap")


class EstimateTerm(_Model):
    component: Literal["parameters", "gradients", "optimizer_states", "master_weights", "activations"]
    bytes: int
    formula: str = Field(description="How it was computed, with the numbers")


class Estimate(_Model):
    terms: list[EstimateTerm]
    total_bytes: int
    measured_peak_bytes: int | None = None
    gap_bytes: int | None = None
    gap_explained: list[str] = Field(default_factory=list, description="What the gap is made of, in words")


class TransformerEstimateRequest(_Model):
    """POST memory/estimate-transformer: a GPT-style model's shape and parallel layout in,
    memory per GPU out (the first pipeline stage, the fullest under 1F1B)."""

    layers: int = Field(ge=1, le=1000, description="Transformer layers L")
    hidden: int = Field(ge=1, le=1 << 20, description="Hidden size h")
    heads: int = Field(ge=1, le=4096, description="Attention heads a (h must divide by a)")
    sequence: int = Field(ge=1, le=1 << 22, description="Sequence length s (tokens)")
    micro_batch: int = Field(1, ge=1, le=1 << 16, description="Micro-batch b (sequences per GPU per step)")
    vocab: int = Field(ge=1, le=1 << 24, description="Vocabulary V (embedding tied to the output layer)")
    learned_positions: bool = Field(False, description="A learned position table (s x h parameters), as in GPT-2")
    precision: Literal["fp32", "mixed-fp16", "mixed-bf16", "bf16"] = "mixed-bf16"
    optimizer: Literal["sgd", "sgd-momentum", "adam", "adamw"] = "adam"
    data_parallel: int = Field(1, ge=1, le=1 << 20)
    tensor_parallel: int = Field(1, ge=1, le=1024, description="t: must divide h and a")
    pipeline_parallel: int = Field(1, ge=1, le=1024, description="p: must divide L (1F1B schedule)")
    sequence_parallel: bool = Field(False, description="Megatron sequence parallelism (splits what TP replicates)")
    zero_stage: Literal[0, 1, 2, 3] = Field(0, description="ZeRO/FSDP stage over the data-parallel ranks")
    recompute: Literal["none", "selective", "full"] = "none"
    flash_attention: bool = Field(False, description="Fused attention that never stores the s x s scores")
    dropout: bool = Field(True, description="Dropout layers (their 1-byte masks are kept for backward)")

    @model_validator(mode="after")
    def _shapes_divide(self) -> TransformerEstimateRequest:
        problems = []
        if self.hidden % self.heads:
            problems.append(f"hidden {self.hidden} must divide by heads {self.heads}")
        if self.heads % self.tensor_parallel or self.hidden % self.tensor_parallel:
            problems.append(f"tensor_parallel {self.tensor_parallel} must divide heads and hidden")
        if self.layers % self.pipeline_parallel:
            problems.append(f"pipeline_parallel {self.pipeline_parallel} must divide layers {self.layers}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class TransformerEstimate(_Model):
    terms: list[EstimateTerm] = Field(description="Per GPU, as the plain estimate's terms")
    total_bytes: int
    parameter_count: int = Field(description="The whole model's parameters N")
    parameters_per_gpu: int
    activation_bytes_per_layer: int = Field(description="What one layer keeps for backward on one GPU (bytes)")
    flops_per_token: int = Field(description="Training FLOPs per token: 6N + 12 L s h")
    notes: list[str] = Field(default_factory=list, description="What the model assumes or leaves out")
