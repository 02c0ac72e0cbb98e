#!/usr/bin/env python3
"""The monthly GPU cost of training and serving workloads, and a plan that cuts it.

    python cost.py plan workloads.json [--data DIR] [--json]
    python cost.py cost plans.json [--data DIR] [--json]

`plan` picks, for each workload, a GPU type, a count and a pricing mix, prices it, and
compares it with the baseline: always-on on-demand GPUs of the workload's reference type,
enough for its peak. `cost` prices the choice each workload of the file carries (its
"choice" field) without planning. GPU speeds and prices come from data/ (gpus.toml,
prices.toml: their sources and dates are in the files). Every cost is USD per month of
730 hours. Input that cannot be priced exits with code 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOURS_PER_MONTH = 730.0  # the cloud providers' billing month: 8,760 hours / 12
PRICINGS = ("on_demand", "spot", "reserved_1y", "reserved_3y")
LABELS = {
    "on_demand": "on-demand",
    "spot": "spot",
    "reserved_1y": "a 1-year commitment",
    "reserved_3y": "a 3-year commitment",
}
TERM_YEARS = {"reserved_1y": 1, "reserved_3y": 3}  # commitments: paid every hour of the term
FLEX_PRICINGS = ("on_demand", "spot")  # billed only for the hours the GPUs run
SAVINGS_TARGET_PCT = 40.0
DATA_DIR = Path(__file__).resolve().parent / "data"

TRAINING_DEFAULTS = {
    "serial_fraction": 0.0,
    "min_gpu_memory_gb": 0.0,
    "max_gpus": 64,
    "interruptible": False,
    "checkpoint_interval_hours": 1.0,
    "restart_hours": 0.25,
    "max_commitment_years": 0,
}
SERVING_DEFAULTS = {
    "headroom": 0.2,
    "latency_critical": True,
    "restart_hours": 0.1,
    "max_commitment_years": 0,
}


class InputError(Exception):
    """A workload, a choice or a data file that cannot be priced (exit code 2)."""


# --- the data: GPU types and their prices --------------------------------------------------


@dataclass(frozen=True)
class Gpu:
    id: str
    name: str
    memory_gb: float
    relative_speed: float  # training throughput relative to the others (only ratios matter)
    prices: dict[str, float]  # USD per GPU-hour, by pricing model
    interruptions_per_hour: float  # spot: expected preemptions per GPU-hour


@dataclass(frozen=True)
class Catalog:
    gpus: dict[str, Gpu]
    source: dict[str, Any] = field(default_factory=dict)

    def gpu(self, gpu_id: Any, where: str) -> Gpu:
        if gpu_id not in self.gpus:
            known = ", ".join(sorted(self.gpus))
            raise InputError(f"{where}: unknown GPU {gpu_id!r} (known: {known})")
        return self.gpus[gpu_id]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path} is not valid TOML: {e}") from None


def load_catalog(data_dir: Path) -> Catalog:
    """GPU types (gpus.toml) joined with their prices (prices.toml)."""
    gpus_doc = _read_toml(data_dir / "gpus.toml")
    prices_doc = _read_toml(data_dir / "prices.toml")
    prices = prices_doc.get("prices", {})
    gpus: dict[str, Gpu] = {}
    for gpu_id, spec in gpus_doc.get("gpus", {}).items():
        row = prices.get(gpu_id)
        if row is None:
            raise InputError(f"{data_dir / 'prices.toml'}: no prices for GPU {gpu_id!r}")
        missing = [p for p in (*PRICINGS, "spot_interruptions_per_hour") if p not in row]
        if missing:
            raise InputError(f"{data_dir / 'prices.toml'}: GPU {gpu_id!r} lacks {', '.join(missing)}")
        if not spec.get("relative_speed", 0) > 0:
            raise InputError(f"{data_dir / 'gpus.toml'}: GPU {gpu_id!r} needs a relative_speed above 0")
        gpus[gpu_id] = Gpu(
            id=gpu_id,
            name=spec.get("name", gpu_id),
            memory_gb=float(spec.get("memory_gb", 0)),
            relative_speed=float(spec["relative_speed"]),
            prices={p: float(row[p]) for p in PRICINGS},
            interruptions_per_hour=float(row["spot_interruptions_per_hour"]),
        )
    if not gpus:
        raise InputError(f"{data_dir / 'gpus.toml'} lists no GPUs")
    return Catalog(gpus, prices_doc.get("source", {}))


# --- the input: workloads and choices -------------------------------------------------------


def _number(w: dict, key: str, where: str, *, above: float | None = None, at_least: float | None = None) -> float:
    value = w.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: {key} must be a number, got {value!r}")
    if above is not None and not value > above:
        raise InputError(f"{where}: {key} must be above {above:g}, got {value!r}")
    if at_least is not None and not value >= at_least:
        raise InputError(f"{where}: {key} must be at least {at_least:g}, got {value!r}")
    return float(value)


def _integer(w: dict, key: str, where: str, *, at_least: int) -> int:
    value = w.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < at_least:
        raise InputError(f"{where}: {key} must be a whole number >= {at_least}, got {value!r}")
    return value


def _flag(w: dict, key: str, where: str) -> bool:
    if not isinstance(w.get(key), bool):
        raise InputError(f"{where}: {key} must be true or false, got {w.get(key)!r}")
    return w[key]


def validate_workload(raw: Any, catalog: Catalog, index: int) -> dict[str, Any]:
    """A workload with its defaults filled in, or InputError saying what is wrong."""
    if not isinstance(raw, dict):
        raise InputError(f"workload #{index + 1} is not a JSON object")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"workload #{index + 1} has no name")
    where = f"workload {name!r}"
    kind = raw.get("kind")
    if kind not in ("training", "serving"):
        raise InputError(f"{where}: kind must be 'training' or 'serving', got {kind!r}")
    w = {**(TRAINING_DEFAULTS if kind == "training" else SERVING_DEFAULTS), **raw}
    catalog.gpu(w.get("reference_gpu"), f"{where}: reference_gpu")
    _number(w, "max_commitment_years", where, at_least=0)
    _number(w, "restart_hours", where, at_least=0)
    if kind == "training":
        _number(w, "gpu_hours", where, above=0)
        _number(w, "runs_per_month", where, above=0)
        _number(w, "deadline_hours", where, above=0)
        _number(w, "checkpoint_interval_hours", where, at_least=0)
        _number(w, "min_gpu_memory_gb", where, at_least=0)
        if not 0 <= _number(w, "serial_fraction", where) < 1:
            raise InputError(f"{where}: serial_fraction must be in [0, 1), got {w['serial_fraction']!r}")
        _integer(w, "max_gpus", where, at_least=1)
        _flag(w, "interruptible", where)
    else:
        rps = w.get("rps_by_hour")
        if not isinstance(rps, list) or len(rps) not in (24, 168):
            raise InputError(f"{where}: rps_by_hour must list 24 (a day) or 168 (a week) hourly rates")
        for h in range(len(rps)):
            _number({"rps": rps[h]}, "rps", f"{where}: rps_by_hour[{h}]", at_least=0)
        _number(w, "headroom", where, at_least=0)
        _flag(w, "latency_critical", where)
        table = w.get("throughput_rps")
        if not isinstance(table, dict) or not table:
            raise InputError(f"{where}: throughput_rps must map GPU types to requests/s per GPU")
        for gpu_id in table:
            catalog.gpu(gpu_id, f"{where}: throughput_rps")
            _number(table, gpu_id, f"{where}: throughput_rps", above=0)
        if w["reference_gpu"] not in table:
            raise InputError(f"{where}: throughput_rps has no figure for the reference GPU {w['reference_gpu']!r}")
    return w


def validate_choice(w: dict, catalog: Catalog, raw: Any) -> dict[str, Any]:
    """A workload's choice (what `cost` prices) with its defaults, or InputError."""
    where = f"workload {w['name']!r}: choice"
    if not isinstance(raw, dict):
        raise InputError(f"{where} is missing or not a JSON object")
    c = {"always_on": False, **raw}
    catalog.gpu(c.get("gpu"), f"{where}: gpu")
    _flag(c, "always_on", where)
    if w["kind"] == "training":
        _integer(c, "count", where, at_least=1)
        if c.get("pricing") not in PRICINGS:
            raise InputError(f"{where}: pricing must be one of {', '.join(PRICINGS)}, got {c.get('pricing')!r}")
    else:
        if c["gpu"] not in w["throughput_rps"]:
            raise InputError(f"{where}: {c['gpu']!r} has no throughput figure in throughput_rps")
        c.setdefault("reserved_term", None)
        c.setdefault("reserved_count", 0)
        if c["reserved_term"] is not None and c["reserved_term"] not in TERM_YEARS:
            raise InputError(f"{where}: reserved_term must be null, reserved_1y or reserved_3y")
        _integer(c, "reserved_count", where, at_least=0)
        if c["reserved_term"] is None and c["reserved_count"]:
            raise InputError(f"{where}: reserved_count needs a reserved_term")
        if c.get("flex") not in FLEX_PRICINGS:
            raise InputError(f"{where}: flex must be on_demand or spot, got {c.get('flex')!r}")
    return c


def load_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("workloads"), list):
        raise InputError(f'{path} must be a JSON object with a "workloads" list')
    return doc


# --- the cost model -------------------------------------------------------------------------


@dataclass
class Priced:
    """One choice for one workload, priced."""

    choice: dict[str, Any]
    monthly_cost_usd: float
    pricing_mix: list[dict[str, Any]]
    details: dict[str, Any]  # hours_per_run (training) or gpus_by_hour (serving)


def spot_stall_factor(gpu: Gpu, gpus_stopped: int, hours_lost: float) -> float:
    """Wall-clock hours per hour of useful work on spot GPUs.

    A preemption of any of the `gpus_stopped` GPUs that work in lockstep stops all of them
    for `hours_lost`; over H hours of work they expect gpus_stopped * rate * H preemptions,
    so the work takes H * (1 + gpus_stopped * rate * hours_lost) hours (first order: the
    hours lost are not themselves interrupted), and every one of those hours is billed.
    """
    return 1.0 + gpus_stopped * gpu.interruptions_per_hour * hours_lost


def hours_per_run(w: dict, catalog: Catalog, gpu_id: str, count: int, pricing: str) -> float:
    """Wall-clock hours of one training run on `count` GPUs of type `gpu_id`."""
    ref, gpu = catalog.gpus[w["reference_gpu"]], catalog.gpus[gpu_id]
    one_gpu = w["gpu_hours"] * ref.relative_speed / gpu.relative_speed
    s = w["serial_fraction"]
    hours = one_gpu * (s + (1.0 - s) / count)  # Amdahl's law (lesson multi-gpu)
    if pricing == "spot":
        # Each preemption costs the restart plus, on average, half a checkpoint interval redone.
        hours *= spot_stall_factor(gpu, count, w["restart_hours"] + w["checkpoint_interval_hours"] / 2)
    return hours


def price_training(w: dict, catalog: Catalog, c: dict) -> Priced:
    gpu, n, pricing = catalog.gpus[c["gpu"]], c["count"], c["pricing"]
    run = hours_per_run(w, catalog, gpu.id, n, pricing)
    # A commitment or an always-on choice keeps (and pays for) the GPUs all month.
    kept = pricing in TERM_YEARS or c["always_on"]
    billed = n * HOURS_PER_MONTH if kept else w["runs_per_month"] * n * run
    usd = billed * gpu.prices[pricing]
    line = {"pricing": pricing, "gpus": n, "gpu_hours_per_month": billed, "usd_per_month": usd}
    return Priced(c, usd, [line], {"hours_per_run": run})


def serving_need(w: dict, gpu_id: str) -> list[int]:
    """GPUs needed in each hour of the profile: the rate plus headroom over one GPU's throughput."""
    per_gpu = w["throughput_rps"][gpu_id]
    return [math.ceil(r * (1.0 + w["headroom"]) / per_gpu - 1e-9) for r in w["rps_by_hour"]]


def price_serving(w: dict, catalog: Catalog, c: dict) -> Priced:
    gpu = catalog.gpus[c["gpu"]]
    need = serving_need(w, gpu.id)
    reserved = c["reserved_count"]
    in_service = [max(need)] * len(need) if c["always_on"] else need
    in_service = [max(n, reserved) for n in in_service]  # reserved GPUs run whether needed or not
    # The profile is a day or a week, repeated: each of its hours stands for this many in a month.
    scale = HOURS_PER_MONTH / len(need)
    flex_hours = scale * sum(n - reserved for n in in_service)
    if c["flex"] == "spot":
        # A preempted replica serves nothing until its replacement is up: pay for the gap.
        flex_hours *= spot_stall_factor(gpu, 1, w["restart_hours"])
    mix = []
    if reserved:
        term = c["reserved_term"]
        hours = reserved * HOURS_PER_MONTH
        mix.append(
            {
                "pricing": term,
                "gpus": reserved,
                "gpu_hours_per_month": hours,
                "usd_per_month": hours * gpu.prices[term],
                "commitment_usd": hours * gpu.prices[term] * 12 * TERM_YEARS[term],
            }
        )
    if flex_hours > 0:
        mix.append(
            {
                "pricing": c["flex"],
                "gpus": max(in_service) - reserved,
                "gpu_hours_per_month": flex_hours,
                "usd_per_month": flex_hours * gpu.prices[c["flex"]],
            }
        )
    return Priced(c, sum(m["usd_per_month"] for m in mix), mix, {"gpus_by_hour": in_service})


def price(w: dict, catalog: Catalog, c: dict) -> Priced:
    return price_training(w, catalog, c) if w["kind"] == "training" else price_serving(w, catalog, c)


# --- what may be chosen ---------------------------------------------------------------------


def terms_allowed(w: dict) -> list[str]:
    return [t for t, years in TERM_YEARS.items() if years <= w["max_commitment_years"]]


def training_fits(w: dict, catalog: Catalog, gpu_id: str, count: int, pricing: str) -> bool:
    """Every run ends by its deadline and the month holds all the runs."""
    run = hours_per_run(w, catalog, gpu_id, count, pricing)
    return run <= w["deadline_hours"] * (1 + 1e-9) and w["runs_per_month"] * run <= HOURS_PER_MONTH * (1 + 1e-9)


def baseline(w: dict, catalog: Catalog) -> Priced:
    """Always-on on-demand GPUs of the reference type, as many as the peak needs."""
    ref = w["reference_gpu"]
    if w["kind"] == "serving":
        return price(
            w, catalog, {"gpu": ref, "reserved_term": None, "reserved_count": 0, "flex": "on_demand", "always_on": True}
        )
    for n in range(1, w["max_gpus"] + 1):
        if training_fits(w, catalog, ref, n, "on_demand"):
            return price(w, catalog, {"gpu": ref, "count": n, "pricing": "on_demand", "always_on": True})
    raise InputError(
        f"workload {w['name']!r}: even {w['max_gpus']} x {ref} on demand miss the deadline "
        f"of {w['deadline_hours']:g} h (or the month cannot hold {w['runs_per_month']:g} runs): "
        "there is no baseline to compare with"
    )


def plan_training(w: dict, catalog: Catalog) -> Priced:
    """The cheapest GPU type, count and pricing that meets the deadline.

    Pay-per-use cost is runs * N * hours(N) * rate, and N * hours(N) grows with N (Amdahl:
    T1 * (N*s + 1 - s), times a spot stall that grows with N too); a reservation costs
    N * 730 * rate. So per GPU type and pricing the fewest GPUs that meet the deadline are
    the cheapest, and the search stops at the first N that fits.
    """
    pricings = ["on_demand", *terms_allowed(w)] + (["spot"] if w["interruptible"] else [])
    best: Priced | None = None
    for gpu in catalog.gpus.values():
        if gpu.memory_gb < w["min_gpu_memory_gb"]:
            continue
        for pricing in pricings:
            n = next((n for n in range(1, w["max_gpus"] + 1) if training_fits(w, catalog, gpu.id, n, pricing)), None)
            if n is None:
                continue
            p = price(w, catalog, {"gpu": gpu.id, "count": n, "pricing": pricing, "always_on": False})
            if best is None or p.monthly_cost_usd < best.monthly_cost_usd - 1e-9:
                best = p
    assert best is not None  # the baseline's GPU type and count fit on demand
    return best


def plan_serving(w: dict, catalog: Catalog) -> Priced:
    """The cheapest GPU type, reserved base and flexible top that cover every hour.

    With R GPUs reserved at rate r and the rest flexible at rate f (per useful hour), the
    month costs R * 730 * r + f * scale * sum(max(0, need_h - R)). Raising R by one adds
    730 * r and saves f * 730 * (the share of hours that need more than R GPUs): reserve
    while that share is above r / f. Trying every R from 0 to the peak finds the same.
    """
    flexes = ["on_demand"] + ([] if w["latency_critical"] else ["spot"])
    best: Priced | None = None
    for gpu_id in w["throughput_rps"]:
        gpu = catalog.gpus[gpu_id]
        need = serving_need(w, gpu_id)
        scale = HOURS_PER_MONTH / len(need)
        # above[R] = sum over hours of max(0, need - R): the flexible GPU-hours left for R reserved
        above = [sum(max(0, n - r) for n in need) for r in range(max(need) + 1)]
        for flex in flexes:
            rate = gpu.prices[flex] * (spot_stall_factor(gpu, 1, w["restart_hours"]) if flex == "spot" else 1.0)
            for term in [None, *terms_allowed(w)]:
                counts = range(len(above)) if term else [0]
                term_rate = gpu.prices[term] if term else 0.0
                r = min(counts, key=lambda r: r * HOURS_PER_MONTH * term_rate + scale * above[r] * rate)
                if term and r == 0:
                    continue
                p = price(
                    w,
                    catalog,
                    {"gpu": gpu_id, "reserved_term": term, "reserved_count": r, "flex": flex, "always_on": False},
                )
                if best is None or p.monthly_cost_usd < best.monthly_cost_usd - 1e-9:
                    best = p
    assert best is not None
    return best


def plan_workload(w: dict, catalog: Catalog) -> Priced:
    return plan_training(w, catalog) if w["kind"] == "training" else plan_serving(w, catalog)


# --- explaining the result -----------------------------------------------------------------


def explain(w: dict, catalog: Catalog, plan: Priced, base: Priced, savings_pct: float) -> str:
    """One or two sentences: what the plan does, and why it cannot save more when it falls short."""
    c = plan.choice
    if w["kind"] == "training":
        what = f"{c['count']} x {c['gpu']} on {LABELS[c['pricing']]}, {plan.details['hours_per_run']:.1f} h per run"
    else:
        flex = f"{LABELS[c['flex']]} GPUs scaled hour by hour"
        if c["reserved_count"]:
            flex = f"{c['reserved_count']} on {LABELS[c['reserved_term']]} for the base load, {flex} above it"
        what = f"{c['gpu']}: {flex}"
    if savings_pct >= SAVINGS_TARGET_PCT:
        return f"{what}; saves {savings_pct:.1f}% against the baseline."
    why = []
    if w["kind"] == "training":
        busy = w["runs_per_month"] * base.details["hours_per_run"] / HOURS_PER_MONTH
        why.append(
            f"the runs keep the baseline's GPUs busy {100 * busy:.0f}% of the month: paying per hour saves little"
        )
        if not w["interruptible"]:
            why.append("spot is ruled out (not interruptible)")
    else:
        need = serving_need(w, w["reference_gpu"])
        mean_share = sum(need) / len(need) / max(1, max(need))
        why.append(f"the load averages {100 * mean_share:.0f}% of its peak, so scaling down saves little")
        if w["latency_critical"]:
            why.append("spot is ruled out (latency-critical)")
    if not terms_allowed(w):
        why.append("no commitment is allowed")
    why.append("no other GPU type does the work for much less")
    return f"{what}; saves only {savings_pct:.1f}%: " + "; ".join(why) + "."


def describe(w: dict, p: Priced) -> dict[str, Any]:
    """The JSON row of one priced choice."""
    c = p.choice
    row = {
        "name": w["name"],
        "kind": w["kind"],
        "gpu": c["gpu"],
        "count": c["count"] if w["kind"] == "training" else max(p.details["gpus_by_hour"]),
        "choice": c,
        "pricing_mix": [{k: round(v, 2) if isinstance(v, float) else v for k, v in m.items()} for m in p.pricing_mix],
        "monthly_cost_usd": round(p.monthly_cost_usd, 2),
    }
    if w["kind"] == "training":
        row["hours_per_run"] = round(p.details["hours_per_run"], 4)
    else:
        row["gpus_by_hour"] = p.details["gpus_by_hour"]
    return row


def plan_all(doc: dict, catalog: Catalog) -> list[dict[str, Any]]:
    rows = []
    for i, raw in enumerate(doc["workloads"]):
        w = validate_workload(raw, catalog, i)
        base = baseline(w, catalog)
        plan = plan_workload(w, catalog)
        savings = 100.0 * (1.0 - plan.monthly_cost_usd / base.monthly_cost_usd) if base.monthly_cost_usd else 0.0
        row = describe(w, plan)
        base_row = describe(w, base)
        row["baseline"] = {k: base_row[k] for k in ("gpu", "count", "monthly_cost_usd")}
        row["baseline"].update(pricing="on_demand", always_on=True)
        row["savings_pct"] = round(savings, 2)
        row["note"] = explain(w, catalog, plan, base, savings)
        rows.append(row)
    return rows


def cost_all(doc: dict, catalog: Catalog) -> list[dict[str, Any]]:
    rows = []
    for i, raw in enumerate(doc["workloads"]):
        w = validate_workload(raw, catalog, i)
        rows.append(describe(w, price(w, catalog, validate_choice(w, catalog, raw.get("choice")))))
    return rows


# --- the command line -----------------------------------------------------------------------


def print_table(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        line = f"{r['name']:<24} {r['kind']:<9} {r['count']:>3} x {r['gpu']:<11} ${r['monthly_cost_usd']:>12,.2f}/month"
        if "baseline" in r:
            line += f"  (baseline ${r['baseline']['monthly_cost_usd']:,.2f}: {r['savings_pct']:.1f}% saved)"
        print(line)
        for m in r["pricing_mix"]:
            hours, usd = m["gpu_hours_per_month"], m["usd_per_month"]
            print(f"{'':<26}{m['pricing']:<12} {m['gpus']:>3} GPUs  {hours:>10,.1f} GPU-h  ${usd:>12,.2f}")
        if r.get("note"):
            print(f"{'':<26}{r['note']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["plan", "cost"], help="plan: choose and price; cost: price given choices")
    parser.add_argument("file", type=Path, help='a JSON file with a "workloads" list')
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="folder with gpus.toml and prices.toml")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    try:
        catalog = load_catalog(args.data)
        doc = load_json(args.file)
        rows = plan_all(doc, catalog) if args.command == "plan" else cost_all(doc, catalog)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    key = "plans" if args.command == "plan" else "costs"
    if args.json:
        print(json.dumps({"hours_per_month": HOURS_PER_MONTH, "prices": catalog.source, key: rows}))
    else:
        src = catalog.source
        print(f"List prices from {src.get('page', '?')} as of {src.get('as_of', '?')}; they may have changed.")
        print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
