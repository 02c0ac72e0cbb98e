"""Recordings of NVML sessions: write them from any backend, replay them as a backend.

A recording is JSON lines: one ``{"type": "inventory", ...GpuInventory}`` line, then
``{"type": "sample", "t": <unix s>, "gpus": [...GpuSample]}`` lines. Replay serves the
samples in order, looping, one per reading, so a 2-GPU or 8-GPU machine can be shown
(and tested) on a laptop.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from .models import GpuInventory, GpuSample
from .nvml_backend import GpuUnavailable

FORMAT_VERSION = 1


class RecordingError(ValueError):
    """A recording file is missing or malformed; the message names the file and line."""


class ReplayBackend:
    """Serves a recording's facts and, one per call, its samples (looping)."""

    source = "replay"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._inventory: GpuInventory | None = None
        self._samples: list[list[GpuSample]] = []
        self._next = 0
        self._lock = threading.Lock()

    def start(self) -> None:
        """Read and check the recording once; a bad file makes the GPUs unavailable, with why."""
        with self._lock:
            if self._inventory is None:
                try:
                    self._inventory, self._samples = load_recording(self.path)
                except RecordingError as err:
                    raise GpuUnavailable(f"GPU replay is configured but unusable: {err}") from err

    def close(self) -> None:
        """Nothing to release."""

    def inventory(self) -> GpuInventory:
        self.start()
        assert self._inventory is not None
        return self._inventory.model_copy(update={"source": "replay"}, deep=True)

    def sample(self) -> list[GpuSample]:
        self.start()
        if not self._samples:
            return []
        with self._lock:
            samples = self._samples[self._next % len(self._samples)]
            self._next += 1
        return [s.model_copy(deep=True) for s in samples]


def load_recording(path: Path) -> tuple[GpuInventory, list[list[GpuSample]]]:
    """Read and validate a recording; raises RecordingError naming the bad line."""
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise RecordingError(f"Cannot read GPU recording {path}: {err.strerror}") from err
    inventory: GpuInventory | None = None
    samples: list[list[GpuSample]] = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            kind = record.get("type")
            if kind == "inventory":
                inventory = GpuInventory.model_validate(record)
            elif kind == "sample":
                samples.append([GpuSample.model_validate(g) for g in record.get("gpus", [])])
            else:
                raise RecordingError(f"{path}:{lineno}: unknown record type {kind!r}")
        except (json.JSONDecodeError, AttributeError, ValidationError) as err:
            raise RecordingError(f"{path}:{lineno}: not a valid recording line ({err})") from err
    if inventory is None:
        raise RecordingError(f"{path}: no inventory line; record one with `gpudojo probe --record FILE`")
    return inventory, samples


def record(
    inventory: Callable[[], GpuInventory],
    sample: Callable[[], list[GpuSample]],
    out: IO[str],
    *,
    rate_hz: float,
    count: int,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Write an inventory line then ``count`` samples at ``rate_hz`` (Hz); returns samples written."""
    inv = inventory()
    out.write(json.dumps({"type": "inventory", "format": FORMAT_VERSION, **inv.model_dump(mode="json")}) + "\n")
    period = 1.0 / rate_hz
    written = 0
    next_tick = clock()
    while written < count:
        gpus = sample()
        out.write(json.dumps(_sample_line(clock(), gpus)) + "\n")
        out.flush()
        written += 1
        next_tick += period
        if written < count:
            sleep(max(0.0, next_tick - clock()))
    return written


def _sample_line(t: float, gpus: list[GpuSample]) -> dict[str, Any]:
    return {"type": "sample", "t": round(t, 3), "gpus": [g.model_dump(mode="json") for g in gpus]}
