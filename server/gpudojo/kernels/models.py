"""Shapes of the kernels API: compile requests and reports, occupancy, run requests and results.

Units are in the field names: bytes, ms. Line and column numbers are 1-based and refer to
the source the client sent.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema, model_validator

Language = Literal["cuda", "numba"]
Severity = Literal["error", "warning", "note"]
LimitedBy = Literal["warps", "blocks", "registers", "shared_memory"]
# bfloat16: CUDA C's __nv_bfloat16 (values rounded to nearest even on the way in and out, with ml_dtypes).
ArrayDtype = Literal["float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8", "uint32", "uint64"]
RunMode = Literal["gpu", "simulator", "cpu-emulation", "none"]

ARCH_PATTERN = r"^sm_[0-9]{2,3}[af]?$"


def _known_archs(schema: dict[str, Any]) -> None:
    """openapi.json names the architectures archs.toml has figures for (any other is refused with
    400 unknown_arch), so that clients and the API fuzzer pick real ones; read when the document
    is generated, not at import."""
    from .occupancy import arch_table

    schema["pattern"] = "^(" + "|".join(arch_table()) + ")[af]?$"


# A real architecture, e.g. sm_80, sm_90a.
Arch = Annotated[str, Field(pattern=ARCH_PATTERN, json_schema_extra=_known_archs)]
# Grid, block and array dimensions: at least 1 each (the JSON schema says so, not only a validator).
Dim = Annotated[int, Field(ge=1)]
# -D NAME=VALUE: a C identifier, and a value of letters, digits, spaces and _ . + - * / ( ).
DefineName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
DefineValue = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+\-*/() ]{0,64}$")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- compile -------------------------------------------------------------------------------


class CompileOptions(_Model):
    """The compiler options a learner may set (an allow-list: nothing else reaches NVRTC)."""

    opt_level: int = Field(3, ge=0, le=3, description="ptxas optimisation level (-O0 to -O3)")
    max_registers: int | None = Field(None, ge=16, le=255, description="-maxrregcount")
    fast_math: bool = Field(False, description="--use_fast_math (CUDA C) / fastmath (numba)")
    defines: dict[DefineName, DefineValue] = Field(
        default_factory=dict,
        max_length=32,
        description="-D NAME=VALUE (CUDA C only)",
        json_schema_extra={"additionalProperties": False},  # a name that is not a C identifier is refused
    )
    std: Literal["c++11", "c++14", "c++17", "c++20"] = "c++17"


class CompileRequest(_Model):
    source: str = Field(description="CUDA C++ (language cuda) or Python with @cuda.jit kernels (language numba)")
    language: Language = "cuda"
    arch: Arch = Field("sm_80", description="Real architecture, e.g. sm_80, sm_90")
    options: CompileOptions = Field(default_factory=CompileOptions)
    signatures: dict[str, str] = Field(
        default_factory=dict,
        description="numba only: kernel name -> signature, e.g. 'void(float32[:], float32[:], int32)', "
        "for kernels whose @cuda.jit names none",
    )
    sass: bool = Field(True, description="Disassemble the cubin (SASS with source lines)")
    block_size: int = Field(256, ge=1, le=1024, description="Threads per block for the occupancy figure")
    dynamic_shared_bytes: int = Field(0, ge=0, le=1 << 20, description="Dynamic shared memory per block")


class Diagnostic(_Model):
    line: int | None = Field(None, description="1-based line in the source sent; null when the compiler named none")
    column: int | None = None
    severity: Severity
    message: str


class SassInstruction(_Model):
    offset: int = Field(description="Byte offset in the function")
    text: str = Field(description="e.g. '@!P0 LDG.E R0, [R2.64]'")
    line: int | None = Field(None, description="Source line this instruction came from (-lineinfo)")


class Occupancy(_Model):
    """Theoretical occupancy of one kernel at one block size on one architecture."""

    block_size: int
    registers_per_thread: int
    shared_bytes_per_block: int = Field(description="Static + dynamic + the per-block reserve")
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float = Field(description="active warps / max warps, 0..1")
    limited_by: LimitedBy
    blocks_limit: dict[str, int] = Field(
        description="Blocks per SM each resource allows: warps, blocks, registers, shared_memory"
    )
    error: str | None = Field(None, description="Why this kernel cannot launch at this size, if it cannot")


class OccupancyPoint(_Model):
    block_size: int
    active_warps_per_sm: int
    occupancy: float
    limited_by: LimitedBy


class KernelReport(_Model):
    name: str = Field(description="The name in the source (demangled)")
    symbol: str = Field(description="The symbol in the cubin (mangled for C++ and numba)")
    registers: int
    shared_bytes: int = Field(description="Static shared memory per block")
    constant_bytes: int
    stack_bytes: int
    local_bytes: int = 0
    spill_stores_bytes: int
    spill_loads_bytes: int
    barriers: int
    sass: list[SassInstruction] = Field(default_factory=list)
    occupancy: Occupancy
    curve: list[OccupancyPoint] = Field(description="Occupancy over block sizes 32..1024 (step 32)")


class CompileTimings(_Model):
    compile_ms: float = 0.0
    sass_ms: float = 0.0
    total_ms: float = 0.0


class CompileResult(_Model):
    ok: bool
    language: Language
    arch: str
    cached: bool = False
    key: str = Field(description="Hash of source, language, arch and options: the cache key")
    compiler: str = Field(description="What compiled it, with versions")
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    log: str = Field("", description="The compiler's own log, as it printed it")
    ptx: str = ""
    ptx_lines: list[int | None] = Field(
        default_factory=list, description="For each PTX line, the source line it came from (from .loc)"
    )
    kernels: list[KernelReport] = Field(default_factory=list)
    truncated: list[str] = Field(default_factory=list, description="Outputs cut at the size cap: 'ptx', 'sass'")
    timings: CompileTimings = Field(default_factory=CompileTimings)


class ArchLimits(_Model):
    """Per-SM limits of one architecture, as NVIDIA's occupancy calculator uses them."""

    arch: str
    compute_capability: str
    family: str = Field(description="e.g. 'Ampere'")
    examples: str = Field(description="GPUs with this architecture")
    max_threads_per_block: int = 1024
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int = 65536
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256
    shared_bytes_per_sm: int = Field(description="Largest shared memory carve-out per SM")
    max_shared_bytes_per_block: int = Field(description="Opt-in maximum per block")
    shared_allocation_unit: int = 128
    reserved_shared_bytes_per_block: int = Field(description="Shared memory the driver keeps per block")
    warp_size: int = 32


class ArchList(_Model):
    """GET kernels/archs: the architectures this server compiles for, and the compilers found."""

    archs: list[ArchLimits]
    default_arch: str
    nvrtc_version: str | None = None
    numba_available: bool = False
    compiler_problem: str | None = Field(None, description="Why kernels cannot be compiled here, when they cannot")
    gpu_arch: str | None = Field(None, description="The architecture of GPU 0, when there is one")
    gpu_name: str | None = Field(None, description="GPU 0's name, when there is one")
    max_source_bytes: int
    simulator_max_threads: int


class OccupancyRequest(_Model):
    arch: Arch
    registers_per_thread: int = Field(ge=1, le=255)
    shared_bytes_per_block: int = Field(0, ge=0, description="Static + dynamic shared memory per block")
    block_size: int = Field(ge=1, le=1024)


class OccupancyReport(_Model):
    occupancy: Occupancy
    curve: list[OccupancyPoint]


# --- run -----------------------------------------------------------------------------------


class ArrayArg(_Model):
    kind: Literal["array"] = "array"
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
    dtype: ArrayDtype = "float32"
    shape: list[Dim] = Field(min_length=1, max_length=3)
    init: Literal["zeros", "ones", "arange", "random", "full"] = "zeros"
    value: float = Field(0.0, description="Fill value for init 'full'")
    seed: int = Field(0, description="Seed for init 'random' (uniform in [0, 1), integers in [0, 100))")
    output: bool = Field(False, description="Read back after the launch and checked")


class ScalarArg(_Model):
    kind: Literal["scalar"] = "scalar"
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
    dtype: Literal["float32", "float64", "int32", "int64", "uint32", "uint64"] = "int32"
    value: float


KernelArg = Annotated[ArrayArg | ScalarArg, Field(discriminator="kind")]
Dim3 = Annotated[list[Dim], Field(min_length=1, max_length=3)]


class RunRequest(_Model):
    source: str
    language: Language = "cuda"
    kernel: str = Field(description='Name of the kernel to launch (extern "C" name, or the Python name)')
    grid: Dim3
    block: Dim3
    shared_bytes: int = Field(0, ge=0, le=1 << 20, description="Dynamic shared memory per block")
    args: list[KernelArg] = Field(max_length=32)
    expected: dict[str, str] = Field(
        default_factory=dict,
        description="Output name -> NumPy expression over the inputs (names of args, np), e.g. 'a * x + y'",
    )
    rtol: float = Field(1e-5, ge=0)
    atol: float = Field(1e-6, ge=0)
    warmup: int = Field(3, ge=0, le=100)
    repeats: int = Field(20, ge=1, le=1000)
    arch: Arch | None = Field(None, description="Compile for this arch; default: the GPU's")
    options: CompileOptions = Field(default_factory=CompileOptions)
    mode: Literal["auto", "gpu", "simulator", "cpu-emulation"] = Field(
        "auto",
        description="auto: the GPU when there is one, else the simulator (numba) or the CPU emulator (CUDA C); "
        "cpu-emulation: CUDA C on the CPU even where there is a GPU",
    )
    memory_report: bool = Field(
        True,
        description="CPU emulation: record every warp's global and shared accesses (the memory-access report) "
        "and check shared memory for out-of-bounds accesses and races; off runs faster, with guard pages only",
    )

    @model_validator(mode="after")
    def _check(self) -> RunRequest:
        names = [a.name for a in self.args]
        if len(set(names)) != len(names):
            raise ValueError("argument names must be distinct")
        outputs = {a.name for a in self.args if isinstance(a, ArrayArg) and a.output}
        unknown = set(self.expected) - outputs
        if unknown:
            raise ValueError(f"expected names {sorted(unknown)} are not output arrays")
        return self

    @property
    def threads(self) -> int:
        total = 1
        for n in self.grid + self.block:
            total *= n
        return total


def _number_json(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


# An output value: JSON has no NaN or infinities, so those travel as the strings "NaN",
# "Infinity" and "-Infinity" (read back as floats).
OutputNumber = Annotated[
    float,
    PlainSerializer(_number_json, when_used="json"),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]}]}),
]


class Mismatch(_Model):
    index: list[int] = Field(description="Position of the first wrong element")
    got: OutputNumber
    expected: OutputNumber


class OutputCheck(_Model):
    name: str
    ok: bool
    checked: bool = Field(description="False when no expected expression was given")
    max_abs_error: float | None = Field(
        None, description="Largest |got - expected| (equal infinities count 0); null when unchecked or infinite"
    )
    mismatches: int = 0
    first_mismatch: Mismatch | None = None
    preview: list[OutputNumber] = Field(
        default_factory=list, description='The first values of the output ("NaN", "Infinity", "-Infinity" as text)'
    )


class RunTiming(_Model):
    warmup: int
    repeats: int
    mean_ms: float
    min_ms: float
    max_ms: float
    method: str = Field(description="e.g. 'CUDA events' or 'wall clock (simulator)'")


class RunError(_Model):
    kind: Literal[
        "compile_error",
        "launch_error",
        "out_of_bounds",
        "illegal_address",
        "timeout",
        "crashed",
        "bad_spec",
        "check_error",
        "exception",
        "deadlock",
        "unsupported",
        "race",
    ]
    message: str
    thread: list[int] | None = Field(None, description="threadIdx of the failing thread, when known")
    block: list[int] | None = Field(None, description="blockIdx of the failing thread, when known")
    line: int | None = Field(None, description="Source line, when known")


class EmulatorInfo(_Model):
    """How the CPU emulator built and ran a CUDA C kernel (mode cpu-emulation)."""

    compiler: str = Field(description="The host C++ compiler, with its version")
    cached: bool = Field(description="The binary came from the kernel cache")
    compile_ms: float = Field(description="g++ time for this run (0 when cached)")
    run_ms: float = Field(description="Wall clock of the emulated launch on the CPU")


class MemoryAccessLine(_Model):
    """One source line's accesses to one memory space, summed over its warp instructions."""

    line: int | None = Field(description="Source line (None: outside the kernel's file)")
    space: Literal["global", "shared"]
    ops: list[Literal["load", "store", "atomic"]] = Field(description="What the line does there")
    requests: int = Field(description="Warp instructions: the lanes of a warp at the line's k-th execution")
    accesses: int = Field(description="Thread accesses (lanes summed over the requests)")
    bytes: int = Field(description="Distinct bytes asked for, summed over the requests")
    sectors: int | None = Field(None, description="Global: 32-byte sectors touched, summed over the requests")
    min_sectors: int | None = Field(None, description="Global: the fewest sectors that hold the bytes asked for")
    sectors_per_request: float | None = None
    min_sectors_per_request: float | None = None
    wavefronts: int | None = Field(
        None, description="Shared: bank passes (n-way conflict = n passes of a 4-byte-word request), summed"
    )
    ideal_wavefronts: int | None = Field(None, description="Shared: the passes with no bank conflict")
    ways_per_request: float | None = Field(None, description="Shared: mean n-way bank conflict per request")
    max_ways: int | None = Field(None, description="Shared: the worst request's n-way conflict")


class MemoryAccessTotals(_Model):
    space: Literal["global", "shared"]
    requests: int
    accesses: int
    bytes: int
    sectors: int | None = None
    min_sectors: int | None = None
    wavefronts: int | None = None
    ideal_wavefronts: int | None = None
    efficiency: float = Field(description="min_sectors/sectors (global) or ideal_wavefronts/wavefronts (shared), 0..1")


class ArrayWriters(_Model):
    """Which threads stored to one argument array, counted over every block of the launch."""

    array: str = Field(description="The argument's name")
    threads: int = Field(description="Threads that stored to it (or ran an atomic on it) at least once")
    stores: int = Field(description="Stores and atomics to it, all threads")
    max_per_thread: int = Field(description="The most stores one thread made to it")


class MemoryReport(_Model):
    """How each warp touched memory in the CPU emulator: coalescing per line, bank conflicts per line."""

    note: str = Field(description="What the counts are")
    sampled: bool = Field(description="Only some blocks were recorded (big launches)")
    sampling: str = Field(description="Which blocks were recorded, in words")
    blocks_recorded: int
    blocks_total: int
    lines: list[MemoryAccessLine] = Field(default_factory=list)
    totals: list[MemoryAccessTotals] = Field(default_factory=list, description="Per kernel, one per memory space")
    writers: list[ArrayWriters] = Field(
        default_factory=list, description="Per array written, the threads that wrote it (every block, never sampled)"
    )


class RunResult(_Model):
    status: Literal["passed", "failed", "ran", "not_run", "error"] = Field(
        description="passed/failed: outputs checked; ran: no expectation given; not_run: nothing could run it here"
    )
    mode: RunMode
    mode_note: str = Field(description="What this mode is and what it cannot show")
    device: str | None = None
    checks: list[OutputCheck] = Field(default_factory=list)
    timing: RunTiming | None = None
    error: RunError | None = None
    stdout: str = ""
    compile: CompileResult | None = Field(None, description="The compile report (always for CUDA C)")
    emulator: EmulatorInfo | None = Field(None, description="The CPU emulator's build and run (cpu-emulation)")
    memory: MemoryReport | None = Field(
        None, description="Sectors per request and bank conflicts per source line (cpu-emulation)"
    )
    wall_ms: float = 0.0


# --- examples from labs --------------------------------------------------------------------


class KernelExampleSpec(_Model):
    """A [[kernels]] entry of a lab.toml: a launch the playground can open."""

    title: str = Field(min_length=1)
    file: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="A file in the lab's folder")
    language: Language = "cuda"
    kernel: str
    grid: Dim3
    block: Dim3
    shared_bytes: int = Field(0, ge=0)
    args: list[KernelArg] = Field(default_factory=list)
    expected: dict[str, str] = Field(default_factory=dict)


class KernelExample(KernelExampleSpec):
    lab: str
    index: int = Field(description="Position among the lab's kernels")
    source: str


class KernelExampleProblem(_Model):
    lab: str
    index: int | None = None
    message: str


class KernelExamples(_Model):
    """GET kernels/examples: the kernels labs offer to the playground."""

    examples: list[KernelExample]
    problems: list[KernelExampleProblem] = Field(default_factory=list)
