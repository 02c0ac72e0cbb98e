"""One telemetry sampler per server, fanned out to every subscriber.

The sampler reads in a worker thread (never on the event loop), serialises each
reading once, keeps a ring of recent readings for new subscribers, and sends each
subscriber the readings due at its own rate. It runs at the fastest rate any active
subscriber asked for, clamped by the server, and stops when nobody listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from .models import TelemetrySample

log = logging.getLogger(__name__)

MIN_HZ = 0.1


class Subscription:
    """A subscriber's place in the fan-out: its rate (Hz), pause state and sender."""

    def __init__(self, sampler: TelemetrySampler, send: Callable[[str], None], hz: float) -> None:
        self._sampler = sampler
        self._send = send
        self.hz = hz
        self.paused = False
        self.next_due = -math.inf
        self.closed = False

    def set_rate(self, hz: float) -> float:
        """Ask for a new rate (Hz); returns the rate granted after the server's clamp."""
        self.hz = self._sampler.clamp(hz)
        self.next_due = -math.inf
        self._sampler.wake()
        return self.hz

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        self.next_due = -math.inf
        self._sampler.wake()

    def close(self) -> None:
        self.closed = True
        self._sampler.unsubscribe(self)

    def offer(self, t: float, text: str, slack: float) -> None:
        if self.paused or self.closed or t < self.next_due - slack:
            return
        period = 1.0 / self.hz
        # Keep the cadence even when a reading comes a little early or late.
        self.next_due = t + period if self.next_due == -math.inf else max(self.next_due + period, t + period / 2)
        try:
            self._send(text)
        except Exception:  # a dead socket must not stop the others
            log.debug("telemetry subscriber send failed; dropping it", exc_info=True)
            self.close()


class TelemetrySampler:
    """Samples ``read()`` in ``executor`` at the rate its subscribers need."""

    def __init__(
        self,
        read: Callable[[], TelemetrySample],
        executor: Executor,
        *,
        default_hz: float = 4.0,
        max_hz: float = 20.0,
        history_s: float = 120.0,
    ) -> None:
        self._read = read
        self._executor = executor
        self.max_hz = max(MIN_HZ, max_hz)
        self.default_hz = min(max(default_hz, MIN_HZ), self.max_hz)
        self.history_s = history_s
        self._subs: list[Subscription] = []
        self._history: deque[tuple[float, dict[str, Any]]] = deque()
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self.readings = 0

    # -- subscribers -------------------------------------------------------------------

    def clamp(self, hz: float | None) -> float:
        """A rate (Hz) within [MIN_HZ, max_hz]; None gives the default."""
        if hz is None or not math.isfinite(hz):
            return self.default_hz
        return min(max(hz, MIN_HZ), self.max_hz)

    def subscribe(self, send: Callable[[str], None], hz: float | None = None) -> Subscription:
        """Add a subscriber; ``send`` gets each due reading as JSON text. Call on the event loop."""
        sub = Subscription(self, send, self.clamp(hz))
        self._subs.append(sub)
        self.wake()
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def rate(self) -> float:
        """The sampler's current rate (Hz): the fastest active subscriber's."""
        active = [s.hz for s in self._subs if not s.paused]
        return max(active) if active else 0.0

    def history(self) -> list[dict[str, Any]]:
        """Readings of the last history_s seconds, oldest first."""
        return [sample for _, sample in self._history]

    # -- the loop ------------------------------------------------------------------------

    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()
        if not self.running and self.rate() > 0:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop sampling now (server shutdown); subscribers stay attached but get nothing."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _read_json(self) -> tuple[float, dict[str, Any], str]:
        # The frame is the TelemetrySample model itself (type "sample"); history keeps it as a dict.
        text = self._read().model_dump_json()
        sample = json.loads(text)
        return sample["t"], sample, text

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        try:
            while (hz := self.rate()) > 0:
                started = loop.time()
                try:
                    t, sample, text = await loop.run_in_executor(self._executor, self._read_json)
                except Exception:
                    log.exception("telemetry reading failed; retrying at the next tick")
                else:
                    self.readings += 1
                    self._remember(t, sample)
                    slack = 0.25 / hz
                    for sub in list(self._subs):
                        sub.offer(t, text, slack)
                await self._sleep_until(started)
        finally:
            self._wake = None

    async def _sleep_until(self, started: float) -> None:
        """Wait one period of the current rate after ``started``; a rate change re-times the wait."""
        loop = asyncio.get_running_loop()
        assert self._wake is not None
        while (hz := self.rate()) > 0:
            self._wake.clear()
            delay = started + 1.0 / hz - loop.time()
            if delay <= 0:
                return
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except TimeoutError:
                return

    def _remember(self, t: float, sample: dict[str, Any]) -> None:
        self._history.append((t, sample))
        while self._history and self._history[0][0] < t - self.history_s:
            self._history.popleft()
