"""Analyse memory captures in a child process.

``python -m gpudojo.worker.memory_analyze SOURCE FOLDER`` analyses one capture: it writes
FOLDER/arrays.npz and FOLDER/summary.json and prints one JSON line, the summary's size or
{"error": {"kind", "message"}} (kind "refused" for a pickle that asks for more than plain
data, "invalid" for anything that is not a capture).

``python -m gpudojo.worker.memory_analyze --serve`` is the server's warm worker: it loads
the snapshot scanner's compiled code once (compiling it on a first run), prints
{"ready": true, ...}, then answers one request per line ({"source", "folder"}) with
progress lines ({"progress": {"phase", "fraction"}}) and the same reply as above.
"""

from __future__ import annotations

import json
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpudojo.clipping import clip_text
from gpudojo.memory.analysis import write_analysis
from gpudojo.memory.snapshot import CaptureTooLarge, RefusedPickle, read_capture

# An error message quotes the file at times (a key, a value): what the server hears stays short.
MAX_MESSAGE_CHARS = 2000


def analyse(source: Path, folder: Path, emit=None) -> tuple[dict[str, Any], int]:
    """The reply for one capture, and the exit code the one-shot command returns."""

    def progress(phase: str, fraction: float | None) -> None:
        if emit is not None:
            emit({"progress": {"phase": phase, "fraction": fraction}})

    def error(kind: str, message: str) -> tuple[dict[str, Any], int]:
        return {"error": {"kind": kind, "message": clip_text(message, MAX_MESSAGE_CHARS)}}, 3

    try:
        parsed = read_capture(source, on_progress=progress)
        progress("indexing", None)
        summary = write_analysis(parsed, folder)
    except RefusedPickle as err:
        return error("refused", str(err))
    except CaptureTooLarge as err:
        return error("too_large", str(err))
    except MemoryError:
        # The capture's fault, not the worker's: answered, never retried (the server would
        # take a worker that died of it for a crash and try again).
        return error("too_large", "it needs more memory than this machine could give its analysis")
    # A file of the wrong shape fails in any of these ways; none may end the warm worker.
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError, OSError) as err:
        return error("invalid", f"{type(err).__name__}: {err}")
    return {"ok": True, "allocations": summary["allocations"], "analysis_ms": summary["analysis_ms"]}, 0


def warm_up() -> dict[str, Any]:
    """Load (or compile, the first time on this machine) the scanner on a tiny snapshot."""
    t0 = time.perf_counter()
    try:
        from gpudojo.worker import snapshot_scan  # noqa: F401
    except ImportError as err:
        return {"scanner": False, "reason": f"numba is not installed ({err}): snapshots are unpickled"}
    trace = [{"action": "alloc", "addr": 1, "size": 8, "time_us": 1, "frames": [{"filename": "a.py", "line": 1}]}]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warm.pickle"
        path.write_bytes(pickle.dumps({"segments": [], "device_traces": [trace]}))
        read_capture(path)
    return {"scanner": True, "warm_ms": (time.perf_counter() - t0) * 1000}


def serve() -> int:
    out = sys.stdout

    def emit(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    sys.stdout = sys.stderr  # anything else printed goes to the log, not the protocol
    emit({"ready": True, **warm_up()})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        reply, _ = analyse(Path(request["source"]), Path(request["folder"]), emit)
        emit(reply)
    return 0


def main() -> int:
    if sys.argv[1:] == ["--serve"]:
        return serve()
    reply, code = analyse(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps(reply))
    return code


if __name__ == "__main__":
    sys.exit(main())
