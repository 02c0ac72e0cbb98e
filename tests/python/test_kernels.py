"""The kernel service on this machine: NVRTC and numba compiles (no GPU needed), the compile
worker's cache, timeout and restart, occupancy, and numba kernels in the simulator."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gpudojo.api.base import status_of
from gpudojo.kernels.models import CompileRequest, OccupancyRequest, RunRequest
from gpudojo.kernels.occupancy import arch_table, occupancy
from gpudojo.kernels.service import CompileFailure, KernelLimits, KernelRequestError, KernelService

DATA = Path(__file__).resolve().parents[1] / "data" / "kernels"
SAXPY_REDUCE = (DATA / "saxpy_reduce.cu").read_text()
BROKEN = (DATA / "broken.cu").read_text()
NUMBA_SUM = (DATA / "block_sum_numba.py").read_text()


def line_of(source: str, needle: str) -> int:
    return next(n for n, text in enumerate(source.splitlines(), 1) if needle in text)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = KernelService(tmp_path_factory.mktemp("kernel-cache"))
    yield svc
    svc.close()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_saxpy_and_reduction_resources(service, arch):
    result = service.compile(CompileRequest(source=SAXPY_REDUCE, arch=arch))
    assert result.ok, result.diagnostics
    assert result.compiler.startswith("NVRTC 13.")
    kernels = {k.name: k for k in result.kernels}
    assert set(kernels) == {"saxpy", "block_sum"}
    saxpy, block_sum = kernels["saxpy"], kernels["block_sum"]
    # A 256-float shared array is 1024 bytes; saxpy has none. One barrier id for __syncthreads.
    assert block_sum.shared_bytes == 1024 and saxpy.shared_bytes == 0
    assert block_sum.barriers == 1 and saxpy.barriers == 0
    for k in (saxpy, block_sum):
        assert 4 <= k.registers <= 32
        assert k.spill_stores_bytes == 0 and k.spill_loads_bytes == 0 and k.stack_bytes == 0
        # Kernel parameters live in constant bank 0 up to sm_89; sm_90 passes them otherwise.
        assert (k.constant_bytes > 0) == (arch == "sm_80")
        # At 256 threads these light kernels fill the SM: 64 warps on sm_80 and sm_90.
        assert k.occupancy.active_warps_per_sm == 64 and k.occupancy.occupancy == 1.0
        assert [p.block_size for p in k.curve] == list(range(32, 1025, 32))
    # PTX for the requested arch, with .loc lines mapping back to the source.
    assert f".target {arch}" in result.ptx and ".visible .entry block_sum" in result.ptx
    assert len(result.ptx_lines) == len(result.ptx.splitlines())
    sync_line = line_of(SAXPY_REDUCE, "__syncthreads();")
    assert sync_line in result.ptx_lines
    # SASS: the barrier instruction maps back to a __syncthreads() line.
    bars = [i for i in block_sum.sass if i.text.startswith("BAR.SYNC")]
    assert bars and all(i.line is not None and "__syncthreads" in SAXPY_REDUCE.splitlines()[i.line - 1] for i in bars)
    assert any("LDS" in i.text for i in block_sum.sass) and any("STS" in i.text for i in block_sum.sass)
    assert any(i.text.startswith("FFMA") or "FFMA" in i.text for i in saxpy.sass)
    offsets = [i.offset for i in saxpy.sass]
    assert offsets == sorted(offsets) and offsets[1] - offsets[0] == 16


def test_broken_kernel_diagnostics_on_their_lines(service):
    result = service.compile(CompileRequest(source=BROKEN, arch="sm_80"))
    assert not result.ok and result.kernels == [] and result.ptx == ""
    errors = [(d.line, d.column, d.message) for d in result.diagnostics if d.severity == "error"]
    warnings = [(d.line, d.message) for d in result.diagnostics if d.severity == "warning"]
    assert (3, 14, 'identifier "y" is undefined') in errors
    assert any(line == 5 and "undefined_function" in msg for line, _, msg in errors)
    assert any(line == 4 and "unused" in msg for line, msg in warnings)


def test_cache_hit_skips_the_compiler(service, tmp_path):
    source = SAXPY_REDUCE.replace("saxpy", "saxpy_cache_test")
    first = service.compile(CompileRequest(source=source, arch="sm_86"))
    calls = service.compiler_calls
    second = service.compile(CompileRequest(source=source, arch="sm_86", block_size=128))
    assert not first.cached and second.cached and second.key == first.key
    assert service.compiler_calls == calls
    assert second.timings.compile_ms == 0.0 and second.timings.total_ms < 50
    # Occupancy is recomputed for the new block size; the compiler output is the same.
    assert second.kernels[0].occupancy.block_size == 128 and second.ptx == first.ptx
    # A different option is a different key; the disk cache outlives the service.
    other = service.compile(CompileRequest(source=source, arch="sm_86", options={"opt_level": 1}))
    assert other.key != first.key and not other.cached
    fresh = KernelService(service.cache_dir)
    try:
        assert fresh.compile(CompileRequest(source=source, arch="sm_86")).cached
        assert fresh.compiler_calls == 0 and fresh.worker_pid is None
    finally:
        fresh.close()


def test_hanging_compile_is_cut_off_and_the_worker_replaced(tmp_path):
    svc = KernelService(tmp_path, KernelLimits(compile_timeout_s=2.0))
    try:
        svc.warm_up()
        first_pid = svc.worker_pid
        started = time.monotonic()
        with pytest.raises(CompileFailure) as info:
            svc.compile(CompileRequest(source=(DATA / "slow.cu").read_text(), arch="sm_80", sass=False))
        assert info.value.kind == "timeout" and "longer than 2 s" in str(info.value)
        assert time.monotonic() - started < 10
        with pytest.raises(ProcessLookupError):
            os.kill(first_pid, 0)
        result = svc.compile(CompileRequest(source=SAXPY_REDUCE, arch="sm_80", sass=False))
        assert result.ok and svc.worker_pid not in (None, first_pid) and svc.worker_starts == 2
    finally:
        svc.close()


def test_worker_dying_mid_compile_is_reported_and_replaced(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    svc = KernelService(tmp_path)
    try:
        svc.warm_up()
        pid = svc.worker_pid
        slow = CompileRequest(source=(DATA / "slow.cu").read_text(), arch="sm_80", sass=False)
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(svc.compile, slow)
            time.sleep(1.0)  # the worker is inside ptxas now
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(CompileFailure) as info:
                pending.result(timeout=30)
        assert info.value.kind == "crashed" and "SIGKILL" in str(info.value)
        assert svc.compile(CompileRequest(source=SAXPY_REDUCE, arch="sm_80", sass=False)).ok
        assert svc.worker_starts == 2 and svc.worker_pid != pid
    finally:
        svc.close()


def test_options_reach_the_compiler(service):
    source = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = SCALE * x[threadIdx.x]; }\n'
    missing = service.compile(CompileRequest(source=source, sass=False))
    assert not missing.ok and missing.diagnostics[0].line == 1 and "SCALE" in missing.diagnostics[0].message
    ok = service.compile(CompileRequest(source=source, sass=False, options={"defines": {"SCALE": "2.0f"}}))
    assert ok.ok
    heavy = SAXPY_REDUCE
    capped = service.compile(CompileRequest(source=heavy, sass=False, options={"max_registers": 16}))
    assert all(k.registers <= 16 for k in capped.kernels)


def test_limits_and_bad_requests(service):
    with pytest.raises(KernelRequestError) as info:
        service.compile(CompileRequest(source="x" * (service.limits.max_source_bytes + 1)))
    assert status_of(info.value) == 413
    with pytest.raises(KernelRequestError) as info:
        service.compile(CompileRequest(source=SAXPY_REDUCE, arch="sm_61"))
    assert info.value.code == "unknown_arch" and "sm_80" in str(info.value)
    with pytest.raises(ValueError):
        CompileRequest(source="", options={"defines": {"A;rm": "1"}})
    with pytest.raises(ValueError):
        CompileRequest(source="", arch="compute_80 -ccbin=/bin/sh")


# --- occupancy, against the figures NVIDIA's occupancy calculator gives ---------------------

OCCUPANCY_CASES = [
    # arch, regs/thread, shared bytes/block, threads/block -> blocks/SM, warps/SM, limited by
    ("sm_80", 32, 0, 256, 8, 64, "warps"),
    ("sm_80", 64, 0, 256, 4, 32, "registers"),
    ("sm_80", 32, 48 * 1024, 128, 3, 12, "shared_memory"),
    ("sm_86", 16, 0, 1024, 1, 32, "warps"),
    ("sm_90", 255, 0, 128, 2, 8, "registers"),
    ("sm_75", 32, 0, 256, 4, 32, "warps"),
    ("sm_89", 32, 0, 32, 24, 24, "blocks"),
    ("sm_90", 40, 0, 256, 6, 48, "registers"),
]


@pytest.mark.parametrize(("arch", "regs", "smem", "block", "blocks", "warps", "limiter"), OCCUPANCY_CASES)
def test_occupancy_known_answers(arch, regs, smem, block, blocks, warps, limiter):
    occ = occupancy(arch, regs, smem, block)
    assert (occ.active_blocks_per_sm, occ.active_warps_per_sm, occ.limited_by) == (blocks, warps, limiter)
    assert occ.occupancy == pytest.approx(warps / arch_table()[arch].max_warps_per_sm)
    assert occ.error is None


def test_occupancy_impossible_launches(service):
    assert occupancy("sm_80", 255, 0, 1024).error is not None
    too_much_smem = occupancy("sm_86", 16, 200 * 1024, 128)
    assert too_much_smem.active_warps_per_sm == 0 and "shared memory" in too_much_smem.error
    report = service.occupancy(OccupancyRequest(arch="sm_90", registers_per_thread=32, block_size=512))
    assert report.occupancy.occupancy == 1.0 and len(report.curve) == 32


# --- numba: PTX and SASS without a GPU, runs in the simulator -------------------------------


def test_numba_kernel_compiles_to_ptx_and_sass(service):
    result = service.compile(
        CompileRequest(
            source=NUMBA_SUM, language="numba", arch="sm_80", signatures={"fill_past_end": "void(float32[:])"}
        )
    )
    assert result.ok, result.diagnostics
    assert result.compiler.startswith("numba-cuda")
    kernels = {k.name: k for k in result.kernels}
    assert set(kernels) == {"block_sum", "fill_past_end"}
    assert kernels["block_sum"].shared_bytes == 64 * 4 and kernels["block_sum"].registers > 0
    assert ".target sm_80" in result.ptx
    sync = line_of(NUMBA_SUM, "cuda.syncthreads()")
    assert sync in result.ptx_lines
    assert any(i.line == sync for i in kernels["block_sum"].sass)


def test_numba_errors_point_at_lines(service):
    no_sig = service.compile(CompileRequest(source=NUMBA_SUM, language="numba"))
    assert not no_sig.ok
    missing = [d for d in no_sig.diagnostics if "fill_past_end" in d.message]
    # The decorator line: where the signature goes.
    assert missing and missing[0].line == line_of(NUMBA_SUM, "def fill_past_end") - 1
    syntax = service.compile(
        CompileRequest(source="from numba import cuda\n\n@cuda.jit\ndef k(x)\n    pass\n", language="numba")
    )
    assert not syntax.ok and syntax.diagnostics[0].line == 4
    typing = "from numba import cuda\n\n@cuda.jit('void(float32[:])')\ndef k(x):\n    x[0] = undefined_name\n"
    typed = service.compile(CompileRequest(source=typing, language="numba"))
    # numba's typing errors carry no source location here; the message says what failed.
    assert not typed.ok and "NameError" in typed.diagnostics[0].message


def _sum_request(**overrides):
    spec = {
        "source": NUMBA_SUM,
        "language": "numba",
        "kernel": "block_sum",
        "grid": [4],
        "block": [64],
        "args": [
            {"kind": "array", "name": "values", "shape": [250], "init": "random", "seed": 3},
            {"kind": "array", "name": "out", "shape": [4], "output": True},
        ],
        "expected": {"out": "np.pad(values, (0, 6)).reshape(4, 64).sum(axis=1)"},
    }
    spec.update(overrides)
    return RunRequest.model_validate(spec)


def test_numba_reduction_runs_in_the_simulator(service):
    result = service.run(_sum_request(), gpu=None)
    assert result.status == "passed", result.error
    assert result.mode == "simulator" and "simulator" in result.mode_note
    (check,) = result.checks
    assert check.ok and check.checked and check.max_abs_error < 1e-4 and len(check.preview) == 4
    assert result.timing is not None and "not GPU time" in result.timing.method


def test_wrong_answer_is_reported(service):
    result = service.run(_sum_request(expected={"out": "np.zeros(4)"}), gpu=None)
    assert result.status == "failed", result.error
    check = result.checks[0]
    assert not check.ok and check.mismatches == 4 and check.first_mismatch.index == [0]


def test_out_of_bounds_reported_with_thread(service):
    req = _sum_request(
        kernel="fill_past_end",
        grid=[1],
        block=[64],
        args=[{"kind": "array", "name": "x", "shape": [40], "output": True}],
        expected={},
    )
    result = service.run(req, gpu=None)
    assert result.status == "error" and result.error.kind == "out_of_bounds"
    assert result.error.thread[0] >= 40 and result.error.block == [0, 0, 0]
    assert result.error.line == line_of(NUMBA_SUM, "x[i] = 1.0")


def test_simulator_thread_budget(service):
    with pytest.raises(KernelRequestError) as info:
        service.run(_sum_request(grid=[1000], block=[64]), gpu=None)
    assert info.value.code == "too_many_threads" and "4096" in str(info.value)


def _spin_request() -> RunRequest:
    """One thread that never stops (a numba kernel with an endless loop)."""
    spin = "from numba import cuda\n\n@cuda.jit\ndef spin(x):\n    while True:\n        x[0] += 1\n"
    return _sum_request(
        source=spin,
        kernel="spin",
        grid=[1],
        block=[1],
        args=[{"kind": "array", "name": "x", "shape": [1], "output": True}],
        expected={},
    )


def test_endless_kernel_is_killed_and_the_service_goes_on(tmp_path):
    svc = KernelService(tmp_path, KernelLimits(run_timeout_s=3.0))
    req = _spin_request()
    try:
        result = svc.run(req, gpu=None)
        assert result.status == "error" and result.error.kind == "timeout"
        assert svc.run(_sum_request(), gpu=None).status == "passed"
    finally:
        svc.close()


def test_cuda_c_without_gpu_runs_in_the_cpu_emulator(service):
    req = RunRequest.model_validate(
        {
            "source": SAXPY_REDUCE,
            "kernel": "saxpy",
            "grid": [4],
            "block": [256],
            "args": [
                {"kind": "scalar", "name": "a", "dtype": "float32", "value": 2},
                {"kind": "array", "name": "x", "shape": [1000], "init": "random"},
                {"kind": "array", "name": "y", "shape": [1000], "init": "ones", "output": True},
                {"kind": "scalar", "name": "n", "dtype": "int32", "value": 1000},
            ],
            "expected": {"y": "a * x + y"},
        }
    )
    result = service.run(req, gpu=None)
    assert result.status == "passed" and result.mode == "cpu-emulation"
    assert "times are not a GPU's" in result.mode_note and result.compile.ok
    assert {k.name for k in result.compile.kernels} == {"saxpy", "block_sum"}
    with pytest.raises(KernelRequestError):
        service.run(req.model_copy(update={"kernel": "nope"}), gpu=None)
    with pytest.raises(KernelRequestError):
        service.run(req.model_copy(update={"mode": "gpu"}), gpu=None)


def test_run_spec_validation():
    with pytest.raises(ValueError, match="not output arrays"):
        _sum_request(expected={"values": "values"})
    with pytest.raises(ValueError, match="distinct"):
        _sum_request(args=[{"kind": "scalar", "name": "a", "value": 1}, {"kind": "scalar", "name": "a", "value": 2}])
    with pytest.raises(ValueError):
        _sum_request(grid=[0])


def test_close_kills_runs_still_going(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    svc = KernelService(tmp_path, KernelLimits(run_timeout_s=120.0))
    req = _spin_request()
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(svc.run, req, None)
        deadline = time.monotonic() + 10
        while not svc._runs and time.monotonic() < deadline:
            time.sleep(0.05)
        (proc,) = svc._runs
        started = time.monotonic()
        svc.close()
        result = pending.result(timeout=10)
    assert time.monotonic() - started < 5 and proc.poll() is not None
    assert result.status == "error" and result.error.kind == "crashed"
