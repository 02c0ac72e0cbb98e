"""The CPU emulator for CUDA C against numba's CUDA simulator, on the same kernels.

Issue 25's goals: at least 50x faster than the simulator on vector add 2^20, a block sum and
a tiled matmul 256^3, with compile time shown apart; first-run latency (compile + run) of a
vector add at most 1.5 s. Both run through KernelService as the REST route does (a child
process per run); the figures compared are each mode's own launch time (RunResult.timing),
so process start and input building count for neither. The simulator cannot reach the full
sizes in reasonable time (about 200 us a thread), so it runs a smaller launch of the same
kernel and its time is scaled by the work (threads, and n^3 for the matmul), as said below.

The emulator runs each kernel twice over: with the memory-access report (the default: every
load and store instrumented, each warp's sectors and bank conflicts counted, 64 blocks at
most recorded) and without it (memory_report=False: the plain build), so the report's
overhead shows in compile time and launch time apart.

    cd bench && ../.venv/bin/python bench_cuda_cpu.py
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from gpudojo.kernels.models import RunRequest
from gpudojo.kernels.service import KernelLimits, KernelService
from server import machine

ROOT = Path(__file__).resolve().parents[1]
CUDA_SAXPY_SUM = (ROOT / "tests" / "data" / "kernels" / "saxpy_reduce.cu").read_text()
CUDA_MATMUL = (ROOT / "tests" / "data" / "kernels" / "cpu" / "matmul.cu").read_text()

NUMBA = """
from numba import cuda, float32

@cuda.jit
def saxpy(a, x, y, n):
    i = cuda.grid(1)
    if i < n:
        y[i] = a * x[i] + y[i]

@cuda.jit
def block_sum(values, out, n):
    partial = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    partial[t] = values[i] if i < n else 0.0
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = partial[0]

@cuda.jit
def matmul(A, B, C, n):
    As = cuda.shared.array((16, 16), float32)
    Bs = cuda.shared.array((16, 16), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * 16 + ty
    col = cuda.blockIdx.x * 16 + tx
    acc = float32(0.0)
    for k0 in range(0, n, 16):
        As[ty, tx] = A[row, k0 + tx] if row < n and k0 + tx < n else 0.0
        Bs[ty, tx] = B[k0 + ty, col] if k0 + ty < n and col < n else 0.0
        cuda.syncthreads()
        for k in range(16):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < n and col < n:
        C[row, col] = acc
"""


def arr(name, shape, init="zeros", output=False):
    return {"kind": "array", "name": name, "shape": shape, "init": init, "output": output}


def scalar(name, value, dtype="int32"):
    return {"kind": "scalar", "name": name, "dtype": dtype, "value": value}


def saxpy(n: int) -> dict:
    args = [scalar("a", 2.0, "float32"), arr("x", [n], "random"), arr("y", [n], "ones", True), scalar("n", n)]
    return {"kernel": "saxpy", "grid": [n // 256], "block": [256], "args": args, "expected": {"y": "a * x + y"}}


def block_sum(n: int) -> dict:
    args = [arr("values", [n], "random"), arr("out", [n // 256], output=True), scalar("n", n)]
    return {
        "kernel": "block_sum",
        "grid": [n // 256],
        "block": [256],
        "args": args,
        "expected": {"out": "values.reshape(-1, 256).sum(axis=1)"},
        "rtol": 1e-4,
    }


def matmul(n: int) -> dict:
    args = [arr("A", [n, n], "random"), arr("B", [n, n], "random"), arr("C", [n, n], output=True), scalar("n", n)]
    g = (n + 15) // 16
    return {
        "kernel": "matmul",
        "grid": [g, g],
        "block": [16, 16],
        "args": args,
        "expected": {"C": "A @ B"},
        "rtol": 1e-3,
    }


def run(svc: KernelService, source: str, language: str, spec: dict, report: bool = True):
    req = RunRequest.model_validate(
        {"source": source, "language": language, **spec, "warmup": 0, "repeats": 1, "memory_report": report}
    )
    t0 = time.perf_counter()
    result = svc.run(req, gpu=None)
    wall = time.perf_counter() - t0
    assert result.status == "passed", (result.error, result.checks)
    return result, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sim-threads", type=int, default=4096, help="threads of the simulator's smaller launches")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    limits = KernelLimits(simulator_max_threads=1 << 20, run_timeout_s=600.0)
    with tempfile.TemporaryDirectory() as tmp:
        svc = KernelService(Path(tmp) / "kernel-cache", limits)
        try:
            rows = []
            small = args.sim_threads
            cases = [
                ("vector add 2^20", CUDA_SAXPY_SUM, saxpy(1 << 20), saxpy(small), (1 << 20) / small),
                ("block sum 2^20", CUDA_SAXPY_SUM, block_sum(1 << 20), block_sum(small), (1 << 20) / small),
                ("tiled matmul 256^3", CUDA_MATMUL, matmul(256), matmul(64), (256 / 64) ** 3),
            ]
            overheads = []
            for name, source, full, reduced, scale in cases:
                cold_plain, _ = run(svc, source, "cuda", full, report=False)
                warm_plain, _ = run(svc, source, "cuda", full, report=False)
                cold, _ = run(svc, source, "cuda", full)
                warm, _ = run(svc, source, "cuda", full)
                sim, _ = run(svc, NUMBA, "numba", reduced)
                sim_full_ms = sim.timing.mean_ms * scale
                rows.append(
                    (name, cold.emulator.compile_ms, warm.timing.mean_ms, sim.timing.mean_ms, scale, sim_full_ms)
                )
                m = warm.memory
                overheads.append(
                    (
                        name,
                        cold_plain.emulator.compile_ms,
                        cold.emulator.compile_ms,
                        warm_plain.timing.mean_ms,
                        warm.timing.mean_ms,
                        f"{m.blocks_recorded} of {m.blocks_total}",
                    )
                )
            print(
                "| kernel | g++ compile (once, cached) | CPU emulator launch | simulator launch (smaller) | "
                "scale | simulator, scaled | speed-up |"
            )
            print("|---|---|---|---|---|---|---|")
            for name, compile_ms, cpu_ms, sim_ms, scale, sim_full in rows:
                print(
                    f"| {name} | {compile_ms:.0f} ms | {cpu_ms:.1f} ms | {sim_ms:.0f} ms | x{scale:g} | "
                    f"{sim_full / 1000:.1f} s | {sim_full / cpu_ms:.0f}x |"
                )
            print()
            print(
                "| kernel | g++ compile, plain | g++ compile, instrumented | launch, no report | "
                "launch, with report | report overhead | blocks recorded |"
            )
            print("|---|---|---|---|---|---|---|")
            for name, c_plain, c_inst, l_plain, l_inst, recorded in overheads:
                print(
                    f"| {name} | {c_plain:.0f} ms | {c_inst:.0f} ms | {l_plain:.1f} ms | {l_inst:.1f} ms | "
                    f"{l_inst / l_plain:.2f}x | {recorded} |"
                )
        finally:
            svc.close()
        # First run in the playground: a server whose compile worker is warm, a vector add it has
        # never seen (a fresh comment misses both caches): NVRTC report + g++ + launch + check.
        svc = KernelService(Path(tmp) / "fresh-cache", limits)
        try:
            svc.warm_up()
            run(svc, CUDA_SAXPY_SUM, "cuda", saxpy(1 << 12))  # builds the launcher object once
            run(svc, CUDA_SAXPY_SUM, "cuda", saxpy(1 << 12), report=False)
            for report in (True, False):
                walls = []
                for k in range(5):
                    source = f"// edit {k} {report} {time.time()}\n" + CUDA_SAXPY_SUM
                    result, wall = run(svc, source, "cuda", saxpy(1 << 20), report=report)
                    walls.append((wall, result.emulator.compile_ms, result.compile.timings.total_ms))
                walls.sort()
                wall, gxx, nvrtc = walls[len(walls) // 2]
                print(
                    f"first-run latency, vector add 2^20, {'with' if report else 'without'} the memory report, "
                    f"median of 5 new sources: {wall * 1000:.0f} ms (g++ {gxx:.0f} ms, NVRTC report {nvrtc:.0f} ms, "
                    "the rest: child start, inputs, launch, check)"
                )
        finally:
            svc.close()


if __name__ == "__main__":
    main()
