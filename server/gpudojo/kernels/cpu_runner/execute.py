"""One emulated launch: the request's arrays written to page-padded files the launcher maps
between guard pages, the binary run in a grandchild with time and memory limits, outputs read
back, and the launcher's error report turned into thread, block and source line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..models import ArrayArg, RunRequest
from .access_report import summarize
from .build import BuildError, build
from .source import SHARED_BOX_PREFIX, SOURCE_NAME, check_kernel_name, refusal

TIMING_METHOD = "wall clock of one emulated launch on the CPU (not GPU time)"
MAX_KERNEL_STDOUT = 64 * 1024
STACK_BYTES = 64 * 1024
_ADDRESS = re.compile(r"@(PC|RA)\((0x[0-9a-fA-F]+|\(nil\))\)")


class EmulatorError(Exception):
    """A launch the emulator reports as failed; ``error`` is a RunError dict."""

    def __init__(self, error: dict[str, Any], compile_ms: float | None = None) -> None:
        super().__init__(error["message"])
        self.error = error
        self.compile_ms = compile_ms


def _buffer_dir() -> str | None:
    # /dev/shm keeps the arrays in memory; a plain temp dir does as well, only slower.
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def _write_padded(path: Path, value: Any, page: int) -> int:
    """Write ``value`` so that it ends at a page boundary; returns the padding in bytes."""
    data = value.tobytes()
    pad = (-len(data)) % page
    with open(path, "wb") as f:
        f.write(b"\0" * pad)
        f.write(data)
    return pad


def _scalar_text(dtype: str, value: Any) -> str:
    return repr(float(value)) if dtype.startswith("float") else str(int(value))


class _Lines:
    """Source lines of code addresses in one binary (addr2line, inlined frames unwound)."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary

    def lookup(self, addresses: list[int]) -> dict[int, int | None]:
        if not addresses:
            return {}
        try:
            out = subprocess.run(
                ["addr2line", "-i", "-a", "-e", str(self.binary), *(hex(a) for a in addresses)],
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return dict.fromkeys(addresses)
        lines: dict[int, int | None] = {}
        address = None
        for row in out.splitlines():
            if row.startswith("0x"):
                address = int(row, 16)
                lines.setdefault(address, None)
            elif address is not None and lines[address] is None:
                # With -i the innermost frame comes first: the first frame in the learner's file wins.
                file, _, number = row.rpartition(":")
                if file.endswith(SOURCE_NAME) and number.split()[0].isdigit():
                    lines[address] = int(number.split()[0])
        return lines


def describe(report: dict[str, Any], binary: Path) -> dict[str, Any]:
    """A RunError dict from the launcher's report, code addresses turned into source lines."""
    addresses = []
    for m in _ADDRESS.finditer(report.get("message", "")):
        if m.group(2).startswith("0x"):
            # A return address points after the call: the call's line is one byte before it.
            addresses.append(int(m.group(2), 16) - (1 if m.group(1) == "RA" else 0))
    for key in ("pc", "ra"):
        if key in report:
            addresses.append(int(report[key], 16) - (1 if key == "ra" else 0))
    lines = _Lines(binary).lookup(sorted(set(addresses)))

    def name(m: re.Match[str]) -> str:
        if not m.group(2).startswith("0x"):
            return "an unknown line"
        line = lines.get(int(m.group(2), 16) - (1 if m.group(1) == "RA" else 0))
        return f"line {line}" if line else "a line outside the kernel source"

    line = None
    if "pc" in report:
        line = lines.get(int(report["pc"], 16))
    elif "ra" in report:
        line = lines.get(int(report["ra"], 16) - 1)
    return {
        "kind": report.get("kind", "exception"),
        "message": _ADDRESS.sub(name, report.get("message", "")),
        "thread": report.get("thread"),
        "block": report.get("block"),
        "line": line,
    }


_BOX_SYMBOL = re.compile(rf"^([0-9a-fA-F]+) ([0-9a-fA-F]+) [a-zA-Z] \S*?(\d*){SHARED_BOX_PREFIX}(\w+)$")


def shared_boxes(binary: Path) -> list[tuple[str, int, int]]:
    """(array name, box address, box bytes) of every boxed static __shared__ array in the binary,
    from its symbol table; cached beside the binary."""
    sidecar = binary.with_suffix(".shared")
    if sidecar.exists():
        text = sidecar.read_text(encoding="utf-8")
    else:
        try:
            text = subprocess.run(
                ["nm", "-S", "--defined-only", str(binary)], capture_output=True, text=True, timeout=20
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
        text = "\n".join(row for row in text.splitlines() if SHARED_BOX_PREFIX in row)
        with contextlib.suppress(OSError):
            sidecar.write_text(text, encoding="utf-8")
    boxes = []
    for row in text.splitlines():
        m = _BOX_SYMBOL.match(row.strip())
        if not m:
            continue
        name = m.group(4)
        if m.group(3):  # a mangled local: <length>gpudojo_shared_<name>, maybe a _N discriminator after
            name = (SHARED_BOX_PREFIX + name)[: int(m.group(3))].removeprefix(SHARED_BOX_PREFIX)
        boxes.append((name, int(m.group(1), 16), int(m.group(2), 16)))
    return boxes


def _memory_limit(req: RunRequest, inputs: dict[str, Any]) -> int:
    """Address space for the launcher (bytes): arrays, guards, one stack per thread, headroom."""
    arrays = sum(v.nbytes for v in inputs.values() if getattr(v, "ndim", 0))
    threads = 1
    for n in req.block:
        threads *= n
    return arrays + len(req.args) * (1 << 20) + threads * (STACK_BYTES + 8192) + (1 << 30)


def run_emulated(
    req: RunRequest,
    inputs: dict[str, Any],
    cache_dir: Path,
    time_limit_s: float,
    compile_timeout_s: float,
) -> tuple[dict[str, Any], dict[str, Any], str, dict[str, Any]]:
    """Build (or take from the cache) and run one launch of ``req.kernel`` on the CPU.

    Returns (outputs by name, timing, what the kernel printed, emulator facts; the facts hold the
    memory-access report under "memory" when the request asked for it). Raises
    EmulatorError with a RunError dict when the kernel cannot be built or fails."""
    import numpy as np

    refused = refusal(req.source)
    if refused:
        raise EmulatorError(refused)
    if not check_kernel_name(req.kernel):
        raise EmulatorError({"kind": "bad_spec", "message": f"{req.kernel!r} is not a kernel name."})
    arch = req.arch or "sm_80"
    try:
        try:
            built = build(
                req.source, req.kernel, req.options.defines, arch, cache_dir, compile_timeout_s, req.memory_report
            )
        except BuildError as err:
            if not req.memory_report or err.kind != "compile_error":
                raise
            # Our rewrite of the static __shared__ arrays must never cost a learner a run: the
            # plain build's error, if any, is the learner's own.
            built = build(req.source, req.kernel, req.options.defines, arch, cache_dir, compile_timeout_s)
            req = req.model_copy(update={"memory_report": False})
    except BuildError as err:
        kind = {"timeout": "timeout", "bad_spec": "bad_spec"}.get(err.kind, "compile_error")
        raise EmulatorError({"kind": kind, "message": err.message, "line": err.line}) from None
    compile_ms = built.compile_ms
    remaining = time_limit_s
    page = os.sysconf("SC_PAGESIZE")
    with tempfile.TemporaryDirectory(prefix="gpudojo-emu-", dir=_buffer_dir()) as tmp:
        folder = Path(tmp)
        launch = [
            f"grid {' '.join(str(n) for n in [*req.grid, 1, 1][:3])}",
            f"block {' '.join(str(n) for n in [*req.block, 1, 1][:3])}",
            f"shared {req.shared_bytes}",
            f"time_limit {remaining:.3f}",
            f"memory_limit {_memory_limit(req, inputs)}",
            f"stack {STACK_BYTES}",
            f"record {int(req.memory_report)}",
        ]
        if req.memory_report:
            launch += [f"shared_array {name} {box:x} {size}" for name, box, size in shared_boxes(built.binary)]
        pads: dict[str, int] = {}
        for index, arg in enumerate(req.args):
            value = inputs[arg.name]
            if isinstance(arg, ArrayArg):
                path = folder / f"arg{index}.bin"
                pads[arg.name] = _write_padded(path, np.ascontiguousarray(value), page)
                launch.append(f"array {arg.name} {arg.dtype} {value.nbytes} {path}")
            else:
                launch.append(f"scalar {arg.name} {arg.dtype} {_scalar_text(arg.dtype, value)}")
        (folder / "launch.txt").write_text("\n".join(launch) + "\n", encoding="utf-8")
        result_path = folder / "result.json"
        proc = subprocess.Popen(
            [str(built.binary), str(folder / "launch.txt"), str(result_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=remaining + 5.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise EmulatorError(
                {
                    "kind": "timeout",
                    "message": f"The kernel ran longer than {remaining:.0f} s and was stopped (an endless loop?).",
                },
                compile_ms,
            ) from None
        stdout = out.decode(errors="replace")[:MAX_KERNEL_STDOUT]
        try:
            report = json.loads(result_path.read_text(encoding="utf-8").strip() or "{}")
        except (OSError, ValueError):
            report = {}
        if not report.get("ok"):
            if report:
                error = describe(report, built.binary)
            else:
                code = proc.returncode
                how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
                tail = err.decode(errors="replace").strip()[-1500:]
                error = {"kind": "crashed", "message": f"The emulated kernel's process died ({how}).\n{tail}"}
            if error["kind"] == "exception" and err.strip():
                error["message"] += "\n" + err.decode(errors="replace").strip()[-1000:]
            raise EmulatorError(error, compile_ms)
        got: dict[str, Any] = {}
        for index, arg in enumerate(req.args):
            value = inputs[arg.name]
            if isinstance(arg, ArrayArg):
                path = folder / f"arg{index}.bin"
                got[arg.name] = np.fromfile(path, dtype=value.dtype, offset=pads[arg.name]).reshape(value.shape)
            else:
                got[arg.name] = value
    elapsed = float(report["elapsed_ms"])
    timing = {
        "warmup": 0,
        "repeats": 1,
        "mean_ms": elapsed,
        "min_ms": elapsed,
        "max_ms": elapsed,
        "method": TIMING_METHOD,
    }
    facts: dict[str, Any] = {
        "compiler": built.compiler,
        "cached": built.cached,
        "compile_ms": compile_ms,
        "run_ms": elapsed,
    }
    if "memory" in report:
        sites = report["memory"].get("sites", [])
        lines = _Lines(built.binary).lookup(sorted({int(site["pc"], 16) - 1 for site in sites}))
        facts["memory"] = summarize(report["memory"], lines)
    return got, timing, stdout, facts
