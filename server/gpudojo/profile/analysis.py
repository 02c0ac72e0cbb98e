"""What a profile says: steps and where their time went, the top operators and kernels, host
syncs with their Python line, communication overlap, findings with their evidence; and the
cached index that answers the viewer's windowed queries and hovers.

Runs in the analysis worker (child process) on a trace's NumPy columns (trace.py). Holistic
Trace Analysis is used, in that process only and imported lazily, for what it computes on
GPU traces (kernel breakdown, launch statistics, communication overlap, temporal
breakdown); everything else, and every CPU-only trace (HTA needs GPU kernels), is computed
here. ``Loaded`` and ``diff`` are what the server process calls: NumPy only.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..clipping import MAX_KEPT_JSON_BYTES, clip_text
from .trace import (
    MAX_INFLATED_BYTES,
    Events,
    NotATrace,
    Source,
    TraceTooLarge,
    WindowIndex,
    collector_paused,
    load_events,
    merge,
    read_args,
    read_trace,
    save_arrays,
    save_events,
)

__all__ = ["ANALYSIS_VERSION", "Loaded", "NotATrace", "TraceTooLarge", "diff", "write_analysis"]

# 3: names, args and lane labels are clipped (an analysis cached before may hold them whole).
# 4: device time goes to the operators around the launching call (by containment); a ROCm trace
# says so. An analysis cached before gave kernels to operators that had already ended.
# 5: a 0 µs operator no longer throws off the nesting (parents, self times, rows) of the spans
# starting with it or after it.
ANALYSIS_VERSION = 5

# When a finding is raised (shares are of the mean step).
DATA_LOADING_SHARE = 0.20
HOST_SYNCS_PER_STEP = 1.0
SHORT_KERNEL_US = 10.0
SHORT_KERNELS_PER_STEP = 100.0
GPU_IDLE_SHARE = 0.30
EXPOSED_COMM_MAX_OVERLAP = 0.50
EXPOSED_COMM_SHARE = 0.10
MEMCPY_SHARE = 0.10
MAIN_THREAD_IDLE_SHARE = 0.30
SMALL_OP_MEDIAN_US = 20.0
SMALL_OPS_PER_STEP = 200.0
DOMINANT_OP_SHARE = 0.50

# HTA parses a trace with json and pandas row by row: about 4.5 s per 100k events here, 4.5
# minutes and 2.3 GB at 1M (23 s at 250k). Above this many events in a rank it is not run.
HTA_MAX_EVENTS = 150_000

TOP_OPS = 50
TOP_KERNELS = 30
MAX_STACK = 30
MAX_DIFF_OPS = 30
MAX_PX = 20_000

COMM_PREFIXES = ("gloo:", "nccl:", "c10d::", "record_param_comms", "ProcessGroupNCCL", "ProcessGroupGloo")
SYNC_OPS = frozenset(
    {
        "aten::item",
        "aten::_local_scalar_dense",
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
    }
)
LOADER_PREFIX = "enumerate(DataLoader)#"
SEVERITY_ORDER = {"high": 0, "medium": 1, "info": 2}
CATEGORIES = ("compute", "communication", "data_loading", "memcpy", "sync", "idle")
# Which activity an instant is given to when several overlap, first wins. On a GPU trace the
# device's work comes before the host's: data loading or a sync on the host while kernels
# run does not stall the GPU, so it is only counted where the device is idle.
PRIORITY_CPU = ("communication", "memcpy", "data_loading", "sync", "compute")
PRIORITY_GPU = ("communication", "memcpy", "compute", "data_loading", "sync")
# Python frames that are the framework's or the standard library's, not the learner's.
LIBRARY_ROOTS = frozenset(sys.stdlib_module_names) | {
    "torch", "torchvision", "torchaudio", "numpy", "pandas", "triton", "transformers", "accelerate",
    "lightning", "pytorch_lightning", "deepspeed", "_pytest", "pytest", "pluggy", "ipykernel", "IPython",
    "tornado", "traitlets", "gpudojo", "functorch", "einops", "timm", "datasets", "tqdm",
}  # fmt: skip
_FRAME = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<func>.*)$")

Progress = Callable[[str, float | None], None]


# ---------------------------------------------------------------- interval arithmetic


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint, sorted segments covering the intervals [starts, ends)."""
    if not len(starts):
        return np.zeros(0), np.zeros(0)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]
    firsts = np.flatnonzero(new)
    return s[firsts], np.maximum.reduceat(e, firsts)


def covered(segments: tuple[np.ndarray, np.ndarray], t: np.ndarray) -> np.ndarray:
    """How much of ``segments`` lies before each time in ``t`` (us)."""
    s, e = segments
    if not len(s):
        return np.zeros(len(t))
    cum = np.r_[0.0, np.cumsum(e - s)]
    j = np.searchsorted(s, t, side="right") - 1
    inside = np.clip(t - s[np.maximum(j, 0)], 0.0, (e - s)[np.maximum(j, 0)])
    return np.where(j >= 0, cum[np.maximum(j, 0)] + inside, 0.0)


def measure(segments: tuple[np.ndarray, np.ndarray], lo: float, hi: float) -> float:
    """Length of ``segments`` inside [lo, hi] (us)."""
    a, b = covered(segments, np.array([lo, hi]))
    return float(b - a)


def merge_sets(*sets: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return union(np.concatenate([s for s, _ in sets]), np.concatenate([e for _, e in sets]))


def measure_where(
    sets: list[tuple[np.ndarray, np.ndarray]], keep: Callable[..., np.ndarray], lo: float, hi: float
) -> float:
    """Length (us) of the time in [lo, hi] where ``keep(in_set_0, in_set_1, ...)`` holds, e.g.
    ``lambda a, b, c: a & b & ~c``: the sets' boundaries cut time into pieces that lie wholly
    inside or outside each set, tested at their midpoints."""
    cuts = np.unique(np.clip(np.concatenate([np.r_[lo, hi], *[np.r_[s, e] for s, e in sets]]), lo, hi))
    if len(cuts) < 2:
        return 0.0
    mids = (cuts[1:] + cuts[:-1]) / 2
    inside = []
    for s, e in sets:
        j = np.searchsorted(s, mids, side="right") - 1
        inside.append((j >= 0) & (mids < e[np.maximum(j, 0)]) if len(s) else np.zeros(len(mids), dtype=bool))
    return float(np.diff(cuts)[keep(*inside)].sum())


# ---------------------------------------------------------------- the profile as analysed


@dataclass
class Profile:
    """The merged events with what every analysis asks of them: per-name and per-lane flags."""

    ev: Events
    ranks: list[int]
    primary: int
    gpu: bool
    is_comm: np.ndarray  # per name
    is_sync: np.ndarray
    is_loader: np.ndarray
    is_step: np.ndarray
    lane_rank: np.ndarray  # per lane
    lane_main: np.ndarray
    lane_stream: np.ndarray
    end: np.ndarray  # per event
    # per (rank, where): which events are on those lanes, None where every event is (see mask)
    on_lanes: dict[tuple[int | None, str | None], np.ndarray | None] = field(default_factory=dict)
    event_flags: dict[str, np.ndarray] = field(default_factory=dict)  # see per_event

    @classmethod
    def of(cls, ev: Events) -> Profile:
        names = ev.names
        lane_rank = np.array([lane["rank"] for lane in ev.lanes], dtype=np.int64)
        ranks = sorted({int(r) for r in lane_rank})
        device_work = [ev.cat_id(c) for c in ("kernel", "gpu_memcpy", "gpu_memset") if c in ev.cats]
        return cls(
            ev=ev,
            ranks=ranks,
            primary=ranks[0],
            gpu=bool(device_work) and bool(np.isin(ev.cat, device_work).any()),
            is_comm=np.array([n.startswith(COMM_PREFIXES) or "nccl" in n.lower() for n in names], dtype=bool),
            is_sync=np.array([n in SYNC_OPS for n in names], dtype=bool),
            is_loader=np.array([n.startswith(LOADER_PREFIX) for n in names], dtype=bool),
            is_step=np.array([n.startswith("ProfilerStep#") for n in names], dtype=bool),
            lane_rank=lane_rank,
            lane_main=np.array([lane["main"] for lane in ev.lanes], dtype=bool),
            lane_stream=np.array([lane["kind"] == "stream" for lane in ev.lanes], dtype=bool),
            end=ev.ts + ev.dur,
        )

    def mask(self, cat: str | None = None, rank: int | None = None, where: str | None = None) -> np.ndarray:
        """Events of a category, on a rank, on its 'main' thread, its 'host' threads or its
        'device' streams."""
        ev = self.ev
        if (rank, where) not in self.on_lanes:  # a lane flag per event, worked out once per question
            lanes = np.ones(len(ev.lanes), dtype=bool)
            if rank is not None:
                lanes &= self.lane_rank == rank
            if where == "main":
                lanes &= self.lane_main
            elif where == "host":
                lanes &= ~self.lane_stream
            elif where == "device":
                lanes &= self.lane_stream
            self.on_lanes[rank, where] = None if lanes.all() else lanes[ev.lane]
        on = self.on_lanes[rank, where]
        if cat is None:
            return np.ones(len(ev.ts), dtype=bool) if on is None else on.copy()
        m = ev.cat == ev.cat_id(cat)
        if on is not None:
            m &= on
        return m

    def per_event(self, flag: str) -> np.ndarray:
        """Each event's per-name ``flag`` ('is_step', 'is_comm', 'is_sync', 'is_loader'), looked
        up once for every analysis that asks (read-only: it is shared)."""
        got = self.event_flags.get(flag)
        if got is None:
            got = self.event_flags[flag] = getattr(self, flag)[self.ev.name]
            got.flags.writeable = False
        return got

    def device_work(self, rank: int) -> np.ndarray:
        ids = [self.ev.cat_id(c) for c in ("kernel", "gpu_memcpy", "gpu_memset")]
        return np.isin(self.ev.cat, ids) & self.lane_stream[self.ev.lane] & (self.lane_rank[self.ev.lane] == rank)

    def segments(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return union(self.ev.ts[m], self.end[m])


# ---------------------------------------------------------------- steps and breakdown


@dataclass
class Steps:
    numbers: list[int]
    start: np.ndarray
    end: np.ndarray
    source: str  # 'profiler-steps' | 'whole-trace'

    @property
    def span(self) -> tuple[float, float]:
        return float(self.start.min()), float(self.end.max())

    def __len__(self) -> int:
        return len(self.numbers)


def steps_of(p: Profile, rank: int) -> Steps:
    """ProfilerStep#N spans of the rank's main thread, else the whole trace as one step."""
    ev = p.ev
    m = p.mask(rank=rank, where="main") & p.per_event("is_step")
    m &= np.isin(ev.cat, [ev.cat_id("user_annotation"), ev.cat_id("cpu_op")])
    idx = np.flatnonzero(m)
    if len(idx):
        idx = idx[np.argsort(ev.ts[idx], kind="stable")]
        numbers = [_step_number(ev.names[n]) for n in ev.name[idx]]
        return Steps(numbers, ev.ts[idx], p.end[idx], "profiler-steps")
    on_rank = p.lane_rank[ev.lane] == rank
    return Steps([0], np.array([ev.ts[on_rank].min()]), np.array([p.end[on_rank].max()]), "whole-trace")


def _step_number(name: str) -> int:
    try:
        return int(name.split("#", 1)[1])
    except (IndexError, ValueError):
        return 0


def category_masks(p: Profile, rank: int) -> dict[str, np.ndarray]:
    """For each category, the spans that make it on this rank's timeline."""
    ev = p.ev
    main = p.mask(rank=rank, where="main")
    host = p.mask(rank=rank, where="host")
    comm = p.per_event("is_comm")
    masks = {
        "data_loading": main & p.per_event("is_loader"),
        "sync": main & p.per_event("is_sync"),
    }
    if p.gpu:
        device = p.device_work(rank)
        memcpy = device & np.isin(ev.cat, [ev.cat_id("gpu_memcpy"), ev.cat_id("gpu_memset")])
        kernels = device & (ev.cat == ev.cat_id("kernel"))
        device_comm = kernels & comm
        masks["communication"] = device_comm if device_comm.any() else host & comm
        masks["memcpy"] = memcpy
        masks["compute"] = kernels & ~comm
    else:
        masks["communication"] = host & comm
        masks["memcpy"] = np.zeros(len(ev.ts), dtype=bool)
        masks["compute"] = main & (ev.cat == ev.cat_id("cpu_op")) & ~comm & ~p.per_event("is_step")
    return masks


def breakdown(p: Profile, rank: int, steps: Steps) -> tuple[list[list[dict[str, Any]]], dict[str, float]]:
    """Per step, each category's time (us), adding up to the step's duration: each instant
    goes to the first category by priority that covers it, idle to none."""
    masks = category_masks(p, rank)
    priority = PRIORITY_GPU if p.gpu else PRIORITY_CPU
    bounds = np.r_[steps.start, steps.end]
    n = len(steps)
    times: dict[str, np.ndarray] = {}
    so_far = (np.zeros(0), np.zeros(0))
    before = np.zeros(n)
    for cat in priority:
        so_far = merge_sets(so_far, p.segments(masks[cat]))
        cov = covered(so_far, bounds)
        inside = cov[n:] - cov[:n]
        times[cat] = np.maximum(inside - before, 0.0)
        before = inside
    times["idle"] = np.maximum((steps.end - steps.start) - before, 0.0)
    # rounded as _rounded would (a summary of thousands of steps is not walked again for them)
    per_cat = [(c, [round(us, 3) for us in times[c].tolist()]) for c in CATEGORIES]
    means = {c: float(np.mean(times[c])) for c in CATEGORIES}
    return [[{"category": c, "us": us[i]} for c, us in per_cat] for i in range(n)], means


# ---------------------------------------------------------------- operators and kernels


def in_span(p: Profile, rank: int, span: tuple[float, float]) -> np.ndarray:
    ev = p.ev
    m = p.mask(rank=rank)
    m &= ev.ts >= span[0]
    m &= ev.ts <= span[1]
    return m


def launches(p: Profile, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """Device activity of the rank and the host runtime call that launched each (by
    correlation id; -1 where none)."""
    ev = p.ev
    device = np.flatnonzero(p.device_work(rank) & (ev.corr >= 0))
    runtime_cats = [ev.cat_id(c) for c in ("cuda_runtime", "cuda_driver", "runtime") if c in ev.cats]
    host = np.flatnonzero(p.mask(rank=rank, where="host") & np.isin(ev.cat, runtime_cats) & (ev.corr > 0))
    if not len(device) or not len(host):
        return device, np.full(len(device), -1)
    host = host[np.argsort(ev.corr[host], kind="stable")]
    at = np.searchsorted(ev.corr[host], ev.corr[device])
    at = np.minimum(at, len(host) - 1)
    found = ev.corr[host[at]] == ev.corr[device]
    return device, np.where(found, host[at], -1)


def top_ops(p: Profile, rank: int, span: tuple[float, float]) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    """CPU ops by name over the analysed steps: calls, self and total time, device time of
    the kernels they launched (themselves / with their children), frequent input shapes.
    Also the full table (every op name) for diffs."""
    ev = p.ev
    n_names = len(ev.names)
    ops = in_span(p, rank, span) & (ev.cat == ev.cat_id("cpu_op")) & ~p.per_event("is_step")
    has_parent = ev.parent >= 0
    children = np.bincount(ev.parent[has_parent], weights=ev.dur[has_parent], minlength=len(ev.ts))
    self_time = np.maximum(ev.dur - children, 0.0)
    idx = np.flatnonzero(ops)
    names = ev.name[idx]
    calls = np.bincount(names, minlength=n_names)
    self_us = np.bincount(names, weights=self_time[idx], minlength=n_names)
    total_us = np.bincount(names, weights=ev.dur[idx], minlength=n_names)
    dev_self, dev_total = _device_time_by_op(p, rank, span)
    order = np.argsort(-self_us, kind="stable")
    order = order[calls[order] > 0][:TOP_OPS]
    shapes = _frequent_shapes(ev, idx, set(order.tolist()))
    rows = [
        {
            "name": ev.names[n],
            "calls": int(calls[n]),
            "self_us": float(self_us[n]),
            "total_us": float(total_us[n]),
            "device_self_us": float(dev_self[n]),
            "device_total_us": float(dev_total[n]),
            "input_shapes": shapes.get(int(n), []),
        }
        for n in order
    ]
    used = np.flatnonzero(calls)
    table = {"op_name": used.astype(np.int32), "op_calls": calls[used], "op_self_us": self_us[used]}
    return rows, table


def _frequent_shapes(ev: Events, idx: np.ndarray, wanted: set[int]) -> dict[int, list[str]]:
    """The 3 most frequent 'Input Dims' of each wanted op name."""
    with_dims = idx[(ev.dims[idx] >= 0) & np.isin(ev.name[idx], list(wanted))]
    if not len(with_dims):
        return {}
    pairs = ev.name[with_dims].astype(np.int64) * (len(ev.dims_text) + 1) + ev.dims[with_dims]
    keys, counts = np.unique(pairs, return_counts=True)
    out: dict[int, list[tuple[int, str]]] = {}
    for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
        name, dims = divmod(key, len(ev.dims_text) + 1)
        out.setdefault(name, []).append((count, ev.dims_text[dims]))
    return {n: [d for _, d in sorted(v, key=lambda cd: -cd[0])[:3]] for n, v in out.items()}


def _device_time_by_op(p: Profile, rank: int, span: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Device time per op name (us), following each kernel, copy or memset to the runtime call
    with its correlation id and that call to the cpu_ops around it on the launching thread:
    "self" goes to the innermost op, "total" to every op name enclosing the call (once per
    name, so that aten::to inside aten::to is not counted twice)."""
    ev = p.ev
    dev_self = np.zeros(len(ev.names))
    dev_total = np.zeros(len(ev.names))
    if not p.gpu:
        return dev_self, dev_total
    device, host = launches(p, rank)
    keep = (host >= 0) & (ev.ts[np.maximum(host, 0)] >= span[0]) & (ev.ts[np.maximum(host, 0)] <= span[1])
    # A launch may start more than one device activity: weigh each launch once.
    calls, at = np.unique(host[keep], return_inverse=True)
    weight = np.bincount(at, weights=ev.dur[device[keep]], minlength=len(calls))
    ops = np.flatnonzero(p.mask("cpu_op", rank, "host") & ~p.per_event("is_step"))
    for w, around in zip(weight.tolist(), _enclosing(ev, ops, calls), strict=True):
        if around:
            dev_self[ev.name[around[-1]]] += w
            for n in {int(ev.name[o]) for o in around}:
                dev_total[n] += w
    return dev_self, dev_total


def _enclosing(ev: Events, ops: np.ndarray, calls: np.ndarray) -> list[list[int]]:
    """For each call (event index, sorted), the ops of ``ops`` (index order) on its lane whose
    [ts, ts + dur] holds its start, outermost first.

    Found by containment, not by the nesting parents: those come from counting open spans,
    which zero-length ops (an aten::empty of 0 us just before a launch) and spans that cross
    by a rounding microsecond throw off, crediting kernels to an op that ended before."""
    op_lane, op_ts = ev.lane[ops].tolist(), ev.ts[ops].tolist()
    op_end = (ev.ts[ops] + ev.dur[ops]).tolist()
    ops_l = ops.tolist()
    out: list[list[int]] = []
    open_ops: list[tuple[float, int]] = []  # (end, op) in start order
    i, lane_now = 0, -1
    # Calls are in index order, which is by lane and then by start, as the ops are.
    for lane, t in zip(ev.lane[calls].tolist(), ev.ts[calls].tolist(), strict=True):
        if lane != lane_now:
            open_ops, lane_now = [], lane
            while i < len(ops_l) and op_lane[i] < lane:
                i += 1
        while i < len(ops_l) and op_lane[i] == lane and op_ts[i] <= t:
            open_ops.append((op_end[i], ops_l[i]))
            i += 1
        while open_ops and open_ops[-1][0] < t:
            open_ops.pop()
        out.append([o for end, o in open_ops if end >= t])
    return out


def kernels(p: Profile, rank: int, span: tuple[float, float], n_steps: int) -> tuple[list[dict[str, Any]], dict]:
    """GPU kernels by name (launched in the analysed steps), and launch statistics."""
    ev = p.ev
    device, host = launches(p, rank)
    is_kernel = ev.cat[device] == ev.cat_id("kernel")
    device, host = device[is_kernel], host[is_kernel]
    when = np.where(host >= 0, ev.ts[np.maximum(host, 0)], ev.ts[device])
    keep = (when >= span[0]) & (when <= span[1])
    unlinked = np.flatnonzero((ev.cat == ev.cat_id("kernel")) & p.device_work(rank) & (ev.corr < 0))
    unlinked = unlinked[(ev.ts[unlinked] >= span[0]) & (ev.ts[unlinked] <= span[1])]
    ks = np.r_[device[keep], unlinked].astype(np.int64)
    durations = ev.dur[ks]
    names = ev.name[ks]
    totals = np.bincount(names, weights=durations, minlength=len(ev.names))
    calls = np.bincount(names, minlength=len(ev.names))
    all_time = float(durations.sum()) or 1.0
    order = np.argsort(-totals, kind="stable")
    order = order[calls[order] > 0][:TOP_KERNELS]
    rows = [
        {
            "name": ev.names[n],
            "calls": int(calls[n]),
            "total_us": float(totals[n]),
            "mean_us": float(totals[n] / calls[n]),
            "share": float(totals[n] / all_time),
        }
        for n in order
    ]
    linked = keep & (host >= 0)
    delays = ev.ts[device[linked]] - ev.ts[host[linked]]
    stats = {
        "kernels_per_step": len(ks) / max(n_steps, 1),
        "short_kernels_per_step": int((durations < SHORT_KERNEL_US).sum()) / max(n_steps, 1),
        "median_launch_delay_us": float(np.median(delays)) if len(delays) else None,
        "median_gap_us": _median_gap(p, ks),
        "source": "gpudojo",
    }
    return rows, stats


def _median_gap(p: Profile, ks: np.ndarray) -> float | None:
    """Median idle time between consecutive kernels on the same stream (us)."""
    ev = p.ev
    if len(ks) < 2:
        return None
    order = np.lexsort((ev.ts[ks], ev.lane[ks]))
    ks = ks[order]
    same = ev.lane[ks][1:] == ev.lane[ks][:-1]
    gaps = ev.ts[ks][1:] - p.end[ks][:-1]
    gaps = np.maximum(gaps[same], 0.0)
    return float(np.median(gaps)) if len(gaps) else None


# ---------------------------------------------------------------- syncs, overlap


def user_frame(name: str) -> str | None:
    """'train.py:57' for a python_function event of the learner's code ('train.py(57): step'),
    None for the framework's, the standard library's and built-ins."""
    m = _FRAME.match(name)
    if m is None or name.startswith("<"):
        return None
    path = m["file"].replace("\\", "/")
    if "site-packages/" in path or "dist-packages/" in path or path.startswith("<"):
        return None
    root = path.lstrip("/").split("/", 1)[0].removesuffix(".py")
    if root in LIBRARY_ROOTS and not path.startswith("/"):
        return None
    return f"{os.path.basename(path)}:{m['line']}"


def syncs(p: Profile, rank: int, span: tuple[float, float], n_steps: int) -> list[dict[str, Any]]:
    """Host syncs by (op, Python location): outermost sync ops on the main thread, leaving
    out those inside data loading (tensors there are on the CPU still). A runtime sync
    (cudaStreamSynchronize, cudaMemcpy) is named with the op that made it, e.g.
    'aten::to (cudaStreamSynchronize)' for a .cpu()."""
    ev = p.ev
    cands = np.flatnonzero(in_span(p, rank, span) & p.mask(rank=rank, where="main") & p.per_event("is_sync"))
    python, cpu_op = ev.cat_id("python_function"), ev.cat_id("cpu_op")
    sites: dict[tuple[str, str], list[float]] = {}
    frame_of: dict[int, str] = {}
    # On a GPU trace an aten::item is a sync only when the device was waited for: a runtime
    # sync (cudaStreamSynchronize, cudaMemcpy) under it. A CPU tensor's item (the optimizer's
    # step count) has none.
    waited: set[int] = set()
    for i in cands.tolist():
        if ev.cat[i] != cpu_op:
            node = int(ev.parent[i])
            while node >= 0:
                if p.is_sync[ev.name[node]]:
                    waited.add(node)
                node = int(ev.parent[node])
    for i in cands.tolist():
        node, location, outer_op, nested = int(ev.parent[i]), "", -1, False
        library_caller: bool | None = None  # whether the innermost Python frame is the framework's
        while node >= 0:
            if p.is_sync[ev.name[node]] or p.is_loader[ev.name[node]]:
                nested = True
                break
            if ev.cat[node] == cpu_op and not p.is_step[ev.name[node]]:
                outer_op = node
            elif not location and ev.cat[node] == python:
                if node not in frame_of:
                    frame_of[node] = user_frame(ev.names[ev.name[node]]) or ""
                location = frame_of[node]
                if library_caller is None and not ev.names[ev.name[node]].startswith("<"):
                    # Built-in methods (<built-in method item ...>) are the call itself, not a caller.
                    library_caller = not location
            node = int(ev.parent[node])
        if nested:
            continue
        if ev.cat[i] == cpu_op and (i not in waited if p.gpu else bool(library_caller)):
            # A read the framework makes of its own CPU scalars (AdamW's step count), which
            # never waits for a GPU; the learner's own .item() calls come from their frames.
            continue
        op = ev.names[ev.name[i]]
        if ev.cat[i] != cpu_op and outer_op >= 0:
            op = f"{ev.names[ev.name[outer_op]]} ({op})"
        sites.setdefault((op, location), []).append(float(ev.dur[i]))
    rows = [
        {"op": op, "location": loc, "per_step": len(d) / max(n_steps, 1), "total_us": float(sum(d))}
        for (op, loc), d in sites.items()
    ]
    return sorted(rows, key=lambda r: (-r["per_step"], -r["total_us"]))


def overlap(p: Profile, rank: int, span: tuple[float, float]) -> dict[str, Any] | None:
    """Communication time of the rank and the part of it hidden behind computation: on a GPU,
    communication kernels against compute kernels; on a CPU, collectives on other threads
    (gloo's) against the main thread's ops, except where the main thread is itself in a
    collective (waiting for it)."""
    masks = category_masks(p, rank)
    comm_m, comp_m = masks["communication"], masks["compute"]
    main_comm = np.zeros(0), np.zeros(0)
    if not p.gpu:
        on_main = p.lane_main[p.ev.lane]
        if (comm_m & ~on_main).any():
            main_comm = p.segments(comm_m & on_main)
            comm_m = comm_m & ~on_main
        comp_m = p.mask("cpu_op", rank, "main") & ~p.per_event("is_step")
    comm, comp = p.segments(comm_m), p.segments(comp_m)
    comm_us = measure(comm, *span)
    if comm_us <= 0:
        return None
    hidden = measure_where([comm, comp, main_comm], lambda a, b, c: a & b & ~c, *span)
    return {
        "rank": rank,
        "communication_us": comm_us,
        "overlapped_us": hidden,
        "share": hidden / comm_us,
        "source": "gpudojo",
    }


# ---------------------------------------------------------------- HTA (GPU traces)


def run_hta(sources: list[tuple[Path, int]], primary: int, notes: list[str]) -> dict[str, Any]:
    """What Holistic Trace Analysis computes on these GPU traces, by function name; a failed
    function is left out and its reason goes to ``notes``."""
    import logging
    import tempfile
    import warnings

    out: dict[str, Any] = {}
    try:
        from hta.trace_analysis import TraceAnalysis
    except Exception as err:
        notes.append(
            f"Holistic Trace Analysis could not be imported ({type(err).__name__}: {err}); gpudojo computed it all."
        )
        return out
    logging.getLogger("hta").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="gpudojo-hta-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        files = {}
        for path, rank in sources:
            link = Path(tmp) / f"rank{rank}.json{'.gz' if _is_gzip(path) else ''}"
            if rank in files:
                notes.append(f"HTA: two files claim rank {rank}; it read only the first.")
                continue
            link.symlink_to(Path(path).resolve())
            files[rank] = str(link)
        try:
            analysis = TraceAnalysis(trace_files=files, trace_dir=tmp, include_last_profiler_step=True)
        except Exception as err:
            notes.append(f"HTA could not load the trace ({type(err).__name__}: {err}); gpudojo computed it all.")
            return out
        calls = {
            "get_gpu_kernel_breakdown": lambda: analysis.get_gpu_kernel_breakdown(
                visualize=False, num_kernels=TOP_KERNELS, include_memory_kernels=False
            ),
            "get_cuda_kernel_launch_stats": lambda: analysis.get_cuda_kernel_launch_stats(
                ranks=[primary], include_memory_events=False, visualize=False
            ),
            "get_comm_comp_overlap": lambda: analysis.get_comm_comp_overlap(visualize=False),
            "get_temporal_breakdown": lambda: analysis.get_temporal_breakdown(visualize=False),
        }
        for name, call in calls.items():
            try:
                out[name] = call()
            except Exception as err:
                notes.append(f"HTA's {name} failed ({type(err).__name__}: {err}); gpudojo computed that part.")
    return out


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def apply_hta(hta: dict[str, Any], primary: int, summary: dict[str, Any]) -> list[str]:
    """Replace gpudojo's figures with HTA's where HTA computed them; the functions used."""
    used: list[str] = []
    if "get_gpu_kernel_breakdown" in hta:
        kernel_df = hta["get_gpu_kernel_breakdown"][1]
        rows = kernel_df[kernel_df["rank"] == primary]
        total = float(rows["sum (us)"].sum()) or 1.0
        table = []
        for _, r in rows.sort_values("sum (us)", ascending=False).head(TOP_KERNELS).iterrows():
            mean = float(r["mean (us)"]) or 1.0
            table.append(
                {
                    "name": clip_text(str(r["name"])),  # HTA reads the file itself, unclipped
                    "calls": round(float(r["sum (us)"]) / mean),
                    "total_us": float(r["sum (us)"]),
                    "mean_us": mean,
                    "share": float(r["sum (us)"]) / total,
                }
            )
        if table:
            summary["kernels"] = table
            used.append("get_gpu_kernel_breakdown")
    stats = hta.get("get_cuda_kernel_launch_stats", {}).get(primary)
    if stats is not None and len(stats) and summary["launch"] is not None:
        start_to_start = stats["cpu_duration"] + stats["launch_delay"]  # HTA's delay starts at the call's end
        summary["launch"]["median_launch_delay_us"] = float(start_to_start.median())
        summary["launch"]["source"] = "hta"
        used.append("get_cuda_kernel_launch_stats")
    overlap_df = hta.get("get_comm_comp_overlap")
    if overlap_df is not None and summary["overlap"]:
        shares = {
            int(r): float(v) / 100.0
            for r, v in zip(overlap_df["rank"], overlap_df["comp_comm_overlap_pctg"], strict=True)
        }
        for row in summary["overlap"]:
            share = shares.get(row["rank"])
            if share is not None and np.isfinite(share):
                row.update(share=share, overlapped_us=share * row["communication_us"], source="hta")
        used.append("get_comm_comp_overlap")
    temporal = hta.get("get_temporal_breakdown")
    if temporal is not None:
        row = temporal[temporal["rank"] == primary]
        if len(row):
            r = row.iloc[0]
            summary["notes"].append(
                f"HTA temporal breakdown of rank {primary}'s GPU over the whole trace: "
                f"idle {r['idle_time_pctg']:.1f}%, compute {r['compute_time_pctg']:.1f}%, "
                f"non-compute {r['non_compute_time_pctg']:.1f}%."
            )
            used.append("get_temporal_breakdown")
    return used


# ---------------------------------------------------------------- mode, findings


def _is_rocm(p: Profile) -> bool:
    """Whether the kernels ran on an AMD GPU: Kineto files HIP calls (hipLaunchKernel) under the
    same "cuda_runtime" category as CUDA's, so the calls' names tell."""
    ev = p.ev
    runtime = [ev.cat_id(c) for c in ("cuda_runtime", "cuda_driver", "runtime") if c in ev.cats]
    called = np.unique(ev.name[np.isin(ev.cat, runtime)])
    return any(ev.names[n].startswith("hip") for n in called.tolist())


def mode_of(p: Profile) -> dict[str, Any]:
    """What kind of trace it is, and so what its figures can and cannot show."""
    if p.gpu:
        streams = int((p.lane_stream & (p.lane_rank == p.primary)).sum())
        ranks = f", {len(p.ranks)} ranks" if len(p.ranks) > 1 else ""
        rocm = _is_rocm(p)
        return {
            "kind": "gpu",
            "label": f"GPU trace ({'GPU kernels (ROCm)' if rocm else 'CUDA kernels'}, "
            f"{streams} stream{'s' if streams != 1 else ''}{ranks})",
            "shows": [
                "GPU kernels and their launch overhead",
                "host-device copies",
                "GPU idle time",
                f"communication kernels ({'RCCL' if rocm else 'NCCL'}) and their overlap",
                "operator time on the host",
                "data-loader stalls",
                "host syncs",
            ],
            "cannot_show": [],
        }
    return {
        "kind": "cpu",
        "label": "CPU-only trace",
        "shows": [
            "operator time",
            "data-loader stalls",
            "host syncs (.item(), .cpu())",
            "Python overhead between operators",
            "gloo collectives and their overlap",
        ],
        "cannot_show": [
            "GPU kernels and their time: the trace has no device activity (recorded without a GPU, or without "
            "ProfilerActivity.CUDA)",
            "host-device copies (memcpy)",
            "NCCL communication",
            "GPU idle time",
            "kernel launch overhead",
        ],
    }


def _ms(us: float) -> str:
    return f"{us / 1000:.1f}"


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def findings(summary: dict[str, Any], p: Profile, loader_names: list[str], op_durations: np.ndarray) -> list[dict]:
    """What stands out, each with its measured evidence and what to try, most important first."""
    step = summary["mean_step_us"] or 1.0
    mean = {c["category"]: c["us"] for c in summary["breakdown"]}
    n_steps = max(len(summary["steps"]), 1)
    gpu = p.gpu
    out: list[tuple[str, float, dict[str, Any]]] = []

    def add(fid: str, severity: str, size: float, title: str, evidence: str, suggestion: str) -> None:
        out.append(
            (
                severity,
                size,
                {"id": fid, "severity": severity, "title": title, "evidence": evidence, "suggestion": suggestion},
            )
        )

    share = mean["data_loading"] / step
    if share >= DATA_LOADING_SHARE:
        single = any("_SingleProcessDataLoaderIter" in n for n in loader_names)
        evidence = f"data loading is {_pct(share)} of the step ({_ms(mean['data_loading'])} of {_ms(step)} ms)"
        if single:
            evidence += "; the DataLoader runs in the main process (num_workers=0)"
            suggestion = "try num_workers (e.g. 4) and pin_memory=True, so batches are prepared while the step runs"
        else:
            suggestion = (
                "the workers do not keep up: more num_workers, a larger prefetch_factor, or lighter __getitem__"
            )
        add(
            "data-loading",
            "high" if share >= 0.4 else "medium",
            share,
            f"data loading is {_pct(share)} of the step",
            evidence,
            suggestion,
        )

    per_step = sum(s["per_step"] for s in summary["syncs"])
    if per_step >= HOST_SYNCS_PER_STEP:
        sites = ", ".join(f"{s['location'] or 'a line not recorded'} ({s['op']})" for s in summary["syncs"][:3])
        evidence = f"{per_step:g} host sync{'s' if per_step != 1 else ''} per step at {sites}"
        if not all(s["location"] for s in summary["syncs"][:3]):
            evidence += " (record with with_stack=True to see the Python line)"
        if gpu:
            evidence += f"; {_ms(sum(s['total_us'] for s in summary['syncs']) / n_steps)} ms per step waiting"
            suggestion = "keep values on the GPU (accumulate losses as tensors, read them every N steps); avoid .item(), .cpu() and printing tensors in the step"  # noqa: E501
        else:
            evidence += "; each is cheap on this CPU trace, but on a GPU it makes the host wait for the queue to drain"
            suggestion = "read values back every N steps instead of every step (accumulate the loss as a tensor)"
        title = f"{per_step:g} host sync{'s' if per_step != 1 else ''} per step"
        add("host-syncs", "medium", per_step / 100, title, evidence, suggestion)

    launch = summary.get("launch")
    if gpu and launch and launch["short_kernels_per_step"] >= SHORT_KERNELS_PER_STEP:
        k = launch["short_kernels_per_step"]
        add(
            "short-kernels",
            "medium",
            k / 10_000,
            f"{k:,.0f} kernels under 10 µs per step",
            f"{k:,.0f} of {launch['kernels_per_step']:,.0f} kernels per step run under {SHORT_KERNEL_US:g} µs; "
            f"the median launch delay is {launch['median_launch_delay_us'] or 0:.1f} µs",
            "fuse them: try torch.compile, or capture the step in CUDA graphs",
        )

    if gpu and mean["idle"] / step >= GPU_IDLE_SHARE:
        share = mean["idle"] / step
        add(
            "gpu-idle",
            "high",
            share,
            f"the GPU is idle {_pct(share)} of the step",
            f"no kernel or copy runs for {_ms(mean['idle'])} of {_ms(step)} ms per step",
            "look at what the host does in the gaps (the timeline's host lanes): input pipeline, syncs, Python",
        )

    comm = mean["communication"] / step
    for row in summary["overlap"]:
        if (
            row["rank"] == summary["ranks"][0]
            and row["share"] < EXPOSED_COMM_MAX_OVERLAP
            and comm >= EXPOSED_COMM_SHARE
        ):
            where = "" if gpu else " (gloo runs it on its own threads; the main thread waits where it does not overlap)"
            add(
                "exposed-communication",
                "high" if comm >= 0.3 else "medium",
                comm,
                f"communication is {_pct(comm)} of the step, {_pct(row['share'])} of it overlapped",
                f"{_ms(row['communication_us'] / n_steps)} ms of communication per step, "
                f"{_pct(row['share'])} hidden behind computation{where}",
                "overlap it: DDP buckets (bucket_cap_mb), gradient accumulation with no_sync(), fewer or larger "
                "collectives",
            )

    share = mean["memcpy"] / step
    if share >= MEMCPY_SHARE:
        add(
            "memcpy",
            "medium",
            share,
            f"host-device copies are {_pct(share)} of the step",
            f"{_ms(mean['memcpy'])} of {_ms(step)} ms per step copying",
            "pin host memory (pin_memory=True) and copy with non_blocking=True; keep tensors on the device",
        )

    if not gpu:
        idle = mean["idle"] / step
        ops_per_step = len(op_durations) / n_steps
        median = float(np.median(op_durations)) if len(op_durations) else 0.0
        if idle >= MAIN_THREAD_IDLE_SHARE:
            add(
                "small-ops",
                "medium",
                idle,
                f"the main thread runs no operator {_pct(idle)} of the step",
                f"{_ms(mean['idle'])} of {_ms(step)} ms per step is spent between operators (Python, the framework)",
                "move work out of Python: batch small tensors, vectorise loops, try torch.compile",
            )
        elif median < SMALL_OP_MEDIAN_US and ops_per_step >= SMALL_OPS_PER_STEP:
            add(
                "small-ops",
                "medium",
                ops_per_step / 10_000,
                f"{ops_per_step:,.0f} small operators per step",
                f"the median top-level operator takes {median:.1f} µs; {ops_per_step:,.0f} of them per step",
                "larger batches or fused operations (torch.compile) amortise the per-operator overhead",
            )

    # Collectives and syncs are waits, which their own findings explain: not "where to look".
    total_self = sum(o["self_us"] for o in summary["top_ops"])
    work = [o for o in summary["top_ops"] if not o["name"].startswith(COMM_PREFIXES) and o["name"] not in SYNC_OPS]
    if work and total_self > 0 and work[0]["self_us"] / total_self >= DOMINANT_OP_SHARE:
        top = work[0]
        share = top["self_us"] / total_self
        shapes = f", inputs {top['input_shapes'][0]}" if top["input_shapes"] else ""
        add(
            "dominant-op",
            "info",
            share,
            f"{top['name']} takes {_pct(share)} of operator time",
            f"{top['name']}: {_ms(top['self_us'] / n_steps)} ms self time per step over {top['calls'] / n_steps:g} "
            f"calls{shapes}",
            "that is where to look first: its input sizes, its dtype, whether it needs to run every step",
        )

    out.sort(key=lambda f: (SEVERITY_ORDER[f[0]], -f[1]))
    return [f for _, _, f in out]


# ---------------------------------------------------------------- the summary


def _rank_of(src_path: Path, meta: dict[str, Any]) -> int:
    info = meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    m = re.search(r"rank[_-]?(\d+)", src_path.name)
    return int(m.group(1)) if m else 0


def analyse(p: Profile, sources: list[tuple[Path, int]]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The summary (every ProfileSummary field but trace, cached and analysis_ms) and the
    arrays the index keeps besides the events (the full operator table, for diffs)."""
    ev, rank = p.ev, p.primary
    notes: list[str] = []
    steps = steps_of(p, rank)
    span = steps.span
    per_step, means = breakdown(p, rank, steps)
    step_rows = [  # rounded here, as _rounded would: it is not walked again below
        {"step": n, "start_us": round(s, 3), "dur_us": round(e - s, 3), "breakdown": b}
        for n, s, e, b in zip(steps.numbers, steps.start.tolist(), steps.end.tolist(), per_step, strict=True)
    ]
    mean_bd = [{"category": c, "us": means[c]} for c in CATEGORIES]
    ops, op_table = top_ops(p, rank, span)
    kernel_rows, launch = kernels(p, rank, span, len(steps)) if p.gpu else ([], None)
    summary: dict[str, Any] = {
        "mode": mode_of(p),
        "ranks": p.ranks,
        "t_start_us": float(ev.ts.min()),
        "t_end_us": float((ev.ts + ev.dur).max()),
        "events": len(ev.ts),
        "steps": step_rows if steps.source == "profiler-steps" else [],
        "step_source": steps.source,
        "mean_step_us": float(np.mean(steps.end - steps.start)),
        "breakdown": mean_bd,
        "top_ops": ops,
        "kernels": kernel_rows,
        "launch": launch,
        "syncs": syncs(p, rank, span, len(steps)),
        "overlap": [o for r in p.ranks if (o := overlap(p, r, steps_of(p, r).span)) is not None],
        "findings": [],
        "lanes": [{k: lane[k] for k in ("id", "label", "kind", "rank", "events", "max_depth")} for lane in ev.lanes],
        "hta": [],
        "notes": notes,
    }
    if steps.source == "whole-trace":
        notes.append("The trace has no ProfilerStep#N spans: the whole trace is taken as one step.")
    if len(p.ranks) > 1:
        others = ", ".join(
            f"rank {r}: {_ms(float(np.mean(s.end - s.start)))} ms" for r in p.ranks[1:] if len(s := steps_of(p, r))
        )
        notes.append(
            f"{len(p.ranks)} ranks merged; each rank's lanes are on its own clock. Steps, breakdown, operators, "
            f"kernels and syncs are rank {rank}'s (mean step {_ms(summary['mean_step_us'])} ms; {others})."
        )
    if p.gpu:
        notes.append(
            "On a GPU trace data loading and syncs count only where the GPU is idle; kernels and copies come first."
        )
        biggest = int(np.bincount(p.lane_rank[ev.lane]).max())
        if biggest <= HTA_MAX_EVENTS:
            summary["hta"] = apply_hta(run_hta(sources, rank, notes), rank, summary)
        else:
            notes.append(
                f"Holistic Trace Analysis was not run: a rank's trace holds {biggest:,} events, and HTA's own "
                f"parser takes minutes and gigabytes at that size (over {HTA_MAX_EVENTS:,}); gpudojo computed it all."
            )
    loader_names = sorted({ev.names[n] for n in np.unique(ev.name[p.per_event("is_loader")])})
    top_level = in_span(p, rank, span) & p.mask("cpu_op", rank, "main") & ~p.per_event("is_step")
    top_level &= (ev.parent < 0) | ~np.isin(ev.cat[np.maximum(ev.parent, 0)], [ev.cat_id("cpu_op")])
    summary["findings"] = findings(summary, p, loader_names, ev.dur[top_level])
    kept, summary["steps"] = summary["steps"], []  # rounded already: not walked again
    rounded = _rounded(summary)
    rounded["steps"] = kept
    return rounded, {**op_table, "n_steps": np.array([len(steps)])}


def _rounded(value: Any, key: str = "") -> Any:
    """Floats to the trace's own resolution (ns; shares to 0.01%), so that float64 noise of
    microsecond timestamps around 1e12 does not show."""
    if isinstance(value, float):
        return round(value, 4 if key == "share" else 3)
    if isinstance(value, dict):
        return {k: _rounded(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v, key) for v in value]
    return value


def write_analysis(
    sources: list[Path],
    folder: Path,
    on_progress: Progress | None = None,
    max_inflated_bytes: int = MAX_INFLATED_BYTES,
) -> dict[str, Any]:
    """Analyse one trace file per rank into ``folder``: summary.json (ProfileSummary's fields
    but trace and cached), the index for windows and hovers (index.npz, args.bin) and the
    operator table for diffs (ops.npz). Raises NotATrace, and TraceTooLarge for a gzipped
    file that inflates past ``max_inflated_bytes`` (bytes) or an analysis that would keep
    more than MAX_KEPT_JSON_BYTES of names.

    summary.json is removed first and written last, by rename: a folder holding one is
    complete, whatever happened to the process writing it."""
    t0 = time.perf_counter()
    with collector_paused():  # the summary's rows by the ten thousand: see collector_paused
        progress = on_progress or (lambda phase, fraction: None)
        read: list[Source] = []
        for i, path in enumerate(sources):
            path = Path(path)

            def scaled(phase: str, fraction: float | None, i: int = i) -> None:
                progress(phase, None if fraction is None else (i + fraction) / len(sources))

            columns = read_trace(path, scaled, max_inflated_bytes)
            read.append(Source(path, _rank_of(path, columns.meta), columns))
            del columns  # held by its Source only: merge frees each column as it takes it
        progress("analysing", None)
        renamed = _distinct_ranks(read)
        ev = merge(read)
        located = [(s.path, s.rank) for s in read]
        skipped = sum(s.columns.skipped for s in read)
        unmatched = sum(s.columns.unmatched for s in read)
        del read  # the columns live on in ev
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "summary.json").unlink(missing_ok=True)
        # The index goes to disk while the analysis runs (NumPy and file writes let go of the GIL).
        with ThreadPoolExecutor(1) as pool:
            saving = pool.submit(save_events, ev, folder)
            summary, ops = analyse(Profile.of(ev), located)
            progress("indexing", None)
            saving.result()
        save_arrays(folder / "ops.npz", ops)
        summary["notes"] += renamed
        if skipped:
            summary["notes"].append(f"{skipped} events without a usable ts, dur or name were skipped.")
        if unmatched:
            summary["notes"].append(f"{unmatched} B/E events had no other half and were left out.")
    summary["analysis_ms"] = (time.perf_counter() - t0) * 1000
    text = json.dumps(summary)
    if len(text) > MAX_KEPT_JSON_BYTES:
        raise TraceTooLarge(
            f"its summary would be {len(text)} bytes ({len(summary['steps'])} steps, {len(summary['lanes'])} "
            f"threads and streams); the most this server keeps is {MAX_KEPT_JSON_BYTES} bytes"
        )
    tmp = folder / "summary.tmp.json"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(folder / "summary.json")
    return summary


def _distinct_ranks(sources: list[Source]) -> list[str]:
    """Give a file whose rank another file already has the next free one (two copies of a
    rank 0 trace, or traces from two runs), and say so."""
    taken: set[int] = set()
    notes = []
    for src in sources:
        if src.rank in taken:
            free = max(taken) + 1
            notes.append(f"{src.path.name} says rank {src.rank}, as another file does: it is shown as rank {free}.")
            src.rank = free
        taken.add(src.rank)
    return notes


# ---------------------------------------------------------------- queries on a cached analysis


class Loaded:
    """A cached analysis, opened from its folder, ready for window and event queries (the
    server keeps a few in memory)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.summary = json.loads((self.folder / "summary.json").read_text(encoding="utf-8"))
        self.events = load_events(self.folder)
        with np.load(self.folder / "ops.npz") as ops:
            self.ops = {k: ops[k] for k in ops.files}
        self.index = WindowIndex.build(self.events)

    def window(self, t0_us: float, t1_us: float, px: int) -> dict[str, Any]:
        """ProfileWindow: per lane, the spans visible in [t0_us, t1_us] at ``px`` pixels."""
        px = int(min(max(px, 1), MAX_PX))
        t1_us = max(float(t1_us), float(t0_us) + 1e-3)
        lanes = self.index.query(self.events, float(t0_us), t1_us, px)
        return {"t0_us": float(t0_us), "t1_us": t1_us, "px": px, "lanes": lanes}

    def event(self, ref: int) -> dict[str, Any]:
        """EventDetail of span ``ref``; KeyError when there is none."""
        ev = self.events
        if not 0 <= ref < len(ev.ts):
            raise KeyError(ref)
        python = ev.cat_id("python_function")
        stack: list[str] = []
        node = int(ev.parent[ref])
        while node >= 0 and len(stack) < MAX_STACK:
            if ev.cat[node] == python:
                stack.append(ev.names[ev.name[node]])
            node = int(ev.parent[node])
        args = read_args(self.folder, int(ev.args_start[ref]), int(ev.args_len[ref]))
        return {
            "ref": int(ref),
            "name": ev.names[ev.name[ref]],
            "cat": ev.cats[ev.cat[ref]],
            "lane": int(ev.lane[ref]),
            "t_us": float(ev.ts[ref]),
            "dur_us": float(ev.dur[ref]),
            "input_shapes": ev.dims_text[ev.dims[ref]] if ev.dims[ref] >= 0 else "",
            "stack": stack,
            "args": {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in args.items()},
        }

    def ops_per_step(self) -> dict[str, tuple[float, int]]:
        """Every CPU op's self time per step (us) and calls, over the analysed steps."""
        n = max(int(self.ops["n_steps"][0]), 1)
        names = self.events.names
        return {
            names[int(i)]: (float(s) / n, int(c))
            for i, s, c in zip(self.ops["op_name"], self.ops["op_self_us"], self.ops["op_calls"], strict=True)
        }


def diff(a: Loaded, b: Loaded) -> dict[str, Any]:
    """ProfileDiff (but a and b): step time, breakdown and per-step operator self time of the
    two profiles side by side, the biggest changes first."""
    sa, sb = a.summary, b.summary
    step_a, step_b = float(sa["mean_step_us"]), float(sb["mean_step_us"])
    bd_a = {c["category"]: c["us"] for c in sa["breakdown"]}
    bd_b = {c["category"]: c["us"] for c in sb["breakdown"]}
    rows = [
        {"key": c, "a_us": bd_a.get(c, 0.0), "b_us": bd_b.get(c, 0.0), "delta_us": bd_b.get(c, 0.0) - bd_a.get(c, 0.0)}
        for c in CATEGORIES
    ]
    ops_a, ops_b = a.ops_per_step(), b.ops_per_step()
    ops = []
    for name in set(ops_a) | set(ops_b):
        (us_a, calls_a), (us_b, calls_b) = ops_a.get(name, (0.0, 0)), ops_b.get(name, (0.0, 0))
        ops.append(
            {
                "name": name,
                "a_self_us": us_a,
                "b_self_us": us_b,
                "delta_us": us_b - us_a,
                "a_calls": calls_a,
                "b_calls": calls_b,
            }
        )
    ops.sort(key=lambda r: (-abs(r["delta_us"]), r["name"]))
    ids_a = [f["id"] for f in sa["findings"]]
    ids_b = [f["id"] for f in sb["findings"]]
    return {
        "a_mode": sa["mode"]["kind"],
        "b_mode": sb["mode"]["kind"],
        "step_a_us": step_a,
        "step_b_us": step_b,
        "speedup": step_a / step_b if step_b > 0 else 0.0,
        "breakdown": sorted(rows, key=lambda r: -abs(r["delta_us"])),
        "ops": ops[:MAX_DIFF_OPS],
        "findings_resolved": [i for i in ids_a if i not in ids_b],
        "findings_new": [i for i in ids_b if i not in ids_a],
    }
