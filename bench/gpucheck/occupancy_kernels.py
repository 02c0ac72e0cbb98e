"""The 19 kernels of the occupancy step and how each is compiled (NVRTC, PTX + nvJitLink, numba),
with what ptxas or nvJitLink reports about its registers and shared memory."""

from __future__ import annotations

import re
from typing import Any

from gpucheck.step import KERNEL_DATA

OCC_TEMPLATE = r"""
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SMEM_FLOATS
#define SMEM_FLOATS 0
#endif
// Never launched: compiled only so that ptxas and the driver can say what it uses.
extern "C" __global__ void occ(const float* in, float* out, int n) {
#if SMEM_FLOATS > 0
    __shared__ float tile[SMEM_FLOATS];
#endif
    extern __shared__ float dyn[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) acc[j] = in[(i + j * 97) % n];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) acc[j] = acc[j] * acc[(j + 1) % ITEMS] + 1.0f;
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) s += acc[j];
#if SMEM_FLOATS > 0
    tile[threadIdx.x % SMEM_FLOATS] = s;
    __syncthreads();
    s += tile[(threadIdx.x + 1) % SMEM_FLOATS];
#endif
    if (n < 0) { dyn[threadIdx.x] = s; __syncthreads(); s += dyn[0]; }
    out[i % n] = s;
}
"""

NUMBA_BIG_SHARED = """
from numba import cuda, float32

@cuda.jit("void(float32[:])")
def big_shared(x):
    s = cuda.shared.array(11264, float32)  # 44 KiB
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    x[t] = s[11263 - t]
"""

# id, what it exercises, ITEMS, static floats, maxrregcount, block, dynamic bytes, path
OCC_CASES: tuple[tuple[str, str, int, int, int, int, int, str], ...] = (
    ("light-256", "few registers, 256 threads: the warp limit", 1, 0, 0, 256, 0, "nvrtc"),
    ("light-32", "one warp per block: the block limit", 1, 0, 0, 32, 0, "nvrtc"),
    ("light-1024", "the largest block", 1, 0, 0, 1024, 0, "nvrtc"),
    ("light-96", "a block of 3 warps (not a power of two)", 1, 0, 0, 96, 0, "nvrtc"),
    ("regs-32items-256", "register pressure from 32 live values", 32, 0, 0, 256, 0, "nvrtc"),
    ("regs-64items-128", "register pressure from 64 live values", 64, 0, 0, 128, 0, "nvrtc"),
    ("regs-cap64-512", "64 live values capped at 64 registers (spills)", 64, 0, 64, 512, 0, "nvrtc"),
    ("regs-cap168-384", "168 registers: the per-warp allocation unit", 160, 0, 168, 384, 0, "nvrtc"),
    ("regs-255-128", "the register maximum", 200, 0, 255, 128, 0, "nvrtc"),
    ("static-12k-128", "12 KiB static shared memory", 1, 3072, 0, 128, 0, "nvrtc"),
    ("static-44k-64", "44 KiB static: where one reserve more or less changes the answer", 1, 11264, 0, 64, 0, "nvrtc"),
    ("dyn-100k-256", "100 KiB dynamic shared memory (opt-in above 48 KiB)", 1, 0, 0, 256, 102400, "nvrtc"),
    ("dyn-200k-128", "200 KiB dynamic shared memory", 1, 0, 0, 128, 204800, "nvrtc"),
    ("dyn-max-1024", "the largest dynamic allocation a block may have", 1, 0, 0, 1024, -1, "nvrtc"),
    ("mixed-8k-16k-256", "8 KiB static + 16 KiB dynamic, 64 registers", 48, 2048, 64, 256, 16384, "nvrtc"),
    (
        "nvjitlink-1k-256",
        "CUDA C linked by nvJitLink from PTX (the numba path), 1 KiB static",
        1,
        256,
        0,
        256,
        0,
        "link",
    ),
    (
        "nvjitlink-44k-64",
        "44 KiB static linked by nvJitLink: does the report include the reserve?",
        1,
        11264,
        0,
        64,
        0,
        "link",
    ),
    ("numba-block-sum-64", "numba block sum (256 B shared), linked by nvJitLink", 0, 0, 0, 64, 0, "numba"),
    ("numba-44k-64", "numba kernel with a 44 KiB shared array, linked by nvJitLink", 0, 0, 0, 64, 0, "numba"),
)


def _nvrtc(source: str, arch: str, options: list[str], ptx_only: bool) -> tuple[bytes, str, str]:
    """(cubin or b'', PTX, ptxas log) through NVRTC; ``ptx_only`` compiles to the virtual arch."""
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"occ.cu", 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC: {err.name}")
    try:
        target = f"--gpu-architecture={'compute_' + arch[3:] if ptx_only else arch}"
        opts = [target.encode(), *(o.encode() for o in options)]
        if not ptx_only:
            opts.append(b"-Xptxas=-v")
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"NVRTC: {status.name}: {log.decode(errors='replace')[:500]}")
        _, n = nvrtc.nvrtcGetPTXSize(prog)
        ptx = b" " * n
        nvrtc.nvrtcGetPTX(prog, ptx)
        cubin = b""
        if not ptx_only:
            _, n = nvrtc.nvrtcGetCUBINSize(prog)
            cubin = b" " * n
            nvrtc.nvrtcGetCUBIN(prog, cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return cubin, ptx.rstrip(b"\x00").decode(), log.decode(errors="replace").replace("\x00", "")


def build_occupancy_kernel(case: tuple, arch: str) -> dict[str, Any]:
    """Compile one case: the cubin, the symbol, and what ptxas (or nvJitLink) reports."""
    from gpudojo.kernels.parse import ptxas_resources
    from gpudojo.worker.compile import link_ptx

    cid, _, items, floats, maxreg, _, _, path = case
    opts = [f"-DITEMS={items}", f"-DSMEM_FLOATS={floats}"] + ([f"-maxrregcount={maxreg}"] if maxreg else [])
    declared = None
    if path == "nvrtc":
        cubin, ptx, log = _nvrtc(OCC_TEMPLATE, arch, opts, ptx_only=False)
    elif path == "link":
        _, ptx, _ = _nvrtc(OCC_TEMPLATE, arch, opts, ptx_only=True)
        cubin, log = link_ptx(ptx, arch, {"opt_level": 3, "max_registers": maxreg or None})
    else:
        from numba import cuda

        from gpudojo.worker.compile import load_numba_module

        source = (KERNEL_DATA / "block_sum_numba.py").read_text() if cid == "numba-block-sum-64" else NUMBA_BIG_SHARED
        _, kernels = load_numba_module(source)
        name = "block_sum" if cid == "numba-block-sum-64" else "big_shared"
        func, sig = kernels[name]
        cc = (int(arch[3:].rstrip("af")) // 10, int(arch[3:].rstrip("af")) % 10)
        ptx, _ = cuda.compile_ptx(func, sig, cc=cc, lineinfo=True)
        cubin, log = link_ptx(ptx, arch, {"opt_level": 3})
    declared = sum(int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]", ptx))
    resources = ptxas_resources(log)
    symbol, res = next(iter(resources.items()))
    return {
        "cubin": cubin,
        "symbol": symbol,
        "registers": res.registers,
        "static_shared_bytes": res.shared_bytes,
        "ptx_declared_shared_bytes": declared,
        "spill_stores_bytes": res.spill_stores_bytes,
    }
