"""Recordings of NVML sessions: write them from any backend, replay them as a backend.

A recording is JSON lines: one ``{"type": "inventory", ...GpuInventory}`` line (its
``recording`` field says whether the recording is synthetic, and at what rate it was
taken), then ``{"type": "sample", "t": <unix s>, "gpus": [...GpuSample]}`` lines. Replay
serves the samples in order, looping, so a 2-GPU or 8-GPU machine can be shown (and
tested) on a laptop: one per reading, or (paced, as the server does) the sample due at
the time elapsed since the replay began, so a 2 Hz recording plays at its own speed
whatever the reading rate. Every reading says its recording time (``position_s``).
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from .models import GpuInventory, GpuSample, RecordingInfo
from .nvml_backend import GpuUnavailable

FORMAT_VERSION = 1


class RecordingError(ValueError):
    """A recording file is missing or malformed; the message names the file and line."""


class ReplayBackend:
    """Serves a recording's facts and, one per call, its samples (looping)."""

    source = "replay"

    def __init__(self, path: str | Path, *, paced: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(path)
        self.paced = paced
        self._clock = clock
        self._inventory: GpuInventory | None = None
        self._samples: list[list[GpuSample]] = []
        self._offsets: list[float] = []  # each sample's time since the first one (s)
        self._cycle_s = 0.0
        self._next = 0
        self._started: float | None = None
        self._position_s: float | None = None
        self._lock = threading.Lock()

    @property
    def position_s(self) -> float | None:
        """Recording time of the last sample served since the replay began, across passes (s)."""
        return self._position_s

    def start(self) -> None:
        """Read and check the recording once; a bad file makes the GPUs unavailable, with why."""
        with self._lock:
            if self._inventory is None:
                try:
                    self._inventory, self._samples, times = _read_recording(self.path)
                except RecordingError as err:
                    raise GpuUnavailable(f"GPU replay is configured but unusable: {err}") from err
                self._offsets = [t - times[0] for t in times] if times else []
                self._cycle_s = (self._inventory.recording.cycle_s or 0.0) if self._inventory.recording else 0.0

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
            n = len(self._samples)
            if self.paced and self._cycle_s > 0:
                now = self._clock()
                if self._started is None:
                    self._started = now
                elapsed = now - self._started
                passes = math.floor(elapsed / self._cycle_s)
                into = elapsed - passes * self._cycle_s
                i = max(0, bisect.bisect_right(self._offsets, into) - 1)
            else:
                passes, i = divmod(self._next, n)
                self._next += 1
            self._position_s = round(passes * self._cycle_s + self._offsets[i], 3)
            samples = self._samples[i]
        return [s.model_copy(deep=True) for s in samples]


def load_recording(path: Path) -> tuple[GpuInventory, list[list[GpuSample]]]:
    """Read and validate a recording; raises RecordingError naming the bad line."""
    inventory, samples, _ = _read_recording(path)
    return inventory, samples


def _read_recording(path: Path) -> tuple[GpuInventory, list[list[GpuSample]], list[float]]:
    """The inventory (its ``recording`` filled in), the samples and their times (unix s)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise RecordingError(f"Cannot read GPU recording {path}: {err.strerror}") from err
    inventory: GpuInventory | None = None
    samples: list[list[GpuSample]] = []
    times: list[float] = []
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
                t = record.get("t")
                if not isinstance(t, int | float) or not math.isfinite(t) or (times and t < times[-1]):
                    t = (times[-1] + 1.0) if times else 0.0  # no usable time: one second after the last
                times.append(float(t))
            else:
                raise RecordingError(f"{path}:{lineno}: unknown record type {kind!r}")
        except (json.JSONDecodeError, AttributeError, ValidationError) as err:
            raise RecordingError(f"{path}:{lineno}: not a valid recording line ({err})") from err
    if inventory is None:
        raise RecordingError(f"{path}: no inventory line; record one with `gpudojo probe --record FILE`")
    info = inventory.recording or RecordingInfo()
    steps = sorted(b - a for a, b in itertools.pairwise(times) if b > a)
    period = steps[len(steps) // 2] if steps else (1.0 / info.rate_hz if info.rate_hz else 1.0)
    duration = times[-1] - times[0] if times else 0.0
    inventory.recording = info.model_copy(
        update={
            "rate_hz": info.rate_hz or round(1.0 / period, 3),
            "duration_s": round(duration, 3),
            "cycle_s": round(duration + period, 3),
        }
    )
    return inventory, samples, times


def record(
    inventory: Callable[[], GpuInventory],
    sample: Callable[[], list[GpuSample]],
    out: IO[str],
    *,
    rate_hz: float,
    count: int,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    synthetic: bool = False,
    note: str | None = None,
) -> int:
    """Write an inventory line then ``count`` samples at ``rate_hz`` (Hz); returns samples written.

    The inventory's ``recording`` header says the rate, and whether the samples are synthetic
    (re-recording a synthetic replay stays synthetic).
    """
    inv = inventory()
    was_synthetic = bool(inv.recording and inv.recording.synthetic)
    header = RecordingInfo(synthetic=synthetic or was_synthetic, note=note, rate_hz=rate_hz)
    inv = inv.model_copy(update={"recording": header})
    line = {"type": "inventory", "format": FORMAT_VERSION, **inv.model_dump(mode="json", exclude_none=True)}
    out.write(json.dumps(line, separators=(",", ":")) + "\n")
    period = 1.0 / rate_hz
    written = 0
    next_tick = clock()
    while written < count:
        gpus = sample()
        out.write(json.dumps(_sample_line(clock(), gpus), separators=(",", ":")) + "\n")
        out.flush()
        written += 1
        next_tick += period
        if written < count:
            sleep(max(0.0, next_tick - clock()))
    return written


def _sample_line(t: float, gpus: list[GpuSample]) -> dict[str, Any]:
    # Absent fields read back as their defaults: leaving them out keeps recordings small.
    return {
        "type": "sample",
        "t": round(t, 3),
        "gpus": [g.model_dump(mode="json", exclude_defaults=True) for g in gpus],
    }
