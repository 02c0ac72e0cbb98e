"""Each run's event log: typed events (runs.models: LogEvent, MetricEvent, StatusEvent,
TruncatedEvent) numbered in order, appended to the run's events.jsonl, fanned out live.

An event is serialised once, when it is emitted; the file, the websocket and the CLI all
get that same JSON line. The websocket handler only forwards lines in batch frames
(batch_frame, the EventBatch model's shape); it never builds or inspects an event.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..runfolder import RunFolder
from .models import FINAL_STATUSES, EventBatch, LogEvent, MetricEvent, StatusEvent, TruncatedEvent

RunEventModel = LogEvent | MetricEvent | StatusEvent | TruncatedEvent
# Gets each new event as its JSON line, then None once after the run's final status event.
LineSubscriber = Callable[[str | None], None]


def batch_frame(lines: list[str]) -> str:
    """An EventBatch frame from already serialised events (the same JSON EventBatch's
    model_dump_json gives for them, without parsing every event again)."""
    return '{"type":"batch","events":[' + ",".join(lines) + "]}"


def parse_frame(text: str) -> EventBatch:
    """A batch frame as the client reads it, validated against EventBatch."""
    return EventBatch.model_validate_json(text)


class EventLog:
    """Events of every run of one run service, by run id."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir
        self._lock = threading.RLock()
        self._seq: dict[str, int] = {}
        self._files: dict[str, IO[str]] = {}
        self._subscribers: dict[str, list[LineSubscriber]] = {}
        # Runs whose file the disk refused (full, read-only): why. Their events still reach
        # the subscribers; the file ends where the disk stopped it.
        self.write_errors: dict[str, str] = {}

    def _path(self, run_id: str) -> Path:
        return RunFolder(self.runs_dir / run_id).events

    def _append(self, run_id: str, line: str, final: bool) -> None:
        try:
            f = self._files.get(run_id)
            if f is None:
                f = open(self._path(run_id), "a", encoding="utf-8")  # noqa: SIM115 - closed when the run ends
                self._files[run_id] = f
            # Flushed when someone reads the file (replay) and when the run ends, not per line.
            f.write(line + "\n")
            if final:
                del self._files[run_id]
                f.close()
        except OSError as err:
            self._give_up(run_id, err)

    def _give_up(self, run_id: str, err: OSError) -> None:
        """Stop writing a run's file after the disk refused it (no space left, read-only)."""
        self.write_errors[run_id] = f"{err.strerror or err}: {self._path(run_id)}"
        broken = self._files.pop(run_id, None)
        if broken is not None:
            with contextlib.suppress(OSError):  # its buffer cannot be flushed either
                broken.close()

    def emit(self, run_id: str, kind: type[RunEventModel], **fields: Any) -> RunEventModel:
        """Number a new event of type ``kind``, append it to the run's file, hand it to the
        subscribers (from the caller's thread). Returns the event."""
        with self._lock:
            seq = self._seq.get(run_id)
            if seq is None:
                seq = self._count(run_id)
            event = kind(seq=seq, **fields)
            line = event.model_dump_json()
            self._seq[run_id] = seq + 1
            final = isinstance(event, StatusEvent) and event.run.status in FINAL_STATUSES
            if run_id not in self.write_errors:
                self._append(run_id, line, final)
            for callback in list(self._subscribers.get(run_id, [])):
                try:
                    callback(line)
                    if final:
                        callback(None)
                except Exception:  # a broken subscriber must not stop the run
                    self._subscribers[run_id].remove(callback)
            if final:
                self._subscribers.pop(run_id, None)
            return event

    def _count(self, run_id: str) -> int:
        path = self._path(run_id)
        if not path.is_file():
            return 0
        with open(path, "rb") as f:
            return sum(1 for _ in f)

    def replay(self, run_id: str, after: int) -> list[str]:
        """The run's event lines with seq > ``after``, in order."""
        with self._lock:
            if run_id in self._files:
                try:
                    self._files[run_id].flush()
                except OSError as err:
                    self._give_up(run_id, err)
            path = self._path(run_id)
            if not path.is_file():
                return []
            with open(path, encoding="utf-8") as f:
                return [line.rstrip("\n") for i, line in enumerate(f) if i > after]

    def subscribe(self, run_id: str, after: int, callback: LineSubscriber, *, live: bool) -> tuple[list[str], Callable]:
        """Lines so far after ``after`` and, when ``live``, later lines to ``callback``; taken
        under the lock, so no event falls between the replay and the live feed."""
        with self._lock:
            past = self.replay(run_id, after)
            if live:
                self._subscribers.setdefault(run_id, []).append(callback)

        def unsubscribe() -> None:
            with self._lock:
                subs = self._subscribers.get(run_id, [])
                if callback in subs:
                    subs.remove(callback)

        return past, unsubscribe

    def close(self) -> None:
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()


def as_dict_subscriber(callback: Callable[[dict[str, Any]], None]) -> LineSubscriber:
    """A subscriber that wants each event as a dict (the CLI, tests)."""

    def deliver(line: str | None) -> None:
        if line is not None:
            callback(json.loads(line))

    return deliver
