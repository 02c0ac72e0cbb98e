"""The compile worker: a long-lived child process that compiles kernels for the server.

The server keeps one warm (NVRTC loaded, numba imported on first use) and replaces it when
a compile hangs or crashes. Protocol: one JSON request per line on stdin, one JSON reply
per line on the stdout the worker started with; anything else a compiler or a learner's
module prints goes to stderr.

Requests: {"op": "info"} and {"op": "compile", "request": <CompileRequest as JSON>}.
Replies: the result, or {"error": {"kind", "message"}}.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import linecache
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from gpudojo.kernels.parse import (
    nvrtc_diagnostics,
    ptx_source_lines,
    ptxas_resources,
    python_error_line,
    sass_from_nvdisasm_json,
)

CUDA_FILE = "kernel.cu"
NUMBA_FILE = "kernel.py"
NVDISASM_TIMEOUT_S = 20.0


def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def supported_archs() -> list[str]:
    from cuda.bindings import nvrtc

    _, archs = nvrtc.nvrtcGetSupportedArchs()
    return [f"sm_{a}" for a in archs]


def numba_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("numba-cuda")
    except Exception:
        return None


def _check(result: Any, what: str) -> None:
    from cuda.bindings import nvrtc

    status = result[0] if isinstance(result, tuple) else result
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {status.name}")


def _nvrtc_bytes(prog: Any, size_fn: Any, get_fn: Any) -> bytes:
    err, size = size_fn(prog)
    _check(err, size_fn.__name__)
    buf = b" " * size
    _check(get_fn(prog, buf), get_fn.__name__)
    return buf


@functools.cache
def fp_headers_dir() -> str | None:
    """NVIDIA's cuda_fp16.h and cuda_bf16.h for this NVRTC's major version, as numba-cuda (a
    dependency) ships them for its own NVRTC compiles; None where they are not installed. NVRTC
    has no include path of its own, so without them `#include <cuda_bf16.h>` cannot compile."""
    from cuda.bindings import nvrtc

    spec = importlib.util.find_spec("numba_cuda")
    if spec is None or not spec.submodule_search_locations:
        return None
    err, major, _minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return None
    for root in spec.submodule_search_locations:
        folder = Path(root) / "numba" / "cuda" / "include" / str(major)
        if (folder / "cuda_bf16.h").is_file():
            return str(folder)
    return None


def cuda_options(req: dict[str, Any]) -> list[str]:
    """NVRTC options from the allow-listed request options only."""
    opts = req["options"]
    out = [
        f"--gpu-architecture={req['arch']}",
        "-lineinfo",
        "-Xptxas=-v",
        f"-Xptxas=-O{int(opts['opt_level'])}",
        f"-std={opts['std']}",
    ]
    if headers := fp_headers_dir():
        out.append(f"--include-path={headers}")
    if opts.get("max_registers"):
        out.append(f"-maxrregcount={int(opts['max_registers'])}")
    if opts.get("fast_math"):
        out.append("--use_fast_math")
    for name, value in sorted(opts.get("defines", {}).items()):
        out.append(f"-D{name}={value}" if value != "" else f"-D{name}")
    return out


def demangle(symbols: list[str]) -> dict[str, str]:
    """C++ symbol -> readable name, through c++filt when the machine has it."""
    mangled = [s for s in symbols if s.startswith("_Z")]
    names = {s: s for s in symbols}
    tool = shutil.which("c++filt")
    if mangled and tool:
        try:
            done = subprocess.run([tool], input="\n".join(mangled), capture_output=True, text=True, timeout=5)
            for sym, readable in zip(mangled, done.stdout.splitlines(), strict=False):
                names[sym] = readable.strip() or sym
        except (OSError, subprocess.SubprocessError):
            pass
    return names


def disassemble(cubin: bytes, file_name: str) -> dict[str, list[dict[str, Any]]]:
    """SASS per function, with source lines, from the nvdisasm shipped in NVIDIA's wheel."""
    from cuda.pathfinder import find_nvidia_binary_utility

    tool = find_nvidia_binary_utility("nvdisasm")
    if tool is None:
        raise FileNotFoundError("nvdisasm was not found (pip package nvidia-cuda-nvdisasm)")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        done = subprocess.run(
            [tool, "-json", "-g", f.name], capture_output=True, text=True, timeout=NVDISASM_TIMEOUT_S, check=False
        )
    if done.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {done.stderr.strip()[:500]}")
    return sass_from_nvdisasm_json(json.loads(done.stdout), file_name)


def _kernels(log: str, cubin: bytes | None, names: dict[str, str], want_sass: bool, file_name: str):
    resources = ptxas_resources(log)
    sass: dict[str, list[dict[str, Any]]] = {}
    sass_ms = 0.0
    problems: list[dict[str, Any]] = []
    if want_sass and cubin:
        t0 = time.perf_counter()
        try:
            sass = disassemble(cubin, file_name)
        except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as err:
            problems.append({"line": None, "column": None, "severity": "warning", "message": f"No SASS: {err}"})
        sass_ms = (time.perf_counter() - t0) * 1000
    kernels = []
    for symbol, res in resources.items():
        kernels.append(
            {
                "name": names.get(symbol, symbol),
                "symbol": symbol,
                "registers": res.registers,
                "shared_bytes": res.shared_bytes,
                "constant_bytes": res.constant_bytes,
                "stack_bytes": res.stack_bytes,
                "local_bytes": res.local_bytes,
                "spill_stores_bytes": res.spill_stores_bytes,
                "spill_loads_bytes": res.spill_loads_bytes,
                "barriers": res.barriers,
                "sass": sass.get(symbol, []),
            }
        )
    return kernels, sass_ms, problems


def compile_cuda(req: dict[str, Any]) -> dict[str, Any]:
    from cuda.bindings import nvrtc

    t0 = time.perf_counter()
    err, prog = nvrtc.nvrtcCreateProgram(req["source"].encode(), CUDA_FILE.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in cuda_options(req)]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _nvrtc_bytes(prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog).decode(errors="replace")
        log = log.rstrip("\x00")
        ok = status == nvrtc.nvrtcResult.NVRTC_SUCCESS
        ptx = cubin = b""
        if ok:
            ptx = _nvrtc_bytes(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
            cubin = _nvrtc_bytes(prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    compile_ms = (time.perf_counter() - t0) * 1000
    diagnostics = nvrtc_diagnostics(log, CUDA_FILE)
    if not ok and not any(d["severity"] == "error" for d in diagnostics):
        diagnostics.append({"line": None, "column": None, "severity": "error", "message": status.name})
    kernels: list[dict[str, Any]] = []
    sass_ms = 0.0
    if ok:
        symbols = list(ptxas_resources(log))
        kernels, sass_ms, problems = _kernels(log, cubin, demangle(symbols), req.get("sass", True), CUDA_FILE)
        diagnostics += problems
    ptx_text = ptx.rstrip(b"\x00").decode(errors="replace")
    return {
        "ok": ok,
        "compiler": f"NVRTC {nvrtc_version()}",
        "diagnostics": diagnostics,
        "log": log.replace("\x00", ""),
        "ptx": ptx_text,
        "ptx_lines": ptx_source_lines(ptx_text, CUDA_FILE),
        "kernels": kernels,
        "timings": {"compile_ms": compile_ms, "sass_ms": sass_ms},
    }


class _KernelCollector:
    """Stands in for numba.cuda.jit while a learner's module runs: records each kernel and the
    signature it names, and leaves the decorator lazy (an explicit signature would make numba
    compile at import, which needs a GPU)."""

    def __init__(self, real_jit: Any) -> None:
        self.real_jit = real_jit
        self.kernels: dict[str, tuple[Any, Any]] = {}

    def __call__(self, func_or_sig: Any = None, device: bool = False, **kwargs: Any) -> Any:
        def wrap(func: Any, sig: Any = None) -> Any:
            if not device:
                self.kernels[func.__name__] = (func, sig)
            return self.real_jit(func, device=device, **kwargs)

        if callable(func_or_sig) and hasattr(func_or_sig, "__code__"):
            return wrap(func_or_sig)
        return lambda func: wrap(func, func_or_sig)


def load_numba_module(source: str, file_name: str = NUMBA_FILE) -> tuple[dict[str, Any], dict[str, tuple]]:
    """Run a learner's numba module; return its namespace and its kernels (name -> (func, sig))."""
    from numba import cuda

    collector = _KernelCollector(cuda.jit)
    namespace: dict[str, Any] = {"__name__": "kernel", "__file__": file_name}
    # numba reads a kernel's source through linecache for its line info; the module has no file.
    linecache.cache[file_name] = (len(source), None, source.splitlines(keepends=True), file_name)
    cuda.jit = collector
    try:
        exec(compile(source, file_name, "exec"), namespace)
    finally:
        cuda.jit = collector.real_jit
    return namespace, collector.kernels


def _python_diagnostic(err: BaseException, file_name: str) -> dict[str, Any]:
    if isinstance(err, SyntaxError) and err.filename == file_name:
        return {"line": err.lineno, "column": err.offset, "severity": "error", "message": f"SyntaxError: {err.msg}"}
    text = "".join(traceback.format_exception(err))
    message = str(err).strip() or type(err).__name__
    # numba's typing errors end with the offending source; keep the first lines readable.
    message = "\n".join(line for line in message.splitlines() if line.strip())[:2000]
    return {
        "line": python_error_line(text + message, file_name),
        "column": None,
        "severity": "error",
        "message": f"{type(err).__name__}: {message}",
    }


def compile_numba(req: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    arch = req["arch"]
    cc = (int(arch[3:].rstrip("af")) // 10, int(arch[3:].rstrip("af")) % 10)
    compiler = f"numba-cuda {numba_version()} (NVVM) + nvJitLink"
    base = {"compiler": compiler, "log": "", "ptx": "", "ptx_lines": [], "kernels": []}
    try:
        from numba import cuda

        _, kernels = load_numba_module(req["source"])
    except BaseException as err:  # the learner's module may raise anything
        if isinstance(err, KeyboardInterrupt | SystemExit):
            raise
        return {
            **base,
            "ok": False,
            "diagnostics": [_python_diagnostic(err, NUMBA_FILE)],
            "timings": {"compile_ms": (time.perf_counter() - t0) * 1000},
        }
    diagnostics: list[dict[str, Any]] = []
    if not kernels:
        diagnostics.append(
            {
                "line": None,
                "column": None,
                "severity": "error",
                "message": "No kernel found: decorate a function with @cuda.jit",
            }
        )
    ptx_parts: list[str] = []
    names: dict[str, str] = {}
    logs: list[str] = []
    cubins: list[bytes] = []
    for name, (func, sig) in kernels.items():
        sig = req.get("signatures", {}).get(name) or sig
        if sig is None:
            diagnostics.append(
                {
                    "line": func.__code__.co_firstlineno,
                    "column": None,
                    "severity": "error",
                    "message": f'Kernel {name!r} has no signature: write @cuda.jit("void(float32[:], ...)") '
                    "or give one in the request's signatures",
                }
            )
            continue
        try:
            ptx, _ = cuda.compile_ptx(func, sig, cc=cc, lineinfo=True, fastmath=req["options"].get("fast_math", False))
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            diagnostics.append(_python_diagnostic(err, NUMBA_FILE))
            continue
        entry = next((ln.split()[-1].rstrip("(") for ln in ptx.splitlines() if ".entry" in ln), name)
        names[entry] = name
        ptx_parts.append(ptx)
        cubin, log = link_ptx(ptx, arch, req["options"])
        logs.append(log)
        cubins.append(cubin)
    compile_ms = (time.perf_counter() - t0) * 1000
    ok = not any(d["severity"] == "error" for d in diagnostics)
    log = "\n".join(logs)
    kernels_out: list[dict[str, Any]] = []
    sass_ms = 0.0
    for cubin, part_log in zip(cubins, logs, strict=True):
        found, ms, problems = _kernels(part_log, cubin, names, req.get("sass", True), NUMBA_FILE)
        kernels_out += found
        sass_ms += ms
        diagnostics += problems
    ptx_text = "\n".join(ptx_parts)
    return {
        **base,
        "ok": ok,
        "diagnostics": diagnostics,
        "log": log,
        "ptx": ptx_text,
        "ptx_lines": ptx_source_lines(ptx_text, NUMBA_FILE),
        "kernels": kernels_out,
        "timings": {"compile_ms": compile_ms, "sass_ms": sass_ms},
    }


def link_ptx(ptx: str, arch: str, options: dict[str, Any]) -> tuple[bytes, str]:
    """PTX -> cubin through nvJitLink (ptxas inside), with ptxas's verbose resource report."""
    from cuda.bindings import nvjitlink

    opts = [f"-arch={arch}", "-verbose", "-lineinfo", f"-O{int(options.get('opt_level', 3))}"]
    if options.get("max_registers"):
        opts.append(f"-maxrregcount={int(options['max_registers'])}")
    handle = nvjitlink.create(len(opts), opts)
    try:
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel.ptx")
        nvjitlink.complete(handle)
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        log = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, log)
    finally:
        nvjitlink.destroy(handle)
    return bytes(cubin), log.decode(errors="replace").replace("\x00", "")


def handle(message: dict[str, Any]) -> dict[str, Any]:
    op = message.get("op")
    if op == "info":
        return {
            "nvrtc_version": nvrtc_version(),
            "archs": supported_archs(),
            "numba_version": numba_version(),
            "pid": os.getpid(),
        }
    if op == "compile":
        req = message["request"]
        return compile_numba(req) if req["language"] == "numba" else compile_cuda(req)
    return {"error": {"kind": "bad_request", "message": f"unknown op {op!r}"}}


def main() -> None:
    # Keep the protocol channel private: stray prints from compilers or learners' modules
    # would otherwise corrupt it.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    try:
        ready = {"ready": True, **handle({"op": "info"})}
    except Exception as err:  # no NVRTC: say why, the server shows it
        ready = {"ready": False, "error": {"kind": "no_compiler", "message": f"{type(err).__name__}: {err}"}}
    channel.write(json.dumps(ready) + "\n")
    channel.flush()
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception as err:
            reply = {
                "error": {
                    "kind": "worker_error",
                    "message": f"{type(err).__name__}: {err}",
                    "detail": traceback.format_exc(limit=5),
                }
            }
        channel.write(json.dumps(reply) + "\n")
        channel.flush()


if __name__ == "__main__":
    main()
