"""The kernels routes through a real Jupyter server: compile, occupancy, run, errors, and the
`execute` permission that compile and run need."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

DATA = Path(__file__).resolve().parents[1] / "data" / "kernels"
SAXPY_REDUCE = (DATA / "saxpy_reduce.cu").read_text()
NUMBA_SUM = (DATA / "block_sum_numba.py").read_text()


async def _post(jp_fetch, *path, body):
    r = await jp_fetch("gpudojo", "api", "kernels", *path, method="POST", body=json.dumps(body))
    return json.loads(r.body)


async def _post_error(jp_fetch, *path, body):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "kernels", *path, method="POST", body=body)
    return info.value.code, json.loads(info.value.response.body)["error"]


async def test_archs_list_the_compilers_targets(jp_fetch):
    r = await jp_fetch("gpudojo", "api", "kernels", "archs")
    doc = json.loads(r.body)
    names = [a["arch"] for a in doc["archs"]]
    assert {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90"} <= set(names)
    # The replayed H100s are a recording, not a GPU to run on: no gpu_arch, default sm_80.
    assert doc["gpu_arch"] is None and doc["default_arch"] == "sm_80"
    assert doc["nvrtc_version"].startswith("13.") and doc["numba_available"] is True
    assert doc["compiler_problem"] is None


async def test_compile_reports_ptx_sass_resources_and_occupancy(jp_fetch):
    doc = await _post(jp_fetch, "compile", body={"source": SAXPY_REDUCE, "arch": "sm_90", "block_size": 512})
    assert doc["ok"] is True and doc["arch"] == "sm_90" and doc["cached"] is False
    by_name = {k["name"]: k for k in doc["kernels"]}
    assert by_name["block_sum"]["shared_bytes"] == 1024
    assert by_name["block_sum"]["occupancy"]["block_size"] == 512
    assert by_name["saxpy"]["sass"][0]["offset"] == 0
    again = await _post(jp_fetch, "compile", body={"source": SAXPY_REDUCE, "arch": "sm_90"})
    assert again["cached"] is True and again["key"] == doc["key"]


async def test_compile_errors_are_a_200_with_diagnostics(jp_fetch):
    doc = await _post(jp_fetch, "compile", body={"source": (DATA / "broken.cu").read_text()})
    assert doc["ok"] is False
    assert {d["line"] for d in doc["diagnostics"] if d["severity"] == "error"} >= {3, 5}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ("{not json", 400, "invalid_json"),
        (json.dumps({"source": "x", "arch": "sm_80; rm -rf /"}), 400, "invalid_request"),
        (json.dumps({"source": "x", "arch": "sm_61"}), 400, "unknown_arch"),
        (json.dumps({"source": "x", "options": {"extra": "-ccbin"}}), 400, "invalid_request"),
        (json.dumps({"source": "x" * (64 * 1024 + 1)}), 413, "too_large"),
    ],
)
async def test_bad_compile_requests_are_4xx(jp_fetch, body, status, code):
    got_status, error = await _post_error(jp_fetch, "compile", body=body)
    assert (got_status, error["code"]) == (status, code)
    assert error["message"]


async def test_occupancy_route(jp_fetch):
    doc = await _post(jp_fetch, "occupancy", body={"arch": "sm_80", "registers_per_thread": 64, "block_size": 256})
    assert doc["occupancy"]["active_warps_per_sm"] == 32 and doc["occupancy"]["limited_by"] == "registers"
    assert len(doc["curve"]) == 32


async def test_run_numba_in_the_simulator_through_rest(jp_fetch):
    body = {
        "source": NUMBA_SUM,
        "language": "numba",
        "kernel": "block_sum",
        "grid": [2],
        "block": [64],
        "args": [
            {"kind": "array", "name": "values", "shape": [128], "init": "arange"},
            {"kind": "array", "name": "out", "shape": [2], "output": True},
        ],
        "expected": {"out": "values.reshape(2, 64).sum(axis=1)"},
    }
    doc = await _post(jp_fetch, "run", body=body)
    assert doc["status"] == "passed" and doc["mode"] == "simulator"
    assert doc["checks"][0]["preview"] == [2016.0, 6112.0]
    code, error = await _post_error(jp_fetch, "run", body=json.dumps({**body, "grid": [500]}))
    assert (code, error["code"]) == (400, "too_many_threads")


async def test_cuda_c_run_without_a_gpu_runs_in_the_cpu_emulator(jp_fetch):
    body = {
        "source": SAXPY_REDUCE,
        "kernel": "saxpy",
        "grid": [1],
        "block": [128],
        "args": [
            {"kind": "scalar", "name": "a", "dtype": "float32", "value": 2.0},
            {"kind": "array", "name": "x", "shape": [128], "init": "arange"},
            {"kind": "array", "name": "y", "shape": [128], "init": "ones", "output": True},
            {"kind": "scalar", "name": "n", "dtype": "int32", "value": 128},
        ],
    }
    doc = await _post(jp_fetch, "run", body=body)
    assert doc["status"] == "ran" and doc["mode"] == "cpu-emulation"
    assert doc["checks"][0]["preview"][:3] == [1.0, 3.0, 5.0]
    assert doc["compile"]["ok"] is True and doc["mode_note"].startswith("CPU emulation: results are exact")
    assert doc["emulator"]["compiler"].startswith("g++")
    crash = {
        **body,
        "source": 'extern "C" __global__ void crash(float* out) { float* p = nullptr; p[threadIdx.x] = out[0]; }',
        "kernel": "crash",
        "args": [{"kind": "array", "name": "out", "shape": [4], "output": True}],
    }
    doc = await _post(jp_fetch, "run", body=crash)
    assert doc["status"] == "error" and doc["error"]["kind"] == "illegal_address" and doc["error"]["line"] == 1
    doc = await _post(jp_fetch, "run", body=body)  # the server is still answering
    assert doc["status"] == "ran"


async def test_run_takes_bfloat16_arrays_and_refuses_a_dtype_its_kernel_does_not_take(jp_fetch):
    source = (
        "#include <cuda_bf16.h>\n"
        'extern "C" __global__ void scale(const __nv_bfloat16* x, __nv_bfloat16* y, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = x[i] * __float2bfloat16(3.0f);\n"
        "}\n"
    )
    body = {
        "source": source,
        "kernel": "scale",
        "grid": [1],
        "block": [32],
        "args": [
            {"kind": "array", "name": "x", "dtype": "bfloat16", "shape": [32], "init": "full", "value": 1.00390625},
            {"kind": "array", "name": "y", "dtype": "bfloat16", "shape": [32], "output": True},
            {"kind": "scalar", "name": "n", "dtype": "int32", "value": 32},
        ],
        "expected": {"y": "x * 3"},
        "atol": 0,
        "rtol": 0,
    }
    doc = await _post(jp_fetch, "run", body=body)
    # 1 + 2^-8 goes in as 1 (a tie, to even); 3 comes back.
    assert doc["status"] == "passed" and doc["mode"] == "cpu-emulation", doc
    assert doc["checks"][0]["preview"][:2] == [3.0, 3.0]
    body["args"][0]["dtype"] = "float32"
    code, error = await _post_error(jp_fetch, "run", body=json.dumps(body))
    assert (code, error["code"]) == (400, "argument_type")
    assert error["message"].startswith("Argument x is a float32 array, but parameter 1 of scale")


@pytest.mark.parametrize("read_only", [True])
@pytest.mark.parametrize("route", ["compile", "run"])
async def test_compile_and_run_need_execute_permission(jp_fetch, route):
    code, error = await _post_error(jp_fetch, route, body=json.dumps({"source": SAXPY_REDUCE}))
    assert code == 403 and "execute" in error["message"]
    # Reading is still allowed.
    r = await jp_fetch("gpudojo", "api", "kernels", "archs")
    assert r.code == 200


async def test_examples_from_labs(jp_fetch):
    r = await jp_fetch("gpudojo", "api", "kernels", "examples", params={"lab": "lab-01-cuda-hello"})
    doc = json.loads(r.body)
    assert doc["problems"] == []
    assert {e["language"] for e in doc["examples"]} == {"cuda", "numba"}
    first = doc["examples"][0]
    assert first["lab"] == "lab-01-cuda-hello" and first["kernel"] in first["source"]
    none = json.loads((await jp_fetch("gpudojo", "api", "kernels", "examples", params={"lab": "nope"})).body)
    assert none["examples"] == []


def test_example_loader_reports_bad_entries_and_refuses_paths_outside_the_lab(tmp_path):
    from gpudojo.kernels.examples import load_examples

    lab = tmp_path / "lab-x"
    lab.mkdir()
    (lab / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    (tmp_path / "secret.cu").write_text("secret")
    (lab / "lab.toml").write_text(
        'id = "lab-x"\n'
        '[[kernels]]\ntitle = "ok"\nfile = "k.cu"\nkernel = "k"\ngrid = [1]\nblock = [32]\n'
        '[[kernels]]\ntitle = "escape"\nfile = "../secret.cu"\nkernel = "k"\ngrid = [1]\nblock = [32]\n'
        '[[kernels]]\ntitle = "missing"\nfile = "gone.cu"\nkernel = "k"\ngrid = [1]\nblock = [32]\n'
        '[[kernels]]\ntitle = "bad"\nfile = "k.cu"\nkernel = "k"\ngrid = [0, 1, 1, 1]\nblock = [32]\n'
    )
    doc = load_examples(tmp_path)
    assert [e.title for e in doc.examples] == ["ok"]
    assert [p.index for p in doc.problems] == [1, 2, 3]
    assert all("secret" not in e.source for e in doc.examples)
