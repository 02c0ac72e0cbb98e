"""Fault injection on the kernel routes through a real Jupyter server: an out-of-range access,
an endless loop and a flood of output in numba's simulator (and their CUDA C twins on a GPU),
compile bombs (deep template recursion, templates that instantiate exponentially, a macro
that expands to 64 Ki copies) and the compile worker killed mid-compile. Each is a clear
error, the process that ran it is gone or replaced, the next request works, and the server
answers throughout."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import time

import psutil
import pytest

from conftest import nvml_driver_present

pytestmark = pytest.mark.timeout(150)

COMPILE_TIMEOUT_S = 3.0
RUN_TIMEOUT_S = 4.0
COMPILE_CAP_BYTES = 384 * 2**20  # reached in about a second by the template bomb

needs_gpu = pytest.mark.skipif(
    not nvml_driver_present() or importlib.util.find_spec("cupy") is None,
    reason="needs an NVIDIA GPU with its driver and CuPy (runs on the GPU machine)",
)


@pytest.fixture
def kernel_run_timeout_s() -> float:
    """The server's kernel run timeout (s); the GPU tests give CuPy's start more."""
    return RUN_TIMEOUT_S


@pytest.fixture
def jp_server_config(jp_server_config, kernel_run_timeout_s):
    jp_server_config.GPUDojo.kernel_compile_timeout_s = COMPILE_TIMEOUT_S
    jp_server_config.GPUDojo.kernel_run_timeout_s = kernel_run_timeout_s
    jp_server_config.GPUDojo.kernel_compile_max_rss_bytes = COMPILE_CAP_BYTES
    return jp_server_config


async def post(jp_fetch, route: str, body: dict) -> tuple[int, dict]:
    """POST kernels/<route>: (status, the body, or the error of a 4xx/5xx)."""
    r = await jp_fetch("gpudojo", "api", "kernels", route, method="POST", body=json.dumps(body), raise_error=False)
    doc = json.loads(r.body)
    return r.code, doc.get("error", doc) if r.code >= 400 else doc


async def assert_server_answers(jp_fetch) -> float:
    """GET gpu/devices answers 200; how long it took (s)."""
    started = time.monotonic()
    r = await jp_fetch("gpudojo", "api", "gpu", "devices")
    assert r.code == 200 and "available" in json.loads(r.body)
    return time.monotonic() - started


def kernel_run_children() -> list[psutil.Process]:
    """The kernel-run child processes of this (the server's) process."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "gpudojo.worker.kernel_run" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


async def run_watching_children(jp_fetch, body: dict) -> tuple[int, dict, list[psutil.Process]]:
    """POST kernels/run, noting every kernel-run child seen while it was in flight."""
    task = asyncio.ensure_future(post(jp_fetch, "run", body))
    seen: dict[int, psutil.Process] = {}
    while not task.done():
        seen.update({p.pid: p for p in kernel_run_children()})
        await asyncio.sleep(0.05)
    status, doc = await task
    return status, doc, list(seen.values())


def numba_run(source: str, kernel: str, args: list[dict], **spec) -> dict:
    return {"source": source, "language": "numba", "kernel": kernel, "grid": [1], "block": [32], "args": args, **spec}


def out_array(name: str, n: int) -> dict:
    return {"kind": "array", "name": name, "shape": [n], "output": True}


PAST_END = """from numba import cuda

@cuda.jit
def fill_past_end(x):
    i = cuda.grid(1)
    x[i] = 1.0
"""

SPIN = """from numba import cuda

@cuda.jit
def spin(x):
    while True:
        x[0] += 1
"""

# 256 MiB on stderr while the module loads, then every thread prints 200 lines.
FLOOD = """import sys
from numba import cuda

chunk = "x" * (1 << 20)
for _ in range(256):
    sys.stderr.write(chunk)

@cuda.jit
def loud(x):
    i = cuda.grid(1)
    for k in range(200):
        print("thread", i, "says line", k, "of a long, long output")
    x[i] = i
"""

FILL = """from numba import cuda

@cuda.jit
def fill(x):
    i = cuda.grid(1)
    x[i] = i
"""

SMALL_CUDA = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 2.0f * x[threadIdx.x]; }\n'

# Recursion past NVRTC's instantiation depth: the compiler refuses it itself.
DEEP_TEMPLATE = """template <int N> struct Depth { static constexpr int value = Depth<N - 1>::value + 1; };
template <> struct Depth<0> { static constexpr int value = 0; };
extern "C" __global__ void k(int* out) { out[0] = Depth<100000>::value; }
"""

# 2^24 distinct instantiations: the compiler's memory grows by ~150 MB/s until it is stopped.
TEMPLATE_BOMB = """template <int N, int M> struct Tree { static constexpr int value = Tree<N - 1, 2 * M>::value
                                                             + Tree<N - 1, 2 * M + 1>::value; };
template <int M> struct Tree<0, M> { static constexpr int value = 1; };
extern "C" __global__ void k(int* out) { out[0] = Tree<24, 1>::value; }
"""


def macro_bomb(depth: int = 16) -> str:
    """A few hundred bytes that the preprocessor expands to 2**depth (64 Ki) terms."""
    lines = ["#define E0 x +"] + [f"#define E{i} E{i - 1} E{i - 1}" for i in range(1, depth + 1)]
    kernel = f'extern "C" __global__ void k(float* out) {{ float x = out[0]; out[1] = E{depth} 0; }}'
    return "\n".join([*lines, kernel]) + "\n"


# --- the numba simulator (no GPU needed) ----------------------------------------------------


async def assert_simulator_run_works(jp_fetch) -> None:
    body = numba_run(FILL, "fill", [out_array("x", 32)], expected={"x": "np.arange(32)"})
    status, doc = await post(jp_fetch, "run", body)
    assert status == 200 and doc["status"] == "passed", doc.get("error")


async def test_out_of_range_access_in_the_simulator_names_the_thread(jp_fetch):
    body = numba_run(PAST_END, "fill_past_end", [out_array("x", 40)], block=[64])
    status, doc, children = await run_watching_children(jp_fetch, body)
    assert status == 200 and doc["status"] == "error" and doc["mode"] == "simulator"
    assert doc["error"]["kind"] == "out_of_bounds" and doc["error"]["thread"][0] >= 40
    assert doc["error"]["line"] == 6
    assert children and not any(p.is_running() for p in children)
    await assert_server_answers(jp_fetch)
    await assert_simulator_run_works(jp_fetch)


async def test_endless_loop_is_stopped_by_the_run_timeout_and_its_child_is_gone(jp_fetch):
    started = time.monotonic()
    body = numba_run(SPIN, "spin", [out_array("x", 1)], block=[1])
    task = asyncio.ensure_future(run_watching_children(jp_fetch, body))
    await asyncio.sleep(1.0)
    # While the kernel spins, the server answers at once.
    assert await assert_server_answers(jp_fetch) < 2.0  # the kernel spins for 4 s; a shared machine may be slow
    status, doc, children = await task
    took = time.monotonic() - started
    assert status == 200 and doc["status"] == "error" and doc["error"]["kind"] == "timeout"
    assert f"longer than {RUN_TIMEOUT_S:g} s" in doc["error"]["message"]
    assert RUN_TIMEOUT_S <= took < RUN_TIMEOUT_S + 10
    assert len(children) == 1 and not children[0].is_running()
    assert kernel_run_children() == []
    await assert_simulator_run_works(jp_fetch)


async def test_a_flood_of_output_costs_the_server_no_memory(jp_fetch):
    server = psutil.Process()
    before = server.memory_info().rss
    body = numba_run(FLOOD, "loud", [out_array("x", 32)], expected={"x": "np.arange(32)"})
    status, doc, children = await run_watching_children(jp_fetch, body)
    assert status == 200 and doc["status"] == "passed", doc.get("error")
    # What the kernel printed comes back cut at the cap; the 256 MiB on stderr is dropped.
    assert 0 < len(doc["stdout"]) <= 20_000 and "says line" in doc["stdout"]
    assert server.memory_info().rss - before < 100 * 2**20
    assert not any(p.is_running() for p in children)
    await assert_server_answers(jp_fetch)


async def test_a_huge_output_array_is_refused_before_anything_runs(jp_fetch):
    body = numba_run(FILL, "fill", [out_array("x", 1 << 27)])
    status, error = await post(jp_fetch, "run", body)
    assert status == 400 and "Array x has 134217728 elements" in error["message"]
    assert kernel_run_children() == []
    await assert_server_answers(jp_fetch)


# --- compile bombs and the compile worker ----------------------------------------------------


async def test_deep_template_recursion_is_a_compile_error(jp_serverapp, jp_fetch):
    status, doc = await post(jp_fetch, "compile", {"source": DEEP_TEMPLATE, "sass": False})
    assert status == 200 and doc["ok"] is False
    messages = " ".join(d["message"] for d in doc["diagnostics"] if d["severity"] == "error")
    assert "excessive recursion" in messages and any(d["line"] for d in doc["diagnostics"])
    pid = jp_serverapp.web_app.settings["gpudojo"].kernels.worker_pid
    status, doc = await post(jp_fetch, "compile", {"source": SMALL_CUDA, "sass": False})
    assert status == 200 and doc["ok"]
    assert jp_serverapp.web_app.settings["gpudojo"].kernels.worker_pid == pid  # the worker lived


async def test_template_bomb_is_stopped_at_the_memory_cap_and_the_worker_replaced(jp_serverapp, jp_fetch):
    kernels = jp_serverapp.web_app.settings["gpudojo"].kernels
    assert (await post(jp_fetch, "compile", {"source": SMALL_CUDA, "sass": False}))[0] == 200
    first = kernels.worker_pid
    started = time.monotonic()
    status, error = await post(jp_fetch, "compile", {"source": TEMPLATE_BOMB, "sass": False})
    assert status == 413 and error["code"] == "compiler_memory", error
    assert f"more than {COMPILE_CAP_BYTES // 2**20} MiB" in error["message"]
    assert time.monotonic() - started < COMPILE_TIMEOUT_S + 5
    assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE
    await assert_server_answers(jp_fetch)
    status, doc = await post(jp_fetch, "compile", {"source": SMALL_CUDA.replace("2.0f", "3.0f"), "sass": False})
    assert status == 200 and doc["ok"] and kernels.worker_pid not in (None, first)


async def test_macro_bomb_times_out_and_the_worker_is_replaced(jp_serverapp, jp_fetch):
    kernels = jp_serverapp.web_app.settings["gpudojo"].kernels
    assert (await post(jp_fetch, "compile", {"source": SMALL_CUDA, "sass": False}))[0] == 200
    first = kernels.worker_pid
    source = macro_bomb()
    assert len(source) < 1024  # small text, 65,536 terms once expanded
    task = asyncio.ensure_future(post(jp_fetch, "compile", {"source": source, "sass": False}))
    await asyncio.sleep(1.0)
    assert await assert_server_answers(jp_fetch) < 2.0  # the compile (3 s) runs off the event loop
    status, error = await task
    assert status == 504 and error["code"] == "compiler_timeout"
    assert f"longer than {COMPILE_TIMEOUT_S:g} s" in error["message"]
    assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE
    status, doc = await post(jp_fetch, "compile", {"source": SMALL_CUDA.replace("2.0f", "4.0f"), "sass": False})
    assert status == 200 and doc["ok"] and kernels.worker_pid not in (None, first)
    # Past the source cap: refused before the compiler sees it.
    status, error = await post(jp_fetch, "compile", {"source": "// pad\n" * 10_000 + source, "sass": False})
    assert status == 413 and "65536" in error["message"]


async def test_compile_worker_killed_mid_compile_is_a_clear_error_and_replaced(jp_serverapp, jp_fetch):
    kernels = jp_serverapp.web_app.settings["gpudojo"].kernels
    assert (await post(jp_fetch, "compile", {"source": SMALL_CUDA, "sass": False}))[0] == 200
    pid = kernels.worker_pid
    task = asyncio.ensure_future(post(jp_fetch, "compile", {"source": macro_bomb(), "sass": False}))
    calls = kernels.compiler_calls
    while kernels.compiler_calls == calls:  # the bomb has reached the worker
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    status, error = await task
    assert status == 502 and error["code"] == "compiler_crashed" and "SIGKILL" in error["message"]
    await assert_server_answers(jp_fetch)
    status, doc = await post(jp_fetch, "compile", {"source": SMALL_CUDA.replace("2.0f", "5.0f"), "sass": False})
    assert status == 200 and doc["ok"] and kernels.worker_pid not in (None, pid)


# --- the same faults on a GPU (CuPy) ---------------------------------------------------------

ILLEGAL = 'extern "C" __global__ void wild(float* x) { x[threadIdx.x + (1 << 28)] = 1.0f; }\n'
SPIN_CUDA = 'extern "C" __global__ void spin(int* x) { while (true) { atomicAdd(x, 1); } }\n'
PRINTF_FLOOD = """extern "C" __global__ void loud(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 100; ++k) printf("thread %d says line %d of a long, long output\\n", i, k);
  if (i < n) x[i] = i;
}
"""
FILL_CUDA = """extern "C" __global__ void fill(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i;
}
"""


def cuda_run(source: str, kernel: str, args: list[dict], **spec) -> dict:
    base = {"source": source, "kernel": kernel, "grid": [1], "block": [32], "args": args, "warmup": 0, "repeats": 2}
    return {**base, **spec}


N_ARG = {"kind": "scalar", "name": "n", "dtype": "int32", "value": 8192}


async def assert_gpu_run_works(jp_fetch) -> None:
    body = cuda_run(FILL_CUDA, "fill", [out_array("x", 8192), N_ARG], grid=[32], block=[256])
    status, doc = await post(jp_fetch, "run", {**body, "expected": {"x": "np.arange(8192)"}})
    assert status == 200 and doc["status"] == "passed" and doc["mode"] == "gpu", doc.get("error")


@needs_gpu
@pytest.mark.parametrize("gpu_replay", [None])
@pytest.mark.parametrize("kernel_run_timeout_s", [30.0])
async def test_gpu_illegal_address_kills_only_its_child(jp_fetch):
    status, doc, children = await run_watching_children(jp_fetch, cuda_run(ILLEGAL, "wild", [out_array("x", 32)]))
    assert status == 200 and doc["status"] == "error" and doc["mode"] == "gpu"
    assert doc["error"]["kind"] in ("illegal_address", "crashed"), doc["error"]
    assert children and not any(p.is_running() for p in children)
    await assert_server_answers(jp_fetch)
    await assert_gpu_run_works(jp_fetch)


@needs_gpu
@pytest.mark.parametrize("gpu_replay", [None])
@pytest.mark.parametrize("kernel_run_timeout_s", [15.0])
async def test_gpu_endless_kernel_is_killed_at_the_timeout(jp_fetch):
    status, doc, children = await run_watching_children(jp_fetch, cuda_run(SPIN_CUDA, "spin", [out_array("x", 1)]))
    assert status == 200 and doc["status"] == "error" and doc["error"]["kind"] == "timeout"
    assert children and not any(p.is_running() for p in children)
    await assert_server_answers(jp_fetch)
    await assert_gpu_run_works(jp_fetch)


@needs_gpu
@pytest.mark.parametrize("gpu_replay", [None])
@pytest.mark.parametrize("kernel_run_timeout_s", [30.0])
async def test_gpu_printf_flood_costs_the_server_no_memory(jp_fetch):
    server = psutil.Process()
    before = server.memory_info().rss
    body = cuda_run(PRINTF_FLOOD, "loud", [out_array("x", 8192), N_ARG], grid=[32], block=[256])
    status, doc, children = await run_watching_children(jp_fetch, {**body, "expected": {"x": "np.arange(8192)"}})
    assert status == 200 and doc["status"] == "passed", doc.get("error")
    assert server.memory_info().rss - before < 100 * 2**20
    assert not any(p.is_running() for p in children)
    await assert_server_answers(jp_fetch)
