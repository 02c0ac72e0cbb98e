"""Compiling a learner's CUDA C for the CPU emulator: g++ with our header, linked with the
launcher, cached by a hash of everything that goes in.

Runs in the kernel-run child process (never in the server): g++ is a grandchild in its own
session, with a timeout and a memory cap, killed with its whole group when it overruns.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .source import SOURCE_NAME, entry_source

HERE = Path(__file__).resolve().parent
INCLUDE = HERE / "include"
LAUNCHER = HERE / "launcher.cpp"
# -fno-optimize-sibling-calls: a barrier reached by a tail call would report its caller's line.
# -fno-strict-aliasing: kernels pun freely (float4 loads through float pointers).
# -gdwarf-4: with DWARF 5, addr2line names the compiled file, not the #line name kernel.cu.
# -fno-tree-tail-merge -fno-crossjumping: two __syncthreads() in the two arms of an if stay two
# barriers (merged, threads at different barriers would look like one).
CXX_FLAGS = [
    "-std=c++20",
    "-O2",
    "-gdwarf-4",
    "-fno-optimize-sibling-calls",
    "-fno-strict-aliasing",
    "-fno-tree-tail-merge",
    "-fno-crossjumping",
    "-w",
]
# The memory-access report: every load, store and atomic of the learner's object calls the
# __tsan_* entry points that memory_access.h defines (libtsan itself is never linked).
GCC_INSTRUMENT_FLAGS = ["-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0"]
CLANG_INSTRUMENT_FLAGS = ["-fsanitize=thread", "-mllvm", "-tsan-instrument-func-entry-exit=0"]
COMPILE_MEMORY_BYTES = 2 * 1024**3
CACHE_KEEP = 64

_DIAGNOSTIC = re.compile(rf"^{re.escape(SOURCE_NAME)}:(\d+):(?:(\d+):)?\s*(?:fatal )?error:\s*(.*)$", re.M)


class BuildError(Exception):
    """The emulator could not build the kernel: kind 'compile_error', 'timeout' or 'no_compiler'."""

    def __init__(self, kind: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.line = kind, message, line


@dataclass(frozen=True)
class Built:
    binary: Path
    compiler: str
    cached: bool
    compile_ms: float


def find_compiler() -> str | None:
    return os.environ.get("GPUDOJO_CXX") or shutil.which("g++") or shutil.which("clang++")


def compiler_version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=10).stdout
    return out.splitlines()[0].strip() if out else cxx


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (COMPILE_MEMORY_BYTES, COMPILE_MEMORY_BYTES))


def _compile(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # cc1plus is g++'s child: a timeout must kill both
        preexec_fn=_limit_memory,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise BuildError("timeout", f"The C++ compile took longer than {timeout_s:g} s and was stopped.") from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, "")


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def _runtime_key(version: str) -> str:
    files = [*sorted(INCLUDE.iterdir()), LAUNCHER, HERE / "memory_access.h"]
    return _digest(version, *CXX_FLAGS, *(f.read_bytes() for f in files))


def _atomic_place(tmp: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp.replace(final)


def _runtime_object(cxx: str, version: str, cache: Path, timeout_s: float) -> Path:
    """launcher.cpp compiled once per header, launcher and compiler version."""
    obj = cache / f"runtime-{_runtime_key(version)[:24]}.o"
    if obj.exists():
        return obj
    cache.mkdir(parents=True, exist_ok=True)
    tmp = obj.with_suffix(f".{os.getpid()}.tmp")
    argv = [cxx, *CXX_FLAGS, f"-I{INCLUDE}", "-include", "gpudojo_cuda.h", "-c", str(LAUNCHER), "-o", str(tmp)]
    done = _compile(argv, timeout_s)
    if done.returncode != 0:
        raise BuildError("compile_error", f"The emulator's launcher did not compile:\n{done.stdout[-2000:]}")
    _atomic_place(tmp, obj)
    return obj


def _prune(cache: Path) -> None:
    binaries = sorted(cache.glob("*/*.bin"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in binaries[CACHE_KEEP:]:
        for path in (old, old.with_suffix(".shared")):  # the sidecar execute.shared_boxes writes
            with contextlib.suppress(OSError):
                path.unlink()


def first_error(log: str) -> tuple[int | None, str]:
    m = _DIAGNOSTIC.search(log)
    if m:
        return int(m.group(1)), m.group(3).strip()
    for line in log.splitlines():
        if "error" in line:
            return None, line.strip()
    return None, log.strip()[-500:]


def build(
    source: str,
    kernel: str,
    defines: dict[str, str],
    arch: str,
    cache_dir: Path,
    timeout_s: float,
    instrument: bool = False,
) -> Built:
    """The kernel's emulator binary: from the cache, or compiled (g++ with our header) and cached.

    instrument: every load, store and atomic calls the launcher (the memory-access report and the
    shared-memory checks); its binary is cached apart from the plain one."""
    cxx = find_compiler()
    if not cxx:
        raise BuildError(
            "no_compiler", "No C++ compiler (g++ or clang++) here: install g++ to run CUDA C without a GPU."
        )
    version = compiler_version(cxx)
    cache = cache_dir / "cpu"
    arch_number = arch.removeprefix("sm_").rstrip("af") + "0"
    flags = [f"-D__CUDA_ARCH__={arch_number}"] + [f"-D{k}={v}" for k, v in sorted(defines.items())]
    if instrument:
        flags += CLANG_INSTRUMENT_FLAGS if "clang" in version.lower() else GCC_INSTRUMENT_FLAGS
    key = _digest(_runtime_key(version), source, kernel, *flags)
    binary = cache / key[:2] / f"{key}.bin"
    if binary.exists():
        with contextlib.suppress(OSError):
            os.utime(binary)
        return Built(binary, version, True, 0.0)
    t0 = time.perf_counter()
    runtime = _runtime_object(cxx, version, cache, timeout_s)
    binary.parent.mkdir(parents=True, exist_ok=True)
    entry = binary.with_suffix(f".{os.getpid()}.cpp")
    tmp = binary.with_suffix(f".{os.getpid()}.tmp")
    obj = binary.with_suffix(f".{os.getpid()}.o")
    entry.write_text(entry_source(source, kernel, box_shared=instrument), encoding="utf-8")
    argv = [cxx, *CXX_FLAGS, *flags, f"-I{INCLUDE}", "-include", "gpudojo_cuda.h", "-fmax-errors=10"]
    argv += ["-fdiagnostics-color=never", str(entry)]
    if instrument:
        # Two steps: a -fsanitize=thread link would pull in libtsan, whose entry points we replace.
        argv += ["-c", "-o", str(obj)]
    else:
        argv += [str(runtime), "-no-pie", "-o", str(tmp)]
    try:
        done = _compile(argv, max(timeout_s - (time.perf_counter() - t0), 1.0))
        if done.returncode == 0 and instrument:
            link = [cxx, str(obj), str(runtime), "-no-pie", "-o", str(tmp)]
            done = _compile(link, max(timeout_s - (time.perf_counter() - t0), 1.0))
    finally:
        for scratch in (entry, obj):
            with contextlib.suppress(OSError):
                scratch.unlink()
    if done.returncode != 0:
        with contextlib.suppress(OSError):
            tmp.unlink()
        line, message = first_error(done.stdout.replace(str(entry), SOURCE_NAME))
        if re.search(rf".{re.escape(kernel)}. was not declared", done.stdout):
            raise BuildError("bad_spec", f"No kernel named {kernel!r} in the source.")
        raise BuildError("compile_error", f"The CPU emulator could not compile this kernel: {message}", line)
    _atomic_place(tmp, binary)
    _prune(cache)
    return Built(binary, version, False, (time.perf_counter() - t0) * 1000)
