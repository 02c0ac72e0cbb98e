"""Snapshot-shaped test data: what torch.cuda.memory._snapshot() returns, in the shapes
torch has written since 2.1, built here without torch (and without a GPU).

- ``style="2.1"``: trace actions alloc/free only, no time_us, blocks without addresses
  (their address is the segment's plus the sizes before them);
- ``style="2.4"``: alloc/free_requested/free_completed, time_us on every entry, block
  addresses, segment_alloc entries;
each optionally with an ``oom`` entry at the end and allocations made before the trace
began (live in the segments, freed or not inside the trace).
"""

from __future__ import annotations

import pickle
import random
from typing import Any

USER = {"filename": "/home/me/train.py", "line": 42, "name": "forward"}
USER2 = {"filename": "/home/me/train.py", "line": 57, "name": "backward_step"}
TORCH = {"filename": "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"}


def make_snapshot(
    entries: int = 1000,
    *,
    style: str = "2.4",
    oom: bool = False,
    seed: int = 0,
    before: int = 2,
    frames: bool = True,
) -> dict[str, Any]:
    """A one-device snapshot with about ``entries`` trace entries (allocs and frees paired by
    address), ``before`` allocations made before the trace began (one of them freed inside it)."""
    rng = random.Random(seed)
    trace: list[dict[str, Any]] = []
    t = 1_000_000
    base = 0x7F0000000000
    live: dict[int, int] = {}
    next_addr = base + (1 << 20) * (before + 1)
    free_names = ["free"] if style == "2.1" else ["free_requested", "free_completed"]

    def entry(action: str, addr: int, size: int, stack: list[dict]) -> dict[str, Any]:
        nonlocal t
        t += rng.randint(1, 50)
        e: dict[str, Any] = {"action": action, "addr": addr, "size": size, "stream": 0}
        if frames:
            e["frames"] = stack
        if style != "2.1":
            e["time_us"] = t
        return e

    # Allocations from before the trace: block 0 is freed in the trace, block 1 is not.
    pre = [(base + i * (1 << 20), 512 * (i + 1)) for i in range(before)]
    if before:
        trace.append(entry(free_names[-1], pre[0][0], pre[0][1], [USER]))
    while len(trace) < entries - (1 if oom else 0):
        if live and (rng.random() < 0.5 or len(live) > 2000):
            addr = rng.choice(list(live))
            size = live.pop(addr)
            for name in free_names:
                trace.append(entry(name, addr, size, [TORCH, USER2]))
        else:
            size = rng.choice([512, 4096, 65536, 1 << 20, 3 << 20])
            addr = next_addr
            next_addr += size
            live[addr] = size
            trace.append(entry("alloc", addr, size, [TORCH, USER if rng.random() < 0.7 else USER2]))
    if oom:
        e = entry("oom", 0, 8 << 30, [TORCH, USER])
        e["device_free"] = 1 << 30
        trace.append(e)
    blocks = []
    for i, (addr, size) in enumerate(pre):
        block = {
            "size": size,
            "requested_size": size,
            "state": "inactive" if i == 0 else "active_allocated",
            "frames": [USER],
        }
        if style != "2.1":
            block["address"] = addr
        blocks.append(block)
    segments = (
        [
            {
                "device": 0,
                "address": base,
                "total_size": sum(s for _, s in pre),
                "stream": 0,
                "segment_type": "large",
                "segment_pool_id": (0, 0),
                "blocks": blocks,
            }
        ]
        if before
        else []
    )
    return {"segments": segments, "device_traces": [trace], "allocator_settings": {"expandable_segments": False}}


def expected_live_at_end(snapshot: dict[str, Any]) -> int:
    """Bytes the trace leaves allocated: allocs never freed, plus pre-trace blocks still held."""
    trace = snapshot["device_traces"][0]
    freed_action = "free" if any(e["action"] == "free" for e in trace) else "free_completed"
    live: dict[int, int] = {}
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
        elif e["action"] == freed_action:
            live.pop(e["addr"], None)
    held = sum(b["size"] for s in snapshot["segments"] for b in s["blocks"] if b["state"] == "active_allocated")
    return sum(live.values()) + held


def dump(snapshot: dict[str, Any]) -> bytes:
    return pickle.dumps(snapshot, protocol=4)
