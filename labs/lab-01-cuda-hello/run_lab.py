"""lab-01-cuda-hello: read the device's facts, then compile, launch and check a vector add and a reduction.

    python run_lab.py --n 4096 --block 256 --part all [--arch auto]

With a GPU, the CUDA C kernels run through CuPy and are timed with CUDA events, and the
device facts NVML reports are compared with the CUDA runtime's. Without one, the CUDA C
kernels are compiled (PTX, SASS, registers, occupancy) but not run, and their numba twins run
in numba's CUDA simulator on at most as many elements as it has threads to spare.

Besides the readable report, every result goes through gpudojo.labkit: each metric as it
comes (labkit.report: registers, occupancy, kernel_time_ms, ... with the stage, language and
mode as labels), and each check once at the end (labkit.check; ok None where the check does
not apply). Under the run service they land in $GPUDOJO_RUN_DIR/metrics/rank0.jsonl; run by
hand, on stdout after "gpudojo-metric". The exit code is 0 when every check that applies
passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from device_facts import RuntimeUnavailable, compare, runtime_devices

from gpudojo import labkit
from gpudojo.gpu.probe import GpuProbe, make_backend
from gpudojo.kernels import notebook
from gpudojo.kernels.models import CompileResult, KernelReport, RunResult
from gpudojo.kernels.occupancy import arch_table, limits_for
from gpudojo.kernels.service import CompileFailure, KernelRequestError

LAB = "lab-01-cuda-hello"
HERE = Path(__file__).resolve().parent
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
# float32 partial sums added in a different order from NumPy's float64 sum; see README.
REDUCTION_RTOL = 1e-4
# SASS opcodes worth counting: global (LDG/STG) and generic (LD/ST) memory, shared memory
# (LDS/STS), the addition, barriers, atomics (RED, or REDG from sm_90 on; ATOMG) and branches.
OPCODES = ("LDG", "STG", "LD", "ST", "LDS", "STS", "FADD", "BAR", "RED", "REDG", "ATOMG", "BRA")


@dataclass(frozen=True)
class Launch:
    kernel: str
    step: str  # also the id of the check that its output decides
    n: int
    grid: int


@dataclass(frozen=True)
class Part:
    cuda_file: str
    numba_file: str
    kernels: tuple[str, ...]


PARTS = {
    "vector-add": Part("vector_add.cu", "vector_add_numba.py", ("vector_add", "vector_add_grid_stride")),
    "reduction": Part("block_sum.cu", "block_sum_numba.py", ("block_sum",)),
}
STEPS = {"vector_add": "vector-add", "vector_add_grid_stride": "vector-add-grid-stride", "block_sum": "reduction"}


class LabReport:
    """Prints results as text for the learner as they come, and hands them to labkit: metrics at
    once, each check once at the end, since a check can be decided in several places (once per
    source file, once per part)."""

    def __init__(self) -> None:
        self.checks: dict[str, list[tuple[bool | None, str]]] = {}

    def metric(self, name: str, stage: str, value: Any, **labels: Any) -> None:
        labkit.report(None, **{name: value}, stage=stage, **labels)

    def check(self, check: str, ok: bool | None, detail: str) -> None:
        self.checks.setdefault(check, []).append((ok, detail))
        word = {True: "PASS", False: "FAIL", None: "n/a "}[ok]
        print(f"  [{word}] {check}: {detail}")

    def outcome(self, check: str) -> bool | None:
        """Failed if any part failed; not applicable if no part applied; else passed."""
        oks = [ok for ok, _ in self.checks[check]]
        return None if all(ok is None for ok in oks) else all(ok is not False for ok in oks)

    def submit(self) -> None:
        for check, results in self.checks.items():
            labkit.check(check, self.outcome(check), "; ".join(detail for _, detail in results))

    @property
    def passed(self) -> bool:
        return all(self.outcome(check) is not False for check in self.checks)


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


def plan_launches(
    part: Part,
    n: int,
    block: int,
    *,
    on_gpu: bool,
    sm_count: int | None,
    blocks_per_sm: dict[str, int],
    simulator_threads: int,
) -> list[Launch]:
    """Grid sizes for each kernel of `part`.

    One thread per element: ceil(n / block) blocks. Grid-stride kernels: on a GPU, enough
    blocks to fill every SM once (SMs x resident blocks per SM, from the occupancy report) and
    no more than one element per thread needs; in the simulator, a quarter of that so each
    thread loops about four times. The simulator gets at most `simulator_threads` elements.
    """
    if not on_gpu:
        n = min(n, simulator_threads)
    one_per_element = math.ceil(n / block)
    launches = []
    for kernel in part.kernels:
        if kernel == "vector_add":
            grid = one_per_element
        elif on_gpu and sm_count:
            grid = min(one_per_element, sm_count * max(blocks_per_sm.get(kernel, 1), 1))
        elif on_gpu:
            grid = one_per_element
        else:
            grid = max(1, math.ceil(one_per_element / 4))
        launches.append(Launch(kernel=kernel, step=STEPS[kernel], n=n, grid=grid))
    return launches


# --- introspection ------------------------------------------------------------------------------


def introspect(report: LabReport, on_gpu: bool, arch: str) -> int | None:
    """Print what NVML, the CUDA runtime and the architecture tables say; return GPU 0's SM count."""
    heading("Device introspection")
    probe = GpuProbe(make_backend(None))
    try:
        doc = probe.devices()
    finally:
        probe.close()
    h = doc.host
    print(f"host: {h.cpu_model}, {h.cores_logical} logical cores, {h.memory_total_bytes / 2**30:.1f} GiB")
    if not doc.available:
        print(f"NVML: {doc.reason}")
    else:
        print(f"NVML {doc.nvml_version}: driver {doc.driver_version}, supports CUDA up to {doc.cuda_driver_version}")
        for g in doc.gpus:
            mem = f"{g.memory_total_bytes / 2**30:.1f} GiB" if g.memory_total_bytes else "n/a"
            print(
                f"  GPU {g.index}: {g.name}, compute capability {g.compute_capability}, {mem}, "
                f"PCI {g.pci_bus_id}, MIG {g.mig.current}"
            )

    limits = limits_for(arch)
    print(f"\n{arch} ({limits.family}: {limits.examples}) per SM, from NVIDIA's compute-capability tables:")
    print(
        f"  {limits.max_warps_per_sm} warps = {limits.max_warps_per_sm * limits.warp_size} resident threads, "
        f"{limits.max_blocks_per_sm} resident blocks, {limits.registers_per_sm:,} 32-bit registers, "
        f"{limits.shared_bytes_per_sm // 1024} KiB shared memory; at most {limits.max_threads_per_block} "
        f"threads and {limits.max_shared_bytes_per_block // 1024} KiB shared memory per block (opt-in)"
    )

    if not on_gpu:
        report.check(
            "device-facts",
            None,
            "needs a GPU: NVML and the CUDA runtime have nothing "
            "to report here, so the figures above come from the tables, not from a device",
        )
        return None
    try:
        devices, source = runtime_devices()
    except RuntimeUnavailable as err:
        report.check("device-facts", False, str(err))
        return None
    print(f"\nCUDA runtime (through {source}): {len(devices)} device(s)")
    for d in devices:
        print(
            f"  device {d.ordinal}: {d.name}, {d.sm_count} SMs x {d.max_threads_per_sm} threads = "
            f"{d.sm_count * d.max_threads_per_sm:,} resident threads; warp {d.warp_size}; "
            f"{d.max_threads_per_block} threads/block; {d.registers_per_sm:,} registers/SM; shared memory "
            f"{d.shared_bytes_per_block // 1024} KiB/block ({d.shared_bytes_per_block_optin // 1024} KiB opt-in), "
            f"{d.shared_bytes_per_sm // 1024} KiB/SM; L2 {d.l2_bytes / 2**20:.0f} MiB"
        )
    comparisons = compare(doc.gpus, devices)
    for c in comparisons:
        print(f"  CUDA device {c.cuda_ordinal} <-> NVML GPU {c.nvml_index}:")
        for r in c.rows:
            mark = {True: "same", False: "DIFFERENT", None: "-"}[r.agree]
            print(
                f"    {r.fact:<20} {mark:<9} NVML {r.nvml} | runtime {r.runtime}" + (f"  ({r.note})" if r.note else "")
            )
    bad = [c.cuda_ordinal for c in comparisons if not c.ok]
    ok = bool(comparisons) and not bad
    detail = (
        f"{len(comparisons)} device(s): name, compute capability, memory, PCI address and UUID agree"
        if ok
        else f"facts differ for CUDA device(s) {bad or 'none found'}"
    )
    report.check("device-facts", ok, detail)
    return devices[0].sm_count if devices else None


# --- compile ------------------------------------------------------------------------------------


def sass_digest(kernel: KernelReport) -> str:
    counts: dict[str, int] = {}
    for ins in kernel.sass:
        opcode = next((tok for tok in ins.text.split() if not tok.startswith("@")), "").split(".")[0]
        if opcode in OPCODES:
            counts[opcode] = counts.get(opcode, 0) + 1
    shown = ", ".join(f"{counts[op]} {op}" for op in OPCODES if op in counts)
    return f"{len(kernel.sass)} SASS instructions" + (f" ({shown})" if shown else "")


def compile_file(
    report: LabReport, file: str, language: str, arch: str, block: int, kernels: tuple[str, ...]
) -> dict[str, KernelReport]:
    """Compile one source file, print its resource report and return its kernels by name."""
    check = "cuda-compiles" if language == "cuda" else "numba-compiles"
    try:
        result: CompileResult = notebook.compile(
            (HERE / file).read_text(), arch=arch, language=language, block_size=block
        ).result
    except (CompileFailure, KernelRequestError) as err:
        report.check(check, False, f"{file}: the compiler could not run: {err}")
        return {}
    print(
        f"{file} -> {arch}: {result.compiler}, {'ok' if result.ok else 'FAILED'}, "
        f"{result.timings.total_ms:.0f} ms{' (cached)' if result.cached else ''}, PTX {result.ptx.count(chr(10))} lines"
    )
    for d in result.diagnostics:
        print(f"  {d.severity} line {d.line}: {d.message}")
    found = {k.name: k for k in result.kernels}
    for name in kernels:
        k = found.get(name)
        if k is None:
            continue
        occ = k.occupancy
        print(
            f"  {name}: {k.registers} registers/thread, {k.shared_bytes} B shared, {k.barriers} barrier(s), "
            f"{k.spill_stores_bytes} B spilled; {sass_digest(k)}"
        )
        print(
            f"  {' ' * len(name)}  occupancy at {block} threads: {occ.active_warps_per_sm}/{occ.max_warps_per_sm} "
            f"warps ({occ.occupancy:.0%}), {occ.active_blocks_per_sm} blocks/SM, limited by "
            f"{occ.limited_by.replace('_', ' ')}" + (f"; {occ.error}" if occ.error else "")
        )
        step = STEPS[name]
        report.metric("registers", step, k.registers, language=language, arch=arch, unit="registers/thread")
        report.metric("occupancy", step, occ.occupancy, language=language, arch=arch)
    missing = [name for name in kernels if name not in found]
    ok = result.ok and not missing and bool(result.ptx) and all(found[n].registers > 0 for n in kernels)
    detail = (
        f"{file}: {', '.join(kernels)} compiled for {arch}"
        if ok
        else f"{file}: "
        + (
            "; ".join(d.message for d in result.diagnostics if d.severity == "error")
            or f"kernel(s) {missing} not in the report"
        )
    )
    report.check(check, ok, detail)
    return found


# --- run ----------------------------------------------------------------------------------------


def launch_args(kernel: str, n: int) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Any]]:
    """Arguments (ArrayArg / ScalarArg as dicts), expected outputs and extra run options of a kernel."""
    if kernel == "block_sum":
        args = [
            {"kind": "array", "name": "x", "dtype": "float32", "shape": [n], "init": "random", "seed": 3},
            {"kind": "array", "name": "total", "dtype": "float32", "shape": [1], "output": True},
            {"kind": "scalar", "name": "n", "dtype": "int32", "value": n},
        ]
        return args, {"total": "total + x.sum(dtype=np.float64)"}, {"rtol": REDUCTION_RTOL}
    args = [
        {"kind": "array", "name": "a", "dtype": "float32", "shape": [n], "init": "random", "seed": 1},
        {"kind": "array", "name": "b", "dtype": "float32", "shape": [n], "init": "random", "seed": 2},
        {"kind": "array", "name": "c", "dtype": "float32", "shape": [n], "output": True},
        {"kind": "scalar", "name": "n", "dtype": "int32", "value": n},
    ]
    return args, {"c": "a + b"}, {}


def bytes_moved(kernel: str, n: int) -> int:
    """Bytes a kernel must move at the least: vector add reads a and b and writes c; the sum reads x."""
    return (4 if kernel == "block_sum" else 12) * n


def run_launch(report: LabReport, launch: Launch, block: int, file: str, language: str) -> None:
    args, expected, extra = launch_args(launch.kernel, launch.n)
    threads = launch.grid * block
    print(
        f"{launch.kernel} ({language}): grid {launch.grid} x block {block} = {threads:,} threads "
        f"for n = {launch.n:,}" + (f", {launch.n / threads:.1f} elements per thread" if launch.n > threads else "")
    )
    try:
        result: RunResult = notebook.run(
            (HERE / file).read_text(),
            kernel=launch.kernel,
            grid=launch.grid,
            block=block,
            args=args,
            expected=expected,
            language=language,
            **extra,
        ).result
    except (CompileFailure, KernelRequestError) as err:
        report.check(launch.step, False, f"{launch.kernel} was refused: {err}")
        return
    print(f"  {result.status} ({result.mode}{', ' + result.device if result.device else ''})")
    for c in result.checks:
        print(f"  {c.name}: first values {[round(v, 4) for v in c.preview[:4]]}")
        if c.checked:
            report.metric("max_abs_error", launch.step, c.max_abs_error, output=c.name, mode=result.mode)
    if result.timing:
        t = result.timing
        print(f"  time: mean {t.mean_ms:.4f} ms, min {t.min_ms:.4f} ms over {t.repeats} launch(es), {t.method}")
        report.metric("kernel_time_ms", launch.step, t.mean_ms, mode=result.mode, method=t.method)
        if result.mode == "gpu" and t.mean_ms > 0:
            gb_s = bytes_moved(launch.kernel, launch.n) / (t.mean_ms / 1000) / 1e9
            print(
                f"  effective bandwidth: {gb_s:,.0f} GB/s ({bytes_moved(launch.kernel, launch.n):,} bytes / mean time)"
            )
            report.metric("bandwidth_gb_s", launch.step, gb_s, mode=result.mode)
    report.check(launch.step, *verdict(result))


def verdict(result: RunResult) -> tuple[bool | None, str]:
    """A run's outcome as a check: passed, failed (with the first wrong element) or not run."""
    if result.status == "passed":
        c = result.checks[0]
        return True, f"{c.name} matches NumPy (max abs error {c.max_abs_error:.3g}, {result.mode})"
    if result.status == "failed":
        c = next(c for c in result.checks if c.checked and not c.ok)
        first = c.first_mismatch
        where = f", first at {first.index}: got {first.got:g}, expected {first.expected:g}" if first else ""
        return False, f"{c.name}: {c.mismatches} wrong{where}"
    if result.status == "not_run":
        return None, result.mode_note
    if result.error:
        where = f" (threadIdx {result.error.thread}, blockIdx {result.error.block})" if result.error.thread else ""
        return False, f"{result.error.kind}{where}: {result.error.message}"
    return False, f"the kernel ran but nothing was checked ({result.status})"


# --- main ---------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1 << 24, help="elements per vector (default 16,777,216)")
    p.add_argument("--block", type=int, default=256, help="threads per block: a power of two, 32 to 1024")
    p.add_argument("--part", choices=["vector-add", "reduction", "all"], default="all")
    p.add_argument(
        "--arch",
        choices=["auto", *ARCHS],
        default="auto",
        help="architecture of the compile report (auto: the GPU's, else sm_80)",
    )
    args = p.parse_args(argv)
    if not 32 <= args.block <= 1024 or args.block & (args.block - 1):
        p.error(f"--block {args.block}: use a power of two from 32 to 1024 (the reduction's tree halves it)")
    if not 1 <= args.n <= 1 << 26:
        p.error(f"--n {args.n}: use 1 to {1 << 26:,} elements")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    report = LabReport()
    gpu = notebook.detect_gpu()
    on_gpu = gpu is not None
    arch = args.arch if args.arch != "auto" else (gpu.arch if gpu and gpu.arch in arch_table() else "sm_80")
    has_numba = importlib.util.find_spec("numba") is not None
    budget = notebook.service().limits.simulator_max_threads
    if on_gpu:
        mode = "GPU"
        how = f"{gpu.name} ({gpu.arch}): the CUDA C kernels run through CuPy, timed with CUDA events"
    elif has_numba:
        mode = "simulator"
        how = (
            f"no GPU. The CUDA C kernels are compiled, not run; their numba versions run in numba's CUDA "
            f"simulator on n = {min(args.n, budget):,} elements (its budget is {budget:,} threads)"
        )
    else:
        mode = "compile only"
        how = "no GPU and no numba: the CUDA C kernels are compiled and reported; nothing can run them here"
    print(f"{LAB}: n = {args.n:,}, block = {args.block}, part = {args.part}, report for {arch}")
    print(f"mode: {mode}: {how}")

    sm_count = introspect(report, on_gpu, arch)
    parts = list(PARTS) if args.part == "all" else [args.part]
    for name in parts:
        part = PARTS[name]
        heading(f"{name}: compile ({part.cuda_file}, {part.numba_file})")
        cuda_kernels = compile_file(report, part.cuda_file, "cuda", arch, args.block, part.kernels)
        if has_numba:
            numba_kernels = compile_file(report, part.numba_file, "numba", arch, args.block, part.kernels)
            for k in part.kernels:
                if k in cuda_kernels and k in numba_kernels:
                    print(
                        f"  {k}: {cuda_kernels[k].registers} registers in CUDA C, {numba_kernels[k].registers} in numba"
                    )
        else:
            report.check("numba-compiles", None, "numba is not installed here")
        heading(f"{name}: launch and check ({mode})")
        if mode == "compile only":
            for k in part.kernels:
                report.check(STEPS[k], None, "nothing here can run a kernel: no GPU, no numba")
            continue
        blocks_per_sm = {k: r.occupancy.active_blocks_per_sm for k, r in cuda_kernels.items()}
        launches = plan_launches(
            part,
            args.n,
            args.block,
            on_gpu=on_gpu,
            sm_count=sm_count,
            blocks_per_sm=blocks_per_sm,
            simulator_threads=budget,
        )
        for launch in launches:
            file, language = (part.cuda_file, "cuda") if on_gpu else (part.numba_file, "numba")
            run_launch(report, launch, args.block, file, language)

    heading("Summary")
    report.submit()
    counts = {"passed": 0, "failed": 0, "not_applicable": 0}
    for check in report.checks:
        counts[{True: "passed", False: "failed", None: "not_applicable"}[report.outcome(check)]] += 1
    elapsed = time.perf_counter() - started
    print(
        f"mode {mode}; {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['not_applicable']} not applicable here; {elapsed:.1f} s"
    )
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
