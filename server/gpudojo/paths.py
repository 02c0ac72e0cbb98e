"""Where the course material lives: packaged in the wheel, or the source tree when editable."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def material_root(name: str) -> Path:
    """The ``content`` or ``labs`` folder: the wheel's copy, else the repository's (editable install)."""
    packaged = _HERE / "_packaged" / name
    if packaged.is_dir():
        return packaged
    return _HERE.parents[1] / name
