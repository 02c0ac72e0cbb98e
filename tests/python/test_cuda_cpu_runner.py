"""CUDA C without a GPU: the CPU emulator runs the learner's own kernels through the kernel
service (g++ + gpudojo_cuda.h, one fiber per thread), checks them against NumPy, and reports a
learner's mistakes with thread, block and source line."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from gpudojo.kernels.cpu_runner.source import find_unsupported, rewrite_extern_shared
from gpudojo.kernels.models import RunRequest
from gpudojo.kernels.service import KernelLimits, KernelService

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the CPU emulator needs g++")

DATA = Path(__file__).resolve().parents[1] / "data" / "kernels"
SAXPY_REDUCE = (DATA / "saxpy_reduce.cu").read_text()
CPU = DATA / "cpu"


def line_of(source: str, needle: str) -> int:
    return next(n for n, text in enumerate(source.splitlines(), 1) if needle in text)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = KernelService(tmp_path_factory.mktemp("kernel-cache"), KernelLimits(run_timeout_s=20.0))
    yield svc
    svc.close()


def run(service: KernelService, source: str, kernel: str, grid, block, args, expected=None, **extra):
    req = RunRequest.model_validate(
        {
            "source": source,
            "kernel": kernel,
            "grid": grid,
            "block": block,
            "args": args,
            "expected": expected or {},
            **extra,
        }
    )
    return service.run(req, gpu=None)


def arr(name, shape, init="zeros", dtype="float32", output=False, seed=0):
    return {"kind": "array", "name": name, "shape": shape, "init": init, "dtype": dtype, "output": output, "seed": seed}


def scalar(name, value, dtype="int32"):
    return {"kind": "scalar", "name": name, "dtype": dtype, "value": value}


def passed(result) -> None:
    assert result.mode == "cpu-emulation", result
    assert result.mode_note.startswith("CPU emulation: results are exact, times are not a GPU's")
    assert result.status == "passed", (result.error, result.checks)


def test_vector_add_runs_on_the_cpu_and_matches_numpy(service):
    args = [scalar("a", 2.0, "float32"), arr("x", [1000], "random"), arr("y", [1000], "ones", output=True)]
    result = run(service, SAXPY_REDUCE, "saxpy", [4], [256], [*args, scalar("n", 1000)], {"y": "a * x + y"})
    passed(result)
    assert result.device == "CPU (gpudojo emulator)" and result.compile.ok
    assert result.timing.method.startswith("wall clock of one emulated launch")
    assert result.emulator.compiler.startswith("g++") and result.emulator.run_ms > 0
    again = run(service, SAXPY_REDUCE, "saxpy", [4], [256], [*args, scalar("n", 1000)], {"y": "a * x + y"})
    passed(again)
    assert again.emulator.cached and again.emulator.compile_ms == 0.0


def test_block_reduction_with_shared_memory_and_barriers(service):
    result = run(
        service,
        SAXPY_REDUCE,
        "block_sum",
        [8],
        [256],
        [arr("values", [2000], "random"), arr("out", [8], output=True), scalar("n", 2000)],
        {"out": "np.pad(values, (0, 48)).reshape(8, 256).sum(axis=1)"},
        rtol=1e-5,
    )
    passed(result)


def test_warp_shuffles_and_ballots_are_warp_exact(service):
    n = 1000
    result = run(
        service,
        (CPU / "warp_sum.cu").read_text(),
        "warp_sum",
        [4],
        [256],
        [
            arr("values", [n], "random"),
            arr("out", [4], output=True),
            arr("ballots", [32], dtype="uint32", output=True),
            scalar("n", n),
        ],
        {
            "out": "np.pad(values, (0, 24)).reshape(4, 256).sum(axis=1)",
            # lanes 1, 3, 5, ... of every warp hold an odd index: 0xaaaaaaaa
            "ballots": "np.full(32, 0xAAAAAAAA, dtype=np.uint32)",
        },
    )
    passed(result)


def test_tiled_matmul_with_shared_tiles_and_templates(service):
    n = 40  # not a multiple of the tile: the edge tiles load zeros
    result = run(
        service,
        (CPU / "matmul.cu").read_text(),
        "matmul",
        [3, 3],
        [16, 16],
        [
            arr("A", [n, n], "random", seed=1),
            arr("B", [n, n], "random", seed=2),
            arr("C", [n, n], output=True),
            scalar("n", n),
        ],
        {"C": "A @ B"},
        rtol=1e-4,
    )
    passed(result)


def test_transpose_through_a_padded_tile(service):
    result = run(
        service,
        (CPU / "transpose.cu").read_text(),
        "transpose",
        [2, 3],
        [32, 8],
        [arr("m", [70, 50], "arange"), arr("t", [50, 70], output=True), scalar("rows", 70), scalar("cols", 50)],
        {"t": "m.T"},
    )
    passed(result)


def test_atomics_histogram_in_dynamic_shared_memory(service):
    bins = 10
    result = run(
        service,
        (CPU / "histogram.cu").read_text(),
        "histogram",
        [4],
        [128],
        [
            arr("values", [5000], "random", dtype="int32", seed=3),
            arr("counts", [bins], dtype="uint32", output=True),
            scalar("n", 5000),
            scalar("bins", bins),
        ],
        {"counts": "np.bincount(values % 10, minlength=10)"},
        shared_bytes=bins * 4,
    )
    passed(result)


MISSING_BOUNDS_CHECK = """\
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = a * x[i] + y[i];
}
"""


def test_out_of_bounds_global_access_names_thread_block_and_line(service):
    args = [scalar("a", 2.0, "float32"), arr("x", [1000], "random"), arr("y", [1000], "ones", output=True)]
    result = run(service, MISSING_BOUNDS_CHECK, "saxpy", [4], [256], [*args, scalar("n", 1000)], {"y": "a * x + y"})
    assert result.status == "error" and result.mode == "cpu-emulation"
    err = result.error
    # Thread 232 of block 3 is index 1000, the first past the end; it reads x[1000] first.
    assert err.kind == "out_of_bounds" and err.thread == [232, 0, 0] and err.block == [3, 0, 0]
    assert err.line == 3
    assert "x[1000]" in err.message and "x has 1000 elements" in err.message and "line 3" in err.message


RETURN_BEFORE_BARRIER = """\
extern "C" __global__ void block_sum(const float* in, float* out, int n) {
  __shared__ float partial[256];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  if (i >= n) return;
  partial[t] = in[i];
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}
"""


def test_barrier_not_reached_by_every_thread_is_a_reported_deadlock(service):
    result = run(
        service,
        RETURN_BEFORE_BARRIER,
        "block_sum",
        [2],
        [256],
        [arr("values", [300], "ones"), arr("out", [2], output=True), scalar("n", 300)],
    )
    assert result.status == "error" and result.error.kind == "deadlock"
    # Block 0 is whole; in block 1 only threads 0..43 have data: thread 44 returned early.
    assert result.error.block == [1, 0, 0] and result.error.thread == [44, 0, 0]
    assert result.error.line == 7 and "line 7" in result.error.message and "44 threads wait" in result.error.message


BARRIER_IN_A_BRANCH = """\
extern "C" __global__ void split(float* out) {
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1.0f;
}
"""


def test_threads_at_different_barriers_are_reported(service):
    result = run(service, BARRIER_IN_A_BRANCH, "split", [1], [64], [arr("out", [64], output=True)])
    assert result.error.kind == "deadlock" and result.error.thread == [32, 0, 0]
    assert result.error.line == 5 and "line 3" in result.error.message


@pytest.mark.parametrize(
    ("source", "feature", "line"),
    [
        (
            '#include <mma.h>\nusing namespace nvcuda;\nextern "C" __global__ void k(float* out) {\n'
            "  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;\n  out[0] = 0.0f;\n}\n",
            "tensor cores (wmma)",
            1,
        ),
        (
            'extern "C" __global__ void k(float* out) {\n  // asm("no");\n  unsigned lane;\n'
            '  asm("mov.u32 %0, %%laneid;" : "=r"(lane));\n  out[0] = lane;\n}\n',
            "inline PTX (asm)",
            4,
        ),
    ],
)
def test_unsupported_feature_is_refused_with_its_name_and_line(service, source, feature, line):
    result = run(service, source, "k", [1], [32], [arr("out", [32], output=True)])
    assert result.status == "error" and result.error.kind == "unsupported"
    assert result.error.line == line and feature in result.error.message and f"line {line}" in result.error.message


def test_feature_scan_ignores_comments_and_strings():
    assert find_unsupported('// wmma::fragment\nconst char* s = "asm(";\n/* tex2D( */\n') == []
    found = find_unsupported("int a;\n__global__ void k() { float v = tex2D<float>(t, 0, 0); }\n")
    assert [(u.feature, u.line) for u in found] == [("textures and surfaces", 2)]


def test_extern_shared_becomes_a_pointer_on_the_same_line():
    src = "a\nextern __shared__ __align__(16) float\n  sdata[];\nb\n"
    out = rewrite_extern_shared(src)
    assert out.count("\n") == src.count("\n")
    assert "float* const sdata = reinterpret_cast<float*>(gpudojo_dynamic_shared);" in out


NULL_WRITE = """\
extern "C" __global__ void crash(float* out) {
  float* p = nullptr;
  p[threadIdx.x * 1024 * 1024] = out[0];
}
"""

ENDLESS = """\
extern "C" __global__ void spin(float* out) {
  volatile int k = 0;
  while (out[0] == 0.0f) { k = k + 1; }
}
"""


def test_crashing_and_looping_kernels_cost_only_their_child(tmp_path):
    svc = KernelService(tmp_path, KernelLimits(run_timeout_s=3.0))
    try:
        crash = run(svc, NULL_WRITE, "crash", [1], [32], [arr("out", [32], output=True)])
        assert crash.status == "error" and crash.error.kind == "illegal_address"
        assert crash.error.thread is not None and crash.error.line == 3
        spin = run(svc, ENDLESS, "spin", [1], [32], [arr("out", [32], output=True)])
        assert spin.status == "error" and spin.error.kind == "timeout"
        assert spin.error.thread == [0, 0, 0] and spin.error.line == 3
        args = [scalar("a", 1.0, "float32"), arr("x", [64], "ones"), arr("y", [64], "ones", output=True)]
        ok = run(svc, SAXPY_REDUCE, "saxpy", [1], [64], [*args, scalar("n", 64)], {"y": "a * x + y"})
        passed(ok)
    finally:
        svc.close()


def test_argument_types_are_checked_against_the_kernels_parameters(service):
    result = run(
        service,
        SAXPY_REDUCE,
        "saxpy",
        [1],
        [32],
        [scalar("a", 1.0, "float32"), arr("x", [32], dtype="int32"), arr("y", [32], output=True), scalar("n", 32)],
    )
    assert result.error.kind == "bad_spec"
    assert "points to float32, but array x is int32" in result.error.message


def test_results_equal_numpy_bit_for_bit_for_integer_kernels(service):
    values = np.arange(5000) % 10
    result = run(
        service,
        (CPU / "histogram.cu").read_text(),
        "histogram",
        [3],
        [64],
        [
            arr("values", [5000], "arange", dtype="int32"),
            arr("counts", [10], dtype="uint32", output=True),
            scalar("n", 5000),
            scalar("bins", 10),
        ],
        {"counts": "np.bincount(values % 10, minlength=10)"},
        shared_bytes=40,
        atol=0,
        rtol=0,
    )
    passed(result)
    assert result.checks[0].preview == [float(v) for v in np.bincount(values, minlength=10)[:8]]


# bfloat16 rounding in NumPy: keep float32's top 16 bits, rounding to nearest, ties to even.
BF16 = (
    "(lambda v: ((v.view(np.uint32) + np.uint32(0x7FFF) + ((v.view(np.uint32) >> 16) & 1))"
    " & np.uint32(0xFFFF0000)).view(np.float32))"
)


def test_bfloat16_rounds_each_operation_to_nearest_even_like_numpy(service):
    source = (
        "#include <cuda_bf16.h>\n"
        'extern "C" __global__ void k(const float* x, float* y, float* acc, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  __nv_bfloat16 v = __float2bfloat16(x[i]);\n"
        "  y[i] = __bfloat162float(__hmul(v, __float2bfloat16(3.0f)));\n"
        "  __nv_bfloat16 s = 0.0f;\n"
        "  for (int k = 0; k < 300; ++k) s += __nv_bfloat16(1.0f);  // 256 + 1 rounds back to 256\n"
        "  acc[i] = s;\n"
        "}\n"
    )
    n = 1000
    args = [
        arr("x", [n], "random"),
        arr("y", [n], output=True),
        arr("acc", [n], output=True),
        {"kind": "scalar", "name": "n", "dtype": "int32", "value": n},
    ]
    expected = {"y": f"{BF16}({BF16}(x) * np.float32(3))", "acc": "np.full(x.shape, 256.0)"}
    result = run(service, source, "k", [4], [256], args, expected)
    assert result.status == "passed", (result.error, result.checks)


def test_paired_bfloat16_is_refused_with_its_line(service):
    source = 'extern "C" __global__ void k(float* out) {\n  __nv_bfloat162 p;\n  out[0] = 0.0f;\n}\n'
    result = run(service, source, "k", [1], [32], [arr("out", [32], output=True)])
    assert result.status == "error" and result.error.kind == "unsupported"
    assert result.error.line == 2 and "__nv_bfloat162" in result.error.message
