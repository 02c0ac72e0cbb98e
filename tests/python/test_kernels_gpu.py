"""Kernel runs on a real GPU: CUDA C through CuPy and numba kernels, checked and timed, and an
illegal address that kills only the run's process. Runs where a GPU, its driver and CuPy are
present (the GPU machine); this file is the GPU half of test_kernels.py's simulator tests."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from conftest import nvml_driver_present
from gpudojo.kernels.models import RunRequest
from gpudojo.kernels.notebook import detect_gpu
from gpudojo.kernels.service import KernelService

DATA = Path(__file__).resolve().parents[1] / "data" / "kernels"
SAXPY_REDUCE = (DATA / "saxpy_reduce.cu").read_text()

pytestmark = pytest.mark.skipif(
    not nvml_driver_present() or importlib.util.find_spec("cupy") is None,
    reason="needs an NVIDIA GPU with its driver and CuPy (pip install gpudojo[gpu])",
)

N = 1 << 20


@pytest.fixture(scope="module")
def gpu():
    target = detect_gpu()
    assert target is not None, "NVML sees a driver but no usable GPU"
    return target


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = KernelService(tmp_path_factory.mktemp("kernel-cache"))
    yield svc
    svc.close()


def _saxpy(**overrides):
    spec = {
        "source": SAXPY_REDUCE,
        "kernel": "saxpy",
        "grid": [N // 256],
        "block": [256],
        "args": [
            {"kind": "scalar", "name": "a", "dtype": "float32", "value": 2.5},
            {"kind": "array", "name": "x", "shape": [N], "init": "random", "seed": 1},
            {"kind": "array", "name": "y", "shape": [N], "init": "random", "seed": 2, "output": True},
            {"kind": "scalar", "name": "n", "dtype": "int32", "value": N},
        ],
        "expected": {"y": "a * x + y"},
    }
    spec.update(overrides)
    return RunRequest.model_validate(spec)


def test_vector_add_on_the_gpu_checked_and_timed(service, gpu):
    result = service.run(_saxpy(), gpu)
    assert result.status == "passed", result.error
    assert result.mode == "gpu" and result.device == gpu.name
    assert result.timing.method == "CUDA events" and result.timing.repeats == 20
    assert 0 < result.timing.min_ms < 50
    assert result.compile.arch == gpu.arch


def test_reduction_on_the_gpu(service, gpu):
    blocks = N // 256
    req = _saxpy(
        kernel="block_sum",
        grid=[blocks],
        args=[
            {"kind": "array", "name": "values", "shape": [N], "init": "random", "seed": 4},
            {"kind": "array", "name": "out", "shape": [blocks], "output": True},
            {"kind": "scalar", "name": "n", "dtype": "int32", "value": N},
        ],
        expected={"out": f"values.reshape({blocks}, 256).sum(axis=1)"},
        rtol=1e-4,
    )
    result = service.run(req, gpu)
    assert result.status == "passed", result.error


def test_numba_reduction_on_the_gpu(service, gpu):
    req = RunRequest.model_validate(
        {
            "source": (DATA / "block_sum_numba.py").read_text(),
            "language": "numba",
            "kernel": "block_sum",
            "grid": [1024],
            "block": [64],
            "args": [
                {"kind": "array", "name": "values", "shape": [65536], "init": "random"},
                {"kind": "array", "name": "out", "shape": [1024], "output": True},
            ],
            "expected": {"out": "values.reshape(1024, 64).sum(axis=1)"},
            "rtol": 1e-4,
        }
    )
    result = service.run(req, gpu)
    assert result.status == "passed" and result.mode == "gpu", result.error


def test_bfloat16_arrays_on_the_gpu_match_the_cpu_emulator_bit_for_bit(service, gpu):
    # CuPy has no bfloat16 dtype: the arrays travel as their 16-bit patterns and come back as
    # ml_dtypes.bfloat16; sm_80's bf16 instructions round as the emulator and ml_dtypes do.
    source = (
        "#include <cuda_bf16.h>\n"
        'extern "C" __global__ void axpy(const __nv_bfloat16* x, __nv_bfloat16* y, __nv_bfloat162* pairs, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  y[i] = __hfma(x[i], __float2bfloat16(3.0f), y[i]);\n"
        "  if (i < n / 2) pairs[i] = __hmul2(pairs[i], __floats2bfloat162_rn(0.5f, 3.0f));\n"
        "}\n"
    )
    n = 4096
    spec = {
        "source": source,
        "kernel": "axpy",
        "grid": [n // 256],
        "block": [256],
        "args": [
            {"kind": "array", "name": "x", "dtype": "bfloat16", "shape": [n], "init": "random", "seed": 1},
            {
                "kind": "array",
                "name": "y",
                "dtype": "bfloat16",
                "shape": [n],
                "init": "random",
                "seed": 2,
                "output": True,
            },
            {"kind": "array", "name": "pairs", "dtype": "bfloat16", "shape": [n], "init": "random", "output": True},
            {"kind": "scalar", "name": "n", "dtype": "int32", "value": n},
        ],
        "expected": {
            "y": "(x.astype(np.float64) * 3 + y.astype(np.float64)).astype(x.dtype)",
            "pairs": "pairs * np.tile(np.array([0.5, 3.0]).astype(x.dtype), pairs.size // 2)",
        },
        "warmup": 0,
        "repeats": 1,
        "atol": 0,
        "rtol": 0,
    }
    # Timing reruns the kernel on fresh inputs, so the checked outputs come from one launch.
    on_gpu = service.run(RunRequest.model_validate(spec), gpu)
    assert on_gpu.status == "passed" and on_gpu.mode == "gpu", (on_gpu.error, on_gpu.checks)
    emulated = service.run(RunRequest.model_validate({**spec, "mode": "cpu-emulation"}), gpu)
    assert emulated.status == "passed", (emulated.error, emulated.checks)
    assert [c.preview for c in on_gpu.checks] == [c.preview for c in emulated.checks]


@pytest.mark.parametrize("gpu_replay", [None])
async def test_illegal_address_leaves_the_server_answering(jp_fetch):
    body = {
        "source": (DATA / "illegal_address.cu").read_text(),
        "kernel": "wild_write",
        "grid": [1],
        "block": [32],
        "args": [
            {"kind": "array", "name": "x", "shape": [32], "output": True},
            {"kind": "scalar", "name": "n", "dtype": "int32", "value": 32},
        ],
    }
    r = await jp_fetch("gpudojo", "api", "kernels", "run", method="POST", body=json.dumps(body))
    doc = json.loads(r.body)
    assert doc["status"] == "error" and doc["mode"] == "gpu"
    assert doc["error"]["kind"] in ("illegal_address", "crashed"), doc["error"]
    again = await jp_fetch("gpudojo", "api", "kernels", "run", method="POST", body=json.dumps(_saxpy().model_dump()))
    assert json.loads(again.body)["status"] == "passed"
    devices = json.loads((await jp_fetch("gpudojo", "api", "gpu", "devices")).body)
    assert devices["available"] is True
