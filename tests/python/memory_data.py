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
import struct
from collections.abc import Iterator
from pathlib import Path
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


def make_long_frame_snapshot(chars: int, lines: int = 4, entries: int = 2000) -> dict[str, Any]:
    """make_snapshot's, with every user frame replaced by one of ``lines`` frames (different
    lines) whose filename is one string of ``chars`` characters: the pickle holds it once
    (memoised), an analysis that copies it per frame ``lines`` times."""
    snapshot = make_snapshot(entries, seed=1)
    filename = "/home/me/" + "x" * chars + ".py"
    frames = [{"filename": filename, "line": 10 + i, "name": "forward"} for i in range(lines)]
    for i, e in enumerate(snapshot["device_traces"][0]):
        e["frames"] = [TORCH, frames[i % lines]]
    for segment in snapshot["segments"]:
        for block in segment["blocks"]:
            block["frames"] = [frames[0]]
    return snapshot


def real_trace(entries: int, *, depth: int = 20, distinct_frames: int = 200, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Trace entries shaped like a real training job's (what the benchmarks open): each carries
    a ``depth``-deep stack (innermost first: C++ allocator frames, torch's Python frames, then
    the user's) drawn from ``distinct_frames`` frame dicts that entries share, as torch's
    snapshot shares them; alloc / free_requested / free_completed with time_us, and the
    compile_context and user_metadata torch 2.5+ writes."""
    rng = random.Random(seed)
    n_cpp, n_user = 10, max(8, distinct_frames // 5)
    n_lib = max(depth, distinct_frames - n_cpp - n_user)
    cpp = [{"filename": "??", "line": 0, "name": f"c10::cuda::CUDACachingAllocator::malloc_{i}"} for i in range(n_cpp)]
    lib = [
        {"filename": f"/opt/conda/lib/python3.11/site-packages/torch/nn/modules/mod_{i}.py", "line": i, "name": f"f{i}"}
        for i in range(n_lib)
    ]
    user = [
        {"filename": f"/home/me/project/model_{i % 5}.py", "line": 10 + i, "name": f"block_{i}"} for i in range(n_user)
    ]
    stacks = [rng.sample(cpp, 3) + rng.sample(lib, depth - 7) + rng.sample(user, 4) for _ in range(400)]
    live: dict[int, int] = {}
    t = 1_700_000_000_000_000
    next_addr = 0x7F0000000000
    made = 0

    def entry(action: str, addr: int, size: int) -> dict[str, Any]:
        frames = rng.choice(stacks)
        return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": frames,
                "compile_context": "N/A", "user_metadata": ""}  # fmt: skip

    while made < entries:
        t += rng.randint(1, 20)
        if live and (rng.random() < 0.5 or len(live) > 3000):
            addr = next(iter(live))
            size = live.pop(addr)
            for action in ("free_requested", "free_completed")[: entries - made]:
                yield entry(action, addr, size)
                made += 1
        else:
            size = rng.choice([512, 4096, 65536, 1 << 20, 3 << 20, 12_345_600])
            addr = next_addr
            next_addr += size + 512
            live[addr] = size
            yield entry("alloc", addr, size)
            made += 1


def make_real_snapshot(entries: int, **shape: Any) -> dict[str, Any]:
    """real_trace as a snapshot dict (small sizes: every entry is a Python object)."""
    trace = [dict(e, frames=list(e["frames"])) for e in real_trace(entries, **shape)]
    return {"segments": [], "device_traces": [trace], "allocator_settings": {"expandable_segments": False}}


class _PickleWriter:
    """Just enough of pickle protocol 4 to stream a snapshot: strings, ints, dicts and lists,
    with MEMOIZE on every string and container as pickle.dump does, and shared objects
    (strings, frame dicts) written once and then referred to."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x04")  # PROTO 4
        self.count = 0  # the memo index the next MEMOIZE takes
        self.memo: dict[Any, int] = {}

    def memoize(self, key: Any = None) -> None:
        self.out.append(0x94)
        if key is not None:
            self.memo[key] = self.count
        self.count += 1

    def ref(self, index: int) -> None:
        self.out.extend(b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index))

    def string(self, s: str) -> None:
        if ("s", s) in self.memo:
            return self.ref(self.memo[("s", s)])
        raw = s.encode()
        self.out.extend((b"\x8c" + bytes([len(raw)])) if len(raw) < 256 else (b"X" + struct.pack("<I", len(raw))))
        self.out.extend(raw)
        self.memoize(("s", s))

    def integer(self, v: int) -> None:
        if 0 <= v < 256:
            self.out.extend(b"K" + bytes([v]))
        elif -(2**31) <= v < 2**31:
            self.out.extend(b"J" + struct.pack("<i", v))
        else:
            raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
            self.out.extend(b"\x8a" + bytes([len(raw)]) + raw)

    def value(self, v: Any) -> None:
        if isinstance(v, str):
            self.string(v)
        elif isinstance(v, int):
            self.integer(v)
        elif isinstance(v, dict):
            # Frame dicts outlive the writer's use of them (shared): referred to by id. Entry
            # dicts are new each time (a freed one's id comes back): never looked up.
            shared = "filename" in v
            if shared and ("d", id(v)) in self.memo:
                return self.ref(self.memo[("d", id(v))])
            self.out.extend(b"}")
            self.memoize(("d", id(v)) if shared else None)
            self.out.extend(b"(")
            for k, item in v.items():
                self.string(k)
                self.value(item)
            self.out.extend(b"u")  # SETITEMS
        elif isinstance(v, list):
            self.out.extend(b"]")
            self.memoize()
            if v:
                self.out.extend(b"(")
                for item in v:
                    self.value(item)
                self.out.extend(b"e")  # APPENDS
        else:
            raise TypeError(type(v))


def write_real_snapshot(path: Path, entries: int, **shape: Any) -> int:
    """real_trace pickled straight to ``path`` (protocol 4, as torch's _dump_snapshot writes
    it), one entry at a time, so 10M entries need no more memory than 10k; returns the bytes
    written. pickle.load gives back exactly what make_real_snapshot builds."""
    w = _PickleWriter()
    stacks: dict[int, bytes] = {}  # a stack's bytes once its frames are all in the memo
    written = 0
    with open(path, "wb") as f:
        w.out.extend(b"}")
        w.memoize()
        w.out.extend(b"(")
        w.string("segments")
        w.value([])
        w.string("device_traces")
        w.out.extend(b"]")
        w.memoize()
        w.out.extend(b"]")  # device 0's trace
        w.memoize()
        batch = 0
        for e in real_trace(entries, **shape):
            if batch == 0:
                w.out.extend(b"(")
            w.out.extend(b"}")
            w.memoize()
            w.out.extend(b"(")
            for k, v in e.items():
                w.string(k)
                if k != "frames":
                    w.value(v)
                elif id(v) in stacks:  # the same bytes every time: one MEMOIZE (the list's)
                    w.out.extend(stacks[id(v)])
                    w.count += 1
                else:
                    known = all(("d", id(frame)) in w.memo for frame in v)
                    start = len(w.out)
                    w.value(v)
                    if known:
                        stacks[id(v)] = bytes(w.out[start:])
            w.out.extend(b"u")
            batch += 1
            if batch == 1000:
                w.out.extend(b"e")
                batch = 0
                f.write(w.out)
                written += len(w.out)
                w.out.clear()
        if batch:
            w.out.extend(b"e")
        w.out.extend(b"a")  # the trace into device_traces
        w.string("allocator_settings")
        w.value({"expandable_segments": 0})
        w.out.extend(b"u.")  # SETITEMS on the snapshot dict, STOP
        f.write(w.out)
        written += len(w.out)
    return written
