"""CUDA C without a GPU: the CPU emulator runs the learner's own kernels through the kernel
service (g++ + gpudojo_cuda.h, one fiber per thread), checks them against NumPy, and reports a
learner's mistakes with thread, block and source line."""

from __future__ import annotations

import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from gpudojo.api.base import status_of
from gpudojo.kernels.cpu_runner.source import find_unsupported, rewrite_extern_shared
from gpudojo.kernels.models import RunRequest
from gpudojo.kernels.service import KernelLimits, KernelRequestError, KernelService
from gpudojo.kernels.signature import argument_mismatch, kernel_params

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
    args = [scalar("a", 1.0, "float32"), arr("x", [32], dtype="int32"), arr("y", [32], output=True), scalar("n", 32)]
    # Read from the source before anything runs: a 400 naming both types (on a GPU the kernel
    # would read the int32 bits as floats).
    with pytest.raises(KernelRequestError, match=r"x is an int32 array, but parameter 2 of saxpy") as info:
        run(service, SAXPY_REDUCE, "saxpy", [1], [32], args)
    assert info.value.code == "argument_type" and status_of(info.value) == 400
    # A parameter type the source check cannot read (a typedef) is checked by the emulator as it binds.
    hidden = 'typedef float real;\nextern "C" __global__ void saxpy(real a, const real* x, real* y, int n) {}\n'
    result = run(service, hidden, "saxpy", [1], [32], args)
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


BF16_ARITH = (
    "#include <cuda_bf16.h>\n"
    'extern "C" __global__ void arith(const __nv_bfloat16* x, const __nv_bfloat16* y, __nv_bfloat16* sum,\n'
    "                                 __nv_bfloat16* prod, __nv_bfloat16* copy, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n) return;\n"
    "  sum[i] = x[i] + y[i];\n"
    "  prod[i] = __hmul(x[i], y[i]);\n"
    "  copy[i] = x[i];\n"
    "}\n"
)


def bits(values) -> list[int]:
    """The bfloat16 bit patterns of numbers (exact: a bfloat16 is a float32's top 16 bits)."""
    return [int(b) >> 16 for b in np.asarray(values, np.float32).view(np.uint32)]


def test_bfloat16_arrays_go_in_and_come_out_rounded_to_nearest_even(service):
    n = 1000
    args = [
        arr("x", [n], "random", dtype="bfloat16"),
        arr("y", [n], "random", dtype="bfloat16", seed=1),
        arr("sum", [n], dtype="bfloat16", output=True),
        arr("prod", [n], dtype="bfloat16", output=True),
        arr("copy", [n], dtype="bfloat16", output=True),
        scalar("n", n),
    ]
    # Checked in the run with NumPy's bit trick (BF16 above), not with ml_dtypes; exact: atol=rtol=0.
    f32 = "{}.astype(np.float32)"
    expected = {
        "sum": f"{BF16}({f32.format('x')} + {f32.format('y')})",
        "prod": f"{BF16}({f32.format('x')} * {f32.format('y')})",
        "copy": "x",
    }
    result = run(service, BF16_ARITH, "arith", [4], [256], args, expected, atol=0, rtol=0)
    passed(result)
    # The same inputs built here with ml_dtypes: its float64 -> bfloat16 cast rounds to nearest even.
    x = np.random.default_rng(0).random(n).astype(ml_dtypes.bfloat16)
    y = np.random.default_rng(1).random(n).astype(ml_dtypes.bfloat16)
    preview = {c.name: c.preview for c in result.checks}
    want_sum = (x.astype(np.float32) + y.astype(np.float32)).astype(ml_dtypes.bfloat16)
    want_prod = (x.astype(np.float32) * y.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert bits(preview["copy"]) == [int(b) for b in x[:8].view(np.uint16)]
    assert bits(preview["sum"]) == [int(b) for b in want_sum[:8].view(np.uint16)]
    assert bits(preview["prod"]) == [int(b) for b in want_prod[:8].view(np.uint16)]


def test_bfloat16_ties_round_to_even_on_the_way_in_and_in_the_kernel(service):
    # 1 + 2^-8 lies halfway between 1 (mantissa even) and 1 + 2^-7 (odd): it rounds down to 1;
    # 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): it rounds up.
    n = 64
    args = [
        arr("x", [n], "full", dtype="bfloat16"),
        arr("y", [n], "full", dtype="bfloat16"),
        arr("sum", [n], dtype="bfloat16", output=True),
        arr("prod", [n], dtype="bfloat16", output=True),
        arr("copy", [n], dtype="bfloat16", output=True),
        scalar("n", n),
    ]
    args[0]["value"], args[1]["value"] = 1.0078125, 2.0**-8
    result = run(service, BF16_ARITH, "arith", [1], [n], args)
    assert result.status == "ran", result.error
    preview = {c.name: c.preview for c in result.checks}
    assert preview["sum"][0] == 1.015625 and preview["copy"][0] == 1.0078125
    args[0]["value"] = 1.0
    assert run(service, BF16_ARITH, "arith", [1], [n], args).checks[0].preview[0] == 1.0
    args[0]["value"], args[1]["value"] = 1.00390625, 1.01171875  # rounded as they go in
    result = run(service, BF16_ARITH, "arith", [1], [n], args)
    preview = {c.name: c.preview for c in result.checks}
    assert preview["copy"][0] == 1.0 and preview["sum"][0] == 2.015625


def test_bfloat16_nan_and_infinities_are_kept(service):
    source = (
        "#include <cuda_bf16.h>\n"
        'extern "C" __global__ void special(const __nv_bfloat16* x, __nv_bfloat16* out, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  __nv_bfloat16 zero = 0.0f;\n"
        "  float big = 3.4e38f;  // above bfloat16's largest finite number by more than half an ulp\n"
        "  __nv_bfloat16 r[8] = {x[i] * __float2bfloat16(2.0f), x[i] / zero, -x[i] / zero, zero / zero,\n"
        "                        __float2bfloat16(big), __hfma(x[i], zero, x[i]), __double2bfloat16(-1e300), -zero};\n"
        "  out[i] = r[i % 8];\n"
        "}\n"
    )
    n = 16
    result = run(
        service,
        source,
        "special",
        [1],
        [n],
        [arr("x", [n], "ones", dtype="bfloat16"), arr("out", [n], dtype="bfloat16", output=True), scalar("n", n)],
    )
    assert result.status == "ran", result.error
    got = result.checks[0].preview
    assert got[0] == 2.0 and got[1] == np.inf and got[2] == -np.inf and np.isnan(got[3])
    assert got[4] == np.inf and got[5] == 1.0 and got[6] == -np.inf and got[7] == 0.0
    assert np.signbit(got[7])
    # NaN and infinities given as inputs come back as they went in, through the kernel's arithmetic.
    args = [
        arr("x", [n], "full", dtype="bfloat16"),
        arr("y", [n], "ones", dtype="bfloat16"),
        *(arr(name, [n], dtype="bfloat16", output=True) for name in ("sum", "prod", "copy")),
        scalar("n", n),
    ]
    for value in (np.nan, np.inf, -np.inf):
        args[0]["value"] = value
        expected = {"sum": "x + y", "prod": "x * y", "copy": "x"}
        result = run(service, BF16_ARITH, "arith", [1], [n], args, expected, atol=0, rtol=0)
        passed(result)
        for check in result.checks:
            got = check.preview[0]
            assert np.isnan(got) if np.isnan(value) else got == value, (value, check)


def test_bfloat16_double_rounding_is_avoided(service):
    # 1 + 2^-8 + 2^-30 is just above a tie: straight to bfloat16 it rounds up, through float it
    # would become the tie and round to even (down, to 1). 3 * (1 + 2^-7) is a tie too, which a
    # tiny c pushes one way or the other: __hfma rounds its exact result once, as the GPU does.
    source = (
        "#include <cuda_bf16.h>\n"
        'extern "C" __global__ void once(__nv_bfloat16* out) {\n'
        "  __nv_bfloat16 a = 3.0f, b = 1.0f + 0x1p-7f, tiny = 0x1p-40f;\n"
        "  out[0] = __double2bfloat16(1.0 + 0x1p-8 + 0x1p-30);\n"
        "  out[1] = __hfma(a, b, tiny);\n"
        "  out[2] = __hfma(a, b, -tiny);\n"
        "}\n"
    )
    result = run(service, source, "once", [1], [1], [arr("out", [3], dtype="bfloat16", output=True)])
    assert result.status == "ran", result.error
    tie = 3 * (1 + 2.0**-7)
    exact = np.array([1 + 2.0**-8 + 2.0**-30, tie + 2.0**-40, tie - 2.0**-40])
    want = exact.astype(ml_dtypes.bfloat16).astype(np.float64)
    assert result.checks[0].preview == [float(v) for v in want]
    assert want[0] == 1.0078125 and want[1] > tie > want[2]


def test_bfloat162_lanes_compute_each_in_float_rounded_once(service):
    source = (
        "#include <cuda_bf16.h>\n"
        'extern "C" __global__ void pairs(const __nv_bfloat16* x, const __nv_bfloat16* y, __nv_bfloat16* sum,\n'
        "    __nv_bfloat16* prod, __nv_bfloat16* fma, __nv_bfloat16* diff, float* back, float* cmp, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  __nv_bfloat162 a = __halves2bfloat162(x[2 * i], x[2 * i + 1]);\n"
        "  __nv_bfloat162 b = __floats2bfloat162_rn(__bfloat162float(y[2 * i]), __bfloat162float(y[2 * i + 1]));\n"
        "  __nv_bfloat162 s = __hadd2(a, b);\n"
        "  __nv_bfloat162 p = a * b;\n"
        "  __nv_bfloat162 f = __hfma2(a, b, s);\n"
        "  __nv_bfloat162 d = __hsub2(a, b);\n"
        "  d -= __float22bfloat162_rn(make_float2(0.5f, 0.25f));\n"
        "  sum[2 * i] = __low2bfloat16(s);\n"
        "  sum[2 * i + 1] = __high2bfloat16(s);\n"
        "  prod[2 * i] = __hmul2(a, b).x;\n"
        "  prod[2 * i + 1] = p.y;\n"
        "  reinterpret_cast<__nv_bfloat162*>(fma)[i] = f;  // x is the low half: fma[2i]\n"
        "  reinterpret_cast<__nv_bfloat162*>(diff)[i] = d;\n"
        "  float2 both = __bfloat1622float2(d);\n"
        "  back[2 * i] = both.x;\n"
        "  back[2 * i + 1] = both.y;\n"
        "  __nv_bfloat162 one_lane = __halves2bfloat162(x[2 * i], x[2 * i + 1] + __float2bfloat16(1.0f));\n"
        "  // == needs both lanes equal; != both lanes different: a pair equal in one lane is neither.\n"
        "  cmp[i] = (a == a) + 2 * (a != a) + 4 * (a == one_lane) + 8 * (a != one_lane) +\n"
        "           16 * ((a + __float2bfloat162_rn(1.0f)) != a);  // x in [0, 1): both lanes change\n"
        "}\n"
    )
    n = 300
    args = [
        arr("x", [2 * n], "random", dtype="bfloat16"),
        arr("y", [2 * n], "random", dtype="bfloat16", seed=1),
        *(arr(name, [2 * n], dtype="bfloat16", output=True) for name in ("sum", "prod", "fma", "diff")),
        arr("back", [2 * n], output=True),
        arr("cmp", [n], output=True),
        scalar("n", n),
    ]
    # ml_dtypes arithmetic on bfloat16 arrays: each operation in float, rounded once to nearest even.
    wide = "{}.astype(np.float64)"
    fma = f"({wide.format('x')} * {wide.format('y')} + {wide.format('(x + y)')}).astype(x.dtype)"
    diff = "(x - y) - np.tile(np.array([0.5, 0.25]).astype(x.dtype), x.size // 2)"
    expected = {
        "sum": "x + y",
        "prod": "x * y",
        "fma": fma,
        "diff": diff,
        "back": diff,
        "cmp": "np.full(x.size // 2, 17.0)",
    }
    result = run(service, source, "pairs", [2], [256], args, expected, atol=0, rtol=0)
    passed(result)


def test_bfloat16_arrays_must_meet_bfloat16_parameters(service):
    arrays = [arr("x", [64], dtype="float32"), arr("y", [64], dtype="bfloat16"), arr("sum", [64], dtype="bfloat16")]
    args = [*arrays, arr("prod", [64], dtype="bfloat16"), arr("copy", [64], dtype="bfloat16"), scalar("n", 64)]
    with pytest.raises(KernelRequestError) as info:
        run(service, BF16_ARITH, "arith", [1], [64], args)
    assert status_of(info.value) == 400 and info.value.code == "argument_type"
    assert str(info.value) == (
        "Argument x is a float32 array, but parameter 1 of arith (const __nv_bfloat16* x) points to bfloat16: "
        "give x dtype bfloat16, or change the parameter's type."
    )
    with pytest.raises(
        KernelRequestError, match=r"y is a bfloat16 array, but parameter 3 of saxpy \(float\* y\) points to float32"
    ):
        run(
            service,
            SAXPY_REDUCE,
            "saxpy",
            [1],
            [32],
            [scalar("a", 1.0, "float32"), arr("x", [32]), arr("y", [32], dtype="bfloat16"), scalar("n", 32)],
        )
    # Behind a typedef, the emulator's own check names both types.
    hidden = BF16_ARITH.replace("#include <cuda_bf16.h>\n", "#include <cuda_bf16.h>\ntypedef __nv_bfloat16 bf;\n")
    hidden = hidden.replace("const __nv_bfloat16* x", "const bf* x")
    result = run(service, hidden, "arith", [1], [64], args)
    assert result.error.kind == "bad_spec" and "points to bfloat16, but array x is float32" in result.error.message
    # numba kernels have no bfloat16 arrays: refused before anything runs.
    numba = RunRequest.model_validate(
        {"source": "", "language": "numba", "kernel": "k", "grid": [1], "block": [1], "args": arrays}
    )
    with pytest.raises(KernelRequestError, match="bfloat16 arrays are for CUDA C kernels") as info:
        service.run(numba, gpu=None)
    assert info.value.code == "bad_dtype"


def test_kernel_parameters_are_read_only_where_the_source_is_plain():
    source = (
        "#define N 4\n"
        "/* __global__ void k(double* nope) */\n"
        'extern "C" __global__ void __launch_bounds__(256, 2) k(const float* __restrict__ x, __nv_bfloat16 *y,\n'
        "    unsigned long long n, float4* v, const half h[], __nv_bfloat162* pairs) {}\n"
        "template <typename T> __global__ void t(T* x) {}\n"
        "__global__ void twice(int* a) {}\n"
        "__global__ void twice(float* a) {}\n"
    )
    params = kernel_params(source, "k")
    assert [(p.pointer, p.dtype) for p in params] == [
        (True, "float32"),
        (True, "bfloat16"),
        (False, "uint64"),
        (True, None),
        (True, "float16"),
        (True, None),
    ]
    assert kernel_params(source, "t") is None and kernel_params(source, "twice") is None
    assert kernel_params(source, "missing") is None
    ok = [
        arr("x", [4]),
        arr("y", [4], dtype="bfloat16"),
        scalar("n", 4, "uint64"),
        arr("v", [4]),
        arr("h", [4], dtype="float16"),
        arr("pairs", [4], dtype="bfloat16"),
    ]
    models = RunRequest.model_validate({"source": source, "kernel": "k", "grid": [1], "block": [1], "args": ok}).args
    assert argument_mismatch(source, "k", models) is None
    swapped = [models[1], models[0], *models[2:]]
    assert "y is a bfloat16 array, but parameter 1 of k (const float* __restrict__ x)" in argument_mismatch(
        source, "k", swapped
    )
    scalar_for_pointer = [models[0], models[2], *models[2:]]
    assert argument_mismatch(source, "k", scalar_for_pointer) == (
        "Argument n is a scalar, but parameter 2 of k (__nv_bfloat16 *y) is a pointer: give an array."
    )
