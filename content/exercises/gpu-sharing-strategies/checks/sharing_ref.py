"""The checks' own answers for the gpu-sharing-strategies exercise, computed in the check process
from the hidden inputs: MIG plan validation and the best possible plan (an exhaustive search,
independent of any shortcut the learner may take), and the interference report."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
COMPUTE_SLICES = 7
MEMORY_SLICES = 8
CRITERIA = ("slowdown", "tail", "fairness")


# --- MIG ------------------------------------------------------------------------------------


def mig_table() -> dict:
    return json.loads((DATA / "mig-profiles.json").read_text(encoding="utf-8"))


def slices_needed(compute: float) -> int:
    return max(1, math.ceil(compute * COMPUTE_SLICES - 1e-9))


def covers(profile: dict, workload: dict) -> bool:
    return (
        profile["compute_slices"] >= slices_needed(workload["compute"])
        and profile["memory_gb"] >= workload["memory_gb"]
    )


def best_plan(profiles: list[dict], workloads: list[dict]) -> tuple[int, int] | None:
    """(memory slices, compute slices) of the smallest valid plan, or None when none exists.
    Exhaustive: every covering profile (media-extension ones too) at every free start."""
    cands = [[p for p in profiles if covers(p, w)] for w in workloads]
    if any(not c for c in cands):
        return None
    order = sorted(range(len(workloads)), key=lambda i: len(cands[i]))
    best: list[tuple[int, int] | None] = [None]
    seen: set = set()

    def dfs(k: int, used: int, counts: Counter, mem: int, comp: int) -> None:
        if comp > COMPUTE_SLICES or (best[0] is not None and (mem, comp) >= best[0]):
            return
        if k == len(order):
            best[0] = (mem, comp)
            return
        key = (k, used, tuple(sorted(counts.items())), comp)
        if key in seen:
            return
        seen.add(key)
        for p in cands[order[k]]:
            if counts[p["name"]] >= p["max_count"]:
                continue
            for start in p["placements"]:
                mask = ((1 << p["memory_slices"]) - 1) << start
                if used & mask:
                    continue
                counts[p["name"]] += 1
                dfs(k + 1, used | mask, counts, mem + p["memory_slices"], comp + p["compute_slices"])
                counts[p["name"]] -= 1

    dfs(0, 0, Counter(), 0, 0)
    return best[0]


def plan_problems(profiles: list[dict], workloads: list[dict], plan) -> list[str]:
    """Everything wrong with a learner's plan, in the learner's terms (empty: valid)."""
    if not isinstance(plan, list):
        return [f"plan_mig returned {type(plan).__name__}, not a list of instances"]
    if len(plan) != len(workloads):
        return [f"plan_mig returned {len(plan)} instance(s) for {len(workloads)} workloads (one per workload)"]
    by_name = {p["name"]: p for p in profiles}
    problems = []
    used = [None] * MEMORY_SLICES
    counts: Counter = Counter()
    comp = mem = 0
    for w, item in zip(workloads, plan, strict=False):
        if not isinstance(item, dict) or not {"workload", "profile", "start"} <= set(item):
            problems.append(f"entry {item!r} is not a dict with workload, profile and start")
            continue
        if item["workload"] != w["name"]:
            problems.append(f"entry for {item['workload']!r} is where {w['name']!r} is (keep the workloads' order)")
        prof = by_name.get(item["profile"])
        if prof is None:
            problems.append(f"{w['name']}: {item['profile']!r} is not a profile of this GPU ({', '.join(by_name)})")
            continue
        need = slices_needed(w["compute"])
        if prof["compute_slices"] < need:
            problems.append(
                f"{w['name']} needs {need} compute slice(s) (compute {w['compute']:.3f} of the GPU) and got "
                f"{prof['name']} with {prof['compute_slices']}"
            )
        if prof["memory_gb"] < w["memory_gb"]:
            problems.append(
                f"{w['name']} needs {w['memory_gb']:g} GB and got {prof['name']} with {prof['memory_gb']} GB"
            )
        start = item["start"]
        if not isinstance(start, int) or start not in prof["placements"]:
            problems.append(
                f"{w['name']}: {prof['name']} cannot start at memory slice {start!r}; "
                f"its starts are {prof['placements']}"
            )
            continue
        for s in range(start, start + prof["memory_slices"]):
            if used[s] is not None:
                problems.append(f"{w['name']}'s {prof['name']} at slice {start} overlaps {used[s]} on memory slice {s}")
                break
            used[s] = f"{w['name']}'s {prof['name']}"
        counts[prof["name"]] += 1
        comp += prof["compute_slices"]
        mem += prof["memory_slices"]
    for name, n in counts.items():
        if n > by_name[name]["max_count"]:
            problems.append(f"{n} instances of {name}; the GPU holds at most {by_name[name]['max_count']}")
    if comp > COMPUTE_SLICES:
        problems.append(f"the plan uses {comp} compute slices; the GPU has {COMPUTE_SLICES}")
    if mem > MEMORY_SLICES:
        problems.append(f"the plan uses {mem} memory slices; the GPU has {MEMORY_SLICES}")
    return problems


def plan_totals(profiles: list[dict], plan: list[dict]) -> tuple[int, int]:
    by_name = {p["name"]: p for p in profiles}
    return (
        sum(by_name[i["profile"]]["memory_slices"] for i in plan),
        sum(by_name[i["profile"]]["compute_slices"] for i in plan),
    )


# --- interference -----------------------------------------------------------------------------


def read_recording(path: Path) -> dict[str, dict[str, list[float]]]:
    runs: dict[str, dict[str, list[float]]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            runs.setdefault(row["strategy"], {}).setdefault(row["tenant"], []).append(float(row["step_ms"]))
    return runs


def interference(path: Path, criterion: str) -> dict:
    runs = read_recording(path)
    alone = runs["alone"]
    out = {}
    for strategy, tenants in runs.items():
        if strategy == "alone":
            continue
        per = {}
        for t, base in alone.items():
            shared = np.asarray(tenants[t])
            base = np.asarray(base)
            per[t] = {
                "slowdown": float(shared.mean() / base.mean()),
                "p99_increase": float(np.percentile(shared, 99) / np.percentile(base, 99)),
            }
        rates = [1.0 / v["slowdown"] for v in per.values()]  # progress relative to running alone
        out[strategy] = {
            "tenants": per,
            "worst_slowdown": max(v["slowdown"] for v in per.values()),
            "worst_p99_increase": max(v["p99_increase"] for v in per.values()),
            "fairness": min(rates) / max(rates),
        }
    return {"criterion": criterion, "best": pick(out, criterion), "strategies": out}


def score(strategies: dict, criterion: str) -> dict[str, float]:
    """Each strategy's figure for the criterion, oriented so that lower is better."""
    key = {"slowdown": "worst_slowdown", "tail": "worst_p99_increase", "fairness": "fairness"}[criterion]
    sign = -1.0 if criterion == "fairness" else 1.0
    return {s: sign * v[key] for s, v in strategies.items()}


def pick(strategies: dict, criterion: str) -> str:
    sc = score(strategies, criterion)
    return min(sc, key=sc.get)


def margin(strategies: dict, criterion: str) -> float:
    """How far the best strategy is ahead of the runner-up, relative (0 when tied)."""
    sc = sorted(score(strategies, criterion).values())
    if len(sc) < 2:
        return 1.0
    return abs(sc[1] - sc[0]) / max(abs(sc[0]), 1e-12)
