"""Checks for the mixed-precision exercise.

mp_bench.py runs as a child (python mp_bench.py --json with a seed and a step count chosen
here), and drivers import it in a child: one retrains every precision measured here from the
same seed with the learner's make_step, timing each step and measuring the peak itself, so
that the printed losses, step times and peaks are held to the check's own run (the loss,
speed and memory requirements use the check's figures, never the printed ones); one watches
every matrix multiply of a training step (forward and backward) through a TorchDispatchMode
and reports its dtypes and whether TF32 was on; another feeds recommend() matrices of numbers
made up here and compares its answers with the README's rule, which is also applied to the
numbers mp_bench.py printed.
"""

from __future__ import annotations

import json
import math
import random

import pytest

from gpudojo.worker.checkkit import fail, requirement

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
GPU_ONLY = ("tf32", "fp16")
LOSS_RULE = 0.02  # the README's recommendation rule: final loss within 2% of fp32's
TRACK_TOLERANCE = 0.03  # loss-tracks: every step within 3% of fp32's
TF32_SPEEDUP = 0.8  # tf32-faster: TF32 step time at most 0.8x fp32's
MEMORY_RATIO = 0.9  # lower-memory: fp16 and bf16 peak at most 0.9x fp32's
# The printed losses against the check's own run of the same seed: the same code on the same
# machine gives the same losses (to the bit on a CPU); a GPU's reductions may differ in the
# last bits. Far below bf16's own distance from fp32 (1e-4 and more).
LOSS_MATCH = {"cpu": 1e-6, "cuda": 1e-4}
# On a GPU the printed median step time must be within 2x of the check's own timing (CUDA
# events on the same GPU agree to a few percent). A CPU shared with other work times the same
# step 10x apart from one run to the next, so there the printed step time is information.
STEP_BAND = 2.0
PEAK_BAND = 2.0  # printed peak memory within 2x of the check's own measurement, either way

_CACHE: dict[str, object] = {}


# --- the benchmark's own report -----------------------------------------------------------------


def bench(learner, gpus: int):
    """(result, report, steps, seed) of one python mp_bench.py --json run, shared by the tests."""
    if "bench" not in _CACHE:
        learner.require("mp_bench.py")
        rng = random.Random()
        steps, seed = rng.randint(16, 24), rng.randint(1, 10**6)
        device = "cuda" if gpus else "cpu"
        argv = ["python", "mp_bench.py", "--json", "--steps", str(steps), "--seed", str(seed), "--device", device]
        res = learner.run(argv, timeout_s=300 if gpus else 120)
        if res.returncode != 0:
            fail(
                f"python mp_bench.py --json --steps {steps} --seed {seed} failed "
                f"(exit code {res.returncode}): {res.tail()}"
            )
        report = res.json()
        if not isinstance(report, dict) or not isinstance(report.get("results"), dict):
            fail(f"mp_bench.py --json printed no object with 'results': {str(report)[:200]}")
        _CACHE["bench"] = (res, report, steps, seed)
    return _CACHE["bench"]


def positive(row: dict, key: str, name: str) -> float:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        fail(f"the {name} row's {key} is {value!r}; it must be a positive, finite number.")
    return float(value)


def n_params(cfg: dict) -> int:
    f, h, d, c = cfg["features"], cfg["hidden"], cfg["depth"], cfg["classes"]
    return f * h + h + (d - 1) * (h * h + h) + h * c + c


MEASURE_DRIVER = r"""
import json, statistics, sys, time

clock = time.perf_counter  # taken before the learner's module is imported
import torch
import mp_bench

precisions, device = sys.argv[1].split(","), sys.argv[2]
seed, steps, warmup = int(sys.argv[3]), int(sys.argv[4]), 3
cuda = device == "cuda"


def cpu_peak(step, x, y):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(x, y)
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    now = peak = 0
    for e in events:
        now += e.nbytes()
        peak = max(peak, now)
    return peak


out = {}
for precision in precisions:
    cfg = mp_bench.default_config(device, seed=seed, steps=steps)
    model = mp_bench.build_model(cfg).to(device)
    optimizer = mp_bench.make_optimizer(model, cfg)
    try:
        step, scaler = mp_bench.make_step(model, optimizer, precision, device)
    except Exception as exc:
        out[precision] = {"error": f"make_step(..., {precision!r}, {device!r}) raised {type(exc).__name__}: {exc}"}
        continue
    data = mp_bench.batches(cfg, device)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    losses, times = [], []
    for i in range(steps):
        x, y = next(data)
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = step(x, y)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
        else:
            t0 = clock()
            loss = step(x, y)
            ms = (clock() - t0) * 1e3
        losses.append(float(loss))
        if i >= warmup:
            times.append(ms)
    peak = torch.cuda.max_memory_allocated() if cuda else cpu_peak(step, *next(data))
    out[precision] = {"losses": losses, "step_ms": statistics.median(times), "peak_memory_bytes": int(peak),
                      "params": sum(p.numel() for p in model.parameters())}
    del model, optimizer, step, scaler, data
    if cuda:
        torch.cuda.empty_cache()
print(json.dumps(out))
"""


def own_run(learner, gpus: int) -> dict:
    """The check's own run of every precision measured here, from the seed and step count of the
    learner's run: {precision: {losses, step_ms, peak_memory_bytes, params}}."""
    if "own" not in _CACHE:
        _, _, steps, seed = bench(learner, gpus)
        precisions = PRECISIONS if gpus else ("fp32", "bf16")
        device = "cuda" if gpus else "cpu"
        res = learner.drive(
            MEASURE_DRIVER, ",".join(precisions), device, str(seed), str(steps), timeout_s=300 if gpus else 120
        )
        if res.returncode != 0:
            fail(
                f"the check's own run of {', '.join(precisions)} through your make_step (seed {seed}, {steps} steps) "
                f"failed (exit code {res.returncode}): {res.tail()}"
            )
        own = res.json()
        errors = [row["error"] for row in own.values() if "error" in row]
        if errors:
            fail(f"the check's own run of {', '.join(precisions)} failed: {errors[0][:300]}")
        _CACHE["own"] = own
    return _CACHE["own"]


def held_to_own_run(name: str, row: dict, own: dict, device: str, seed: int, figures) -> None:
    """The printed losses, step time and peak of one row against the check's own run."""
    mine = own[name]
    printed, ref = row["losses"], mine["losses"]
    gaps = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(printed, ref, strict=True)]
    worst = max(range(len(gaps)), key=gaps.__getitem__)
    if gaps[worst] > LOSS_MATCH[device]:
        fail(
            f"the {name} row's losses are not the ones your make_step gives: the check retrained {name} from "
            f"seed {seed} and at step {worst} got {ref[worst]:.6f}, where your report says {printed[worst]:.6f}. "
            "Report the losses your run measured, not numbers written in."
        )
    printed_ms, printed_peak = row["step_ms"], row["peak_memory_bytes"]
    figures.add(f"{name} step time (check's own timing)", mine["step_ms"], "ms", "median")
    if device == "cpu":
        figures.add(
            f"{name} step time (your report)",
            printed_ms,
            "ms",
            "as your program reported it: information, not checked (CPU timings vary too much between runs)",
        )
    else:
        figures.add(
            f"{name} step time (your report)", printed_ms, "ms", f"must be within {STEP_BAND:g}x of the check's"
        )
    ratio = printed_ms / mine["step_ms"]
    if device != "cpu" and not 1 / STEP_BAND <= ratio <= STEP_BAND:
        fail(
            f"the {name} row's median step time is {printed_ms:.3g} ms, but the check timed the same steps at "
            f"{mine['step_ms']:.3g} ms ({ratio:.2g}x): the step time in the report is not measured. "
            f"Report the median of the steps you timed (within {STEP_BAND:g}x of the check's timing)."
        )
    ratio = printed_peak / max(mine["peak_memory_bytes"], 1)
    figures.add(
        f"{name} peak memory (your report)",
        printed_peak / 2**20,
        "MiB",
        f"the check's own measurement: {mine['peak_memory_bytes'] / 2**20:.3g} MiB; must be within {PEAK_BAND:g}x",
    )
    if not 1 / PEAK_BAND <= ratio <= PEAK_BAND:
        fail(
            f"the {name} row's peak memory is {printed_peak / 2**20:.3g} MiB, but the check measured the same "
            f"training at {mine['peak_memory_bytes'] / 2**20:.3g} MiB ({ratio:.2g}x): measure it as the README "
            f"says (within {PEAK_BAND:g}x of the check's measurement)."
        )


@requirement("matrix")
def test_matrix_has_measured_rows(learner, gpus, figures):
    res, report, steps, seed = bench(learner, gpus)
    results = report["results"]
    cfg = report.get("config") or {}
    measured_here = PRECISIONS if gpus else ("fp32", "bf16")
    missing = [p for p in PRECISIONS if not isinstance(results.get(p), dict)]
    if missing:
        fail(f"the report's results have no row for {', '.join(missing)}; every precision needs a row.")
    if cfg.get("steps") != steps or cfg.get("seed") != seed:
        fail(
            f"the report's config says steps={cfg.get('steps')}, seed={cfg.get('seed')}; "
            f"it ran with --steps {steps} --seed {seed}."
        )
    total_ms = 0.0
    rows_ok: list[str] = []
    for name in PRECISIONS:
        row = results[name]
        if name not in measured_here:
            reason = str(row.get("reason"))
            figures.add(f"{name} row", reason)
            if row.get("measured") is not False or "needs a gpu" not in reason.lower():
                fail(
                    f"on a CPU the {name} row must say measured=false, reason 'not measured: needs a GPU'; it is {row}."
                )
            continue
        if row.get("measured") is not True:
            fail(f"the {name} row is not measured ({row.get('reason', row)}); it must be measured on this machine.")
        step_ms = positive(row, "step_ms", name)
        peak = positive(row, "peak_memory_bytes", name)
        loss = positive(row, "final_loss", name)
        figures.add(f"{name} final loss", loss)
        losses = row.get("losses")
        if not isinstance(losses, list) or len(losses) != steps:
            fail(
                f"the {name} row's losses has {len(losses) if isinstance(losses, list) else losses!r} entries; "
                f"expected one per step ({steps})."
            )
        if losses[-1] != loss:
            fail(f"the {name} row's final_loss ({loss}) is not its last step's loss ({losses[-1]}).")
        if {"features", "hidden", "depth", "classes"} <= set(cfg) and peak < 4 * n_params(cfg):
            fail(
                f"the {name} row's peak memory is {peak:.0f} bytes, less than the model's gradients alone "
                f"({4 * n_params(cfg)} bytes in fp32): the measurement misses the step."
            )
        total_ms += step_ms * steps
        rows_ok.append(name)
    figures.add("whole run", res.duration_s, "s")
    if total_ms / 1e3 > 1.5 * res.duration_s + 1:
        fail(
            f"the median step times add up to {total_ms / 1e3:.1f} s over {steps} steps per precision, but the whole "
            f"run took {res.duration_s:.1f} s: the step times are not real."
        )
    own = own_run(learner, gpus)
    for name in rows_ok:
        held_to_own_run(name, results[name], own, "cuda" if gpus else "cpu", seed, figures)


# --- what a step really does: matmul dtypes, TF32 flag, fp32 master state ------------------------

STEP_DRIVER = r"""
import json, sys
import torch
import mp_bench
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
MATMULS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}


def tf32_on():
    try:
        return torch.backends.cuda.matmul.fp32_precision == "tf32"
    except Exception:
        return bool(torch.backends.cuda.matmul.allow_tf32)


class Spy(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in MATMULS:
            dtypes = sorted({str(a.dtype) for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()})
            self.calls.append({"op": str(func), "dtypes": dtypes, "tf32": tf32_on()})
        return func(*args, **(kwargs or {}))


precision, device, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = mp_bench.default_config(device, seed=seed)
model = mp_bench.build_model(cfg).to(device)
optimizer = mp_bench.make_optimizer(model, cfg)
step, scaler = mp_bench.make_step(model, optimizer, precision, device)
data = mp_bench.batches(cfg, device)
step(*next(data))
x, y = next(data)  # made outside the spy: the data's own matmul is not the step's
spy = Spy()
with spy:
    loss = step(x, y)
loss = float(loss)
if device == "cuda":
    torch.cuda.synchronize()
print(json.dumps({
    "calls": spy.calls,
    "loss": loss,
    "param_dtypes": sorted({str(p.dtype) for p in model.parameters()}),
    "grad_dtypes": sorted({str(p.grad.dtype) for p in model.parameters() if p.grad is not None}),
    "state_dtypes": sorted({str(v.dtype) for s in optimizer.state.values() for v in s.values()
                            if torch.is_tensor(v) and v.is_floating_point()}),
    "scaler": type(scaler).__name__ if scaler is not None else None,
    "scale": float(scaler.get_scale()) if scaler is not None else None,
    "scale_used": scaler is not None and getattr(scaler, "_scale", None) is not None,
    "tf32_after": tf32_on(),
}))
"""


def drive_step(learner, precision: str, device: str) -> dict:
    key = f"step:{precision}:{device}"
    if key not in _CACHE:
        learner.require("mp_bench.py")
        seed = random.randint(1, 10**6)
        res = learner.drive(STEP_DRIVER, precision, device, str(seed), timeout_s=180)
        if res.returncode != 0:
            fail(
                f"two steps of make_step(model, optimizer, {precision!r}, {device!r}) failed "
                f"(exit code {res.returncode}): {res.tail()}"
            )
        _CACHE[key] = res.json()
    return _CACHE[key]


def matmul_dtypes(got: dict) -> dict[str, int]:
    count: dict[str, int] = {}
    for call in got["calls"]:
        for dt in call["dtypes"]:
            count[dt.replace("torch.", "")] = count.get(dt.replace("torch.", ""), 0) + 1
    return count


def check_low_precision_step(got: dict, precision: str, dtype: str, device: str, figures) -> None:
    dtypes = matmul_dtypes(got)
    figures.add(f"{precision} step on {device}: matmul operands", ", ".join(f"{k} x{v}" for k, v in dtypes.items()))
    if not got["calls"]:
        fail(
            f"no matrix multiply ran during make_step(..., {precision!r}, {device!r})'s step: "
            "the check saw no training."
        )
    if set(dtypes) != {dtype}:
        fail(
            f"during a {precision} step on {device}, the matmuls (forward and backward) ran with "
            f"{', '.join(sorted(dtypes))} operands; under {dtype} autocast every one runs in {dtype}."
        )
    for what, key in (("weights", "param_dtypes"), ("gradients", "grad_dtypes"), ("optimizer state", "state_dtypes")):
        if got[key] and got[key] != ["torch.float32"]:
            fail(
                f"after a {precision} step the {what} are {', '.join(got[key])}; mixed precision keeps them in "
                "float32 (autocast casts on the fly: do not convert the model)."
            )
    if not got["grad_dtypes"]:
        fail(f"after a {precision} step no parameter has a gradient: the step did not run backward.")
    if not math.isfinite(got["loss"]):
        fail(f"the {precision} step's loss is {got['loss']}.")


@requirement("bf16-autocast")
def test_bf16_step_runs_matmuls_in_bf16(learner, figures):
    got = drive_step(learner, "bf16", "cpu")
    check_low_precision_step(got, "bf16", "bfloat16", "cpu", figures)
    if got["scaler"] is not None:
        fail("make_step(..., 'bf16', ...) returned a GradScaler; bf16 has fp32's range and trains without one.")


# --- losses -----------------------------------------------------------------------------------------


@requirement("loss-tracks")
def test_low_precision_losses_track_fp32(learner, gpus, figures):
    """On the check's own run of make_step (the printed losses are held to it by `matrix`)."""
    own = own_run(learner, gpus)
    _, _, steps, seed = bench(learner, gpus)
    ref = own["fp32"]["losses"]
    for name in ("bf16", *(GPU_ONLY if gpus else ())):
        losses = own[name]["losses"]
        if not all(math.isfinite(v) for v in losses):
            fail(f"in the check's own run, {name}'s losses are not all finite: {losses}.")
        gaps = [abs(a - b) / abs(b) for a, b in zip(losses, ref, strict=True)]
        # fp16's GradScaler may skip the first steps while it finds its scale, which leaves
        # that run a step or two behind: only its final loss is held to the tolerance.
        worst = steps - 1 if name == "fp16" else max(range(steps), key=gaps.__getitem__)
        figures.add(
            f"{name} vs fp32, largest loss gap",
            gaps[worst],
            "",
            f"the check's own run of make_step, step {worst}; needs <= {TRACK_TOLERANCE}",
        )
        if gaps[worst] > TRACK_TOLERANCE:
            fail(
                f"in the check's run from seed {seed}, {name}'s loss at step {worst} is {losses[worst]:.5f} "
                f"against fp32's {ref[worst]:.5f}: {gaps[worst]:.1%} apart; it must stay within {TRACK_TOLERANCE:.0%} "
                + ("at the last step." if name == "fp16" else "at every step.")
            )
        if name != "tf32" and max(abs(a - b) for a, b in zip(losses, ref, strict=True)) == 0:
            fail(
                f"with make_step(..., {name!r}, ...) the losses equal fp32's to the last bit at every step: "
                f"the step did not run in {name}."
            )


# --- the recommendation -------------------------------------------------------------------------------


def rule(results: dict) -> str:
    """The README's rule."""
    fp32 = results["fp32"]
    best, best_ms = "fp32", fp32["step_ms"]
    for name in PRECISIONS[1:]:
        row = results.get(name) or {}
        if not row.get("measured"):
            continue
        if name == "fp16" and not row.get("scaler"):
            continue
        if abs(row["final_loss"] - fp32["final_loss"]) > LOSS_RULE * abs(fp32["final_loss"]):
            continue
        if row["step_ms"] < best_ms:
            best, best_ms = name, row["step_ms"]
    return best


def made_up_matrix(rng: random.Random) -> dict:
    loss32 = rng.uniform(0.1, 3.0)
    ms32 = rng.uniform(2.0, 200.0)
    results = {"fp32": row(rng, ms32, loss32, scaler=False)}
    for name in PRECISIONS[1:]:
        if rng.random() < 0.2:
            results[name] = {"measured": False, "reason": "not measured: needs a GPU"}
            continue
        # Relative loss gaps clear of the 2% edge, on both sides of it and of zero.
        gap = rng.choice([rng.uniform(0.0, 0.018), rng.uniform(0.023, 0.3)]) * rng.choice([-1, 1])
        ms = ms32 * rng.uniform(0.15, 1.4)
        results[name] = row(rng, ms, loss32 * (1 + gap), scaler=name == "fp16" and rng.random() < 0.7)
    return results


def targeted_matrix(rng: random.Random, kind: str) -> dict:
    """A matrix built to hit one branch of the rule."""
    loss32, ms32 = rng.uniform(0.1, 3.0), rng.uniform(2.0, 200.0)
    close = lambda: loss32 * (1 + rng.uniform(-0.015, 0.015))  # noqa: E731
    far = lambda: loss32 * (1 + rng.choice([-1, 1]) * rng.uniform(0.03, 0.3))  # noqa: E731
    m = {"fp32": row(rng, ms32, loss32, scaler=False)}
    if kind == "fp16-no-scaler":  # fastest and close, but without a GradScaler
        m["fp16"] = row(rng, ms32 * 0.2, close(), scaler=False)
        m["bf16"] = row(rng, ms32 * 0.5, close(), scaler=False)
        m["tf32"] = row(rng, ms32 * 0.7, close(), scaler=False)
    elif kind == "fp16-scaler":
        m["fp16"] = row(rng, ms32 * 0.2, close(), scaler=True)
        m["bf16"] = row(rng, ms32 * 0.5, close(), scaler=False)
        m["tf32"] = {"measured": False, "reason": "not measured: needs a GPU"}
    elif kind == "bf16-far":  # fastest, but its loss is off by more than 2%
        m["bf16"] = row(rng, ms32 * 0.2, far(), scaler=False)
        m["tf32"] = row(rng, ms32 * 0.6, close(), scaler=False)
        m["fp16"] = {"measured": False, "reason": "not measured: needs a GPU"}
    elif kind == "all-slower":
        for name in PRECISIONS[1:]:
            m[name] = row(rng, ms32 * rng.uniform(1.05, 2.0), close(), scaler=name == "fp16")
    else:  # "cpu": fp32 and bf16 only
        m["bf16"] = row(rng, ms32 * rng.uniform(0.3, 1.5), close(), scaler=False)
        for name in GPU_ONLY:
            m[name] = {"measured": False, "reason": "not measured: needs a GPU"}
    return m


def row(rng: random.Random, ms: float, loss: float, scaler: bool) -> dict:
    return {
        "measured": True,
        "step_ms": ms,
        "peak_memory_bytes": rng.randint(2**20, 2**34),
        "final_loss": loss,
        "losses": [loss * 1.5, loss * 1.2, loss],
        "scaler": scaler,
        "grad_scale": 65536.0 if scaler else None,
    }


RECOMMEND_DRIVER = r"""
import json, sys
import mp_bench

cases = json.loads(sys.argv[1])
print(json.dumps([mp_bench.recommend(c) for c in cases]))
"""


@requirement("recommendation")
def test_recommendation_follows_the_rule(learner, gpus, figures):
    _, report, _, _ = bench(learner, gpus)
    results = report["results"]
    if not (results.get("fp32") or {}).get("measured"):
        fail("the fp32 row is not measured, so no recommendation can be derived from the report.")
    want = rule(results)
    got = report.get("recommendation")
    figures.add("recommendation printed", str(got), "", f"the rule on the printed numbers gives {want}")
    if got != want:
        fail(
            f"mp_bench.py recommends {got!r}, but the README's rule applied to its own numbers gives {want!r} "
            f"({describe(results)})."
        )

    rng = random.Random()
    kinds = ("fp16-no-scaler", "fp16-scaler", "bf16-far", "all-slower", "cpu")
    cases = [made_up_matrix(rng) for _ in range(30)] + [targeted_matrix(rng, k) for k in kinds for _ in range(3)]
    rng.shuffle(cases)
    res = learner.drive(RECOMMEND_DRIVER, json.dumps(cases), timeout_s=60)
    if res.returncode != 0:
        fail(f"recommend(results) failed on a made-up matrix (exit code {res.returncode}): {res.tail()}")
    answers = res.json()
    wrong = [(c, a) for c, a in zip(cases, answers, strict=False) if a != rule(c)]
    figures.add("made-up matrices recommended right", len(cases) - len(wrong), "", f"of {len(cases)}")
    if len(answers) != len(cases):
        fail(f"recommend() answered {len(answers)} of {len(cases)} matrices.")
    if wrong:
        case, answer = wrong[0]
        fail(
            f"recommend() got {len(wrong)} of {len(cases)} made-up matrices wrong; for example it returns "
            f"{answer!r} where the rule gives {rule(case)!r} for {describe(case)}."
        )


def describe(results: dict) -> str:
    parts = []
    for name in PRECISIONS:
        r = results.get(name) or {}
        if r.get("measured"):
            extra = f", scaler={r.get('scaler')}" if name == "fp16" else ""
            parts.append(f"{name}: {r['step_ms']:.2f} ms, loss {r['final_loss']:.4f}{extra}")
        else:
            parts.append(f"{name}: not measured")
    return "; ".join(parts)


# --- GPU only ---------------------------------------------------------------------------------------


@requirement("fp16-gradscaler")
def test_fp16_uses_a_gradscaler(learner, gpus, figures):
    got = drive_step(learner, "fp16", "cuda")
    check_low_precision_step(got, "fp16", "float16", "cuda", figures)
    figures.add("GradScaler scale after 2 steps", got["scale"])
    if got["scaler"] is None or not got["scale_used"]:
        fail("make_step(..., 'fp16', 'cuda') trains without a GradScaler (or never calls scaler.scale(loss)).")
    if not got["scale"] or got["scale"] <= 1:
        fail(f"the fp16 GradScaler's scale is {got['scale']}; loss scaling needs a scale above 1.")
    _, report, _, _ = bench(learner, gpus)
    row16 = report["results"].get("fp16") or {}
    if (
        row16.get("scaler") is not True
        or not isinstance(row16.get("grad_scale"), (int, float))
        or row16["grad_scale"] <= 1
    ):
        fail(
            "the fp16 row must report scaler=true and the GradScaler's grad_scale (> 1); "
            f"it reports {str(row16)[:200]}."
        )


@requirement("tf32-faster")
def test_tf32_on_and_faster(learner, gpus, figures):
    import torch

    major, minor = torch.cuda.get_device_capability(0)
    figures.add("compute capability", f"{major}.{minor}")
    if major < 8:
        pytest.skip(f"TF32 needs compute capability 8.0 or newer; this GPU is {major}.{minor}")
    for precision, want in (("tf32", True), ("fp32", False)):
        got = drive_step(learner, precision, "cuda")
        flags = {c["tf32"] for c in got["calls"]}
        dtypes = matmul_dtypes(got)
        if set(dtypes) != {"float32"}:
            fail(
                f"the {precision} step's matmuls ran with {', '.join(sorted(dtypes))} operands; expected float32 only."
            )
        if flags != {want}:
            fail(
                f"during the {precision} step TF32 matmuls were {'off' if want else 'on'} for some matmuls: "
                f"{precision} must run {'every matmul with TF32' if want else 'no matmul with TF32'}"
                + ("" if want else " (the TF32 setting of the tf32 row must not leak into fp32's)")
                + "."
            )
        if got["tf32_after"]:
            fail(f"after a {precision} step TF32 is still on: restore the setting when the step ends.")
    r = own_run(learner, gpus)
    ratio = r["tf32"]["step_ms"] / r["fp32"]["step_ms"]
    figures.add("tf32 / fp32 step time", ratio, "", f"timed by the check; needs <= {TF32_SPEEDUP}")
    if ratio > TF32_SPEEDUP:
        fail(
            f"the check timed TF32's step at {r['tf32']['step_ms']:.2f} ms against fp32's "
            f"{r['fp32']['step_ms']:.2f} ms: {ratio:.2f}x; on this GPU it should be at most {TF32_SPEEDUP}x."
        )


@requirement("lower-memory")
def test_16_bit_peaks_are_lower(learner, gpus, figures):
    r = own_run(learner, gpus)
    base = r["fp32"]["peak_memory_bytes"]
    for name in ("fp16", "bf16"):
        ratio = r[name]["peak_memory_bytes"] / base
        figures.add(f"{name} / fp32 peak memory", ratio, "", f"measured by the check; needs <= {MEMORY_RATIO}")
        if ratio > MEMORY_RATIO:
            fail(
                f"the check measured {name}'s peak at {r[name]['peak_memory_bytes'] / 2**20:.0f} MiB against fp32's "
                f"{base / 2**20:.0f} MiB: {ratio:.2f}x; 16-bit activations should bring it to at most {MEMORY_RATIO}x. "
                "Let autocast keep the activations in 16 bits: do not cast them back to fp32 or keep fp32 copies."
            )
