"""The CPU emulator's memory-access picture: sectors per warp request (coalescing) and shared
bank conflicts per source line, totals per kernel, the shared-memory errors only instrumented
accesses can see (out of an array's bounds, races between barriers), and the report as the CLI
and the %%cuda magic print it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from html import escape
from pathlib import Path

import numpy as np
import pytest

from gpudojo.kernels.cpu_runner.access_report import summarize
from gpudojo.kernels.models import RunRequest
from gpudojo.kernels.report import run_text
from gpudojo.kernels.service import KernelLimits, KernelService

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the CPU emulator needs g++")

LABEL = "CPU emulation: counts are exact for this launch, times are not a GPU's"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = KernelService(tmp_path_factory.mktemp("kernel-cache"), KernelLimits(run_timeout_s=20.0))
    yield svc
    svc.close()


def run(service, source, kernel, grid, block, args, expected=None, **extra):
    req = RunRequest.model_validate(
        {
            "source": source,
            "kernel": kernel,
            "grid": grid,
            "block": block,
            "args": args,
            "expected": expected or {},
            "mode": "cpu-emulation",
            **extra,
        }
    )
    return service.run(req, gpu=None)


def arr(name, shape, init="zeros", dtype="float32", output=False):
    return {"kind": "array", "name": name, "shape": shape, "init": init, "dtype": dtype, "output": output}


def scalar(name, value, dtype="int32"):
    return {"kind": "scalar", "name": name, "dtype": dtype, "value": value}


def line_of(source: str, needle: str) -> int:
    return next(n for n, text in enumerate(source.splitlines(), 1) if needle in text)


def row(result, line: int, space: str):
    return next(r for r in result.memory.lines if r.line == line and r.space == space)


def passed(result) -> None:
    assert result.status == "passed", (result.error, result.checks)
    assert result.memory is not None and result.memory.note == LABEL


STRIDED_COPY = """\
extern "C" __global__ void copy(const float* in, float* out, int n, int stride) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = in[(long long)i * stride];
  out[i] = v;
}
"""


@pytest.mark.parametrize(("stride", "sectors"), [(1, 4), (2, 8), (8, 32), (32, 32)])
def test_strided_float_copy_touches_more_sectors_per_request_than_the_coalesced_one(service, stride, sectors):
    n = 2048
    result = run(
        service,
        STRIDED_COPY,
        "copy",
        [n // 256],
        [256],
        [arr("inp", [n * stride], "arange"), arr("out", [n], output=True), scalar("n", n), scalar("stride", stride)],
        {"out": f"inp[::{stride}]"},
    )
    passed(result)
    load = row(result, line_of(STRIDED_COPY, "float v ="), "global")
    store = row(result, line_of(STRIDED_COPY, "out[i] ="), "global")
    assert load.ops == ["load"] and store.ops == ["store"]
    assert load.requests == n // 32 and load.accesses == n
    assert load.sectors_per_request == sectors and load.min_sectors_per_request == 4
    assert store.sectors_per_request == 4 and store.min_sectors_per_request == 4
    # Totals per kernel: the two lines summed; efficiency is the minimum over what was touched.
    (total,) = result.memory.totals
    assert total.space == "global" and total.requests == 2 * n // 32
    assert total.sectors == (sectors + 4) * n // 32 and total.min_sectors == 8 * n // 32
    assert total.efficiency == pytest.approx(8 / (sectors + 4), abs=1e-4)
    assert not result.memory.sampled and result.memory.blocks_recorded == n // 256


TRANSPOSE = """\
// One 32 x 32 tile per block of 32 x 32 threads; PAD 0 or 1 (-D PAD=...).
extern "C" __global__ void transpose(const float* in, float* out, int n) {
  __shared__ float tile[32][32 + PAD];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x, y = blockIdx.x * 32 + threadIdx.y;
  out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}
"""


@pytest.mark.parametrize(("pad", "ways"), [(0, 32), (1, 1)])
def test_transpose_column_read_is_32_way_conflicted_without_padding_and_1_way_with_it(service, pad, ways):
    n = 64
    result = run(
        service,
        TRANSPOSE,
        "transpose",
        [2, 2],
        [32, 32],
        [arr("m", [n, n], "arange"), arr("t", [n, n], output=True), scalar("n", n)],
        {"t": "m.T"},
        options={"defines": {"PAD": str(pad)}},
    )
    passed(result)
    requests = 4 * 32  # 4 blocks of 32 warps, one request each per line
    write = row(result, line_of(TRANSPOSE, "tile[threadIdx.y][threadIdx.x] ="), "shared")
    read = row(result, line_of(TRANSPOSE, "= tile[threadIdx.x]"), "shared")
    assert write.requests == read.requests == requests
    assert write.ways_per_request == 1 and write.max_ways == 1
    assert read.ways_per_request == ways and read.max_ways == ways and read.ideal_wavefronts == requests
    # Both global accesses are coalesced: 4 sectors per request.
    assert row(result, line_of(TRANSPOSE, "= in[y"), "global").sectors_per_request == 4
    assert row(result, line_of(TRANSPOSE, "out[y * n + x] ="), "global").sectors_per_request == 4
    shared = next(t for t in result.memory.totals if t.space == "shared")
    assert shared.requests == 2 * requests and shared.wavefronts == requests * (1 + ways)
    assert shared.efficiency == pytest.approx(2 / (1 + ways), abs=1e-4)
    text = run_text(result)
    assert LABEL in text
    if ways == 32:
        assert "32-way bank conflict" in text
    else:
        assert "32-way" not in text and "1-way (no bank conflict)" in text


BROADCAST = """\
extern "C" __global__ void broadcast(float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[0] + s[threadIdx.x / 2];
}
"""


def test_lanes_reading_one_shared_word_are_a_broadcast_not_a_conflict(service):
    out = [arr("out", [64], output=True)]
    result = run(service, BROADCAST, "broadcast", [1], [64], out, {"out": "np.arange(64) // 2"})
    passed(result)
    read = row(result, line_of(BROADCAST, "s[0] +"), "shared")
    assert read.max_ways == 1 and read.wavefronts == read.ideal_wavefronts


BIG = 1 << 16  # elements of the big copies: 1024 blocks of 64, of which 64 are recorded


def big_copy(service, source):
    """``source``'s copy kernel on BIG elements, stride 1, checked against its input."""
    n = BIG
    args = [arr("inp", [n], "arange"), arr("out", [n], output=True), scalar("n", n), scalar("stride", 1)]
    result = run(service, source, "copy", [n // 64], [64], args, {"out": "inp"})
    passed(result)
    return result


def test_big_launches_are_sampled_and_say_so(service):
    result = big_copy(service, STRIDED_COPY)
    m = result.memory
    assert m.sampled and m.blocks_total == 1024 and m.blocks_recorded == 64
    assert "sampled: 64 of 1024 blocks" in m.sampling and m.sampling in run_text(result)
    assert row(result, line_of(STRIDED_COPY, "float v ="), "global").requests == 64 * 2


SERIAL_COPY = """\
extern "C" __global__ void copy(const float* in, float* out, int n, int stride) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (int i = 0; i < n; ++i) out[i] = in[(long long)i * stride];
}
"""


def writers(result) -> dict[str, tuple[int, int, int]]:
    return {w.array: (w.threads, w.stores, w.max_per_thread) for w in result.memory.writers}


@pytest.mark.parametrize("source", [STRIDED_COPY, SERIAL_COPY], ids=["thread-per-element", "one-thread-loop"])
def test_writers_of_each_array_are_counted_in_every_block_even_when_sampled(service, source):
    # 1024 blocks of 64: only 64 blocks have their requests recorded, but who stored to `out` is
    # counted in all of them, so a serial loop cannot hide in the blocks the sampling skips.
    n = BIG
    result = big_copy(service, source)
    assert result.memory.sampled
    if source is STRIDED_COPY:
        assert writers(result) == {"out": (n, n, 1)}
        assert f"out stored by {n} threads, 1 store each" in run_text(result)
    else:
        assert writers(result) == {"out": (1, n, n)}
        assert f"out stored by 1 thread, up to {n} stores by one thread" in run_text(result)


def test_the_report_can_be_turned_off(service):
    result = run(
        service,
        STRIDED_COPY,
        "copy",
        [1],
        [64],
        [arr("inp", [64], "arange"), arr("out", [64], output=True), scalar("n", 64), scalar("stride", 1)],
        {"out": "inp"},
        memory_report=False,
    )
    assert result.status == "passed" and result.memory is None


# --- errors only instrumented accesses can see -------------------------------------------------


def test_global_read_before_the_start_of_an_array_is_caught(service):
    # x[-1] lies in the page padding before the array, where no guard page can see it.
    source = (
        'extern "C" __global__ void diff(const float* x, float* d, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) d[i] = x[i] - x[i - 1];\n"
        "}\n"
    )
    result = run(
        service, source, "diff", [1], [64], [arr("x", [64], "arange"), arr("d", [64], output=True), scalar("n", 64)]
    )
    assert result.status == "error" and result.error.kind == "out_of_bounds"
    assert result.error.thread == [0, 0, 0] and result.error.line == 3 and "x[-1]" in result.error.message


STATIC_SHARED_OVERFLOW = """\
extern "C" __global__ void fill(const float* in, float* out) {
  __shared__ float s[32];
  __shared__ float other[32];
  s[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x % 32] + other[0];
}
"""


def test_static_shared_access_past_its_array_names_thread_block_and_line(service):
    result = run(
        service,
        STATIC_SHARED_OVERFLOW,
        "fill",
        [2],
        [64],
        [arr("inp", [64], "ones"), arr("out", [64], output=True)],
    )
    assert result.status == "error" and result.error.kind == "out_of_bounds"
    err = result.error
    assert err.thread == [32, 0, 0] and err.block == [0, 0, 0] and err.line == 4
    assert "shared write of s[32]" in err.message and "s has 32 elements" in err.message
    assert "line 4" in err.message


SHARED_LIST_OVERFLOW = """\
extern "C" __global__ void fill(const float* in, float* out) {
  __shared__ float s[64], other[32], scale;
  if (threadIdx.x == 0) scale = 2.0f;
  s[threadIdx.x] = in[threadIdx.x];
  other[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x] * scale + other[threadIdx.x % 32];
}
"""


def test_each_array_of_a_shared_declaration_list_is_checked_and_counted(service):
    # `__shared__ float s[32], other[32], scale;` declares two arrays and a scalar on one line:
    # each array gets its own red zones (the overflow names `other`, not a neighbour it ran into)
    # and its own rows in the report.
    bad = run(
        service, SHARED_LIST_OVERFLOW, "fill", [1], [64], [arr("inp", [64], "ones"), arr("out", [64], output=True)]
    )
    assert bad.status == "error" and bad.error.kind == "out_of_bounds", bad.error
    assert bad.error.thread == [32, 0, 0] and bad.error.line == 5
    assert "shared write of other[32]" in bad.error.message and "other has 32 elements" in bad.error.message
    fixed = SHARED_LIST_OVERFLOW.replace("  other[threadIdx.x] =", "  if (threadIdx.x < 32) other[threadIdx.x] =")
    good = run(service, fixed, "fill", [1], [64], [arr("inp", [64], "ones"), arr("out", [64], output=True)])
    assert good.status == "ran", good.error
    stores = {r.line for r in good.memory.lines if r.space == "shared" and "store" in r.ops}
    assert {line_of(fixed, "s[threadIdx.x] = in"), line_of(fixed, "other[threadIdx.x] = in")} <= stores


DYNAMIC_SHARED_OVERFLOW = """\
extern "C" __global__ void stage(const float* in, float* out) {
  extern __shared__ float buf[];
  buf[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = buf[threadIdx.x];
}
"""


def test_dynamic_shared_access_past_the_launchs_bytes_is_caught_inside_the_page(service):
    # 40 floats asked for: thread 40 writes byte 160, well inside the page a guard would protect.
    result = run(
        service,
        DYNAMIC_SHARED_OVERFLOW,
        "stage",
        [1],
        [64],
        [arr("inp", [64], "ones"), arr("out", [64], output=True)],
        shared_bytes=160,
    )
    assert result.status == "error" and result.error.kind == "out_of_bounds"
    assert result.error.thread == [40, 0, 0] and result.error.line == 3
    assert "dynamic shared memory at byte 160" in result.error.message and "gives 160 bytes" in result.error.message
    fine = run(
        service,
        DYNAMIC_SHARED_OVERFLOW,
        "stage",
        [1],
        [64],
        [arr("inp", [64], "arange"), arr("out", [64], output=True)],
        {"out": "inp"},
        shared_bytes=256,
    )
    passed(fine)


REVERSE = """\
extern "C" __global__ void reverse(const float* in, float* out) {
  __shared__ float s[64];
  int t = threadIdx.x;
  s[t] = in[t];
  SYNC
  out[t] = s[63 - t];
}
"""


def test_shared_race_between_barriers_names_both_threads_and_lines(service):
    args = [arr("inp", [64], "arange"), arr("out", [64], output=True)]
    result = run(service, REVERSE.replace("SYNC", ""), "reverse", [1], [64], args, {"out": "inp[::-1]"})
    assert result.status == "error" and result.error.kind == "race"
    err = result.error
    # Thread 31 reads s[32] (line 6) before thread 32, of the next warp, writes it (line 4).
    assert err.thread == [32, 0, 0] and err.block == [0, 0, 0] and err.line == 4
    assert "writes s[32] at line 4" in err.message and "thread (31,0,0) read it at line 6" in err.message
    fixed = run(service, REVERSE.replace("SYNC", "__syncthreads();"), "reverse", [1], [64], args, {"out": "inp[::-1]"})
    passed(fixed)


def test_threads_writing_different_bytes_of_one_shared_word_do_not_race(service):
    source = (
        'extern "C" __global__ void flags(unsigned char* out) {\n'
        "  __shared__ unsigned char f[64];\n"
        "  f[threadIdx.x] = threadIdx.x;\n"
        "  __syncthreads();\n"
        "  out[threadIdx.x] = f[63 - threadIdx.x];\n"
        "}\n"
    )
    out = [arr("out", [64], dtype="uint8", output=True)]
    result = run(service, source, "flags", [1], [64], out, {"out": "np.arange(64)[::-1]"})
    passed(result)


def test_lanes_of_one_warp_race_unless_a_syncwarp_orders_them(service):
    args = [arr("inp", [32], "arange"), arr("out", [32], output=True)]
    source = REVERSE.replace("63 - t", "31 - t").replace("s[64]", "s[32]")
    racy = run(service, source.replace("SYNC", ""), "reverse", [1], [32], args, {"out": "inp[::-1]"})
    assert racy.error.kind == "race" and racy.error.thread == [16, 0, 0]
    synced = run(service, source.replace("SYNC", "__syncwarp();"), "reverse", [1], [32], args, {"out": "inp[::-1]"})
    passed(synced)


def test_summary_sums_sites_per_line_and_space():
    raw = {
        "blocks_recorded": 2,
        "blocks_total": 8,
        "block_stride": 4,
        "capped": False,
        "sites": [
            {"pc": "0x11", "space": "global", "op": "load", "size": 4, "requests": 2, "accesses": 64, "bytes": 256,
             "sectors": 64, "min_sectors": 8, "wavefronts": 0, "ideal_wavefronts": 0, "max_ways": 0},
            {"pc": "0x21", "space": "global", "op": "store", "size": 4, "requests": 2, "accesses": 64, "bytes": 256,
             "sectors": 8, "min_sectors": 8, "wavefronts": 0, "ideal_wavefronts": 0, "max_ways": 0},
            {"pc": "0x31", "space": "shared", "op": "load", "size": 4, "requests": 2, "accesses": 64, "bytes": 256,
             "sectors": 0, "min_sectors": 0, "wavefronts": 33, "ideal_wavefronts": 2, "max_ways": 32},
        ],
    }  # fmt: skip
    report = summarize(raw, {0x10: 7, 0x20: 7, 0x30: 9})
    assert report["sampled"] and "2 of 8 blocks" in report["sampling"]
    line7 = report["lines"][0]
    assert (line7["line"], line7["ops"], line7["requests"], line7["sectors"]) == (7, ["load", "store"], 4, 72)
    assert line7["sectors_per_request"] == 18 and line7["min_sectors_per_request"] == 4
    assert report["lines"][1]["ways_per_request"] == 16.5 and report["lines"][1]["max_ways"] == 32
    efficiency = [t["efficiency"] for t in report["totals"]]
    assert efficiency == [pytest.approx(16 / 72, abs=1e-4), pytest.approx(2 / 33, abs=1e-4)]


# --- the report where learners read it ---------------------------------------------------------


def test_cli_kernel_run_prints_the_per_line_table(tmp_path):
    src = tmp_path / "copy.cu"
    src.write_text(STRIDED_COPY)
    env = {"JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"), "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-m", "gpudojo.cli", "kernel", "run", str(src), "--kernel", "copy", "--grid", "4"]
    argv += ["--block", "256", "--mode", "cpu-emulation", "--expect", "out=inp[::8]"]
    argv += ["--args", "inp:float32[8192]=arange out:float32[1024]=zeros:out n:int32=1024 stride:int32=8"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "PASSED - CPU emulation" in out and LABEL in out
    load_line = next(ln for ln in out.splitlines() if ln.strip().startswith("4  global"))
    assert "load" in load_line and "32 sectors (min 4)" in load_line
    assert "kernel total: global" in out
    quiet = subprocess.run([*argv, "--no-memory-report"], capture_output=True, text=True, env=env, timeout=120)
    assert quiet.returncode == 0 and LABEL not in quiet.stdout


def test_cuda_magic_run_prints_the_per_line_table(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from gpudojo.kernels import notebook

    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setattr(notebook, "detect_gpu", lambda: None)  # the laptop case, even on a GPU machine
    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "gpudojo")
        report = shell.run_cell_magic(
            "cuda",
            "--run transpose --grid 2,2 --block 32,32 -D PAD=0 "
            '--args "m:float32[64,64]=arange t:float32[64,64]=zeros:out n:int32=64" --expect "t=m.T"',
            TRANSPOSE,
        )
        assert report.result.status == "passed" and report.result.mode == "cpu-emulation"
        text = repr(report)
        read = line_of(TRANSPOSE, "= tile[threadIdx.x]")
        assert LABEL in text
        rows = [ln.strip() for ln in text.splitlines()]
        assert any(ln.startswith(f"{read}  shared") and "32-way bank conflict" in ln for ln in rows)
        assert escape(LABEL) in report._repr_html_()
    finally:
        notebook.service().close()
        notebook.service.cache_clear()
        InteractiveShell.clear_instance()


def test_results_still_equal_numpy_with_the_report_on(service):
    n = 40
    cpu = Path(__file__).resolve().parents[1] / "data" / "kernels" / "cpu"
    result = run(
        service,
        (cpu / "matmul.cu").read_text(),
        "matmul",
        [3, 3],
        [16, 16],
        [arr("A", [n, n], "random"), arr("B", [n, n], "arange"), arr("C", [n, n], output=True), scalar("n", n)],
        {"C": "A @ B"},
        rtol=1e-4,
    )
    passed(result)
    shared = [r for r in result.memory.lines if r.space == "shared"]
    assert shared and all(r.line for r in shared)
    assert np.isclose(result.checks[0].max_abs_error or 0.0, 0.0, atol=1e-2)
