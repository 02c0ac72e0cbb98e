"""Reading memory captures: CUDA snapshots (pickles from torch.cuda.memory._dump_snapshot,
torch 2.1 on) through a restricted unpickler, and gpudojo's CPU profiler captures (JSON).

Both become one list of allocation intervals. Plain Python and NumPy; no torch.
"""

from __future__ import annotations

import io
import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..clipping import MAX_TEXT_CHARS, clip_text

# Frames from these places are the framework's, not the learner's.
_LIBRARY_MARKERS = ("/torch/", "/site-packages/", "/dist-packages/", "<frozen", "/lib/python3", "??")
CPU_FORMAT = "gpudojo-cpu-memory/1"
# A CPU capture is JSON, parsed whole (about 10x its size in memory): larger ones are refused
# from their size alone (bytes). labkit's captures of the course's labs are a few MB.
MAX_CPU_CAPTURE_BYTES = 256 * 1024**2
# labkit's phases sidecar is a few KB; it is read whole, and its names become categories.
MAX_SIDECAR_BYTES = 4 * 1024**2


class CaptureTooLarge(ValueError):
    """A capture over the size this reader can take in (it is refused before it is read)."""


class RefusedPickle(ValueError):
    """A pickle that asks for anything but plain containers and scalars."""


class _PlainUnpickler(pickle.Unpickler):
    """Builds only dicts, lists, tuples, strings, bytes, numbers, booleans and None: any
    class or function a pickle names is refused before it is looked up, so a crafted file
    cannot run code."""

    def find_class(self, module: str, name: str) -> Any:
        raise RefusedPickle(f"refused {module}.{name}: a memory snapshot holds only plain containers and scalars")

    def persistent_load(self, pid: Any) -> Any:
        raise RefusedPickle("refused a persistent id: a memory snapshot has none")


def load_pickle(data: bytes | BinaryIO) -> Any:
    """Plain data from a pickle's bytes, or from an open file: read as far as the pickle goes,
    so a file that is not one stops at its first bad byte instead of being read whole."""
    try:
        return _PlainUnpickler(io.BytesIO(data) if isinstance(data, bytes | bytearray) else data).load()
    except RefusedPickle:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError) as err:
        raise RefusedPickle(f"not a readable pickle: {type(err).__name__}: {err}") from err


@dataclass
class Intervals:
    """Allocations as parallel lists (the analysis turns them into arrays)."""

    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    category: list[int] = field(default_factory=list)
    frame: list[int] = field(default_factory=list)
    addr: list[int] = field(default_factory=list)

    def add(self, start: float, end: float, size: int, category: int, frame: int, addr: int) -> None:
        self.start.append(start)
        self.end.append(end)
        self.size.append(size)
        self.category.append(category)
        self.frame.append(frame)
        self.addr.append(addr)


@dataclass
class Parsed:
    kind: str
    axis: str
    t_start: float
    t_end: float
    entries: int
    intervals: Intervals
    categories: list[str]
    category_source: str
    frames: list[dict[str, Any]]
    ooms: list[dict[str, Any]]
    context: dict[str, Any]
    notes: list[str]


class _FrameTable:
    """De-duplicated user frames: the innermost frame outside torch and the libraries."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self._index: dict[tuple, int] = {}
        self._library: dict[str, bool] = {}

    def user_frame(self, frames: Any) -> int:
        if not isinstance(frames, list):
            return -1
        library = self._library
        for f in frames:
            if not isinstance(f, dict):
                continue
            filename = f.get("filename") or ""
            is_library = library.get(filename)
            if is_library is None:
                is_library = library[filename] = not filename or any(m in filename for m in _LIBRARY_MARKERS)
            if is_library:
                continue
            # Kept clipped: the table goes into the summary that every query of the capture loads.
            key = (clip_text(str(filename)), f.get("line") or 0, clip_text(str(f.get("name") or "")))
            index = self._index.get(key)
            if index is None:
                index = self._index[key] = len(self.frames)
                self.frames.append({"filename": key[0], "line": int(key[1]), "name": key[2]})
            return index
        return -1


def _phase_category(phases: list[tuple[float, str]], names: list[str]):
    """A function time -> category index from labkit's phase marks [(t_us, name)]."""
    import bisect

    times = [t for t, _ in phases]
    index = {name: i for i, name in enumerate(names)}

    def category(t: float) -> int:
        at = bisect.bisect_right(times, t) - 1
        return index[phases[at][1]] if at >= 0 else index["before the first phase"]

    return category


def _categories(sidecar: dict[str, Any], timed: bool) -> tuple[list[tuple[float, str]], list[str], str, list[str]]:
    """labkit's phase marks (t_us, name) sorted, the category names, where categories come
    from, and the notes a CUDA snapshot's analysis carries. Phases need a time axis."""
    phases = sorted((float(t), clip_text(str(name))) for t, name in sidecar.get("phases", [])) if timed else []
    notes: list[str] = []
    if phases:
        names = ["before the first phase", *dict.fromkeys(name for _, name in phases)]
        source = "phases"
    else:
        names, source = ["allocations"], "none"
        notes.append("CUDA snapshots carry no categories; mark phases with labkit.memory_phase() to group by phase.")
    if not timed:
        notes.append("This snapshot has no time_us: the axis is the event index, not time.")
    return phases, names, source, notes


def parse_cuda_snapshot(snapshot: Any, device: int | None = None, sidecar: dict[str, Any] | None = None) -> Parsed:
    """Allocation intervals of one device's trace, as pytorch.org/memory_viz pairs them:
    an alloc with the free of the same address (free_completed, else free_requested, else
    the old ``free``); a free without its alloc was allocated before the trace began; an
    alloc never freed, and every block the snapshot's segments hold as allocated that the
    trace never saw, is live to the end."""
    if not isinstance(snapshot, dict) or "device_traces" not in snapshot:
        raise RefusedPickle("not a CUDA memory snapshot: no device_traces (make one with _dump_snapshot)")
    traces = snapshot.get("device_traces") or []
    segments = snapshot.get("segments") or []
    # A pickle of the wrong shape is refused, not read as an empty timeline.
    if not isinstance(traces, list) or any(t is not None and not isinstance(t, list) for t in traces):
        raise ValueError("not a CUDA memory snapshot: device_traces is not a list of per-device lists")
    if not isinstance(segments, list) or any(not isinstance(s, dict) for s in segments):
        raise ValueError("not a CUDA memory snapshot: segments is not a list of dicts")
    if device is None:
        device = max(range(len(traces)), key=lambda d: len(traces[d] or []), default=0)
    trace = list(traces[device] or []) if device < len(traces) else []
    strays = sum(1 for e in trace if not isinstance(e, dict))
    if strays:
        raise ValueError(f"not a CUDA memory snapshot: {strays} of the {len(trace)} trace entries are not dicts")
    timed = bool(trace) and all(isinstance(e, dict) and "time_us" in e for e in trace)
    axis = "time_us" if timed else "event_index"
    stamp = (lambda i, e: float(e["time_us"])) if timed else (lambda i, e: float(i))
    actions = {e.get("action") for e in trace if isinstance(e, dict)}
    free_action = (
        "free_completed"
        if "free_completed" in actions
        else ("free_requested" if "free_requested" in actions else "free")
    )
    sidecar = sidecar or {}
    phases, names, category_source, notes = _categories(sidecar, timed)
    category_of = _phase_category(phases, names) if phases else (lambda t: 0)
    frames = _FrameTable()
    intervals = Intervals()
    add = intervals.add
    user_frame = frames.user_frame
    live: dict[int, tuple[float, int, int, int]] = {}
    seen_alloc: set[int] = set()
    ooms: list[dict[str, Any]] = []
    t_first = stamp(0, trace[0]) if trace else 0.0
    t_last = stamp(len(trace) - 1, trace[-1]) if trace else 1.0
    one_category = category_source == "none"
    # The hot loop of a 1M-entry snapshot: plain locals, no per-entry helpers it can avoid.
    for i, e in enumerate(trace):
        if not isinstance(e, dict):
            continue
        action = e.get("action")
        if action == "alloc":
            t = float(e["time_us"]) if timed else float(i)
            addr = e.get("addr") or 0
            live[addr] = (t, e.get("size") or 0, 0 if one_category else category_of(t), user_frame(e.get("frames")))
            seen_alloc.add(addr)
        elif action == free_action:
            t = float(e["time_us"]) if timed else float(i)
            addr = e.get("addr") or 0
            known = live.pop(addr, None)
            if known is not None:
                add(known[0], t, known[1], known[2], known[3], addr)
            else:
                add(
                    t_first,
                    t,
                    e.get("size") or 0,
                    0 if one_category else category_of(t_first),
                    user_frame(e.get("frames")),
                    addr,
                )
        elif action == "oom":
            t = float(e["time_us"]) if timed else float(i)
            ooms.append(
                {
                    "t_us": t,
                    "requested_bytes": int(e.get("size") or 0),
                    "device_free_bytes": int(e["device_free"]) if "device_free" in e else None,
                }
            )
    # Still allocated when the trace ends: live through its last entry (an OOM there sees them).
    t_last += 1.0
    for addr, (start, size, cat, frame) in live.items():
        intervals.add(start, t_last, size, cat, frame, addr)
    # Blocks allocated before the trace and never freed within it.
    for segment in segments:
        if segment.get("device", device) != device:
            continue
        offset = int(segment.get("address", 0) or 0)
        for block in segment.get("blocks") or []:
            if not isinstance(block, dict):
                raise ValueError("not a CUDA memory snapshot: a segment's blocks are not dicts")
            addr = int(block.get("address", offset))
            offset = addr + int(block.get("size", 0) or 0)
            if block.get("state") == "active_allocated" and addr not in seen_alloc and addr not in live:
                intervals.add(
                    t_first,
                    t_last,
                    int(block.get("requested_size", block.get("size", 0)) or 0),
                    category_of(t_first),
                    frames.user_frame(block.get("frames")),
                    addr,
                )
    if t_last <= t_first:
        t_last = t_first + 1.0
    return Parsed(
        kind="cuda-snapshot",
        axis=axis,
        t_start=t_first,
        t_end=t_last,
        entries=len(trace),
        intervals=intervals,
        categories=names,
        category_source=category_source,
        frames=frames.frames,
        ooms=ooms,
        context=dict(sidecar.get("context", {})),
        notes=notes,
    )


def parse_cpu_capture(doc: Any) -> Parsed:
    """gpudojo's CPU capture (labkit writes it from the profiler's memory timeline):
    {"format", "categories", "events": [[t_us, "alloc"|"free", key, bytes, category]], ...}."""
    if not isinstance(doc, dict) or doc.get("format") != CPU_FORMAT:
        raise ValueError(f"not a gpudojo CPU memory capture (format {CPU_FORMAT})")
    names = [str(c) for c in doc.get("categories", [])] or ["unknown"]
    intervals = Intervals()
    live: dict[Any, tuple[float, int, int]] = {}
    events = doc.get("events", [])
    times = [float(e[0]) for e in events] or [0.0, 1.0]
    t_first, t_last = min(times), max(times)
    for t, action, key, size, cat in events:
        key = tuple(key) if isinstance(key, list) else key
        if action == "alloc":
            live[key] = (float(t), int(size), int(cat))
        elif action == "free":
            if key in live:
                start, size0, cat0 = live.pop(key)
                intervals.add(start, float(t), size0, cat0, -1, hash(key) & 0xFFFFFFFF)
            else:
                intervals.add(t_first, float(t), int(size), int(cat), -1, hash(key) & 0xFFFFFFFF)
    t_last += 1.0  # still allocated at the end: live through the last event
    for key, (start, size, cat) in live.items():
        intervals.add(start, t_last, size, cat, -1, hash(key) & 0xFFFFFFFF)
    if t_last <= t_first:
        t_last = t_first + 1.0
    notes = ["CPU captures come from the PyTorch profiler's memory timeline: categories, but no stacks."]
    if doc.get("budget_bytes"):
        notes.append(f"This run checked a simulated memory budget of {int(doc['budget_bytes'])} bytes (no real OOM).")
    ooms = [dict(o) for o in doc.get("ooms", [])]
    return Parsed(
        kind="cpu-profiler",
        axis="time_us",
        t_start=t_first,
        t_end=t_last,
        entries=len(events),
        intervals=intervals,
        categories=names,
        category_source="profiler",
        frames=[],
        ooms=ooms,
        context=dict(doc.get("context", {})),
        notes=notes,
    )


def parse_cuda_scan(sc: Any, device: int | None = None, sidecar: dict[str, Any] | None = None) -> Parsed:
    """The same intervals as parse_cuda_snapshot, from snapshot_scan's tables (no Python
    object per entry). Raises ScanStopped where the scan's shape is not the one it knows."""
    import numpy as np

    from ..worker import snapshot_scan as ss

    def slot(d: int, name: str, kind: int) -> int | None:
        if not sc.dict_keys[d] & ss.BIT[name]:
            return None
        at = dict(ss.KEYS)[name]
        return int(sc.dict_val[d, at]) if sc.dict_kind[d, at] == kind else None

    root = sc.root_val if sc.root_kind == ss.K_DICT else None
    traces_list = slot(root, "device_traces", ss.K_LIST) if root is not None else None
    if traces_list is None:
        raise RefusedPickle("not a CUDA memory snapshot: no device_traces (make one with _dump_snapshot)")
    kinds, lists = sc.children(traces_list)
    if (kinds != ss.K_LIST).any():
        raise ss.ScanStopped("device_traces holds something other than lists")
    counts = [int(sc.list_count[i]) for i in lists]
    if device is None:
        device = max(range(len(counts)), key=lambda d: counts[d], default=0)
    no_trace = (np.zeros(0), np.zeros(0, np.int64))  # device_traces: [] (nothing was recorded)
    trace_kinds, entries = sc.children(int(lists[device])) if device < len(lists) else no_trace
    if len(entries) != (counts[device] if device < len(counts) else 0) or (trace_kinds != ss.K_DICT).any():
        raise ss.ScanStopped("a trace entry that is not a dict")
    if (sc.dict_keys[entries] & ss.CONFLICT).any():
        raise ss.ScanStopped("trace entries with keys this reader keeps apart")
    action, addr, size, t, frame_dict, device_free, missing = ss._trace_columns(
        sc.data, entries, sc.str_off, sc.str_len, sc.dict_keys, sc.dict_kind, sc.dict_val, sc.list_user,
        ss._ACTION_BYTES, ss._ACTION_OFF,
    )  # fmt: skip
    n = len(entries)
    timed = n > 0 and missing == 0
    if not timed:
        t = np.arange(n, dtype=np.float64)
    names_of = ss._ACTION_NAMES
    counts_by_action = np.bincount(action.astype(np.int64) + 1, minlength=len(names_of) + 1)
    present = {names_of[a] for a in range(len(names_of)) if counts_by_action[a + 1]}
    free_name = "free_completed" if "free_completed" in present else (
        "free_requested" if "free_requested" in present else "free"
    )  # fmt: skip
    t_first = float(t[0]) if n else 0.0
    t_last = (float(t[-1]) if n else 1.0) + 1.0
    sidecar = sidecar or {}
    phases, names, category_source, notes = _categories(sidecar, timed)
    phase_times = np.array([pt for pt, _ in phases])
    phase_cat = np.array([names.index(name) for _, name in phases], dtype=np.int64)

    def category(times: Any) -> Any:
        """The phase each time falls in (the vectorised _phase_category)."""
        if not phases:
            return np.zeros(np.shape(times), dtype=np.int64)
        at = np.searchsorted(phase_times, times, side="right") - 1
        return np.where(at >= 0, phase_cat[np.maximum(at, 0)], 0)

    by_address = np.argsort(addr, kind="stable")  # each address's entries in trace order
    start, end, sizes, frames_of, addrs, alloc_t = ss._pair(
        by_address,
        action,
        addr,
        size,
        t,
        frame_dict,
        names_of.index("alloc"),
        names_of.index(free_name),
        t_first,
        t_last,
    )
    seen_alloc = np.sort(addr[action == names_of.index("alloc")])
    # Blocks allocated before the trace and never freed within it (few: plain Python).
    extra: list[tuple[float, float, int, int, int]] = []
    segments = slot(root, "segments", ss.K_LIST)
    if segments is not None:
        for seg_kind, seg in zip(*sc.children(segments), strict=True):
            if seg_kind != ss.K_DICT or (slot(seg, "device", ss.K_INT) or device) != device:
                continue
            offset = slot(seg, "address", ss.K_INT) or 0
            blocks = slot(seg, "blocks", ss.K_LIST)
            for block_kind, block in zip(*sc.children(blocks), strict=True) if blocks is not None else ():
                if block_kind != ss.K_DICT or sc.dict_keys[block] & ss.CONFLICT:
                    raise ss.ScanStopped("a block this reader does not know")
                b_addr = slot(block, "address", ss.K_INT)
                b_addr = offset if b_addr is None else b_addr
                b_size = slot(block, "size", ss.K_INT) or 0
                offset = b_addr + b_size
                state = slot(block, "state", ss.K_STR)
                if state is None or sc.text(state) != "active_allocated":
                    continue
                if (
                    np.searchsorted(seen_alloc, b_addr) < len(seen_alloc)
                    and seen_alloc[np.searchsorted(seen_alloc, b_addr)] == b_addr
                ):
                    continue
                requested = slot(block, "requested_size", ss.K_INT)
                b_frames = slot(block, "frames", ss.K_LIST)
                b_frame = int(sc.list_user[b_frames]) if b_frames is not None else -1
                extra.append((t_first, t_last, requested if requested is not None else b_size, b_frame, b_addr))
    if extra:
        more = np.array(extra, dtype=np.float64).T
        start, end = np.concatenate([start, more[0]]), np.concatenate([end, more[1]])
        sizes = np.concatenate([sizes, more[2].astype(np.int64)])
        frames_of = np.concatenate([frames_of, more[3].astype(np.int64)])
        addrs = np.concatenate([addrs, np.array([e[4] for e in extra], dtype=np.int64)])
        alloc_t = np.concatenate([alloc_t, np.full(len(extra), t_first)])
    # Frame dicts -> the de-duplicated user-frame table, in order of first use.
    table = _FrameTable()
    frame_dicts, first_use = np.unique(frames_of, return_index=True)
    index_of = {}
    for d in frame_dicts[np.argsort(first_use)]:
        if d < 0:
            continue
        filename = slot(int(d), "filename", ss.K_STR)
        name = slot(int(d), "name", ss.K_STR)
        # One character past the clip: enough for the table to mark the cut, never the whole string.
        longest = MAX_TEXT_CHARS + 1
        index_of[int(d)] = table.user_frame(
            [
                {
                    "filename": sc.text(filename, longest) if filename is not None else "",
                    "line": slot(int(d), "line", ss.K_INT) or 0,
                    "name": sc.text(name, longest) if name is not None else "",
                }
            ]
        )
    lookup = np.full(len(frame_dicts), -1, dtype=np.int64)
    for i, d in enumerate(frame_dicts):
        lookup[i] = index_of.get(int(d), -1)
    frame_index = lookup[np.searchsorted(frame_dicts, frames_of)] if len(frames_of) else frames_of
    ooms = [
        {
            "t_us": float(t[i]),
            "requested_bytes": int(size[i]),
            "device_free_bytes": int(device_free[i]) if device_free[i] >= 0 else None,
        }
        for i in np.flatnonzero(action == names_of.index("oom"))
    ]
    intervals = Intervals(start, end, sizes, category(alloc_t), frame_index, addrs)
    if t_last <= t_first:
        t_last = t_first + 1.0
    return Parsed(
        kind="cuda-snapshot",
        axis="time_us" if timed else "event_index",
        t_start=t_first,
        t_end=t_last,
        entries=n,
        intervals=intervals,
        categories=names,
        category_source=category_source,
        frames=table.frames,
        ooms=ooms,
        context=dict(sidecar.get("context", {})),
        notes=notes,
    )


def _scan_reader():
    """snapshot_scan, where numba is installed (else the restricted unpickler reads everything)."""
    try:
        from ..worker import snapshot_scan
    except ImportError:
        return None
    return snapshot_scan


def read_capture(path: Path, *, fast: bool = True, on_progress: Any = None) -> Parsed:
    """Either kind, by its content; a sidecar ``<name>.phases.json`` adds labkit's phases and
    model context to a CUDA snapshot. A snapshot is scanned without unpickling it where the
    scanner knows its shape; anything else goes through the restricted unpickler.
    ``on_progress(phase, fraction)`` hears how far the reading is."""
    with path.open("rb") as f:
        first = f.read(1)
    if first == b"{":
        size = path.stat().st_size
        if size > MAX_CPU_CAPTURE_BYTES:
            raise CaptureTooLarge(
                f"{path.name} is {size} bytes of JSON; a CPU capture is read whole, and the most this server "
                f"reads is {MAX_CPU_CAPTURE_BYTES} bytes"
            )
        return parse_cpu_capture(json.loads(path.read_bytes()))
    sidecar_path = path.with_suffix(".phases.json")
    sidecar = None
    if sidecar_path.is_file():
        size = sidecar_path.stat().st_size
        if size > MAX_SIDECAR_BYTES:
            raise CaptureTooLarge(
                f"{sidecar_path.name} is {size} bytes; labkit's phases file is a few KB, and the most this "
                f"server reads is {MAX_SIDECAR_BYTES} bytes"
            )
        sidecar = json.loads(sidecar_path.read_text())
    ss = _scan_reader() if fast else None
    if ss is not None:
        try:
            scanned = ss.scan(path, (lambda f: on_progress("reading", f)) if on_progress else None)
            if on_progress:
                on_progress("pairing", None)
            return parse_cuda_scan(scanned, sidecar=sidecar)
        except ss.ScanStopped:
            pass  # something the scanner leaves to the unpickler: it decides
    with path.open("rb") as f:
        return parse_cuda_snapshot(load_pickle(f), sidecar=sidecar)
