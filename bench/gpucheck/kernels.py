"""Step 3: the kernel service on the GPU (vector add, the block sum, a tiled SGEMM, an illegal
address, numba), each checked against NumPy and timed; without a GPU, its CPU part."""

from __future__ import annotations

from typing import Any

from gpucheck.step import BENCH, KERNEL_DATA, LABS, Ctx, Result, skipped

SGEMM_FILE = BENCH / "gpu_check_sgemm.cu"


def _array(name: str, shape: list[int], seed: int = 0, init: str = "random", output: bool = False) -> dict:
    return {"kind": "array", "name": name, "shape": shape, "init": init, "seed": seed, "output": output}


def _int(name: str, value: int) -> dict:
    return {"kind": "scalar", "name": name, "dtype": "int32", "value": value}


def kernel_requests(gpu: bool) -> dict[str, dict[str, Any]]:
    """The runs of step 3, sized for a GPU, or for the simulator and compile-only without one."""
    n = 1 << 24 if gpu else 4096
    m = 2048 if gpu else 64
    vector = (LABS / "lab-01-cuda-hello" / "vector_add.cu").read_text()
    saxpy_reduce = (KERNEL_DATA / "saxpy_reduce.cu").read_text()
    blocks = n // 256
    return {
        "vector_add": {
            "source": vector,
            "kernel": "vector_add",
            "grid": [n // 256],
            "block": [256],
            "args": [
                _array("a", [n], 1),
                _array("b", [n], 2),
                _array("c", [n], init="zeros", output=True),
                _int("n", n),
            ],
            "expected": {"c": "a + b"},
        },
        "block_sum": {
            "source": saxpy_reduce,
            "kernel": "block_sum",
            "grid": [blocks],
            "block": [256],
            "args": [_array("values", [n], 4), _array("out", [blocks], output=True), _int("n", n)],
            "expected": {"out": f"values.reshape({blocks}, 256).sum(axis=1)"},
            "rtol": 1e-4,
        },
        "sgemm_tiled": {
            "source": SGEMM_FILE.read_text(),
            "kernel": "sgemm_tiled",
            "grid": [m // 32, m // 32],
            "block": [32, 32],
            "args": [
                _array("A", [m, m], 1),
                _array("B", [m, m], 2),
                _array("C", [m, m], init="zeros", output=True),
                _int("M", m),
                _int("N", m),
                _int("K", m),
            ],
            "expected": {"C": "A.astype(np.float64) @ B.astype(np.float64)"},
            "rtol": 1e-3,
            "atol": 1e-3,
            "repeats": 10,
        },
        "illegal_address": {
            "source": (KERNEL_DATA / "illegal_address.cu").read_text(),
            "kernel": "wild_write",
            "grid": [1],
            "block": [32],
            "args": [_array("x", [32], init="zeros", output=True), _int("n", 32)],
        },
        "numba_block_sum": {
            "source": (KERNEL_DATA / "block_sum_numba.py").read_text(),
            "language": "numba",
            "kernel": "block_sum",
            "grid": [n // 64 if gpu else 16],
            "block": [64],
            "args": [_array("values", [n if gpu else 1024], 5), _array("out", [n // 64 if gpu else 16], output=True)],
            "expected": {"out": f"values.reshape({n // 64 if gpu else 16}, 64).sum(axis=1)"},
            "rtol": 1e-4,
        },
    }


def _bytes_moved(name: str, req: dict[str, Any]) -> tuple[float | None, float | None]:
    """(bytes the kernel must move, flops) for the figures next to its time."""
    if name == "vector_add":
        n = req["args"][3]["value"]
        return 12.0 * n, None
    if name in ("block_sum", "numba_block_sum"):
        n = req["args"][0]["shape"][0]
        return 4.0 * n, None
    if name == "sgemm_tiled":
        m = req["args"][3]["value"]
        return 12.0 * m * m, 2.0 * m**3
    return None, None


def _summarise_run(name: str, req: dict[str, Any], result: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"status": result.status, "mode": result.mode, "device": result.device}
    if result.error:
        doc["error"] = {"kind": result.error.kind, "message": result.error.message[:400]}
    if result.timing:
        t = result.timing
        doc["timing"] = {"min_ms": t.min_ms, "mean_ms": t.mean_ms, "method": t.method, "repeats": t.repeats}
        moved, flops = _bytes_moved(name, req)
        if moved and result.mode == "gpu":
            doc["gb_per_s"] = round(moved / (t.min_ms / 1e3) / 1e9, 1)
        if flops and result.mode == "gpu":
            doc["gflop_per_s"] = round(flops / (t.min_ms / 1e3) / 1e9, 1)
    if result.compile:
        k = next((k for k in result.compile.kernels if req["kernel"] in (k.name, k.symbol)), None)
        if k:
            doc["compile"] = {
                "arch": result.compile.arch,
                "registers": k.registers,
                "shared_bytes": k.shared_bytes,
                "spill_stores_bytes": k.spill_stores_bytes,
                "occupancy": k.occupancy.occupancy,
            }
    bad = [c for c in result.checks if not c.ok]
    if bad:
        doc["mismatches"] = [c.model_dump() for c in bad[:3]]
    return doc


def step_kernels(ctx: Ctx) -> Result:
    from gpudojo.kernels.models import CompileRequest, RunRequest
    from gpudojo.kernels.notebook import detect_gpu
    from gpudojo.kernels.service import KernelService

    svc = KernelService(ctx.work / "kernel-cache")
    details: dict[str, Any] = {"runs": {}}
    try:
        reqs = kernel_requests(ctx.gpu)
        if not ctx.gpu:
            # CPU part: the SGEMM compiles for the target arch with its two 4 KiB tiles in shared
            # memory, the CUDA C run passes in the CPU emulator, numba runs in the simulator.
            rep = svc.compile(CompileRequest(source=SGEMM_FILE.read_text(), arch=ctx.arch, block_size=1024))
            k = rep.kernels[0] if rep.kernels else None
            details["sgemm_compile"] = {
                "ok": rep.ok,
                "arch": rep.arch,
                "registers": k and k.registers,
                "shared_bytes": k and k.shared_bytes,
                "spill_stores_bytes": k and k.spill_stores_bytes,
                "occupancy_at_1024": k and k.occupancy.occupancy,
            }
            runs = {}
            for name in ("vector_add", "numba_block_sum"):
                req = RunRequest.model_validate(reqs[name])
                runs[name] = _summarise_run(name, reqs[name], svc.run(req, None))
            details["runs"] = runs
            # The GPU runs' requests must be valid too: a typo found here costs no device time.
            gpu_specs = kernel_requests(True)
            for spec in gpu_specs.values():
                RunRequest.model_validate(spec)
            # ...and their expected expressions evaluate (on the small CPU-sized inputs).
            from gpudojo.worker.kernel_run import build_inputs, expected_outputs

            for spec in reqs.values():
                small = RunRequest.model_validate(spec)
                expected_outputs(small, build_inputs(small))
            ok = (
                rep.ok
                and k is not None
                and k.shared_bytes == 2 * 32 * 32 * 4
                and k.spill_stores_bytes == 0
                and runs["vector_add"]["status"] == "passed"
                and runs["numba_block_sum"]["status"] == "passed"
            )
            return skipped(
                f"SGEMM compiles for {rep.arch} ({k and k.registers} registers, {k and k.shared_bytes} B shared, "
                f"no spills); vector add {runs['vector_add']['status']} in the CPU emulator; numba block sum "
                f"{runs['numba_block_sum']['status']} in the simulator; the {len(gpu_specs)} GPU requests validate",
                details,
                ok,
            )
        target = detect_gpu()
        if target is None:
            return "failed", "torch sees a GPU but NVML does not (detect_gpu() is None)", details
        details["target"] = {"name": target.name, "arch": target.arch}
        order = ["vector_add", "block_sum", "sgemm_tiled", "illegal_address", "vector_add_after", "numba_block_sum"]
        for name in order:
            spec = reqs["vector_add" if name == "vector_add_after" else name]
            try:
                result = svc.run(RunRequest.model_validate(spec), target)
                details["runs"][name] = _summarise_run(name.removesuffix("_after"), spec, result)
            except Exception as err:
                details["runs"][name] = {"status": "exception", "error": f"{type(err).__name__}: {err}"}
        runs = details["runs"]
        ill = runs["illegal_address"]
        wanted = {
            "vector_add": runs["vector_add"]["status"] == "passed",
            "block_sum": runs["block_sum"]["status"] == "passed",
            "sgemm_tiled": runs["sgemm_tiled"]["status"] == "passed",
            "illegal_address": ill["status"] == "error"
            and ill.get("error", {}).get("kind") in ("illegal_address", "crashed"),
            "vector_add_after": runs["vector_add_after"]["status"] == "passed",
            "numba_block_sum": runs["numba_block_sum"]["status"] == "passed"
            and runs["numba_block_sum"]["mode"] == "gpu",
        }
        details["as_wanted"] = wanted
        sg = runs["sgemm_tiled"]
        note = (
            f"{sum(wanted.values())}/{len(wanted)} as wanted; SGEMM 2048^3 {sg.get('gflop_per_s')} GFLOP/s, "
            f"vector add {runs['vector_add'].get('gb_per_s')} GB/s; illegal address -> "
            f"{ill.get('error', {}).get('kind')}, then vector add {runs['vector_add_after']['status']}"
        )
        return ("passed" if all(wanted.values()) else "failed"), note, details
    finally:
        svc.close()
