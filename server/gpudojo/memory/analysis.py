"""A capture's allocation intervals as NumPy arrays, and every question the viewer asks of
them: the peak and what was live there, OOMs, windowed timeline queries, diffs.

The heavy part (parsing a snapshot) runs once, in a child process, and is cached as an
.npz plus a summary; queries then load the arrays (memory-mapped) and answer with
vectorised NumPy, fast enough for a 1M-allocation capture on every pan and zoom.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..clipping import MAX_KEPT_JSON_BYTES, clip_strings
from .estimator import oom_fixes
from .snapshot import CaptureTooLarge, Parsed

# 2: frames, phases and context are clipped (an analysis cached before may hold them whole).
ANALYSIS_VERSION = 2
MAX_FRAMES_LISTED = 20


@dataclass
class Arrays:
    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    category: np.ndarray
    frame: np.ndarray
    addr: np.ndarray

    @classmethod
    def from_parsed(cls, parsed: Parsed) -> Arrays:
        iv = parsed.intervals
        return cls(
            start=np.asarray(iv.start, dtype=np.float64),
            end=np.asarray(iv.end, dtype=np.float64),
            size=np.asarray(iv.size, dtype=np.int64),
            category=np.asarray(iv.category, dtype=np.int32),
            frame=np.asarray(iv.frame, dtype=np.int32),
            addr=np.asarray(iv.addr, dtype=np.int64),
        )

    def save(self, path: Path) -> None:
        np.savez(
            path,
            start=self.start,
            end=self.end,
            size=self.size,
            category=self.category,
            frame=self.frame,
            addr=self.addr,
        )

    @classmethod
    def load(cls, path: Path) -> Arrays:
        with np.load(path) as data:
            return cls(**{k: data[k] for k in ("start", "end", "size", "category", "frame", "addr")})


def live_mask(a: Arrays, t: float) -> np.ndarray:
    return (a.start <= t) & (a.end > t)


def breakdown(a: Arrays, t: float, categories: list[str]) -> dict[str, Any]:
    """What was live at ``t``: the total, by category, by top user frame."""
    mask = live_mask(a, t)
    sizes, cats, frames = a.size[mask], a.category[mask], a.frame[mask]
    by_cat = np.bincount(cats[cats >= 0], weights=sizes[cats >= 0], minlength=len(categories))
    by_category = [
        {"category": categories[i], "bytes": int(v)}
        for i, v in sorted(enumerate(by_cat), key=lambda kv: -kv[1])
        if v > 0
    ]
    uniq, inverse = np.unique(frames, return_inverse=True)
    totals = np.bincount(inverse, weights=sizes) if len(uniq) else np.zeros(0)
    counts = np.bincount(inverse) if len(uniq) else np.zeros(0, dtype=np.int64)
    order = np.argsort(-totals)[:MAX_FRAMES_LISTED]
    by_frame = [{"frame": int(uniq[i]), "bytes": int(totals[i]), "count": int(counts[i])} for i in order]
    return {"t_us": float(t), "total_bytes": int(sizes.sum()), "by_category": by_category, "by_frame": by_frame}


def peak_time(a: Arrays) -> tuple[float, int]:
    """The moment most bytes were live, and how many (frees before allocs at equal times)."""
    if not len(a.size):
        return 0.0, 0
    times = np.concatenate([a.start, a.end])
    deltas = np.concatenate([a.size, -a.size])
    order = np.lexsort((deltas, times))
    running = np.cumsum(deltas[order])
    at = int(np.argmax(running))
    return float(times[order][at]), int(running[at])


def analyse(parsed: Parsed) -> tuple[Arrays, dict[str, Any]]:
    """The arrays and the summary (everything of Analysis but the capture and timing)."""
    a = Arrays.from_parsed(parsed)
    t_peak, _ = peak_time(a)
    ooms = []
    for oom in parsed.ooms:
        live = breakdown(a, oom["t_us"], parsed.categories)
        free = oom.get("device_free_bytes")
        shortfall = max(int(oom["requested_bytes"]) - int(free or 0), 0)
        ooms.append(
            {
                **oom,
                "live": live,
                "fixes": oom_fixes(parsed.context, int(oom["requested_bytes"]), shortfall),
            }
        )
    summary = {
        "axis": parsed.axis,
        "t_start_us": parsed.t_start,
        "t_end_us": parsed.t_end,
        "entries": parsed.entries,
        "allocations": len(a.size),
        "categories": parsed.categories,
        "category_source": parsed.category_source,
        "frames": parsed.frames,
        "peak": breakdown(a, t_peak, parsed.categories),
        "ooms": ooms,
        "notes": parsed.notes,
        "context": parsed.context,
    }
    return a, summary


class Loaded:
    """A cached analysis, ready for queries (kept in memory by the service, LRU)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        self.arrays = Arrays.load(folder / "arrays.npz")
        self._index_by_category()

    def _index_by_category(self) -> None:
        """Per category, starts and ends sorted with running sizes: bytes live at any time t
        are then two binary searches away."""
        a = self.arrays
        self._cat = []
        for c in range(len(self.summary["categories"])):
            mask = a.category == c
            s_order = np.argsort(a.start[mask], kind="stable")
            e_order = np.argsort(a.end[mask], kind="stable")
            sizes = a.size[mask]
            self._cat.append(
                (
                    a.start[mask][s_order],
                    np.concatenate([[0], np.cumsum(sizes[s_order])]),
                    a.end[mask][e_order],
                    np.concatenate([[0], np.cumsum(sizes[e_order])]),
                )
            )

    def live_by_category(self, times: np.ndarray) -> np.ndarray:
        out = np.zeros((len(self._cat), len(times)), dtype=np.int64)
        for c, (starts, cum_s, ends, cum_e) in enumerate(self._cat):
            out[c] = (
                cum_s[np.searchsorted(starts, times, side="right")] - cum_e[np.searchsorted(ends, times, side="right")]
            )
        return out

    def window(self, t0: float, t1: float, px: int, top: int) -> dict[str, Any]:
        """Samples of live bytes by category across [t0, t1], the ``top`` largest allocations
        overlapping it as bands, and at each sample what the bands leave out."""
        a = self.arrays
        t1 = max(t1, t0 + 1e-9)
        times = np.linspace(t0, t1, px)
        by_cat = self.live_by_category(times)
        total = by_cat.sum(axis=0)
        overlap = np.flatnonzero((a.start < t1) & (a.end > t0))
        keep = overlap[np.argpartition(-a.size[overlap], top - 1)[:top]] if len(overlap) > top else overlap
        keep = keep[np.argsort(a.start[keep], kind="stable")]
        starts, ends, sizes = a.start[keep], a.end[keep], a.size[keep]
        in_bands = np.zeros(px, dtype=np.int64)
        for lo in range(0, len(keep), 256):  # chunks keep the (bands x px) matrix small
            s, e, z = starts[lo : lo + 256, None], ends[lo : lo + 256, None], sizes[lo : lo + 256, None]
            in_bands += (((s <= times) & (e > times)) * z).sum(axis=0)
        frames = self.summary["frames"]
        used = {int(f) for f in a.frame[keep] if f >= 0}
        return {
            "t0_us": float(t0),
            "t1_us": float(t1),
            "times_us": times.tolist(),
            "by_category": by_cat.tolist(),
            "other_bytes": (total - in_bands).tolist(),
            "bands": [
                {
                    "id": int(i),
                    "start_us": float(a.start[i]),
                    "end_us": float(a.end[i]),
                    "size_bytes": int(a.size[i]),
                    "category": int(a.category[i]),
                    "frame": int(a.frame[i]),
                    "addr": int(a.addr[i]),
                }
                for i in keep
            ],
            "frames": {f: frames[f] for f in sorted(used)},
        }


def frame_key(frames: list[dict[str, Any]], index: int) -> str:
    if index < 0 or index >= len(frames):
        return "(no user frame)"
    f = frames[index]
    return f"{f['filename']}:{f['line']} {f['name']}"


def diff(a: Loaded, b: Loaded) -> dict[str, Any]:
    """Two captures' peaks side by side: totals, by category, by user frame."""

    def rows(key: str, name_of) -> list[dict[str, Any]]:
        left = {name_of(a, r): r["bytes"] for r in a.summary["peak"][key]}
        right = {name_of(b, r): r["bytes"] for r in b.summary["peak"][key]}
        keys = sorted(set(left) | set(right), key=lambda k: -abs(right.get(k, 0) - left.get(k, 0)))
        return [
            {
                "key": k,
                "a_bytes": left.get(k, 0),
                "b_bytes": right.get(k, 0),
                "delta_bytes": right.get(k, 0) - left.get(k, 0),
            }
            for k in keys
        ]

    pa, pb = a.summary["peak"]["total_bytes"], b.summary["peak"]["total_bytes"]
    return {
        "peak_a_bytes": pa,
        "peak_b_bytes": pb,
        "delta_bytes": pb - pa,
        "by_category": rows("by_category", lambda side, r: r["category"]),
        "by_frame": rows("by_frame", lambda side, r: frame_key(side.summary["frames"], r["frame"])),
    }


def write_analysis(parsed: Parsed, folder: Path) -> dict[str, Any]:
    """Write arrays.npz and summary.json into ``folder``; the summary. Raises CaptureTooLarge
    when the summary would hold more than MAX_KEPT_JSON_BYTES (bytes) of JSON."""
    t0 = time.perf_counter()
    arrays, summary = analyse(parsed)
    # The sidecar's phase names and model context come from the run, as the frames do.
    summary = clip_strings(summary)
    text = json.dumps(summary)
    if len(text) > MAX_KEPT_JSON_BYTES:
        raise CaptureTooLarge(
            f"its analysis would keep {len(text)} bytes of frames, phases and context ({len(summary['frames'])} "
            f"distinct frames); the most this server keeps is {MAX_KEPT_JSON_BYTES} bytes"
        )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "arrays.tmp.npz"
    arrays.save(tmp)
    tmp.replace(folder / "arrays.npz")
    summary["analysis_ms"] = (time.perf_counter() - t0) * 1000
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return summary
