"""Kernels from a notebook: a small Python API and the ``%%cuda`` cell magic.

    %load_ext gpudojo

    %%cuda --arch sm_90 --run saxpy --grid 16 --block 256 --expect "y=a*x+y"
           --args "a:float32=2 x:float32[4096]=random y:float32[4096]=ones:out n:int32=4096"
    extern "C" __global__ void saxpy(...) { ... }

(one line in a real cell), or ``gpudojo.kernels.notebook.compile(source, arch="sm_80")`` and ``run(...)``. Both call the
same KernelService as the server (a compile worker and run processes of their own, the same
cache folder), and render the same report.
"""

from __future__ import annotations

import argparse
import shlex
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .models import CompileOptions, CompileRequest, CompileResult, RunRequest, RunResult
from .report import compile_html, compile_text, run_html, run_text
from .service import GpuTarget, KernelService
from .spec import compile_options, parse_args, parse_expected

if TYPE_CHECKING:
    from ..services import Services


@cache
def services() -> Services:
    """This process's gpudojo services, built like the server's (gpudojo.services): the same
    data dir, so the same kernel cache."""
    from ..services import local_services

    return local_services()


def default_cache_dir() -> Path:
    return services().settings.data_path / "kernel-cache"


@cache
def service() -> KernelService:
    """This process's kernel service (one warm compile worker)."""
    return services().kernels


@cache
def detect_gpu() -> GpuTarget | None:
    """GPU 0 through NVML, or None on a machine without one."""
    return services().gpu_target_now()


class CompileReport:
    """A compile result that renders itself in a notebook."""

    def __init__(self, result: CompileResult) -> None:
        self.result = result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.result, name)

    def __repr__(self) -> str:
        return compile_text(self.result)

    def _repr_html_(self) -> str:
        return compile_html(self.result)


class RunReport:
    def __init__(self, result: RunResult) -> None:
        self.result = result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.result, name)

    def __repr__(self) -> str:
        return run_text(self.result)

    def _repr_html_(self) -> str:
        return run_html(self.result)


def _default_arch(arch: str | None) -> str:
    if arch:
        return arch
    gpu = detect_gpu()
    return gpu.arch if gpu else "sm_80"


def compile(
    source: str,
    *,
    arch: str | None = None,
    language: str = "cuda",
    block_size: int = 256,
    signatures: dict[str, str] | None = None,
    **options: Any,
) -> CompileReport:
    """Compile ``source``; ``options`` are CompileOptions fields (opt_level, max_registers,
    fast_math, defines, std)."""
    req = CompileRequest(
        source=source,
        language=language,
        arch=_default_arch(arch),
        block_size=block_size,
        signatures=signatures or {},
        options=CompileOptions(**options),
    )
    return CompileReport(service().compile(req))


def run(
    source: str,
    *,
    kernel: str,
    grid: int | list[int],
    block: int | list[int],
    args: str | list[Any],
    expected: str | dict[str, str] | None = None,
    language: str = "cuda",
    **kwargs: Any,
) -> RunReport:
    """Launch ``kernel`` once (checked) and time it: on the GPU, or in numba's simulator.

    ``args`` is the short text form (see gpudojo.kernels.spec) or a list of argument dicts."""
    req = RunRequest.model_validate(
        {
            "source": source,
            "language": language,
            "kernel": kernel,
            "grid": grid if isinstance(grid, list) else [grid],
            "block": block if isinstance(block, list) else [block],
            "args": parse_args(args) if isinstance(args, str) else args,
            "expected": parse_expected(expected) if isinstance(expected, str) else (expected or {}),
            **kwargs,
        }
    )
    return RunReport(service().run(req, detect_gpu()))


def _dims(text: str) -> list[int]:
    return [int(n) for n in text.replace("x", ",").split(",") if n.strip()]


def add_compiler_flags(p: argparse.ArgumentParser) -> None:
    """The compiler flags `%%cuda` and `gpudojo kernel` share, named as CompileOptions' fields."""
    p.add_argument("--arch", default=None, help="sm_80, sm_90, ... (default: this machine's GPU, else sm_80)")
    p.add_argument("-O", dest="opt_level", type=int, default=3, choices=range(4), help="ptxas optimisation level")
    p.add_argument("--maxrregcount", dest="max_registers", type=int, default=None, help="cap registers per thread")
    p.add_argument("--fast-math", action="store_true")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")


def compile_from_flags(source: str, language: str, opts: argparse.Namespace) -> CompileReport:
    options = compile_options(opts.opt_level, opts.max_registers, opts.fast_math, opts.defines)
    return compile(source, arch=opts.arch, language=language, block_size=opts.block_size, **options)


def run_from_flags(source: str, language: str, opts: argparse.Namespace, **extra: Any) -> RunReport:
    """A run from --kernel/--run, --grid, --block, --args and --expect and the compiler flags."""
    return run(
        source,
        kernel=opts.kernel,
        grid=_dims(opts.grid),
        block=_dims(opts.block),
        args=opts.args,
        expected=opts.expect,
        language=language,
        arch=opts.arch,
        options=compile_options(opts.opt_level, opts.max_registers, opts.fast_math, opts.defines),
        memory_report=not getattr(opts, "no_memory_report", False),
        **extra,
    )


def magic_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%cuda", add_help=False, exit_on_error=False)
    add_compiler_flags(p)
    p.add_argument("--numba", action="store_true", help="the cell is Python with @cuda.jit kernels")
    p.add_argument("--block-size", type=int, default=256, help="threads per block for the occupancy figure")
    p.add_argument("--run", dest="kernel", default=None, help="launch this kernel after compiling")
    p.add_argument("--grid", default="1")
    p.add_argument("--block", default="256")
    p.add_argument("--args", default="")
    p.add_argument("--expect", default=None)
    add_memory_report_flag(p)
    return p


def add_memory_report_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-memory-report",
        action="store_true",
        help="CPU emulation: skip recording memory accesses (faster; no per-line sectors, bank conflicts, "
        "shared-memory bounds or race checks)",
    )


def cuda_magic(line: str, cell: str) -> CompileReport | RunReport:
    """The ``%%cuda`` cell magic: compile the cell, and run a kernel of it with --run."""
    opts = magic_parser().parse_args(shlex.split(line))
    language = "numba" if opts.numba else "cuda"
    return run_from_flags(cell, language, opts) if opts.kernel else compile_from_flags(cell, language, opts)


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magic_function(cuda_magic, magic_kind="cell", magic_name="cuda")
