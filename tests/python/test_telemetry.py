"""The shared sampler: one reading per tick whatever the number of subscribers."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from gpudojo.gpu.models import HostSample, TelemetrySample
from gpudojo.gpu.telemetry import TelemetrySampler


class CountingRead:
    def __init__(self):
        self.calls = 0
        self.threads = set()

    def __call__(self) -> TelemetrySample:
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        return TelemetrySample(
            t=time.time(), host=HostSample(cpu_pct=1.0, memory_used_bytes=1, memory_available_bytes=2)
        )


@pytest.fixture
def executor():
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="probe") as ex:
        yield ex


async def test_many_subscribers_share_one_reading_per_tick(executor):
    read = CountingRead()
    sampler = TelemetrySampler(read, executor, default_hz=10, max_hz=20)
    inboxes = [[] for _ in range(20)]
    subs = [sampler.subscribe(inbox.append, 10) for inbox in inboxes]
    await asyncio.sleep(1.05)
    # ~10 readings in a second, shared by 20 subscribers (not 200 readings).
    assert 8 <= read.calls <= 13
    assert all(len(inbox) == len(inboxes[0]) for inbox in inboxes)
    assert json.loads(inboxes[0][0])["type"] == "sample"
    assert read.threads == {"probe_0"}  # never on the event loop's thread
    for sub in subs:
        sub.close()
    await asyncio.sleep(0.3)
    assert not sampler.running  # stops when nobody listens
    calls = read.calls
    await asyncio.sleep(0.3)
    assert read.calls == calls


async def test_each_subscriber_gets_its_own_rate(executor):
    sampler = TelemetrySampler(CountingRead(), executor, default_hz=4, max_hz=20)
    fast, slow = [], []
    sampler.subscribe(fast.append, 20)
    sampler.subscribe(slow.append, 5)
    await asyncio.sleep(2.02)
    await sampler.stop()
    assert 34 <= len(fast) <= 42
    assert 9 <= len(slow) <= 12


async def test_rate_is_clamped_by_the_server(executor):
    sampler = TelemetrySampler(CountingRead(), executor, default_hz=4, max_hz=5)
    sub = sampler.subscribe(lambda text: None, 1000)
    assert sub.hz == 5
    assert sub.set_rate(0.0001) == pytest.approx(0.1)
    assert sampler.clamp(None) == 4
    assert sampler.clamp(float("nan")) == 4
    await sampler.stop()


async def test_pause_stops_delivery_and_resume_restarts_it(executor):
    read = CountingRead()
    sampler = TelemetrySampler(read, executor, default_hz=10, max_hz=20)
    inbox = []
    sub = sampler.subscribe(inbox.append)
    await asyncio.sleep(0.35)
    sub.pause()
    await asyncio.sleep(0.15)
    got = len(inbox)
    assert got >= 2
    await asyncio.sleep(0.4)
    assert len(inbox) == got
    assert not sampler.running  # the only subscriber paused: nothing to sample for
    sub.resume()
    await asyncio.sleep(0.35)
    assert len(inbox) > got
    await sampler.stop()


async def test_history_keeps_the_recent_window_for_new_subscribers(executor):
    sampler = TelemetrySampler(CountingRead(), executor, default_hz=20, max_hz=20, history_s=0.5)
    sub = sampler.subscribe(lambda text: None)
    await asyncio.sleep(1.0)
    sub.close()
    history = sampler.history()
    assert 7 <= len(history) <= 12
    assert history[-1]["t"] - history[0]["t"] <= 0.5
    await sampler.stop()


async def test_a_failing_subscriber_is_dropped_and_others_continue(executor):
    sampler = TelemetrySampler(CountingRead(), executor, default_hz=10, max_hz=20)

    def broken(text):
        raise RuntimeError("socket gone")

    good = []
    sampler.subscribe(broken)
    sampler.subscribe(good.append)
    await asyncio.sleep(0.35)
    assert sampler.subscribers == 1 and len(good) >= 2
    await sampler.stop()


async def test_a_failing_reading_does_not_stop_the_sampler(executor):
    calls = [0]
    ok = CountingRead()

    def flaky():
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("GPU fell off the bus")
        return ok()

    sampler = TelemetrySampler(flaky, executor, default_hz=10, max_hz=20)
    inbox = []
    sampler.subscribe(inbox.append)
    await asyncio.sleep(0.4)
    assert inbox and sampler.running
    await sampler.stop()
