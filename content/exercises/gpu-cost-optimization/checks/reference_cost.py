"""The README's cost model, written here independently of the learner's cost.py.

The checks price choices with it, and build the baseline, the simple rule of the README and
the cheapest plan the model allows (an exhaustive search) for hidden workloads and hidden
price tables. Plain data in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MONTH_H = 730.0
TERMS = {"reserved_1y": 1, "reserved_3y": 3}
PRICINGS = ("on_demand", "spot", "reserved_1y", "reserved_3y")


@dataclass(frozen=True)
class Tables:
    """A price list and a GPU table, as the check wrote them to the learner's --data folder."""

    speed: dict[str, float]
    memory: dict[str, float]
    price: dict[str, dict[str, float]]  # gpu -> pricing -> USD per GPU-hour
    preempt: dict[str, float]  # gpu -> spot interruptions per GPU-hour


# --- pricing one choice ---------------------------------------------------------------------


def run_hours(t: Tables, w: dict, gpu: str, n: int, pricing: str) -> float:
    single = w["gpu_hours"] * t.speed[w["reference_gpu"]] / t.speed[gpu]
    s = w["serial_fraction"]
    hours = single * (s + (1 - s) / n)
    if pricing == "spot":
        lost = w["restart_hours"] + 0.5 * w["checkpoint_interval_hours"]
        hours *= 1 + n * t.preempt[gpu] * lost
    return hours


def need(w: dict, gpu: str) -> np.ndarray:
    rps = np.asarray(w["rps_by_hour"], dtype=float)
    return np.ceil(rps * (1 + w["headroom"]) / w["throughput_rps"][gpu] - 1e-9).astype(int)


def flex_rate(t: Tables, w: dict, gpu: str, flex: str) -> float:
    """USD per useful flexible GPU-hour (spot pays for the gaps its preemptions leave)."""
    if flex == "spot":
        return t.price[gpu]["spot"] * (1 + t.preempt[gpu] * w["restart_hours"])
    return t.price[gpu][flex]


def monthly_cost(t: Tables, w: dict, c: dict) -> float:
    gpu = c["gpu"]
    if w["kind"] == "training":
        rate = t.price[gpu][c["pricing"]]
        if c["pricing"] in TERMS or c.get("always_on", False):
            return c["count"] * MONTH_H * rate
        return w["runs_per_month"] * c["count"] * run_hours(t, w, gpu, c["count"], c["pricing"]) * rate
    n = need(w, gpu)
    r = c.get("reserved_count", 0) or 0
    term = c.get("reserved_term")
    fixed = r * MONTH_H * t.price[gpu][term] if term and r else 0.0
    if c.get("always_on", False):
        flex_hours = max(0, int(n.max()) - r) * MONTH_H
    else:
        flex_hours = MONTH_H / len(n) * float(np.maximum(n - r, 0).sum())
    return fixed + flex_hours * flex_rate(t, w, gpu, c["flex"])


# --- what a plan may do ---------------------------------------------------------------------


def allowed_terms(w: dict) -> list[str]:
    return [p for p, years in TERMS.items() if years <= w["max_commitment_years"]]


def violations(t: Tables, w: dict, c: dict, gpus_by_hour: list | None = None) -> list[str]:
    """What a choice breaks, in the learner's terms (empty: it respects every constraint)."""
    bad = []
    gpu = c.get("gpu")
    if w["kind"] == "training":
        if gpu not in t.speed:
            return [f"GPU {gpu!r} is not in the GPU table"]
        n, pricing = c.get("count"), c.get("pricing")
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= w["max_gpus"]:
            return [f"count {n!r} is not a whole number between 1 and max_gpus={w['max_gpus']}"]
        if pricing not in PRICINGS:
            return [f"pricing {pricing!r} is not one of {', '.join(PRICINGS)}"]
        if t.memory[gpu] < w["min_gpu_memory_gb"]:
            bad.append(f"{gpu} has {t.memory[gpu]:g} GB, the job needs {w['min_gpu_memory_gb']:g} GB")
        if pricing == "spot" and not w["interruptible"]:
            bad.append("spot for a job that is not interruptible")
        if pricing in TERMS and TERMS[pricing] > w["max_commitment_years"]:
            bad.append(f"{pricing} but max_commitment_years={w['max_commitment_years']}")
        hours = run_hours(t, w, gpu, n, pricing)
        if hours > w["deadline_hours"] * (1 + 1e-6):
            bad.append(
                f"{n} x {gpu} on {pricing} take {hours:.2f} h per run (README's formula"
                f"{', with the spot stall' if pricing == 'spot' else ''}), past the {w['deadline_hours']:g} h deadline"
            )
        if w["runs_per_month"] * hours > MONTH_H * (1 + 1e-6):
            bad.append(f"{w['runs_per_month']:g} runs of {hours:.1f} h do not fit in a 730 h month")
        return bad
    if gpu not in w["throughput_rps"]:
        return [f"GPU {gpu!r} has no throughput figure for this workload"]
    if c.get("flex") not in ("on_demand", "spot"):
        return [f"flex {c.get('flex')!r} is not on_demand or spot"]
    if c["flex"] == "spot" and w["latency_critical"]:
        bad.append("spot GPUs serving a latency-critical workload")
    term, r = c.get("reserved_term"), c.get("reserved_count", 0)
    if term is not None and term not in TERMS:
        bad.append(f"reserved_term {term!r} is not reserved_1y or reserved_3y")
    elif term in TERMS and TERMS[term] > w["max_commitment_years"]:
        bad.append(f"{term} but max_commitment_years={w['max_commitment_years']}")
    if not isinstance(r, int) or isinstance(r, bool) or r < 0 or (term is None and r):
        bad.append(f"reserved_count {r!r} with reserved_term {term!r}")
    if gpus_by_hour is not None:
        n = need(w, gpu)
        if not isinstance(gpus_by_hour, list) or len(gpus_by_hour) != len(n):
            bad.append(f"gpus_by_hour must list {len(n)} hourly GPU counts")
        else:
            ok = [
                isinstance(g, (int, float)) and not isinstance(g, bool) and g >= need_h
                for g, need_h in zip(gpus_by_hour, n, strict=True)
            ]
            short = [h for h in range(len(n)) if not ok[h]]
            if short:
                h = short[0]
                rps = w["rps_by_hour"][h]
                bad.append(
                    f"hour {h}: {gpus_by_hour[h]} x {gpu} serve at most {gpus_by_hour[h] * w['throughput_rps'][gpu]:g} "
                    f"req/s, but {rps:g} req/s with {100 * w['headroom']:g}% headroom need {int(n[h])} GPUs "
                    f"({len(short)} hour(s) short)"
                )
    return bad


# --- baseline, simple rule, best ------------------------------------------------------------


def baseline(t: Tables, w: dict) -> tuple[dict, float]:
    ref = w["reference_gpu"]
    if w["kind"] == "serving":
        c = {"gpu": ref, "reserved_term": None, "reserved_count": 0, "flex": "on_demand", "always_on": True}
        return c, monthly_cost(t, w, c)
    for n in range(1, w["max_gpus"] + 1):
        c = {"gpu": ref, "count": n, "pricing": "on_demand", "always_on": True}
        if not violations(t, w, c):
            return c, monthly_cost(t, w, c)
    raise ValueError(f"hidden workload {w['name']} has no baseline")


def _training_pricings(w: dict) -> list[str]:
    return ["on_demand", *allowed_terms(w)] + (["spot"] if w["interruptible"] else [])


def best(t: Tables, w: dict) -> tuple[dict, float]:
    """The cheapest choice the model allows, by trying every one."""
    found: tuple[dict, float] | None = None
    if w["kind"] == "training":
        for gpu in t.speed:
            for pricing in _training_pricings(w):
                for n in range(1, w["max_gpus"] + 1):
                    c = {"gpu": gpu, "count": n, "pricing": pricing, "always_on": False}
                    if violations(t, w, c):
                        continue
                    cost = monthly_cost(t, w, c)
                    if found is None or cost < found[1]:
                        found = (c, cost)
        assert found is not None
        return found
    for gpu in w["throughput_rps"]:
        n = need(w, gpu)
        r_all = np.arange(int(n.max()) + 1)
        above = np.maximum(n[None, :] - r_all[:, None], 0).sum(axis=1)
        for flex in ["on_demand"] + ([] if w["latency_critical"] else ["spot"]):
            fr = flex_rate(t, w, gpu, flex)
            for term in [None, *allowed_terms(w)]:
                tr = t.price[gpu][term] if term else 0.0
                costs = r_all * MONTH_H * tr + MONTH_H / len(n) * above * fr
                r = int(np.argmin(costs)) if term else 0
                c = {"gpu": gpu, "reserved_term": term if r else None, "reserved_count": r, "flex": flex}
                cost = monthly_cost(t, w, c)
                if found is None or cost < found[1]:
                    found = (c, cost)
    assert found is not None
    return found


def simple_rule(t: Tables, w: dict) -> tuple[dict, float]:
    """The README's simple rule.

    Training: per GPU type and allowed pricing, the fewest GPUs that meet the deadline; the
    cheapest of those. Serving: per GPU type, the cheaper allowed flexible pricing for
    everything above the base load (the lowest hourly need), and the base load on the
    longest allowed commitment if that rate is below the flexible one; the cheapest type.
    """
    found: tuple[dict, float] | None = None
    if w["kind"] == "training":
        for gpu in t.speed:
            for pricing in _training_pricings(w):
                for n in range(1, w["max_gpus"] + 1):
                    c = {"gpu": gpu, "count": n, "pricing": pricing, "always_on": False}
                    if not violations(t, w, c):
                        cost = monthly_cost(t, w, c)
                        if found is None or cost < found[1]:
                            found = (c, cost)
                        break
        assert found is not None
        return found
    for gpu in w["throughput_rps"]:
        flexes = ["on_demand"] + ([] if w["latency_critical"] else ["spot"])
        flex = min(flexes, key=lambda f: flex_rate(t, w, gpu, f))
        terms = allowed_terms(w)
        term = terms[-1] if terms else None
        base = int(need(w, gpu).min())
        if term is None or base == 0 or t.price[gpu][term] >= flex_rate(t, w, gpu, flex):
            term, base = None, 0
        c = {"gpu": gpu, "reserved_term": term, "reserved_count": base, "flex": flex, "always_on": False}
        cost = monthly_cost(t, w, c)
        if found is None or cost < found[1]:
            found = (c, cost)
    assert found is not None
    return found


def savings(cost: float, base: float) -> float:
    return 100.0 * (1.0 - cost / base)


def near_integer(x: float, tol: float = 1e-3) -> bool:
    return abs(x - round(x)) < tol and not math.isclose(x, 0.0)
