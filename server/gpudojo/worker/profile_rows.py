"""Timeline rows for a lane whose spans cross instead of nesting, compiled with numba (cached on
disk, as the snapshot scanner is). Only the profile-analysis worker imports this module: the
serving process never loads numba."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def lowest_free_rows(ts: np.ndarray, end: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Each span (in start order, longest first) on the lowest row whose last span has ended
    when it starts; a ``skip`` span takes no row (0 is given). Rows are few (the deepest
    nesting), so a scan of them per span is quicker than a heap: a million spans take a few
    tens of milliseconds."""
    n = ts.shape[0]
    rows = np.zeros(n, np.int64)
    row_end = np.empty(64, np.float64)
    used = 0
    for i in range(n):
        if skip[i]:
            continue
        t = ts[i]
        r = 0
        while r < used and row_end[r] > t:
            r += 1
        if r == used:
            if used == row_end.shape[0]:
                grown = np.empty(used * 2, np.float64)
                grown[:used] = row_end
                row_end = grown
            used += 1
        row_end[r] = end[i]
        rows[i] = r
    return rows


@numba.njit(cache=True)
def open_spans(ts: np.ndarray, end: np.ndarray, lane: np.ndarray, lanes: int, skip: np.ndarray):
    """For spans sorted by (lane, start, longest first), in one pass: how many earlier spans of
    the lane are still open when each starts (their ends are later than its start), the latest
    earlier span of the lane one level up (its parent where spans nest), and for each lane
    whether two spans given the same level overlap (the spans cross instead of nesting
    somewhere in it). A span that ends where a later one starts (a 0 µs aten::empty among
    them) is closed by then. The open spans' ends are kept sorted, the earliest on top, so
    the spans a start closes come off the top; they are at most the deepest nesting. The
    ``skip`` spans are left out (count 0, no parent): a crossed lane's spans below its steps
    are counted without the steps, in the lane's own arrays."""
    n = ts.shape[0]
    counted = np.zeros(n, np.int64)
    parent = np.full(n, -1, np.int32)
    crossed = np.zeros(lanes, np.bool_)
    ends = np.empty(64, np.float64)
    last = np.full(64, -1, np.int64)  # the latest span of the lane at each level
    size = 0
    for i in range(n):
        if i == 0 or lane[i] != lane[i - 1]:
            size = 0
            last[:] = -1
        if skip[i]:
            continue
        t = ts[i]
        while size > 0 and ends[size - 1] <= t:
            size -= 1
        level = size
        counted[i] = level
        if level == last.shape[0]:
            grown = np.full(level * 2, -1, np.int64)
            grown[:level] = last
            last = grown
        if level > 0:
            parent[i] = last[level - 1]
        before = last[level]
        if before >= 0 and t < end[before]:
            crossed[lane[i]] = True
        last[level] = i
        # its end among the open ones, latest first: where spans nest it ends no later than
        # the span around it and goes on top with nothing moved; a crossing span shifts the
        # few above it. (Inline: a helper taking the array would count references to it
        # with atomic instructions on every call, as the trace scanner's did.)
        if size == ends.shape[0]:
            grown_ends = np.empty(size * 2, np.float64)
            grown_ends[:size] = ends
            ends = grown_ends
        e = end[i]
        j = size
        while j > 0 and ends[j - 1] < e:
            ends[j] = ends[j - 1]
            j -= 1
        ends[j] = e
        size += 1
    return counted, parent, crossed


def warm_up() -> None:
    """Compile (the first time on a machine) or load the cached code."""
    lowest_free_rows(np.zeros(2), np.ones(2), np.zeros(2, np.bool_))
    open_spans(np.zeros(2), np.ones(2), np.zeros(2, np.int32), 1, np.zeros(2, np.bool_))
