"""Analyse profiler traces in a child process.

``python -m gpudojo.worker.profile_analyze FOLDER SOURCE [SOURCE...]`` analyses one profile
(one trace file per rank) into FOLDER (summary.json, index.npz, args.bin) and prints one
JSON line: {"ok": true, "events", "analysis_ms"}, or {"error": {"kind": "invalid",
"message"}} with exit code 3 when a file is not a Chrome/Kineto trace.

``python -m gpudojo.worker.profile_analyze --serve`` is the server's warm worker: it imports
the analysis (NumPy, orjson) once, prints {"ready": true, ...}, then answers one request per
line ({"sources": [...], "folder": ...}) with progress lines ({"progress": {"phase",
"fraction"}}, phases reading, analysing, indexing) and the same reply as above. A request it
cannot read gets an error reply; the worker keeps serving. Holistic Trace Analysis (pandas)
is imported only when a GPU trace needs it, so a CPU-only session never pays for it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

_STARTED = time.perf_counter()
from gpudojo.clipping import clip_text  # noqa: E402
from gpudojo.profile.analysis import ANALYSIS_VERSION, NotATrace, TraceTooLarge, write_analysis  # noqa: E402
from gpudojo.profile.trace import MAX_INFLATED_BYTES  # noqa: E402

_IMPORT_MS = (time.perf_counter() - _STARTED) * 1000
# An error message quotes the file at times (a key, a value): what the server hears stays short.
MAX_MESSAGE_CHARS = 2000


def analyse(
    sources: list[Path], folder: Path, emit=None, max_inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[dict[str, Any], int]:
    """The reply for one profile, and the exit code the one-shot command returns."""

    def progress(phase: str, fraction: float | None) -> None:
        if emit is not None:
            emit({"progress": {"phase": phase, "fraction": fraction}})

    def error(kind: str, message: str) -> tuple[dict[str, Any], int]:
        return {"error": {"kind": kind, "message": clip_text(message, MAX_MESSAGE_CHARS)}}, 3

    if not sources:
        return error("invalid", "No trace file given.")
    try:
        summary = write_analysis(sources, folder, on_progress=progress, max_inflated_bytes=max_inflated_bytes)
    except TraceTooLarge as err:
        return error("too_large", str(err))
    except NotATrace as err:
        return error("invalid", str(err))
    except MemoryError:
        # The trace's fault, not the worker's: answered, never retried (the server would
        # take a worker that died of it for a crash and try again).
        return error("too_large", "it needs more memory than this machine could give its analysis")
    except (ValueError, KeyError, TypeError, IndexError, OSError) as err:
        # Analysis of a trace shaped in a way nobody foresaw: say what, never a traceback.
        return error("invalid", f"{type(err).__name__}: {err}")
    return {"ok": True, "events": summary["events"], "analysis_ms": summary["analysis_ms"]}, 0


def _request(line: str) -> tuple[list[Path], Path, int] | str:
    """A request's sources, folder and inflated-size cap (bytes), or why it cannot be read."""
    try:
        request = json.loads(line)
        sources = [Path(s) for s in request["sources"]]
        folder = Path(request["folder"])
        max_inflated = int(request.get("max_inflated_bytes", MAX_INFLATED_BYTES))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as err:
        return f"Bad request ({type(err).__name__}: {err}): expected {{'sources': [...], 'folder': ...}}"
    return sources, folder, max_inflated


def warm_up() -> dict[str, Any]:
    """Load (or compile, the first time on this machine) the trace scanner and the row
    placement for lanes whose spans cross, so that the first trace does not wait for numba."""
    t0 = time.perf_counter()
    try:
        from gpudojo.worker import profile_rows, trace_scan
    except ImportError as err:
        return {
            "rows_compiled": False,
            "reason": f"numba is not installed ({err}): orjson reads traces and a Python loop places rows",
        }
    trace_scan.warm_up()
    profile_rows.warm_up()
    return {"rows_compiled": True, "scanner_compiled": True, "warm_ms": (time.perf_counter() - t0) * 1000}


def serve() -> int:
    out = sys.stdout

    def emit(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    sys.stdout = sys.stderr  # anything else printed (HTA logs) goes to the log, not the protocol
    emit({"ready": True, "analysis_version": ANALYSIS_VERSION, "import_ms": _IMPORT_MS, **warm_up()})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = _request(line)
        if isinstance(request, str):
            emit({"error": {"kind": "invalid", "message": request}})
            continue
        sources, folder, max_inflated = request
        reply, _ = analyse(sources, folder, emit, max_inflated)
        emit(reply)
        _give_back_freed_memory()
    return 0


def _give_back_freed_memory() -> None:
    """Between requests: glibc keeps what an analysis freed in its arenas, so the next one would
    start its peak from the last one's (glibc's malloc_trim; nothing where there is none)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_THRESHOLD_BYTES = 16 << 20


def _steady_allocator() -> bool:
    """Blocks of 16 MiB and more from the kernel (mmap), given back as soon as freed; smaller
    ones from glibc's heap. Left to itself glibc raises that threshold to each big block freed
    (up to 32 MiB) and keeps more of them in its heap: an analysis's peak then grew from one
    request to the next (1M-event trace: 307 -> 371 MiB over six; 269-293 MiB fixed, no slower).
    Whether it was set: nothing is where the C library is not glibc."""
    try:
        return ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    except (OSError, AttributeError):
        return False


def main() -> int:
    _steady_allocator()
    if sys.argv[1:] == ["--serve"]:
        return serve()
    if len(sys.argv) < 3:
        print(json.dumps({"error": {"kind": "invalid", "message": "usage: FOLDER SOURCE [SOURCE...]"}}))
        return 3
    out, sys.stdout = sys.stdout, sys.stderr  # the reply is the only line on stdout
    reply, code = analyse([Path(s) for s in sys.argv[2:]], Path(sys.argv[1]))
    out.write(json.dumps(reply) + "\n")
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
