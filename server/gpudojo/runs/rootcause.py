"""Why a run failed: the first failing rank's error, from torchrun's per-rank error.json
(written by ``@record``), else the last traceback in that rank's stderr; and the exit codes
torchrun's failure summary names."""

from __future__ import annotations

import contextlib
import json
import re
import signal
from pathlib import Path
from typing import Any

from .models import RootCause

# torchrun's summary: "  rank      : 1 (local_rank: 1)" ... "  exitcode  : 1 (pid: 123)"
_SUMMARY_RANK = re.compile(r"rank\s*:\s*(\d+)")
_SUMMARY_EXIT = re.compile(r"exitcode\s*:\s*(-?\d+)")
TRACEBACK = "Traceback (most recent call last):"
# What a rank says when it failed because a peer went away or stopped answering: a symptom of
# another rank's failure, never the first failure while a rank that failed by itself is there.
# One definition for one machine's ranks (root_cause) and for the nodes of a run across machines
# (worker/nodes_host.py).
PEER_LOST = re.compile(
    r"Connection (closed|reset) by peer|Connection refused|Broken pipe|Socket Timeout|remote worker crashing"
    r"|gloo|NCCL communicator was aborted|ncclRemoteError|remote process exited"
    r"|DistNetworkError|DistBackendError|RendezvousClosedError|Watchdog caught collective operation timeout",
    re.IGNORECASE,
)


def exit_words(code: int | None) -> str:
    """'exited with code 3', or 'was killed by SIGKILL' for a negative code (a signal)."""
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def summary_exit_codes(launcher_log: str) -> dict[int, int]:
    """rank -> exit code from the ``Failures`` / ``Root Cause`` block torchrun prints."""
    codes: dict[int, int] = {}
    rank: int | None = None
    for line in launcher_log.splitlines():
        if m := _SUMMARY_RANK.search(line):
            rank = int(m[1])
        elif (m := _SUMMARY_EXIT.search(line)) and rank is not None:
            codes.setdefault(rank, int(m[1]))
            rank = None
    return codes


def summary_root_rank(launcher_log: str) -> int | None:
    """The rank torchrun names under "Root Cause (first observed failure)", if it printed one."""
    at = launcher_log.rfind("Root Cause (first observed failure)")
    if at < 0:
        return None
    m = _SUMMARY_RANK.search(launcher_log, at)
    return int(m[1]) if m else None


def _last_traceback(text: str) -> tuple[str, str] | None:
    start = text.rfind(TRACEBACK)
    if start < 0:
        return None
    block = text[start:].rstrip().splitlines()
    # The exception line is the first unindented line after the frames.
    for i, line in enumerate(block[1:], 1):
        if line and not line.startswith(" "):
            return line.strip(), "\n".join(block[: i + 1])
    return block[-1].strip(), "\n".join(block)


def rank_errors(attempt_dir: Path) -> list[dict[str, Any]]:
    """One entry per rank folder that holds an error: {rank, exception, traceback, timestamp}."""
    errors = []
    for rank_dir in sorted((p for p in attempt_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        rank = int(rank_dir.name)
        error_file = rank_dir / "error.json"
        if error_file.is_file():
            try:
                doc = json.loads(error_file.read_text(encoding="utf-8"))
                message = doc.get("message", {})
                if isinstance(message, str):
                    message = {"message": message, "extraInfo": {}}
                extra = message.get("extraInfo", {})
                errors.append(
                    {
                        "rank": rank,
                        "exception": str(message.get("message", "")).strip(),
                        "traceback": str(extra.get("py_callstack", "")),
                        # The file's own time: error.json's timestamp has whole seconds only, and the
                        # rank that crashed and the ranks that lost their peer often share a second.
                        "timestamp": error_file.stat().st_mtime,
                    }
                )
                continue
            except (OSError, ValueError, AttributeError):
                pass
        stderr = rank_dir / "stderr.log"
        found = _last_traceback(stderr.read_text(encoding="utf-8", errors="replace")) if stderr.is_file() else None
        if found:
            errors.append(
                {"rank": rank, "exception": found[0], "traceback": found[1], "timestamp": stderr.stat().st_mtime}
            )
    return errors


def root_cause(log_dir: Path, launcher_log: str, exit_code: int | None) -> RootCause | None:
    """The first failure among the ranks (earliest error, then lowest rank); None if none."""
    attempts = sorted(log_dir.glob("*/attempt_*"), key=lambda p: p.stat().st_mtime) if log_dir.is_dir() else []
    errors = rank_errors(attempts[-1]) if attempts else []
    codes = summary_exit_codes(launcher_log)
    if not errors:
        if not codes and not exit_code:
            return None
        found = _last_traceback(launcher_log)
        rank = min(codes) if codes else None
        return RootCause(
            rank=rank,
            exit_code=codes.get(rank, exit_code) if rank is not None else exit_code,
            exception=found[0] if found else f"torchrun {exit_words(exit_code)}",
            traceback=found[1] if found else "",
        )
    # A rank that failed by itself before ranks that only lost a peer; then the order the
    # errors were written in (the files' own times, to the nanosecond). torchrun's verdict ("first
    # observed failure") comes after: it compares error.json's whole-second timestamps and takes
    # the lowest rank on a tie, so a peer that lost rank 1 in the same second is named instead
    # (seen on CI: rank 0's "Connection closed by peer", while rank 1 raised the real error).
    # Last, for files written in the same instant: a rank that exited by itself, the lowest rank.
    named = summary_root_rank(launcher_log)
    errors.sort(
        key=lambda e: (
            bool(PEER_LOST.search(e["exception"])),
            e["timestamp"] or float("inf"),
            e["rank"] != named,
            not (codes.get(e["rank"]) or 0) > 0,
            e["rank"],
        )
    )
    first, others = errors[0], errors[1:]
    return RootCause(
        rank=first["rank"],
        exit_code=codes.get(first["rank"], exit_code),
        exception=first["exception"],
        traceback=first["traceback"],
        timestamp=first["timestamp"],
        others=[{**e, "exit_code": codes.get(e["rank"])} for e in others],
    )


def single_process_cause(stderr_text: str, exit_code: int) -> RootCause:
    """The python launcher's one process: its last traceback, or its exit code."""
    found = _last_traceback(stderr_text)
    return RootCause(
        rank=0,
        exit_code=exit_code,
        exception=found[0] if found else f"the script {exit_words(exit_code)}",
        traceback=found[1] if found else stderr_text[-2000:],
    )
