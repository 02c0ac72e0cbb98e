"""Hidden inputs for the gpu-sharing-strategies checks: workload sets for MIG plans (feasible ones
built from a valid layout, so a plan is known to exist, and infeasible ones), and recordings of
per-tenant step times alone and shared under time-slicing, MPS and MIG.

The recordings are crafted, not measured: their shapes follow how each mechanism shares a GPU.
Time-slicing gives each context the whole GPU in turns, so a tenant waits while the others run
(a mean slowdown that grows with the others' duty cycles, and long waits when it misses its
turn); MPS runs the tenants' kernels side by side (a smaller slowdown, some contention spikes);
MIG gives each tenant fixed slices (a slowdown set by how few SMs it keeps, and almost no jitter).
"""

from __future__ import annotations

import csv
import math
import random
from collections import Counter
from pathlib import Path

import sharing_ref as ref

NAMES = [
    "chat-api",
    "embedder",
    "ranker",
    "asr",
    "ocr",
    "notebook",
    "finetune",
    "etl",
    "vision",
    "scorer",
    "tts",
    "reco",
]

# Valid layouts (profile ids: 19 = 1g with one memory slice, 15 = 1g with two, 14 = 2g, 9 = 3g,
# 5 = 4g, 0 = 7g; the same ids on A100 and H100).
TRICKY = [
    [9, 14, 19, 19],  # 3g at 4, 2g at 0, 1g at 2 and 3
    [15, 15, 15, 15],
    [9, 9],
    [19] * 7,
    [14, 15, 9],
    [5, 19, 19, 19],
]
# Layouts that fit only if the instances are placed with some thought. Listed small first, a
# plan that places them in the given order, or by memory slices alone, runs out of starts:
TRAPS = [
    [19, 14, 5],  # 4g only starts at 0; then 2g at 4 and 1g at 6
    [19, 14, 14, 14],  # three 2g need 0, 2 and 4 (never 6); the 1g goes to 6
    [15, 15, 5],  # 4g at 0, the two-slice 1g at 4 and 6
]
# ... and these even when placed widest first, if ties keep the given order:
HARD_TRAPS = [
    [15, 14, 14, 14],  # a two-slice 1g may start at 6 and a 2g may not: 2g first
    [9, 5],  # both take 4 memory slices, and the 4g starts only at 0: 4g first
]


def unique_names(rng: random.Random, n: int) -> list[str]:
    picked = rng.sample(NAMES, n) if n <= len(NAMES) else [rng.choice(NAMES) for _ in range(n)]
    out, seen = [], set()
    for name in picked:
        name = f"{name}-{rng.randint(1, 99)}"
        while name in seen:
            name = f"{name.rsplit('-', 1)[0]}-{rng.randint(100, 999)}"
        seen.add(name)
        out.append(name)
    return out


def smallest(profiles: list[dict], workload: dict) -> dict | None:
    fits = [p for p in profiles if ref.covers(p, workload) and "+me" not in p["name"]]
    return min(fits, key=lambda p: (p["memory_slices"], p["compute_slices"]), default=None)


def workload_for(rng: random.Random, profiles: list[dict], profile: dict, name: str) -> dict:
    """A workload whose smallest covering profile is `profile` (needs away from the edges)."""
    c = profile["compute_slices"]
    for _ in range(500):
        compute = round((c - 1 + rng.uniform(0.12, 0.93)) / ref.COMPUTE_SLICES, 4)
        memory = round(rng.uniform(0.3, 0.96) * profile["memory_gb"], 1)
        w = {"name": name, "memory_gb": memory, "compute": compute}
        got = smallest(profiles, w)
        if got is not None and got["name"] == profile["name"]:
            return w
    raise RuntimeError(f"could not draw a workload for {profile['name']}")


def layout_workloads(rng: random.Random, profiles: list[dict], ids: list[int], trap: bool = False) -> list[dict]:
    by_id = {p["id"]: p for p in profiles}
    names = unique_names(rng, len(ids))
    ws = [workload_for(rng, profiles, by_id[i], n) for i, n in zip(ids, names, strict=True)]
    if trap:
        return ws  # in the trap's order
    # Mostly small ones first: a plan that places in the given order without looking ahead fails.
    ws.sort(key=lambda w: (smallest(profiles, w)["memory_slices"], rng.random()))
    if rng.random() < 0.3:
        rng.shuffle(ws)
    return ws


def random_layout(rng: random.Random, profiles: list[dict]) -> list[int]:
    """Profile ids of a random valid layout with at least two instances."""
    plain = [p for p in profiles if "+me" not in p["name"] and p["compute_slices"] < 7]
    while True:
        used, counts, comp, ids = 0, Counter(), 0, []
        for _ in range(40):
            p = rng.choice(plain)
            free = [s for s in p["placements"] if not used & (((1 << p["memory_slices"]) - 1) << s)]
            if not free or counts[p["name"]] >= p["max_count"] or comp + p["compute_slices"] > ref.COMPUTE_SLICES:
                continue
            s = rng.choice(free)
            used |= ((1 << p["memory_slices"]) - 1) << s
            counts[p["name"]] += 1
            comp += p["compute_slices"]
            ids.append(p["id"])
            if len(ids) >= 2 and rng.random() < 0.2:
                break
        if len(ids) >= 2:
            return ids


def infeasible_workloads(rng: random.Random, profiles: list[dict], gpu_memory_gb: float, kind: str) -> list[dict]:
    by_id = {p["id"]: p for p in profiles}
    if kind == "three-3g":
        ids = [9, 9, 9]
    elif kind == "two-4g":
        ids = [5, 5]
    elif kind == "five-2slice-1g":
        ids = [15] * 5
    elif kind == "eight-1g":
        ids = [19] * 8
    else:  # "too-big": more memory than the whole GPU
        names = unique_names(rng, 2)
        small = workload_for(rng, profiles, by_id[19], names[0])
        return [
            small,
            {"name": names[1], "memory_gb": round(gpu_memory_gb * rng.uniform(1.05, 1.4), 1), "compute": 0.3},
        ]
    names = unique_names(rng, len(ids))
    ws = [workload_for(rng, profiles, by_id[i], n) for i, n in zip(ids, names, strict=False)]
    rng.shuffle(ws)
    return ws


INFEASIBLE_KINDS = ["three-3g", "two-4g", "five-2slice-1g", "eight-1g", "too-big"]


# --- recordings -------------------------------------------------------------------------------


def _series(
    rng: random.Random,
    mean: float,
    n: int,
    sigma: float,
    spike_p: float = 0.0,
    spike=(0.0, 0.0),
    wait_p: float = 0.0,
    wait_ms: float = 0.0,
    max_turns: int = 1,
) -> list[float]:
    out = []
    for _ in range(n):
        x = mean * math.exp(rng.gauss(-sigma * sigma / 2, sigma))
        if spike_p and rng.random() < spike_p:
            x *= 1 + rng.uniform(*spike)
        if wait_p and rng.random() < wait_p:
            x += wait_ms * rng.randint(1, max(1, max_turns))
        out.append(x)
    return out


def make_recording(
    rng: random.Random,
    path: Path,
    n_tenants: int | None = None,
    strategies: tuple[str, ...] = ("time-slicing", "mps", "mig"),
    min_margin: float = 0.02,
) -> dict:
    """Write a recording CSV (strategy, tenant, step, step_ms) and return the checks' report for
    it under each criterion. Redrawn until each criterion's best strategy leads clearly."""
    for _ in range(200):
        n = n_tenants or rng.choice([2, 3, 3, 4])
        tenants = unique_names(rng, n)
        steps = rng.randint(240, 420)
        base = {t: rng.uniform(4.0, 60.0) for t in tenants}
        duty = {t: rng.uniform(0.3, 0.95) for t in tenants}  # share of a step the GPU is busy
        width = {t: rng.uniform(0.08, 1.0) for t in tenants}  # share of the SMs its kernels can fill
        contention = rng.uniform(0.2, 1.0)  # how hard MPS tenants fight over bandwidth and caches
        # MIG: whole compute slices, at least one each, the rest handed out by width.
        slices = {t: 1 for t in tenants}
        for _ in range(7 - n):
            short = {t: width[t] * 7 - slices[t] for t in tenants}
            t = max(short, key=short.get)
            if short[t] <= 0 or rng.random() < 0.15:
                break
            slices[t] += 1
        rows: list[tuple[str, str, int, float]] = []

        def add(strategy: str, tenant: str, xs: list[float], rows=rows) -> None:
            rows.extend((strategy, tenant, i, x) for i, x in enumerate(xs))

        for t in tenants:
            add("alone", t, _series(rng, base[t], steps, rng.uniform(0.02, 0.05), 0.01, (0.1, 0.3)))
        for s in strategies:
            for t in tenants:
                # Only the GPU part of a step (its duty cycle) stretches; the host part does not.
                if s == "time-slicing":
                    # One context at a time: the others' GPU time is added to ours, and a step that
                    # misses its turn waits out whole time slices.
                    others = sum(duty[o] for o in tenants if o != t)
                    mean = base[t] * (1 + duty[t] * others * rng.uniform(0.9, 1.1))
                    xs = _series(
                        rng,
                        mean,
                        steps,
                        rng.uniform(0.05, 0.1),
                        0.0,
                        (0, 0),
                        rng.uniform(0.03, 0.12),
                        base[t] * rng.uniform(0.3, 0.9),
                        n - 1,
                    )
                elif s == "mps":
                    # Kernels run side by side: they slow each other only where they overlap on SMs,
                    # memory bandwidth and caches.
                    others = sum(duty[o] * width[o] for o in tenants if o != t)
                    mean = base[t] * (1 + duty[t] * others * contention * rng.uniform(0.8, 1.2))
                    xs = _series(rng, mean, steps, rng.uniform(0.04, 0.08), rng.uniform(0.02, 0.06), (0.2, 0.8))
                else:  # mig: fixed slices, undisturbed, but a wide tenant runs on fewer SMs
                    short = max(0.0, width[t] * 7 / slices[t] - 1)
                    mean = base[t] * (1 + duty[t] * short * rng.uniform(0.7, 1.0) + rng.uniform(0.01, 0.06))
                    xs = _series(rng, mean, steps, rng.uniform(0.012, 0.03))
                add(s, t, xs)
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["strategy", "tenant", "step", "step_ms"])
            w.writerows((s, t, i, f"{x:.4f}") for s, t, i, x in rows)
        reports = {c: ref.interference(path, c) for c in ref.CRITERIA}
        if all(ref.margin(reports[c]["strategies"], c) >= min_margin for c in ref.CRITERIA):
            return reports
    raise RuntimeError("could not draw a recording with clear winners")
