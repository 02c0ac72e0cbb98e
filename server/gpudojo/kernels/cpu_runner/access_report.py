"""The memory-access report: the launcher's per-instruction counts (memory_access.h) summed per
source line and per kernel. Data in, data out: the code addresses' lines come from the caller.
"""

from __future__ import annotations

from typing import Any

NOTE = "CPU emulation: counts are exact for this launch, times are not a GPU's"


def _per_request(total: int, requests: int) -> float:
    return round(total / requests, 3) if requests else 0.0


def summarize(raw: dict[str, Any], lines: dict[int, int | None]) -> dict[str, Any]:
    """A MemoryReport dict from the launcher's ``memory`` member; ``lines`` maps a site's code
    address (the call's return address minus one) to its source line."""
    rows: dict[tuple[int | None, str], dict[str, Any]] = {}
    for site in raw.get("sites", []):
        line = lines.get(int(site["pc"], 16) - 1)
        row = rows.setdefault(
            (line, site["space"]),
            {"line": line, "space": site["space"], "ops": [], "requests": 0, "accesses": 0, "bytes": 0}
            | (
                {"sectors": 0, "min_sectors": 0}
                if site["space"] == "global"
                else {"wavefronts": 0, "ideal_wavefronts": 0, "max_ways": 0}
            ),
        )
        if site["op"] not in row["ops"]:
            row["ops"].append(site["op"])
        for key in ("requests", "accesses", "bytes", "sectors", "min_sectors", "wavefronts", "ideal_wavefronts"):
            if key in row:
                row[key] += site[key]
        if "max_ways" in row:
            row["max_ways"] = max(row["max_ways"], site["max_ways"])
    out_lines = []
    for (_line, space), row in sorted(rows.items(), key=lambda kv: (kv[0][0] or 1 << 30, kv[0][1])):
        row["ops"] = sorted(row["ops"], key=["load", "store", "atomic"].index)
        n = row["requests"]
        if space == "global":
            row["sectors_per_request"] = _per_request(row["sectors"], n)
            row["min_sectors_per_request"] = _per_request(row["min_sectors"], n)
        else:
            row["ways_per_request"] = _per_request(row["wavefronts"], n)
        out_lines.append(row)
    totals = []
    for space in ("global", "shared"):
        mine = [r for r in out_lines if r["space"] == space]
        if not mine:
            continue
        t: dict[str, Any] = {"space": space}
        for key in ("requests", "accesses", "bytes"):
            t[key] = sum(r[key] for r in mine)
        got, best = ("sectors", "min_sectors") if space == "global" else ("wavefronts", "ideal_wavefronts")
        t[got], t[best] = sum(r[got] for r in mine), sum(r[best] for r in mine)
        t["efficiency"] = round(t[best] / t[got], 4) if t[got] else 1.0
        totals.append(t)
    recorded, total = int(raw.get("blocks_recorded", 0)), int(raw.get("blocks_total", 0))
    stride = int(raw.get("block_stride", 1))
    if raw.get("capped"):
        sampling = (
            f"sampled: {recorded} of {total} blocks recorded (one block in {stride}, until "
            f"{int(raw.get('max_accesses', 0)):,} thread accesses); "
            "per-request figures are those of the recorded blocks"
        )
    elif recorded < total:
        sampling = (
            f"sampled: {recorded} of {total} blocks recorded (one block in {stride}); per-request figures are "
            "those of the recorded blocks"
        )
    else:
        sampling = f"every access of all {total} blocks recorded"
    return {
        "note": NOTE,
        "sampled": recorded < total,
        "sampling": sampling,
        "blocks_recorded": recorded,
        "blocks_total": total,
        "lines": out_lines,
        "totals": totals,
        # Counted in every block, sampled or not.
        "writers": [
            {
                "array": w["array"],
                "threads": int(w["threads"]),
                "stores": int(w["stores"]),
                "max_per_thread": int(w["max_per_thread"]),
            }
            for w in raw.get("writers", [])
        ],
    }
