"""Checks for the gpu-sharing-strategies exercise.

Every check runs the learner's sharing.py in a child process (learner.drive, or learner.run for
the GPU measurement) on inputs drawn here: workload sets built from a valid MIG layout (so a plan
exists) or made impossible, MPS clients on a hidden device, hidden replica counts, and
recordings of per-tenant step times crafted by sharing_gen. The answers come from this process:
sharing_ref searches every MIG layout and computes the interference report from the same file,
and sharing_schemas holds the device plugin's and the MPS plan's schemas (pydantic).
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import sharing_gen as gen
import sharing_ref as ref
import sharing_schemas as schemas
import yaml

from gpudojo.worker.checkkit import fail, requirement

REL_TOL = 1e-6

DRIVER = r"""
import json, sys
import sharing

mode, path = sys.argv[1], sys.argv[2]
cases = json.load(open(path))
out = []
for case in cases:
    try:
        if mode == "plan":
            got = sharing.plan_mig(case["gpu"], case["workloads"])
        elif mode == "mps":
            got = sharing.mps_config(case["gpu_memory_gb"], case["clients"], device=case["device"],
                                     pipe_dir=case["pipe_dir"], log_dir=case["log_dir"])
        elif mode == "timeslicing":
            got = sharing.timeslicing_config(case["replicas"], resource=case["resource"])
        else:
            got = sharing.interference(case["recording"], case["criterion"])
        out.append({"ok": True, "value": got})
    except Exception as exc:
        out.append({"ok": False, "error": type(exc).__name__, "message": str(exc)[:300]})


def plain(o):
    try:
        return float(o)
    except Exception:
        return repr(o)


print(json.dumps(out, default=plain))
"""

FUNCS = {
    "plan": "plan_mig",
    "mps": "mps_config",
    "timeslicing": "timeslicing_config",
    "interference": "interference",
}


def drive(learner, tmp_path: Path, mode: str, cases: list[dict]) -> list[dict]:
    learner.require("sharing.py")
    path = tmp_path / f"{mode}-cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    res = learner.drive(DRIVER, mode, str(path), timeout_s=60)
    if res.returncode != 0:
        fail(f"importing sharing.py or calling {FUNCS[mode]}() failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    if not isinstance(got, list) or len(got) != len(cases):
        fail(f"the check could not read what {FUNCS[mode]}() returned.")
    return got


def raised(item: dict, func: str, what: str) -> str:
    return f"{func}({what}) raised {item['error']}: {item['message']}"


def describe(workloads: list[dict]) -> str:
    return "; ".join(f"{w['name']} {w['memory_gb']:g} GB, compute {w['compute']:.3f}" for w in workloads)


# --- (a) MIG plans ----------------------------------------------------------------------------


@requirement("mig-plan-valid")
def test_mig_plans_fit_the_gpu_and_cover_every_workload(learner, figures, tmp_path):
    rng = random.Random()
    table = ref.mig_table()
    cases = []
    # One trap per GPU, one of them a trap that placing by memory slices alone falls into too.
    traps = [rng.choice(gen.HARD_TRAPS), *rng.sample(gen.TRAPS, 2)]
    rng.shuffle(traps)
    for gpu, trap in zip(table["gpus"], traps, strict=True):
        profiles = table["gpus"][gpu]["profiles"]
        cases.append({"gpu": gpu, "workloads": gen.layout_workloads(rng, profiles, trap, trap=True)})
        cases.append({"gpu": gpu, "workloads": gen.layout_workloads(rng, profiles, rng.choice(gen.TRICKY))})
        cases.append({"gpu": gpu, "workloads": gen.layout_workloads(rng, profiles, gen.random_layout(rng, profiles))})
    got = drive(learner, tmp_path, "plan", cases)
    valid = 0
    first = None
    for case, item in zip(cases, got, strict=False):
        if not item["ok"]:
            first = first or raised(item, "plan_mig", f"{case['gpu']!r}, {len(case['workloads'])} workloads")
            continue
        plan = item["value"]
        if plan is None:
            first = first or (
                f"on {case['gpu']}, plan_mig returned None for workloads that fit ({describe(case['workloads'])})."
            )
            continue
        problems = ref.plan_problems(table["gpus"][case["gpu"]]["profiles"], case["workloads"], plan)
        if problems:
            first = first or (
                f"on {case['gpu']}, the plan for {len(case['workloads'])} workloads is not valid: "
                + "; ".join(problems[:3])
            )
            continue
        valid += 1
    figures.add("valid plans", valid, note=f"of {len(cases)} workload sets that fit, on A100 40GB/80GB and H100 80GB")
    if first:
        fail(first)


@requirement("mig-plan-tight")
def test_mig_plans_use_the_smallest_profiles_and_refuse_what_cannot_fit(learner, figures, tmp_path):
    rng = random.Random()
    table = ref.mig_table()
    gpus = list(table["gpus"])
    cases = []
    for gpu in gpus:
        profiles = table["gpus"][gpu]["profiles"]
        cases.append({"gpu": gpu, "workloads": gen.layout_workloads(rng, profiles, gen.random_layout(rng, profiles))})
    kinds = rng.sample(gen.INFEASIBLE_KINDS, 3)
    for kind in kinds:
        gpu = rng.choice(gpus)
        spec = table["gpus"][gpu]
        cases.append(
            {"gpu": gpu, "workloads": gen.infeasible_workloads(rng, spec["profiles"], spec["memory_gb"], kind)}
        )
    got = drive(learner, tmp_path, "plan", cases)
    tight = refused = 0
    first = None
    for case, item in zip(cases, got, strict=False):
        profiles = table["gpus"][case["gpu"]]["profiles"]
        best = ref.best_plan(profiles, case["workloads"])
        if not item["ok"]:
            first = first or raised(item, "plan_mig", f"{case['gpu']!r}, {len(case['workloads'])} workloads")
            continue
        plan = item["value"]
        if best is None:
            if plan is None:
                refused += 1
            else:
                first = first or (
                    f"on {case['gpu']} no layout holds these workloads ({describe(case['workloads'])}), "
                    f"but plan_mig returned a plan: {[i.get('profile') for i in plan if isinstance(i, dict)]}. "
                    "Return None when nothing fits."
                )
            continue
        if plan is None:
            first = (
                first
                or f"on {case['gpu']}, plan_mig returned None for workloads that fit ({describe(case['workloads'])})."
            )
            continue
        problems = ref.plan_problems(profiles, case["workloads"], plan)
        if problems:
            first = first or f"on {case['gpu']}, the plan is not valid: {problems[0]}"
            continue
        mem, comp = ref.plan_totals(profiles, plan)
        if (mem, comp) != best:
            bigger = []
            for w, i in zip(case["workloads"], plan, strict=False):
                small = gen.smallest(profiles, w)
                if small and small["name"] != i["profile"]:
                    bigger.append(
                        f"{w['name']} ({w['memory_gb']:g} GB, compute {w['compute']:.3f}) got {i['profile']}, "
                        f"{small['name']} covers it"
                    )
            first = first or (
                f"on {case['gpu']} the plan takes {mem} memory and {comp} compute slices; {best[0]} and {best[1]} "
                f"are enough: {'; '.join(bigger[:3])}."
            )
            continue
        tight += 1
    figures.add("smallest plans", tight, note=f"of {len(gpus)} sets that fit")
    figures.add("impossible sets refused", refused, note=f"of {len(kinds)}: {', '.join(kinds)}")
    if first:
        fail(first)


# --- (b) MPS and the device plugin's time-slicing --------------------------------------------

LIMIT = re.compile(r"^(\d+)=(\d+)(M|MB|G|GB)$")


def mps_clients(rng: random.Random, n: int, total_gb: float) -> list[dict]:
    names = gen.unique_names(rng, n)
    shares = [rng.uniform(0.5, 1.5) for _ in names]
    clients = []
    for name, s in zip(names, shares, strict=False):
        percent = rng.randint(5, 70)
        clients.append(
            {
                "name": name,
                "compute": round((percent + rng.uniform(0.15, 0.85)) / 100, 4),
                "memory_gb": round(max(0.5, total_gb * s / sum(shares)), 1),
            }
        )
    return clients


@requirement("mps-config")
def test_mps_config_sets_the_documented_limits(learner, figures, tmp_path):
    rng = random.Random()
    gpu_mem = rng.choice([40.0, 80.0, 94.0])
    tag = rng.randint(1000, 9999)
    case = {
        "gpu_memory_gb": gpu_mem,
        "clients": mps_clients(rng, rng.randint(2, 4), gpu_mem * rng.uniform(0.5, 0.9)),
        "device": rng.randint(1, 7),
        "pipe_dir": f"/run/mps-{tag}/pipe",
        "log_dir": f"/run/mps-{tag}/log",
    }
    over = dict(case, clients=mps_clients(rng, 3, gpu_mem * rng.uniform(1.1, 1.5)), device=0)
    got = drive(learner, tmp_path, "mps", [case, over])
    item, over_item = got
    if not item["ok"]:
        fail(raised(item, "mps_config", f"{gpu_mem:g}, {len(case['clients'])} clients, device={case['device']}"))
    plan = item["value"]
    bad = schemas.problems(schemas.MpsPlan, plan)
    if bad:
        fail(
            "mps_config() does not return the README's layout with the MPS documentation's variable names "
            f"(all values strings): {'; '.join(bad[:4])}"
        )
    denv = plan["daemon"]["env"]
    want = {
        "CUDA_VISIBLE_DEVICES": str(case["device"]),
        "CUDA_MPS_PIPE_DIRECTORY": case["pipe_dir"],
        "CUDA_MPS_LOG_DIRECTORY": case["log_dir"],
    }
    for key, value in want.items():
        if denv.get(key) != value:
            fail(
                f"the daemon's {key} is {denv.get(key)!r}; with device={case['device']} and the directories "
                f"given it must be {value!r}."
            )
    if [c["name"] for c in plan["clients"]] != [c["name"] for c in case["clients"]]:
        fail(
            f"the plan's clients are {[c['name'] for c in plan['clients']]}; expected one per client, in order: "
            f"{[c['name'] for c in case['clients']]}."
        )
    for c, p in zip(case["clients"], plan["clients"], strict=False):
        env = p["env"]
        if env.get("CUDA_MPS_PIPE_DIRECTORY") != case["pipe_dir"]:
            fail(
                f"client {c['name']}: CUDA_MPS_PIPE_DIRECTORY is {env.get('CUDA_MPS_PIPE_DIRECTORY')!r}; it must be "
                f"the daemon's, {case['pipe_dir']!r}, or the client never finds the server."
            )
        if "CUDA_VISIBLE_DEVICES" in env:
            fail(
                f"client {c['name']} sets CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']!r}: the daemon already "
                f"selected device {case['device']} and the MPS server remaps it to device 0 for its clients, so the "
                "client must not set it."
            )
        want_pct = math.ceil(100 * c["compute"])
        pct = env.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
        if pct != str(want_pct):
            fail(
                f"client {c['name']} (compute {c['compute']:.4f}): CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is {pct!r}; "
                f"expected {str(want_pct)!r}, its share in whole percent rounded up."
            )
        limit = env.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") or ""
        m = LIMIT.match(limit)
        if not m:
            fail(
                f"client {c['name']}: CUDA_MPS_PINNED_DEVICE_MEM_LIMIT is {limit!r}; the MPS format is "
                "<device>=<amount><unit>, like '0=12G' or '0=11572M'."
            )
        if m.group(1) != "0":
            fail(
                f"client {c['name']}: the pinned-memory limit names device {m.group(1)}; the client sees the "
                f"daemon's device {case['device']} as device 0."
            )
        mib = int(m.group(2)) * (1024 if m.group(3).startswith("G") else 1)
        need = c["memory_gb"] * 1024
        if not need <= mib < need + 1024:
            fail(
                f"client {c['name']} needs {c['memory_gb']:g} GB; its pinned-memory limit {limit!r} is "
                f"{mib / 1024:.2f} GB: it must be at least the need and less than 1 GB above it."
            )
    figures.add("clients", len(case["clients"]), note=f"device {case['device']}, {gpu_mem:g} GB GPU")
    need_over = sum(c["memory_gb"] for c in over["clients"])
    figures.add("oversubscribed case", f"{need_over:.1f} GB on {gpu_mem:g} GB", note=over_item.get("error", "no error"))
    if over_item["ok"] or over_item["error"] != "ValueError":
        what = "returned a plan" if over_item["ok"] else f"raised {over_item['error']}"
        fail(
            f"clients needing {need_over:.1f} GB on a {gpu_mem:g} GB GPU must make mps_config raise ValueError; "
            f"it {what}."
        )


@requirement("timeslicing-config")
def test_timeslicing_config_is_a_valid_device_plugin_config(learner, figures, tmp_path):
    rng = random.Random()
    table = ref.mig_table()
    gpu = rng.choice(list(table["gpus"]))
    mig = rng.choice(
        [p["name"] for p in table["gpus"][gpu]["profiles"] if "+me" not in p["name"] and p["compute_slices"] < 7]
    )
    cases = [
        {"replicas": rng.randint(2, 12), "resource": "nvidia.com/gpu"},
        {"replicas": rng.randint(2, 8), "resource": f"nvidia.com/mig-{mig}"},
    ]
    got = drive(learner, tmp_path, "timeslicing", cases)
    for case, item in zip(cases, got, strict=False):
        what = f"{case['replicas']}, resource={case['resource']!r}"
        if not item["ok"]:
            fail(raised(item, "timeslicing_config", what))
        text = item["value"]
        if not isinstance(text, str):
            fail(f"timeslicing_config({what}) returned {type(text).__name__}; it must return the YAML text.")
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            fail(f"timeslicing_config({what}) is not valid YAML: {str(exc)[:200]}")
        bad = schemas.problems(schemas.DevicePluginConfig, config)
        if bad:
            fail(
                f"timeslicing_config({what}) does not match the device plugin's documented config: {'; '.join(bad[:4])}"
            )
        sharing = config.get("sharing") or {}
        if sharing.get("mps") is not None:
            fail(
                "the config sets sharing.mps as well: time-slicing and MPS are mutually exclusive in the device plugin."
            )
        ts = sharing.get("timeSlicing")
        if not ts:
            fail(f"timeslicing_config({what}) has no sharing.timeSlicing section.")
        res = ts["resources"]
        if len(res) != 1 or res[0]["name"] != case["resource"] or res[0]["replicas"] != case["replicas"]:
            fail(
                f"timeslicing_config({what}) lists resources {res}; expected one: name {case['resource']}, "
                f"replicas {case['replicas']}."
            )
        if ts.get("failRequestsGreaterThanOne") is not True:
            fail(
                "sharing.timeSlicing.failRequestsGreaterThanOne is not true: a pod asking for 2 replicas would get "
                "no more compute than one, and the plugin's README recommends refusing such requests."
            )
        strategy = (config.get("flags") or {}).get("migStrategy")
        if case["resource"].startswith("nvidia.com/mig-") and strategy != "mixed":
            fail(
                f"time-slicing {case['resource']} needs flags.migStrategy 'mixed' (each MIG profile its own "
                f"resource); the config has {strategy!r}."
            )
        if case["resource"] == "nvidia.com/gpu" and strategy not in (None, "none"):
            fail(
                f"time-slicing whole GPUs (nvidia.com/gpu) with flags.migStrategy {strategy!r}: use 'none' "
                "(or leave it out)."
            )
    figures.add("replicas", f"{cases[0]['replicas']} x nvidia.com/gpu, {cases[1]['replicas']} x {cases[1]['resource']}")


# --- (c) interference -------------------------------------------------------------------------

KEYS = ("worst_slowdown", "worst_p99_increase", "fairness")


def close(a, b) -> bool:
    return isinstance(a, (int, float)) and math.isfinite(a) and abs(a - b) <= REL_TOL * max(abs(b), 1e-12)


def recordings(tmp_path: Path, rng: random.Random, specs: list[dict]) -> list[tuple[Path, dict]]:
    out = []
    for i, spec in enumerate(specs):
        path = tmp_path / f"recording-{i}.csv"
        out.append((path, gen.make_recording(rng, path, **spec)))
    return out


@requirement("interference-metrics")
def test_interference_metrics_match_the_recording(learner, figures, tmp_path):
    rng = random.Random()
    recs = recordings(
        tmp_path,
        rng,
        [{"n_tenants": 2, "strategies": ("time-slicing", "mps")}, {"n_tenants": rng.choice([3, 4])}],
    )
    cases = [{"recording": str(p), "criterion": "slowdown"} for p, _ in recs]
    got = drive(learner, tmp_path, "interference", cases)
    checked = 0
    for (path, reports), item in zip(recs, got, strict=False):
        want = reports["slowdown"]["strategies"]
        if not item["ok"]:
            fail(raised(item, "interference", f"{path.name!r}, 'slowdown'"))
        mine = item["value"].get("strategies") if isinstance(item["value"], dict) else None
        if not isinstance(mine, dict) or set(mine) != set(want):
            fail(
                "interference() must report under 'strategies' every strategy in the recording except 'alone': "
                f"{sorted(want)}; it gave {sorted(mine) if isinstance(mine, dict) else mine!r}."
            )
        for s, w in want.items():
            tenants = (mine[s] or {}).get("tenants") or {}
            for t, tw in w["tenants"].items():
                tm = tenants.get(t) or {}
                for key in ("slowdown", "p99_increase"):
                    if not close(tm.get(key), tw[key]):
                        fail(f"under {s}, tenant {t}'s {key} is {tm.get(key)!r}; the recording gives {tw[key]:.6f}.")
                    checked += 1
            for key in KEYS:
                if not close(mine[s].get(key), w[key]):
                    fail(f"under {s}, {key} is {mine[s].get(key)!r}; the recording gives {w[key]:.6f}.")
                checked += 1
    reports = recs[1][1]
    for s, w in reports["slowdown"]["strategies"].items():
        figures.add(
            f"{s}: worst slowdown",
            w["worst_slowdown"],
            "x",
            note=f"p99 x{w['worst_p99_increase']:.2f}, fairness {w['fairness']:.3f}",
        )
    figures.add("figures compared", checked, note=f"within {REL_TOL:g} relative")


@requirement("interference-verdict")
def test_interference_names_the_strategy_that_isolates_best(learner, figures, tmp_path):
    rng = random.Random()
    for _ in range(20):
        recs = recordings(tmp_path, rng, [{}, {}, {"strategies": ("time-slicing", "mps", "mig")}])
        winners = {r[c]["best"] for _, r in recs for c in ref.CRITERIA}
        if len(winners) >= 2:
            break
    cases = [{"recording": str(p), "criterion": c} for p, _ in recs for c in ref.CRITERIA]
    got = drive(learner, tmp_path, "interference", cases)
    right = 0
    first = None
    names = {"slowdown": "lowest worst slowdown", "tail": "lowest worst p99 increase", "fairness": "highest fairness"}
    for case, item in zip(cases, got, strict=False):
        report = next(r for p, r in recs if str(p) == case["recording"])[case["criterion"]]
        if not item["ok"]:
            first = first or raised(item, "interference", f"{Path(case['recording']).name!r}, {case['criterion']!r}")
            continue
        best = item["value"].get("best") if isinstance(item["value"], dict) else None
        if best == report["best"]:
            right += 1
            continue
        key = {"slowdown": "worst_slowdown", "tail": "worst_p99_increase", "fairness": "fairness"}[case["criterion"]]
        figs = ", ".join(f"{s} {v[key]:.3f}" for s, v in report["strategies"].items())
        first = first or (
            f"for criterion {case['criterion']!r} ({names[case['criterion']]}) the best is {report['best']} "
            f"({key}: {figs}); interference() named {best!r}."
        )
    figures.add("verdicts right", right, note=f"of {len(cases)}: 3 recordings x 3 criteria")
    if first:
        fail(first)


# --- (d) measured on a GPU --------------------------------------------------------------------


PROBE = Path(__file__).resolve().parent / "sharing_probe.py"
FIGURE_BAND = 2.0  # the printed throughputs and slowdowns within 2x of the check's own measurement


class GpuProcessWatch:
    """Counts, through NVML, the compute processes on the GPUs while the learner's measure runs:
    two tenants sharing the GPU are two processes on it at the same moment."""

    def __init__(self):
        import threading

        self.most = 0
        self.error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        try:
            import pynvml

            pynvml.nvmlInit()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception as exc:  # no NVML here: the watch cannot count
            self.error = f"{type(exc).__name__}: {exc}"
            return
        while not self._stop.is_set():
            try:
                n = sum(len(pynvml.nvmlDeviceGetComputeRunningProcesses(h)) for h in handles)
                self.most = max(self.most, n)
            except Exception as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                return
            self._stop.wait(0.1)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)


def probe(size: int, seconds: float) -> dict:
    """The check's own measurement of the same loop, alone and two at once (sharing_probe.py)."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, str(PROBE), str(size), str(seconds)], capture_output=True, text=True, timeout=300
    )
    if proc.returncode != 0:
        fail(f"the check's own measurement of the matmul loop failed (not your code): {proc.stderr[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@requirement("measure-gpu")
def test_two_processes_time_slicing_a_gpu_each_run_slower(learner, figures):
    learner.require("sharing.py")
    rng = random.Random()
    size, seconds = rng.choice([4096, 6144, 8192]), 3
    argv = ["python", "sharing.py", "measure", "--json", "--size", str(size), "--seconds", str(seconds)]
    with GpuProcessWatch() as watch:
        res = learner.run(argv, timeout_s=300)
    if res.returncode != 0:
        fail(f"python sharing.py measure --json --size {size} failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    try:
        alone = float(got["alone"]["iters_per_s"])
        shared = [float(s["iters_per_s"]) for s in got["shared"]]
    except (KeyError, TypeError, ValueError):
        fail('measure --json must print {"alone": {"iters_per_s": ...}, "shared": [{"iters_per_s": ...}, ...]}.')
    if len(shared) != 2:
        fail(f"measure ran {len(shared)} shared tenant(s); it must run two processes at once.")
    if not all(math.isfinite(x) and x > 0 for x in [alone, *shared]):
        fail(f"the throughputs are not positive numbers: alone {alone}, shared {shared}.")
    pids = [s.get("pid") for s in got["shared"]]
    if None not in pids and len(set(pids)) != 2:
        fail(f"both shared tenants report pid {pids[0]}: they must be two processes.")
    note = "as your program reported it; held to the check's own measurement below"
    figures.add("alone (your report)", alone, "iters/s", note=f"{size}x{size} matmuls; {note}")
    for i, x in enumerate(shared):
        figures.add(f"tenant {i} shared (your report)", x, "iters/s", note=f"{alone / x:.2f}x slower than alone")
    total = sum(shared) / alone
    figures.add("shared total / alone (your report)", total, note="time-slicing: at most about 1")
    for i, x in enumerate(shared):
        if x >= alone:
            fail(
                f"tenant {i} ran {x:.1f} iters/s shared and {alone:.1f} alone: sharing the GPU cannot make it "
                "faster; is the second process really on the GPU at the same time?"
            )
    if total > 1.1:
        fail(
            f"the two tenants together ran {total:.2f}x the single tenant's throughput; time-slicing one GPU "
            "gives at most about 1x (limit 1.1x). Are they timed over the same window?"
        )
    # Two processes on the GPU at once, as NVML lists them (where it lists processes at all).
    if watch.error or watch.most == 0:
        figures.add("processes on the GPU at once", "not counted", note=watch.error or "NVML lists no process here")
    else:
        figures.add("processes on the GPU at once", watch.most, note="the most NVML listed during your measure")
        if watch.most < 2:
            fail(
                "while measure ran, the GPU never had more than one process on it: the two tenants did not "
                "share the GPU at the same time."
            )
    # The check's own measurement of the same loop: the printed figures must agree with it.
    ref = probe(size, seconds)
    ref_slow = sum(ref["alone"] / x for x in ref["shared"]) / len(ref["shared"])
    figures.add("alone (check's own)", ref["alone"], "iters/s", note=f"{size}x{size} bf16 matmuls")
    figures.add("slowdown shared (check's own)", ref_slow, "x", note="mean of two tenants")
    ratio = alone / ref["alone"]
    if not 1 / FIGURE_BAND <= ratio <= FIGURE_BAND:
        fail(
            f"your lone tenant reports {alone:.1f} iters/s of {size}x{size} matmuls, but the check measured the "
            f"same loop at {ref['alone']:.1f} ({ratio:.2f}x): report what your processes measured (within "
            f"{FIGURE_BAND:g}x of the check's, with 16-bit matmuls as the README says)."
        )
    for i, x in enumerate(shared):
        ratio = (alone / x) / ref_slow
        if not 1 / FIGURE_BAND <= ratio <= FIGURE_BAND:
            fail(
                f"tenant {i} reports being {alone / x:.2f}x slower shared, but two processes sharing this GPU "
                f"were {ref_slow:.2f}x slower in the check's own measurement: report what your processes "
                f"measured (within {FIGURE_BAND:g}x of the check's)."
            )
