"""Analyse one memory capture in this child process: ``python -m gpudojo.worker.memory_analyze
SOURCE FOLDER`` writes FOLDER/arrays.npz and FOLDER/summary.json, and prints one JSON line:
the summary's size, or {"error": {"kind", "message"}} (kind "refused" for a pickle that
asks for more than plain data, "invalid" for anything that is not a capture)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpudojo.memory.analysis import write_analysis
from gpudojo.memory.snapshot import RefusedPickle, read_capture


def main() -> int:
    source, folder = Path(sys.argv[1]), Path(sys.argv[2])
    try:
        parsed = read_capture(source)
    except RefusedPickle as err:
        print(json.dumps({"error": {"kind": "refused", "message": str(err)}}))
        return 3
    except (ValueError, KeyError, TypeError, IndexError, OSError) as err:
        print(json.dumps({"error": {"kind": "invalid", "message": f"{type(err).__name__}: {err}"}}))
        return 3
    summary = write_analysis(parsed, folder)
    print(json.dumps({"ok": True, "allocations": summary["allocations"], "analysis_ms": summary["analysis_ms"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
