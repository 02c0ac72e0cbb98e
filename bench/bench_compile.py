"""Warm compile latency through REST against NVRTC called directly in one process.

DESIGN.md's budget: a warm compile via REST costs at most NVRTC's own time + 20 ms, and a
cache hit at most 5 ms. The anchor is NVRTC itself (cuda.bindings) compiling the same
source with the same options (PTX + cubin with -lineinfo and ptxas -v) in this process,
measured in the same run. Every REST compile gets a fresh comment so it misses the cache.

    cd bench && ../.venv/bin/python bench_compile.py --runs 30
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
from pathlib import Path

from server import TOKEN, jupyter_server, machine

SOURCE = (Path(__file__).resolve().parents[1] / "tests" / "data" / "kernels" / "saxpy_reduce.cu").read_text()
OPTIONS = [b"--gpu-architecture=sm_80", b"-lineinfo", b"-Xptxas=-v", b"-Xptxas=-O3", b"-std=c++17"]


def nvrtc_direct(source: str) -> float:
    """Seconds for NVRTC to compile ``source`` and hand back PTX, cubin and log."""
    from cuda.bindings import nvrtc

    t0 = time.perf_counter()
    _, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])
    (status,) = nvrtc.nvrtcCompileProgram(prog, len(OPTIONS), OPTIONS)
    assert status == nvrtc.nvrtcResult.NVRTC_SUCCESS
    for size_fn, get_fn in (
        (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX),
        (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN),
        (nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog),
    ):
        _, size = size_fn(prog)
        get_fn(prog, b" " * size)
    nvrtc.nvrtcDestroyProgram(prog)
    return time.perf_counter() - t0


def post(port: int, body: dict) -> tuple[float, dict]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/gpudojo/api/kernels/compile",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
        method="POST",
    )
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as r:
        doc = json.loads(r.read())
    return time.perf_counter() - t0, doc


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    nvrtc_direct(SOURCE)  # load NVRTC and its builtins once, as the warm worker has
    with jupyter_server(replay="2gpu-h100-nvlink") as (_, port):
        post(port, {"source": SOURCE, "sass": False})  # start the warm worker
        direct, rest, hits, sass_rest, sass_only = [], [], [], [], []
        for i in range(args.runs):
            # Interleave anchor and REST so machine noise hits both alike.
            source = f"// run {i}\n{SOURCE}"
            direct.append(nvrtc_direct(source))
            took, doc = post(port, {"source": source, "sass": False})
            assert doc["ok"] and not doc["cached"]
            rest.append(took)
            took, doc = post(port, {"source": source, "sass": False})
            assert doc["cached"]
            hits.append(took)
            took, doc = post(port, {"source": f"// sass {i}\n{SOURCE}", "sass": True})
            sass_rest.append(took)
            sass_only.append(doc["timings"]["sass_ms"] / 1000)

    overhead = statistics.median(rest) - statistics.median(direct)
    print(f"Machine: {machine()}")
    print(f"runs: {args.runs}, source: tests/data/kernels/saxpy_reduce.cu (2 kernels), sm_80")
    print("| what | median |")
    print("|---|---|")
    print(f"| NVRTC direct, in process (anchor) | {ms(direct)} |")
    print(f"| warm compile via REST, no SASS | {ms(rest)} |")
    ratio = statistics.median(rest) / statistics.median(direct)
    print(f"| REST overhead over NVRTC | **{overhead * 1000:.1f} ms** (ratio {ratio:.2f}) |")
    print(f"| cache hit via REST | **{ms(hits)}** |")
    print(f"| SASS extraction (nvdisasm, both kernels) | {ms(sass_only)} |")
    print(f"| warm compile via REST with SASS | {ms(sass_rest)} |")


if __name__ == "__main__":
    main()
