"""Timeline rows for a lane whose spans cross instead of nesting, compiled with numba (cached on
disk, as the snapshot scanner is). Only the profile-analysis worker imports this module: the
serving process never loads numba."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def lowest_free_rows(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each span (in start order, longest first) on the lowest row whose last span has ended
    when it starts. Rows are few (the deepest nesting), so a scan of them per span is quicker
    than a heap: a million spans take a few tens of milliseconds."""
    n = ts.shape[0]
    rows = np.empty(n, np.int64)
    row_end = np.empty(64, np.float64)
    used = 0
    for i in range(n):
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


def warm_up() -> None:
    """Compile (the first time on a machine) or load the cached code."""
    lowest_free_rows(np.zeros(2), np.ones(2))
