"""Bounds on the text an analysis keeps of its input: a file name, an operator name or an
error message taken from a capture or a trace is kept to MAX_TEXT_CHARS characters.

Everything an analysis keeps goes into a summary the server loads and sends on every query,
so one 300 MB frame filename in a snapshot would cost the server 300 MB per open analysis
and every client 300 MB per request; no name a person reads needs more than a few lines.
"""

from __future__ import annotations

from typing import Any

MAX_TEXT_CHARS = 512
ELLIPSIS = "\u2026"
# The most JSON (bytes) an analysis leaves for the server to load: its summary, and a trace's
# tables of names. Clipped names still add up when a file holds millions of distinct ones; a
# real capture or trace needs well under 1 MB (bench/RESULTS.md).
MAX_KEPT_JSON_BYTES = 32 * 1024**2


def clip_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit`` and an ellipsis."""
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def clip_strings(value: Any, limit: int = MAX_TEXT_CHARS) -> Any:
    """``value`` (JSON-shaped: dicts, lists, scalars) with every string, keys included, clipped."""
    if isinstance(value, str):
        return clip_text(value, limit)
    if isinstance(value, dict):
        return {clip_text(k, limit) if isinstance(k, str) else k: clip_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clip_strings(v, limit) for v in value]
    return value
