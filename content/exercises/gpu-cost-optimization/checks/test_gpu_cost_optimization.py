"""Checks for the gpu-cost-optimization exercise.

Every check runs the learner's cost.py in a child process on workloads and price tables
made up here (a random seed per check run, recorded as a figure), with a GPU type the
starter's tables do not list, and compares what it prints with reference_cost.py: the
README's cost model, written independently, its baseline, its simple rule and an
exhaustive search for the cheapest plan.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from reference_cost import (
    MONTH_H,
    Tables,
    baseline,
    best,
    monthly_cost,
    need,
    run_hours,
    savings,
    simple_rule,
    violations,
)

from gpudojo.worker.checkkit import fail, requirement

RUN_TIMEOUT_S = 40

# Base figures of the hidden tables (each check run scales them at random): memory (GB),
# relative speed and on-demand USD per GPU-hour. l40s-48gb is not in the starter's tables.
GPU_BASE = {
    "h100-80gb": (80, 3.17, 11.06),
    "a100-80gb": (80, 1.0, 3.93),
    "a100-40gb": (40, 1.0, 2.93),
    "l40s-48gb": (48, 1.16, 1.90),
    "l4": (24, 0.39, 0.56),
    "t4": (16, 0.21, 0.35),
}


# --- the hidden world: price tables and workloads --------------------------------------------


@dataclass
class World:
    seed: int
    tables: Tables
    data: Path
    folder: Path


def make_tables(rng: random.Random) -> Tables:
    speed, memory, price, preempt = {}, {}, {}, {}
    for gpu, (mem, spd, od) in GPU_BASE.items():
        memory[gpu] = float(mem)
        speed[gpu] = round(spd * rng.uniform(0.9, 1.1), 3)
        on_demand = round(od * rng.uniform(0.8, 1.25), 4)
        price[gpu] = {
            "on_demand": on_demand,
            "spot": round(on_demand * rng.uniform(0.2, 0.45), 4),
            "reserved_1y": round(on_demand * rng.uniform(0.55, 0.7), 4),
            "reserved_3y": round(on_demand * rng.uniform(0.38, 0.52), 4),
        }
        preempt[gpu] = round(rng.uniform(0.008, 0.04), 4)
    return Tables(speed, memory, price, preempt)


def write_tables(t: Tables, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    gpus = ["# hidden GPU table of the check"]
    prices = [
        "# hidden price table of the check",
        "[source]",
        'page = "made up by the check"',
        'as_of = "check run"',
    ]
    for gpu in t.speed:
        gpus += [f"\n[gpus.{gpu}]", f'name = "{gpu}"', f"memory_gb = {t.memory[gpu]:g}"]
        gpus.append(f"relative_speed = {t.speed[gpu]!r}")
        prices.append(f"\n[prices.{gpu}]")
        prices += [f"{p} = {v!r}" for p, v in t.price[gpu].items()]
        prices.append(f"spot_interruptions_per_hour = {t.preempt[gpu]!r}")
    (folder / "gpus.toml").write_text("\n".join(gpus) + "\n")
    (folder / "prices.toml").write_text("\n".join(prices) + "\n")


def _borderline_training(t: Tables, w: dict) -> bool:
    """True when some choice lands within a hair of the deadline or of the month's hours,
    where two correct programs could round differently."""
    for gpu in t.speed:
        for pricing in ("on_demand", "spot", "reserved_1y", "reserved_3y"):
            for n in range(1, w["max_gpus"] + 1):
                h = run_hours(t, w, gpu, n, pricing)
                if abs(h - w["deadline_hours"]) < 1e-5 * w["deadline_hours"]:
                    return True
                if abs(w["runs_per_month"] * h - MONTH_H) < 1e-5 * MONTH_H:
                    return True
    return False


def gen_training(rng: random.Random, t: Tables, name: str, *, busy: bool = False, **fixed) -> dict:
    """A hidden training workload; busy=True: one long run, no spot, no commitment, on the
    GPU type that is cheapest per unit of work, so 40% savings are out of reach."""
    for _ in range(500):
        ref = rng.choice(["a100-80gb", "h100-80gb", "a100-40gb", "l40s-48gb"])
        s = round(rng.uniform(0.0, 0.01 if busy else 0.08), 3)
        w = {
            "name": name,
            "kind": "training",
            "reference_gpu": ref,
            "serial_fraction": s,
            "min_gpu_memory_gb": rng.choice([0, 16, 24, 40]),
            "max_gpus": rng.choice([16, 32, 64]),
            "interruptible": rng.random() < 0.7,
            "checkpoint_interval_hours": round(rng.uniform(0.25, 2.0), 2),
            "restart_hours": round(rng.uniform(0.05, 0.5), 2),
            "max_commitment_years": rng.choice([0, 1, 3]),
        }
        n_target = rng.randint(1, 4 if busy else 12)
        if busy:
            eligible = [g for g in t.speed if t.memory[g] >= 40]
            ref = min(eligible, key=lambda g: t.price[g]["on_demand"] / t.speed[g])
            wall = rng.uniform(640, 700)
            w.update(
                reference_gpu=ref,
                min_gpu_memory_gb=t.memory[ref],
                interruptible=False,
                max_commitment_years=0,
                runs_per_month=1,
            )
            w["gpu_hours"] = round(wall / (s + (1 - s) / n_target), 1)
            w["deadline_hours"] = round(run_hours(t, w, ref, n_target, "on_demand") * 1.004, 2)
        else:
            w["gpu_hours"] = round(rng.uniform(20, 3000), 1)
            wall = run_hours(t, w, ref, n_target, "on_demand")
            w["deadline_hours"] = round(wall * rng.uniform(1.05, 1.6), 2)
            fits = [r for r in (1, 2, 4, 8, 15, 30) if r * w["deadline_hours"] <= MONTH_H * 0.98]
            if not fits:
                continue
            w["runs_per_month"] = rng.choice(fits)
        w.update(fixed)
        if _borderline_training(t, w):
            continue
        try:
            baseline(t, w)
        except ValueError:
            continue
        return w
    raise RuntimeError("could not make a hidden training workload")


def _profile(rng: random.Random, hours: int, flat: bool) -> list[float]:
    base = rng.uniform(0.08, 0.6)
    sharp = rng.uniform(0.7, 2.5)
    weekend = rng.uniform(0.45, 0.9)
    values = []
    for h in range(hours):
        if flat:
            v = rng.uniform(0.96, 1.0)
        else:
            day = 0.5 - 0.5 * math.cos(2 * math.pi * ((h % 24) - 4) / 24)  # low at 4:00, high at 16:00
            v = (base + (1 - base) * day**sharp) * rng.uniform(0.95, 1.05)
            if hours == 168 and h // 24 >= 5:
                v *= weekend
        values.append(v)
    if not flat:
        for h in rng.sample(range(hours), k=rng.randint(1, 3)):  # short peaks: a launch, a batch job
            values[h] *= rng.uniform(1.2, 1.7)
    top = max(values)
    return [v / top for v in values]


def gen_serving(rng: random.Random, t: Tables, name: str, *, flat: bool = False, **fixed) -> dict:
    """A hidden serving workload; flat=True: a flat, latency-critical load with no commitment
    and one GPU type, so 40% savings are out of reach."""
    ref = rng.choice(list(t.speed))
    thr_ref = round(rng.uniform(3, 60), 1)
    throughput = {ref: thr_ref}
    if not flat:
        for g in rng.sample([g for g in t.speed if g != ref], k=rng.randint(1, 3)):
            throughput[g] = max(0.5, round(thr_ref * t.speed[g] / t.speed[ref] * rng.uniform(0.6, 1.1), 1))
    headroom = round(rng.uniform(0.1, 0.5), 2)
    peak_gpus = rng.randint(3, 40)
    peak_rps = (peak_gpus - rng.uniform(0.1, 0.9)) * thr_ref / (1 + headroom)
    w = {
        "name": name,
        "kind": "serving",
        "reference_gpu": ref,
        "rps_by_hour": [round(peak_rps * v, 2) for v in _profile(rng, rng.choice([24, 168]), flat)],
        "headroom": headroom,
        "latency_critical": True if flat else rng.random() < 0.5,
        "throughput_rps": throughput,
        "restart_hours": round(rng.uniform(0.05, 0.6), 2),
        "max_commitment_years": 0 if flat else rng.choice([0, 1, 3]),
    }
    w.update(fixed)
    # Nudge any rate whose GPU count lands within a hair of a whole number: ceil() of it
    # would depend on the order of the floating-point operations.
    for h, r in enumerate(w["rps_by_hour"]):
        while any(abs(x - round(x)) < 1e-4 for x in (r * (1 + headroom) / tp for tp in throughput.values())):
            r = round(r + 0.01, 2)
        w["rps_by_hour"][h] = r
    return w


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    seed = random.SystemRandom().randrange(1, 10**9)
    rng = random.Random(seed)
    t = make_tables(rng)
    folder = tmp_path_factory.mktemp("hidden")
    write_tables(t, folder / "data")
    return World(seed, t, folder / "data", folder)


@pytest.fixture(scope="module")
def workloads(world) -> list[dict]:
    """Hidden workloads for `plan`: random ones, where the check decides what is achievable,
    and two where 40% is out of reach."""
    rng = random.Random(world.seed + 1)
    t = world.tables
    out = [gen_training(rng, t, f"train-{i}") for i in range(5)]
    out += [gen_serving(rng, t, f"serve-{i}") for i in range(5)]
    out.append(gen_training(rng, t, "train-busy", busy=True))
    out.append(gen_serving(rng, t, "serve-flat", flat=True))
    rng.shuffle(out)
    return out


_PLAN_CACHE: dict[int, dict] = {}


def run_plan(learner, world: World, workloads: list[dict]) -> dict:
    """`cost.py plan` on the hidden workloads (once per check run), its JSON by workload name."""
    if world.seed in _PLAN_CACHE:
        return _PLAN_CACHE[world.seed]
    learner.require("cost.py")
    path = world.folder / "workloads.json"
    path.write_text(json.dumps({"workloads": workloads}, indent=1))
    res = learner.run(
        ["python", "cost.py", "plan", str(path), "--data", str(world.data), "--json"], timeout_s=RUN_TIMEOUT_S
    )
    if res.returncode != 0:
        fail(
            f"`python cost.py plan workloads.json --data DIR --json` on the check's workloads failed "
            f"(exit code {res.returncode}): {res.tail()}"
        )
    doc = res.json()
    plans = doc.get("plans") if isinstance(doc, dict) else None
    if not isinstance(plans, list):
        fail('`cost.py plan --json` must print one JSON object with a "plans" list; it printed no "plans" list.')
    by_name = {p.get("name"): p for p in plans if isinstance(p, dict)}
    missing = [w["name"] for w in workloads if w["name"] not in by_name]
    if missing:
        fail(f"`cost.py plan` gave no plan for {len(missing)} of the {len(workloads)} workloads, e.g. {missing[0]!r}.")
    _PLAN_CACHE[world.seed] = by_name
    return by_name


def describe_choice(w: dict, c: dict) -> str:
    if w["kind"] == "training":
        extra = ", always on" if c.get("always_on") else ""
        return f"training: {c.get('count')} x {c.get('gpu')} on {c.get('pricing')}{extra}"
    always = ", always on" if c.get("always_on") else ""
    if c.get("reserved_count"):
        return (
            f"serving: {c.get('reserved_count')} x {c.get('gpu')} on {c.get('reserved_term')}, "
            f"{c.get('flex')} above{always}"
        )
    return f"serving: {c.get('gpu')} on {c.get('flex')}{always or ', hour by hour'}"


def _choice_of(row: dict, w: dict) -> dict:
    c = row.get("choice")
    if not isinstance(c, dict):
        fail(f'the plan for {w["name"]!r} has no "choice" object (the README lists its fields).')
    c = dict(c)
    c.setdefault("always_on", False)
    if w["kind"] == "serving":
        c.setdefault("reserved_term", None)
        c.setdefault("reserved_count", 0)
    return c


def _usd(x: float) -> str:
    return f"${x:,.2f}"


# --- plan-json -------------------------------------------------------------------------------


@requirement("plan-json")
def test_plan_prints_the_fields_for_every_workload(learner, world, workloads, figures):
    figures.add("check seed", world.seed, note="hidden workloads and price tables are drawn from it")
    plans = run_plan(learner, world, workloads)
    figures.add("workloads planned", len(plans))
    common = {
        "name": str,
        "kind": str,
        "gpu": str,
        "count": int,
        "choice": dict,
        "pricing_mix": list,
        "monthly_cost_usd": (int, float),
        "baseline": dict,
        "savings_pct": (int, float),
        "note": str,
    }
    for w in workloads:
        row = plans[w["name"]]
        wants = {**common, **({"hours_per_run": (int, float)} if w["kind"] == "training" else {"gpus_by_hour": list})}
        for key, kind in wants.items():
            if key not in row:
                fail(f"the plan for {w['name']!r} lacks the field {key!r} (the README lists the fields of a plan).")
            if not isinstance(row[key], kind) or isinstance(row[key], bool):
                what = getattr(kind, "__name__", "number")
                fail(f"the plan for {w['name']!r} has {key} = {row[key]!r}; the README says it is a {what}.")
        if row["gpu"] != row["choice"].get("gpu"):
            fail(f"the plan for {w['name']!r} names GPU {row['gpu']!r} but its choice {row['choice'].get('gpu')!r}.")
        if row["kind"] != w["kind"]:
            fail(f"the plan for {w['name']!r} says kind {row['kind']!r}; the workload is {w['kind']!r}.")
        for key in ("gpu", "count", "monthly_cost_usd"):
            if key not in row["baseline"]:
                fail(f"the baseline of {w['name']!r} lacks {key!r}.")
        for line in row["pricing_mix"]:
            if not isinstance(line, dict) or not {"pricing", "gpu_hours_per_month", "usd_per_month"} <= set(line):
                fail(
                    f"a pricing_mix line of {w['name']!r} is {line!r}; each line needs pricing, "
                    "gpu_hours_per_month and usd_per_month."
                )
        mix_total = sum(float(m["usd_per_month"]) for m in row["pricing_mix"])
        if abs(mix_total - row["monthly_cost_usd"]) > max(0.1, 1e-4 * row["monthly_cost_usd"]):
            fail(
                f"the pricing_mix lines of {w['name']!r} add up to {_usd(mix_total)}/month but monthly_cost_usd is "
                f"{_usd(row['monthly_cost_usd'])}."
            )
        base = row["baseline"]["monthly_cost_usd"]
        want = 100 * (1 - row["monthly_cost_usd"] / base) if base else 0.0
        if abs(row["savings_pct"] - want) > 0.1:
            fail(
                f"the plan for {w['name']!r} reports savings_pct {row['savings_pct']} but its costs "
                f"({_usd(row['monthly_cost_usd'])} against {_usd(base)}) give {want:.2f}%."
            )
        if w["kind"] == "serving" and len(row["gpus_by_hour"]) != len(w["rps_by_hour"]):
            fail(
                f"gpus_by_hour of {w['name']!r} has {len(row['gpus_by_hour'])} entries; "
                f"the profile has {len(w['rps_by_hour'])} hours."
            )


# --- cost-formula ----------------------------------------------------------------------------


def _cost_cases(world: World) -> list[dict]:
    """Hidden workloads, each with a choice that respects its constraints, covering every pricing."""
    rng = random.Random(world.seed + 2)
    t = world.tables
    cases = []
    training_kinds = ["spot", "spot", "spot", "on_demand", "reserved_1y", "reserved_3y", "always_on"]
    for i, kind in enumerate(training_kinds):
        for _ in range(200):
            w = gen_training(
                rng,
                t,
                f"cost-train-{i}",
                interruptible=True,
                max_commitment_years=3,
                checkpoint_interval_hours=round(rng.uniform(0.8, 2.0), 2),
            )
            pricing = "on_demand" if kind == "always_on" else kind
            gpu = rng.choice([g for g in t.speed if t.memory[g] >= w["min_gpu_memory_gb"]])
            ok = [
                n
                for n in range(2 if kind == "spot" else 1, w["max_gpus"] + 1)
                if not violations(t, w, {"gpu": gpu, "count": n, "pricing": pricing})
            ]
            if ok:
                n = min(ok) + rng.randint(0, 2)
                c = {"gpu": gpu, "count": n, "pricing": pricing, "always_on": kind == "always_on"}
                if not violations(t, w, c):
                    cases.append({**w, "choice": c})
                    break
    serving_kinds = [
        ("reserved_3y", "on_demand", False),
        ("reserved_1y", "spot", False),
        (None, "spot", False),
        (None, "on_demand", False),
        ("reserved_3y", "on_demand", True),
        ("reserved_1y", "spot", False),
    ]
    for i, (term, flex, always) in enumerate(serving_kinds):
        w = gen_serving(
            rng,
            t,
            f"cost-serve-{i}",
            max_commitment_years=3,
            latency_critical=flex == "on_demand",
            restart_hours=round(rng.uniform(0.5, 1.0), 2),
        )
        gpu = rng.choice(list(w["throughput_rps"]))
        peak = int(need(w, gpu).max())
        r = rng.randint(1, max(1, peak - 1)) if term else 0
        c = {"gpu": gpu, "reserved_term": term, "reserved_count": r, "flex": flex, "always_on": always}
        cases.append({**w, "choice": c})
    rng.shuffle(cases)
    return cases


@requirement("cost-formula")
def test_cost_prices_given_choices_as_the_readme_says(learner, world, figures):
    learner.require("cost.py")
    cases = _cost_cases(world)
    path = world.folder / "choices.json"
    path.write_text(json.dumps({"workloads": cases}, indent=1))
    res = learner.run(
        ["python", "cost.py", "cost", str(path), "--data", str(world.data), "--json"], timeout_s=RUN_TIMEOUT_S
    )
    if res.returncode != 0:
        fail(f"`python cost.py cost choices.json --data DIR --json` failed (exit code {res.returncode}): {res.tail()}")
    doc = res.json()
    rows = {r.get("name"): r for r in (doc.get("costs") or []) if isinstance(r, dict)} if isinstance(doc, dict) else {}
    wrong = []
    for w in cases:
        want = monthly_cost(world.tables, w, w["choice"])
        row = rows.get(w["name"])
        if row is None or not isinstance(row.get("monthly_cost_usd"), (int, float)):
            fail(f'`cost.py cost --json` printed no monthly_cost_usd for {w["name"]!r} in its "costs" list.')
        got = float(row["monthly_cost_usd"])
        if abs(got - want) > max(0.05, 1e-4 * want):
            wrong.append(
                f"{w['name']} ({describe_choice(w, w['choice'])}): cost.py says {_usd(got)}/month, "
                f"the README's model gives {_usd(want)} ({100 * (got / want - 1):+.2f}%)"
            )
    figures.add("choices priced", len(cases))
    figures.add("priced wrong", len(wrong))
    if wrong:
        fail(
            f"{len(wrong)} of {len(cases)} given choices are priced wrong: "
            + "; ".join(wrong[:3])
            + ("; ..." if len(wrong) > 3 else "")
        )


@requirement("cost-formula")
def test_plan_reports_the_price_of_its_own_choice_and_baseline(learner, world, workloads, figures):
    plans = run_plan(learner, world, workloads)
    t = world.tables
    worst = 0.0
    for w in workloads:
        row = plans[w["name"]]
        c = _choice_of(row, w)
        try:
            want = monthly_cost(t, w, c)
        except (KeyError, TypeError, ValueError):
            fail(f"the choice of {w['name']!r} cannot be priced: {json.dumps(c)} (the README lists a choice's fields).")
        got = float(row.get("monthly_cost_usd", float("nan")))
        worst = max(worst, abs(got - want) / want if want else 0.0)
        if not abs(got - want) <= max(0.05, 1e-4 * want):
            fail(
                f"the plan for {w['name']!r} ({describe_choice(w, c)}) says {_usd(got)}/month; that choice costs "
                f"{_usd(want)} by the README's model."
            )
        _, base = baseline(t, w)
        got_base = float(row.get("baseline", {}).get("monthly_cost_usd", float("nan")))
        if not abs(got_base - base) <= max(0.05, 1e-4 * base):
            fail(
                f"the baseline of {w['name']!r} is {_usd(got_base)}/month; always-on on-demand {w['reference_gpu']} "
                f"sized for the peak cost {_usd(base)}."
            )
    figures.add("worst relative error of a plan's cost", worst)


# --- constraints -----------------------------------------------------------------------------


@requirement("constraints")
def test_every_plan_respects_its_workload(learner, world, workloads, figures):
    plans = run_plan(learner, world, workloads)
    t = world.tables
    broken = []
    for w in workloads:
        row = plans[w["name"]]
        c = _choice_of(row, w)
        bad = violations(t, w, c, row.get("gpus_by_hour", []) if w["kind"] == "serving" else None)
        if w["kind"] == "training" and not bad:
            figures.add(
                f"{w['name']}: hours per run",
                run_hours(t, w, c["gpu"], c["count"], c["pricing"]),
                "h",
                note=f"deadline {w['deadline_hours']:g} h",
            )
        if bad:
            broken.append(f"{w['name']} ({describe_choice(w, c)}): {bad[0]}")
    figures.add("plans breaking a constraint", len(broken), note=f"of {len(workloads)}")
    if broken:
        fail(f"{len(broken)} plan(s) break their workload's constraints: " + "; ".join(broken[:3]))


# --- savings-40 ------------------------------------------------------------------------------


def _learner_savings(world: World, w: dict, row: dict) -> tuple[float, float]:
    """(the learner's choice priced by the README's model, savings % against the baseline)."""
    t = world.tables
    c = _choice_of(row, w)
    bad = violations(t, w, c, row.get("gpus_by_hour", []) if w["kind"] == "serving" else None)
    if bad:
        fail(f"the plan for {w['name']!r} breaks a constraint ({bad[0]}); a plan must be valid before its cost counts.")
    cost = monthly_cost(t, w, c)
    return cost, savings(cost, baseline(t, w)[1])


@requirement("savings-40")
def test_plans_save_40_percent_where_the_workload_allows_it(learner, world, workloads, figures):
    plans = run_plan(learner, world, workloads)
    t = world.tables
    short, silent = [], []
    for w in workloads:
        _, base = baseline(t, w)
        _, best_cost = best(t, w)
        possible = savings(best_cost, base)
        _, got = _learner_savings(world, w, plans[w["name"]])
        figures.add(f"{w['name']}: savings", got, "%", note=f"best possible {possible:.1f}%")
        if possible >= 41.0 and got < 40.0:
            short.append(f"{w['name']} saves {got:.1f}% (the model allows {possible:.1f}%)")
        elif possible < 40.0 and not str(plans[w["name"]].get("note", "")).strip():
            silent.append(w["name"])
    if short:
        fail(
            f"{len(short)} plan(s) fall short of the 40% target where the workload allows it; needs >= 40%: "
            + "; ".join(short[:3])
        )
    if silent:
        fail(
            f"no plan can save 40% on {', '.join(silent)}, and the plan's note does not say why (one sentence: which "
            "lever is ruled out or does not pay)."
        )


# --- as-cheap-as-rule ------------------------------------------------------------------------


@requirement("as-cheap-as-rule")
def test_plans_are_as_cheap_as_the_simple_rule(learner, world, workloads, figures):
    plans = run_plan(learner, world, workloads)
    t = world.tables
    dearer = []
    worst = 0.0
    for w in workloads:
        cost, _ = _learner_savings(world, w, plans[w["name"]])
        rule_choice, rule_cost = simple_rule(t, w)
        ratio = cost / rule_cost
        worst = max(worst, ratio)
        if ratio > 1.05:
            dearer.append(
                f"{w['name']} costs {_usd(cost)}/month, the simple rule's plan "
                f"({describe_choice(w, rule_choice)}) {_usd(rule_cost)}: {ratio:.2f}x"
            )
    figures.add("worst cost / simple rule", worst, "x", note="needs <= 1.05")
    if dearer:
        fail(f"{len(dearer)} plan(s) cost more than 5% above the simple rule of the README: " + "; ".join(dearer[:3]))


# --- bad-input -------------------------------------------------------------------------------

BAD_CASES = [
    ("an unknown reference GPU", "plan", "reference_gpu", "b200-192gb", "b200-192gb"),
    ("negative GPU-hours", "plan", "gpu_hours", -40.0, "gpu_hours"),
    ("a negative deadline", "plan", "deadline_hours", -6.0, "deadline_hours"),
    ("an unknown GPU in throughput_rps", "plan", "throughput_rps", "mi300x", "mi300x"),
    ("an unknown GPU in a choice", "cost", "choice", "b200-192gb", "b200-192gb"),
]


@pytest.mark.parametrize("what, command, key, value, named", BAD_CASES, ids=[c[0] for c in BAD_CASES])
@requirement("bad-input")
def test_bad_input_exits_2_with_a_clear_message(learner, world, what, command, key, value, named, figures):
    learner.require("cost.py")
    rng = random.Random(world.seed + 3)
    t = world.tables
    good = gen_training(rng, t, "good-one")
    if key == "throughput_rps":
        bad = gen_serving(rng, t, "bad-one")
        bad["throughput_rps"] = {**bad["throughput_rps"], value: 50.0}
    else:
        bad = gen_training(rng, t, "bad-one")
        if key == "choice":
            bad["choice"] = {"gpu": value, "count": 2, "pricing": "on_demand"}
            good["choice"] = {"gpu": good["reference_gpu"], "count": 1, "pricing": "on_demand", "always_on": True}
        else:
            bad[key] = value
    path = world.folder / f"bad-{key}.json"
    path.write_text(json.dumps({"workloads": [good, bad]}, indent=1))
    res = learner.run(
        ["python", "cost.py", command, str(path), "--data", str(world.data), "--json"], timeout_s=RUN_TIMEOUT_S
    )
    figures.add("exit code", res.returncode)
    how = f"`cost.py {command}` on a workload with {what} ({key} = {value!r})"
    if res.returncode != 2:
        tb = " (a Python traceback)" if "Traceback" in res.stderr else ""
        fail(f"{how} finished with exit code {res.returncode}{tb}; it must stop with exit code 2 and say what's wrong.")
    if "Traceback" in res.stderr:
        fail(f"{how} exited with code 2 but printed a Python traceback; print one clear line instead.")
    if named.lower() not in (res.stderr + res.stdout).lower():
        fail(f"{how} exited with code 2, but its message does not name {named!r}: {res.tail(300)!r}")
