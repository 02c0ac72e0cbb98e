"""Hidden checks of the inference-optimization exercise.

Two things are run from the learner's folder: the command line (`python serve.py --json`),
whose report is checked for consistency, and a driver (fed on stdin, never a file the
learner's code can read) that imports serve.py and measures every step itself: it builds
the model with a hidden seed, scores each step's predictor on a test set drawn from the task
with a hidden seed (labels from the check's own copy of the task), times single requests
with its own clock, counts what torch.compile compiled (torch._dynamo counters), watches the
dtypes of the matrix multiplies the half step runs (a TorchDispatchMode), looks for quantised
Linear modules in what the int8 step returns, and feeds serve() hidden arrival traces with a
hidden max_batch and max_wait_ms while timing every batch the learner's batcher sends to the
model. On a GPU the same driver runs on CUDA with CUDA events.
"""

from __future__ import annotations

import json
import math
import random

from gpudojo.worker.checkkit import fail, requirement

_rng = random.Random()
MODEL_SEED = _rng.randrange(1, 1000)
TEST_SEED = _rng.randrange(10_000, 1 << 30)
TRACE_SEED = _rng.randrange(1, 1 << 30)

N_TEST = 1500  # hidden test samples, sent one request at a time to every step
N_LAT = 300  # requests per latency measurement (3 repeats, median)
REPEATS = 3
ACC_TOL = 0.01  # every step's accuracy within 1 percentage point of eager's
EAGER_MIN_ACC = 0.85  # the eager model itself (model.py untouched) gets about 94%
MAX_BATCH = 24  # the check's own max_batch and max_wait_ms for serve()
MAX_WAIT_MS = 3.0
# Burst: serve() against the check calling the same predictor directly on consecutive slices of
# max_batch requests (torch.cat included), timed alternately in the same run. The ratio holds on
# any machine, where a fixed speedup over eager depends on how much batching gains on that CPU.
BATCH_EFFICIENCY = 0.8  # serve()'s burst throughput >= 0.8x the direct batched calls'
BATCH_FILL = 0.9  # with every request waiting, the mean batch is >= 0.9 x max_batch
LOAD_FACTOR = 2.0  # paced trace: requests arrive at 2x the unbatched eager throughput
# A printed accuracy against the check's own on its hidden test set: two samples of 1,500
# answers of the same predictor differ by a point or two, a made-up figure by more.
REPORT_ACC_TOL = 0.03
N_PACED = 1200
PACED_P95_MS = MAX_WAIT_MS + 20.0
SPARSE_GAP_MS = 3 * MAX_WAIT_MS  # sparse trace: one request every 9 ms on average
N_SPARSE = 40
SPARSE_P95_MS = MAX_WAIT_MS + 20.0
INT8_BYTES_RATIO = 0.4  # int8: saved size <= 0.4x eager's ...
INT8_SPEED_RATIO = 0.8  # ... or p50 latency <= 0.8x eager's
COMPILE_LIMIT_S = 90.0  # the compile step's first call (compilation), on the check's run
GPU_BATCH = 16384  # one large batch for the fp16-vs-fp32 comparison on a GPU
GPU_HALF_RATIO = 0.8  # fp16 time <= 0.8x fp32 eager's on that batch

DRIVER = r'''
import functools, io, json, math, os, statistics, sys, time, traceback, warnings
cfg = json.loads(sys.argv[1])
warnings.filterwarnings("ignore")
import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

DEVICE = torch.device(cfg["device"])
CUDA = DEVICE.type == "cuda"
torch.set_num_threads(1)  # stable timings on a shared machine
now = time.perf_counter


def emit(obj):
    sys.stdout.write("\n" + json.dumps(obj) + "\n")
    sys.stdout.flush()


def tb(err):
    return "".join(traceback.format_exception(type(err), err, err.__traceback__))[-1500:]


# --- the task, as model.py defines it: the check's own copy, so its labels are its own -------
def task_data(n, seed):
    g = torch.Generator().manual_seed(20240917)
    centres = torch.randn(30, 32, generator=g)
    g = torch.Generator().manual_seed(seed)
    blob = torch.randint(0, 30, (n,), generator=g)
    x = centres[blob] + 1.25 * torch.randn(n, 32, generator=g)
    return x, blob // 3


# --- instruments -----------------------------------------------------------------------------
def dynamo():
    try:
        from torch._dynamo.utils import counters
    except Exception:
        return {"graphs": 0, "frames": 0, "breaks": 0, "reasons": []}
    return {
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "frames": int(counters["frames"].get("ok", 0)),
        "breaks": int(sum(counters["graph_break"].values())),
        "reasons": sorted(counters["graph_break"])[:3],
    }


def delta(a, b):
    return {k: b[k] - a[k] for k in ("graphs", "frames", "breaks")} | {"reasons": b["reasons"]}


class MatmulDtypes(TorchDispatchMode):
    """Records the dtype of the first input of every matrix multiply that runs."""

    def __init__(self):
        super().__init__()
        self.seen = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if "mm" in name.split("::")[-1].split(".")[0] or "linear" in name:
            for a in args:
                if isinstance(a, torch.Tensor) and a.dtype.is_floating_point:
                    key = str(a.dtype).replace("torch.", "")
                    self.seen[key] = self.seen.get(key, 0) + 1
                    break
        return func(*args, **(kwargs or {}))


def find_modules(obj, depth=0, seen=None):
    """The nn.Modules a predictor holds: itself, or what a function or object refers to."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 4:
        return []
    seen.add(id(obj))
    if isinstance(obj, nn.Module):
        return [obj]
    found = []
    refs = []
    if isinstance(obj, functools.partial):
        refs += [obj.func, *obj.args, *obj.keywords.values()]
    for attr in ("__self__", "__wrapped__", "model", "module", "_orig_mod"):
        if hasattr(obj, attr):
            refs.append(getattr(obj, attr))
    for cell in getattr(obj, "__closure__", None) or ():
        try:
            refs.append(cell.cell_contents)
        except ValueError:
            pass
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        refs += list(d.values())
    for r in refs:
        if isinstance(r, (list, tuple)):
            for item in r:
                found += find_modules(item, depth + 1, seen)
        else:
            found += find_modules(r, depth + 1, seen)
    return found


def saved_bytes(module):
    buf = io.BytesIO()
    torch.save(module.state_dict(), buf)
    return len(buf.getvalue())


def quantised(m):
    mod = type(m).__module__
    if "quantized" in mod or "quantization" in mod or hasattr(m, "_packed_params"):
        return True
    w = getattr(m, "weight", None)
    w = w() if callable(w) and not isinstance(w, torch.Tensor) else w
    if not isinstance(w, torch.Tensor):
        return False
    return w.dtype in (torch.qint8, torch.int8, torch.quint8) or "Quant" in type(w).__name__


def layer_census(modules):
    plain, quant, kinds = 0, 0, set()
    for root in modules:
        for m in root.modules():
            name = type(m).__name__
            if quantised(m) and "Linear" in name and "Packed" not in name:
                quant += 1
                kinds.add(type(m).__module__ + "." + type(m).__name__)
            elif type(m) is nn.Linear:
                plain += 1
    return plain, quant, sorted(kinds)[:3]


def sync():
    if CUDA:
        torch.cuda.synchronize()


def time_requests(fn, reqs):
    """Per-request latency (ms), one request at a time, and throughput of the run."""
    lat = []
    sync()
    t0 = now()
    for x in reqs:
        if CUDA:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(x)
            b.record()
            b.synchronize()
            lat.append(a.elapsed_time(b))
        else:
            t = now()
            fn(x)
            lat.append((now() - t) * 1e3)
    wall = now() - t0
    lat.sort()
    return {"p50_ms": lat[len(lat) // 2], "p95_ms": lat[int(0.95 * (len(lat) - 1))], "rps": len(lat) / wall}


def timing(fn, reqs, repeats):
    runs = [time_requests(fn, reqs) for _ in range(repeats)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def per_request_logits(fn, x):
    rows = [fn(x[k : k + 1]) for k in range(len(x))]
    return torch.cat([r.detach().float().reshape(1, -1).cpu() for r in rows])


# --- batching: serve() driven with hidden traces -----------------------------------------------
def run_serve(serve, fn, x, arrivals):
    calls = []

    def model_call(batch):
        t_in = now()
        out = fn(batch)
        t_out = now()
        calls.append((t_in, t_out, batch))
        return out

    reqs = [x[k : k + 1] for k in range(len(x))]
    index = {x[k].numpy().tobytes(): k for k in range(len(x))}
    t_call = now()
    outs, _lat, _sizes = serve.serve(model_call, reqs, arrivals, cfg["max_batch"], cfg["max_wait_ms"])
    wall = now() - t_call
    n = len(x)
    start, finish = [None] * n, [None] * n
    sizes = []
    for t_in, t_out, batch in calls:
        sizes.append(int(batch.shape[0]))
        for row in batch.detach().float().cpu():
            k = index.get(row.numpy().tobytes())
            if k is not None and finish[k] is None:
                start[k], finish[k] = t_in - t_call, t_out - t_call
    missing = sum(f is None for f in finish)
    early = [k for k in range(n) if start[k] is not None and start[k] < arrivals[k] - 0.0005]
    lat = sorted((finish[k] - arrivals[k]) * 1e3 for k in range(n) if finish[k] is not None)
    preds = []
    for o in outs:
        ok = isinstance(o, torch.Tensor) and o.numel() > 0
        preds.append(int(o.detach().float().reshape(-1).argmax().item()) if ok else -1)
    res = {
        "wall_s": wall,
        "rps": n / wall,
        "calls": len(calls),
        "max_size": max(sizes) if sizes else 0,
        "mean_size": (sum(sizes) / len(sizes)) if sizes else 0,
        "missing": missing,
        "early": len(early),
        "early_ms": round(1e3 * max((arrivals[k] - start[k] for k in early), default=0), 3),
        "outputs": len(outs),
    }
    if lat:
        res["p50_ms"] = lat[len(lat) // 2]
        res["p95_ms"] = lat[int(0.95 * (len(lat) - 1))]
    return res, preds


def direct_batches(fn, x, max_batch):
    """The anchor: the same predictor called on consecutive max_batch slices, no batcher."""
    reqs = [x[k : k + 1] for k in range(len(x))]
    t = now()
    for i in range(0, len(reqs), max_batch):
        fn(torch.cat(reqs[i : i + max_batch]))
    return len(reqs) / (now() - t)


def poisson(n, rate, seed):
    import random
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate)
        out.append(t)
    return out


def main():
    import serve
    out = {"device": str(DEVICE), "steps": {}}
    model = serve.build_model(cfg["model_seed"])
    out["eager_bytes"] = saved_bytes(model)
    xt, yt = task_data(cfg["n_test"], cfg["test_seed"])
    xd = xt.to(DEVICE)
    reqs = [xd[k : k + 1] for k in range(cfg["n_lat"])]
    eager_pred = None
    steps = cfg["steps"]
    with torch.inference_mode():
        for step in steps:
            if step == "batch":
                continue
            r = out["steps"][step] = {}
            try:
                d0 = dynamo()
                try:
                    fn = serve.apply(step, model, DEVICE)
                except Exception as err:
                    if type(err).__name__ == "StepSkipped":
                        r["skipped"] = str(err)
                        continue
                    raise
                t = now()
                fn(reqs[0])
                sync()
                r["first_call_s"] = now() - t
                d1 = dynamo()
                r["compiled_first_call"] = delta(d0, d1)
                if step == "half":
                    spy = MatmulDtypes()
                    with spy:
                        fn(reqs[1])
                    r["matmul_dtypes"] = spy.seen
                logits = per_request_logits(fn, xd)
                pred = logits.argmax(1)
                r["accuracy"] = (pred == yt).float().mean().item()
                if step == "eager":
                    eager_pred = pred
                if eager_pred is not None:
                    r["agree"] = (pred == eager_pred).float().mean().item()
                r["out_dtype"] = str(fn(reqs[0]).dtype).replace("torch.", "")
                for _ in range(20):
                    fn(reqs[2])
                r.update(timing(fn, reqs, cfg["repeats"]))
                r["recompiled_later"] = delta(d1, dynamo())
                mods = find_modules(fn)
                r["modules_found"] = len(mods)
                if mods:
                    plain, quant, kinds = layer_census(mods)
                    r["plain_linear"], r["quant_linear"], r["quant_kinds"] = plain, quant, kinds
                    root = max(mods, key=lambda m: sum(1 for _ in m.modules()))
                    r["bytes"] = saved_bytes(root)
                if CUDA and step in ("eager", "half"):
                    big = torch.randn(cfg["gpu_batch"], 32, device=DEVICE)
                    for _ in range(3):
                        fn(big)
                    times = []
                    for _ in range(15):
                        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        a.record()
                        fn(big)
                        b.record()
                        b.synchronize()
                        times.append(a.elapsed_time(b))
                    r["big_batch_ms"] = statistics.median(times)
                    r["param_devices"] = sorted({str(p.device) for m in mods for p in m.parameters()})
            except Exception as err:
                r["error"] = tb(err)

        if "batch" in steps:
            r = out["steps"]["batch"] = {}
            try:
                fn = serve.apply("batch", model, DEVICE)
                xb = xt  # requests on the CPU: the batching check runs on the CPU
                run_serve(serve, fn, xb[:64], [0.0] * 64)  # warm-up
                # The unbatched baseline is timed again here, alternating with the bursts, so that
                # both see the same load on the machine.
                eager_fn = serve.apply("eager", model, DEVICE)
                bursts, singles, direct = [], [], []
                preds = None
                for _ in range(cfg["repeats"]):
                    singles.append(time_requests(eager_fn, [xb[k : k + 1] for k in range(cfg["n_lat"])])["rps"])
                    direct.append(direct_batches(fn, xb, cfg["max_batch"]))
                    res, p = run_serve(serve, fn, xb, [0.0] * len(xb))
                    bursts.append(res)
                    preds = preds or p
                r["eager_rps"] = statistics.median(singles)
                r["direct_rps"] = statistics.median(direct)
                r["burst"] = min(bursts, key=lambda b: b["wall_s"])
                r["burst"]["rps"] = statistics.median(b["rps"] for b in bursts)
                r["burst"]["max_size"] = max(b["max_size"] for b in bursts)
                pred = torch.tensor(preds)
                r["accuracy"] = (pred == yt).float().mean().item()
                if eager_pred is not None:
                    r["agree"] = (pred == eager_pred).float().mean().item()
                rate = cfg["load_factor"] * r["eager_rps"]
                arr = poisson(cfg["n_paced"], rate, cfg["trace_seed"])
                r["paced"], _ = run_serve(serve, fn, xb[: cfg["n_paced"]], arr)
                r["paced"]["offered_rps"] = rate
                arr = poisson(cfg["n_sparse"], 1e3 / cfg["sparse_gap_ms"], cfg["trace_seed"] + 1)
                r["sparse"], _ = run_serve(serve, fn, xb[: cfg["n_sparse"]], arr)
            except Exception as err:
                r["error"] = tb(err)
    emit(out)


try:
    main()
except BaseException as err:
    emit({"error": tb(err)})
'''


_runs: dict[str, dict] = {}


def drive(learner, device: str) -> dict:
    """The driver's measurements of the learner's serve.py on `device`, once per check run."""
    if device in _runs:
        return _runs[device]
    learner.require("serve.py")
    learner.require("model.py")
    steps = ["eager", "compile", "half", "int8"] + (["batch"] if device == "cpu" else [])
    cfg = {
        "device": device,
        "steps": steps,
        "model_seed": MODEL_SEED,
        "test_seed": TEST_SEED,
        "trace_seed": TRACE_SEED,
        "n_test": N_TEST,
        "n_lat": N_LAT,
        "repeats": REPEATS,
        "max_batch": MAX_BATCH,
        "max_wait_ms": MAX_WAIT_MS,
        "load_factor": LOAD_FACTOR,
        "n_paced": N_PACED,
        "n_sparse": N_SPARSE,
        "sparse_gap_ms": SPARSE_GAP_MS,
        "gpu_batch": GPU_BATCH,
    }
    env = {"CUDA_VISIBLE_DEVICES": ""} if device == "cpu" else {}
    res = learner.drive(DRIVER, json.dumps(cfg), timeout_s=200, env=env)
    if res.returncode != 0:
        fail(f"importing and driving serve.py failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
    if "error" in out:
        fail(f"the check could not drive serve.py: {out['error'][-1200:]}")
    _runs[device] = out
    return out


def step_result(out: dict, step: str, device: str = "cpu") -> dict:
    r = out["steps"].get(step, {})
    if "error" in r:
        fail(f"apply({step!r}, model, {device!r}) or calling what it returned raised: {r['error'][-1200:]}")
    if "skipped" in r:
        where = "CPU" if device == "cpu" else "GPU"
        fail(
            f"apply({step!r}, model, {device!r}) raised StepSkipped ({r['skipped']}); the {step} step must run "
            f"on the {where}"
        )
    return r


def eager_baseline(out: dict, device: str = "cpu") -> dict:
    eager = step_result(out, "eager", device)
    if eager["accuracy"] < EAGER_MIN_ACC:
        fail(
            f"the eager model gets {eager['accuracy']:.1%} of the check's test set right; the model in model.py gets "
            f"about 94%, and the check needs >= {EAGER_MIN_ACC:.0%}. Keep model.py as it is (the task and the "
            "training), and let apply('eager', ...) serve the float32 model unchanged."
        )
    return eager


def _num(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _check_entry(step: str, e: dict, device: str, figures) -> None:
    """One step of serve.py --json: numbers, their order, their units, and (one request at a
    time) throughput against mean latency."""
    for key in ("p50_ms", "p95_ms", "mean_ms", "throughput_rps", "accuracy"):
        if not _num(e.get(key)) or e[key] < 0:
            fail(f"the {step} entry of serve.py --json has {key} = {e.get(key)!r}; it must be a number >= 0")
    p50, p95, mean, rps = e["p50_ms"], e["p95_ms"], e["mean_ms"], e["throughput_rps"]
    info = "as your program reported it: information, not checked (the check times every step itself)"
    figures.add(f"{step}: p50 / p95", f"{p50:.3f} / {p95:.3f}", "ms", info)
    figures.add(f"{step}: throughput", rps, "req/s", info)
    if not 0 < p50 <= p95:
        fail(
            f"the {step} step reports p50 = {p50:.4g} ms and p95 = {p95:.4g} ms; the median can be no larger than "
            "the 95th percentile, and both must be above 0"
        )
    if not 0.001 <= p50 <= 2000:
        fail(
            f"the {step} step reports p50 = {p50:.4g} ms per request; that is not a plausible time in milliseconds "
            "for this model (check the units)"
        )
    if not 0.5 <= e["accuracy"] <= 1.0:
        fail(
            f"the {step} step reports accuracy {e['accuracy']!r}; it must be the share of test samples answered "
            "right (the model gets about 0.94)"
        )
    if step == "batch":
        mb, cap = e.get("mean_batch"), e.get("max_batch")
        if not _num(mb) or not _num(cap) or not 1 <= mb <= cap:
            fail(f"the batch entry reports mean_batch = {mb!r}; it must be between 1 and its max_batch ({cap!r})")
        figures.add(
            "batch: mean batch size",
            mb,
            "requests",
            f"as your program reported it, at {e.get('offered_rps', 0):.0f} req/s offered",
        )
        return
    # One client, one request at a time: throughput is 1 / mean latency, give or take the loop
    # (on a GPU, CUDA events leave the host's share of each request out of the latency).
    busy = rps * mean / 1e3
    low = 0.5 if device == "cpu" else 0.25
    if not low <= busy <= 1.15:
        fail(
            f"the {step} step reports {rps:,.0f} requests/s and a mean latency of {mean:.4g} ms; one request at a "
            f"time, the throughput should be about 1000 / mean_ms = {1e3 / mean:,.0f} requests/s (it is {busy:.2f}x "
            "that). Count requests over the wall time of the whole run, and latencies in milliseconds."
        )


# --- requirements ------------------------------------------------------------------------------------


@requirement("report")
def test_report(learner, figures):
    learner.require("serve.py")
    res = learner.run(["python", "serve.py", "--json", "--requests", "300", "--test", "1500"], timeout_s=200)
    if res.returncode != 0:
        fail(f"python serve.py --json exited with code {res.returncode}: {res.tail()}")
    rep = res.json()
    if not isinstance(rep, dict) or not isinstance(rep.get("steps"), list):
        fail('serve.py --json must print one JSON object with a "steps" list (one entry per step)')
    device = str(rep.get("device", "cpu"))
    entries = {e.get("step"): e for e in rep["steps"] if isinstance(e, dict)}
    missing = [s for s in ("eager", "compile", "half", "int8", "batch") if s not in entries]
    if missing:
        fail(f"serve.py --json reported no entry for the step(s) {missing}; with no --steps it must report every step")
    for step, e in entries.items():
        if "skipped" in e:
            if step == "int8" and device.startswith("cuda") and str(e["skipped"]).strip():
                figures.add("int8 on the GPU", "skipped", "", str(e["skipped"])[:120])
                continue
            fail(
                f"serve.py --json reported the {step} step as skipped ({e['skipped']!r}) on {device}; only int8 on "
                "a GPU may be skipped, with its reason"
            )
        _check_entry(step, e, "cpu" if device == "cpu" else "cuda", figures)
    # Every printed accuracy against the check's own run of the same step on its hidden test set.
    own = drive(learner, "cpu" if device == "cpu" else "cuda")["steps"]
    for step, e in entries.items():
        acc = (own.get(step) or {}).get("accuracy")
        if "skipped" in e or not _num(acc):
            continue  # a step the check could not run fails its own requirement
        figures.add(
            f"{step}: accuracy (your report)", e["accuracy"], "", f"the check's own: {acc:.3f}, hidden test set"
        )
        if abs(e["accuracy"] - acc) > REPORT_ACC_TOL:
            fail(
                f"serve.py reports an accuracy of {e['accuracy']:.3f} for the {step} step, but the check ran your "
                f"{step} predictor on its own test set and got {acc:.3f}: more than {REPORT_ACC_TOL:.2f} apart. "
                "Report the accuracy your predictor measured, not a number written in."
            )
    if device == "cpu":
        mine = own.get("eager", {}).get("p50_ms")
        if _num(mine) and mine > 0:
            ratio = entries["eager"]["p50_ms"] / mine
            figures.add("eager p50, the check's clock", mine, "ms", f"serve.py reported {ratio:.2f}x this")
            if not 0.1 <= ratio <= 10:
                fail(
                    f"serve.py reports an eager p50 of {entries['eager']['p50_ms']:.4g} ms, but the check timed your "
                    f"eager model at {mine:.4g} ms per request: {ratio:.3g}x. Time each request with "
                    "time.perf_counter() and report milliseconds."
                )


@requirement("accuracy-held")
def test_accuracy_held(learner, figures):
    out = drive(learner, "cpu")
    eager = eager_baseline(out)
    figures.add("eager accuracy", eager["accuracy"], "", f"hidden test set of {N_TEST}, one request at a time")
    off = []
    for step in ("compile", "half", "int8", "batch"):
        r = step_result(out, step)
        acc = r.get("accuracy")
        if acc is None:
            fail(f"the check got no answers from the {step} step")
        figures.add(f"{step} accuracy", acc, "", f"agrees with eager on {r.get('agree', 0):.1%} of requests")
        if abs(acc - eager["accuracy"]) > ACC_TOL:
            off.append(f"{step} {acc:.1%}")
    if off:
        fail(
            f"accuracy on the check's hidden test set: eager {eager['accuracy']:.1%}, but {', '.join(off)}; every "
            f"step must stay within {ACC_TOL * 100:.0f} percentage point of eager. An optimisation that changes the "
            "answers is a bug (a batch whose rows go back to the wrong requests, a dtype that overflows, a layer "
            "left out)."
        )


@requirement("compiled")
def test_compiled(learner, figures):
    out = drive(learner, "cpu")
    eager = eager_baseline(out)
    r = step_result(out, "compile")
    first = r["compiled_first_call"]
    figures.add("graphs compiled by the first call", first["graphs"], "", "torch._dynamo counters")
    figures.add("compile (first call)", r["first_call_s"], "s", f"needs <= {COMPILE_LIMIT_S:g} s")
    figures.add("compiled p50", r["p50_ms"], "ms", f"eager: {eager['p50_ms']:.3f} ms (one request at a time)")
    if first["graphs"] < 1:
        fail(
            "calling what apply('compile', ...) returned compiled no graph (torch._dynamo's counters did not "
            "move): it still serves the eager model. Return torch.compile(model) (mode 'default')."
        )
    if first["breaks"] > 0:
        fail(
            f"the compiled model has {first['breaks']} graph break(s) ({', '.join(first['reasons'])}): part of the "
            "forward pass runs in Python between compiled pieces. The model in model.py compiles as one graph; "
            "compile the model, not a function that does more."
        )
    later = r["recompiled_later"]
    if later["graphs"] > 0:
        fail(
            f"after the first call, {later['graphs']} more graph(s) were compiled while the check sent requests of "
            "the same shape: something in the step changes between calls (a new torch.compile per call, a guard "
            "that fails)."
        )
    if r["first_call_s"] > COMPILE_LIMIT_S:
        fail(
            f"the first call of the compiled step took {r['first_call_s']:.0f} s; it must compile within "
            f"{COMPILE_LIMIT_S:g} s on this machine. Use mode 'default': 'max-autotune' benchmarks many kernels "
            "and takes minutes on a CPU."
        )


@requirement("lower-precision")
def test_lower_precision(learner, figures):
    out = drive(learner, "cpu")
    eager = eager_baseline(out)
    r = step_result(out, "half")
    seen = r.get("matmul_dtypes", {})
    figures.add("half: matrix multiplies by dtype", ", ".join(f"{k} x{v}" for k, v in seen.items()) or "none seen")
    figures.add("half p50", r["p50_ms"], "ms", f"eager: {eager['p50_ms']:.3f} ms (one request at a time)")
    figures.add("half output dtype", r.get("out_dtype"))
    if not seen:
        fail(
            "the check saw no matrix multiply run when it called your half step (it watches PyTorch's "
            "dispatcher): serve the half step in eager mode, without torch.compile"
        )
    low = seen.get("bfloat16", 0) + seen.get("float16", 0)
    if low < sum(seen.values()):
        ran = ", ".join(f"{k} ({v})" for k, v in seen.items())
        fail(
            f"your half step ran its matrix multiplies in {ran}; on the CPU every one must run in bfloat16 "
            "(torch.autocast('cpu', dtype=torch.bfloat16), or the model converted with .to(torch.bfloat16) and "
            "the input cast to match)."
        )
    if r.get("out_dtype") not in ("float32", "bfloat16", "float16"):
        fail(f"the half step returns {r.get('out_dtype')} logits; return floating-point logits")


@requirement("int8-quantised")
def test_int8(learner, figures):
    out = drive(learner, "cpu")
    eager = eager_baseline(out)
    r = step_result(out, "int8")
    if not r.get("modules_found"):
        fail(
            "the check found no nn.Module in what apply('int8', ...) returned (it looks in the object, in a "
            "function's closure and in its attributes): return the quantised model itself"
        )
    plain, quant = r.get("plain_linear", 0), r.get("quant_linear", 0)
    size_ratio = r["bytes"] / out["eager_bytes"]
    speed_ratio = r["p50_ms"] / eager["p50_ms"]
    figures.add("int8: quantised Linear layers", quant, "", ", ".join(r.get("quant_kinds", [])))
    figures.add("int8: float nn.Linear left", plain)
    figures.add(
        "int8 saved size", r["bytes"] / 1e6, "MB", f"eager: {out['eager_bytes'] / 1e6:.2f} MB ({size_ratio:.2f}x)"
    )
    figures.add("int8 p50", r["p50_ms"], "ms", f"eager: {eager['p50_ms']:.3f} ms ({speed_ratio:.2f}x)")
    if quant < 1:
        fail(
            f"what apply('int8', ...) returned holds no quantised Linear layer ({plain} float nn.Linear): it still "
            "serves float32 weights. torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8) "
            "replaces them."
        )
    if plain > 0:
        fail(f"{quant} Linear layer(s) are quantised but {plain} float nn.Linear remain; quantise every one")
    if size_ratio > INT8_BYTES_RATIO and speed_ratio > INT8_SPEED_RATIO:
        fail(
            f"the int8 model saves to {size_ratio:.2f}x eager's bytes and answers in {speed_ratio:.2f}x eager's p50; "
            f"it must be smaller (<= {INT8_BYTES_RATIO}x) or faster (<= {INT8_SPEED_RATIO}x)"
        )


def _trace_sane(name: str, run: dict, n: int) -> None:
    if run["outputs"] != n:
        fail(f"serve() returned {run['outputs']} outputs for the {n} requests of the {name} trace; one per request")
    if run["missing"]:
        fail(f"in the {name} trace, {run['missing']} request(s) never reached the model: serve() must answer each one")
    if run["max_size"] > MAX_BATCH:
        fail(
            f"serve(..., max_batch={MAX_BATCH}) sent a batch of {run['max_size']} requests to the model; never more "
            "than max_batch"
        )
    if run["early"]:
        fail(
            f"in the {name} trace, {run['early']} request(s) reached the model before they arrived (up to "
            f"{run['early_ms']:.1f} ms early): serve() must not start request k before arrivals_s[k] seconds after "
            "the call"
        )


@requirement("batching")
def test_batching(learner, figures):
    out = drive(learner, "cpu")
    eager = eager_baseline(out)
    r = step_result(out, "batch")
    burst, paced, sparse = r["burst"], r["paced"], r["sparse"]
    speedup = burst["rps"] / r["eager_rps"]
    efficiency = burst["rps"] / r["direct_rps"]
    figures.add("unbatched eager throughput", r["eager_rps"], "req/s", "one request at a time, the check's clock")
    figures.add(
        "direct batched throughput",
        r["direct_rps"],
        "req/s",
        f"the check calling the model on slices of {MAX_BATCH}, no batcher",
    )
    figures.add(
        "serve() throughput, burst",
        burst["rps"],
        "req/s",
        f"{N_TEST} requests waiting at once; {speedup:.2f}x eager, {efficiency:.0%} of direct batched",
    )
    figures.add("mean batch (burst)", burst["mean_size"], "requests", f"max_batch = {MAX_BATCH}")
    _trace_sane("burst", burst, N_TEST)
    _trace_sane("paced", paced, N_PACED)
    _trace_sane("sparse", sparse, N_SPARSE)
    if abs(r["accuracy"] - eager["accuracy"]) > ACC_TOL or r.get("agree", 1) < 0.98:
        fail(
            f"the answers serve() returned agree with eager's on {r.get('agree', 0):.1%} of the requests (accuracy "
            f"{r['accuracy']:.1%} against {eager['accuracy']:.1%}): each request must get its own row of its "
            "batch's output, in the order of the requests"
        )
    if burst["mean_size"] < BATCH_FILL * MAX_BATCH:
        fail(
            f"with {N_TEST} requests waiting at once and max_batch={MAX_BATCH}, serve() called the model with "
            f"batches of {burst['mean_size']:.1f} requests on average; needs >= {BATCH_FILL * MAX_BATCH:.1f}. Group "
            "the requests that are waiting into one tensor (up to max_batch) and call the model once per batch."
        )
    if efficiency < BATCH_EFFICIENCY:
        fail(
            f"serve() answered a burst of {N_TEST} waiting requests at {burst['rps']:,.0f} requests/s, "
            f"{efficiency:.0%} of the {r['direct_rps']:,.0f} the check gets calling the model directly on slices of "
            f"{MAX_BATCH}; needs >= {BATCH_EFFICIENCY:.0%}. Batches are the right size, so the time goes elsewhere: "
            "extra model calls, copies, or waiting while requests are already there."
        )
    figures.add(
        "p95 at 2x eager's rate",
        paced.get("p95_ms"),
        "ms",
        f"{paced['offered_rps']:,.0f} req/s offered; needs <= {PACED_P95_MS:g}",
    )
    figures.add("mean batch at that rate", paced["mean_size"], "requests")
    if paced.get("p95_ms", 1e9) > PACED_P95_MS:
        fail(
            f"with requests arriving at {paced['offered_rps']:,.0f} per second (twice what the eager model answers "
            f"one at a time), the 95th-percentile latency was {paced['p95_ms']:.1f} ms, from arrival to answer; "
            f"needs <= {PACED_P95_MS:g} ms. The mean batch was {paced['mean_size']:.1f}: batch whatever is waiting, "
            "so the server keeps up."
        )
    figures.add(
        "p95 with sparse requests",
        sparse.get("p95_ms"),
        "ms",
        f"one every {SPARSE_GAP_MS:g} ms on average; needs <= {SPARSE_P95_MS:g}",
    )
    if sparse.get("p95_ms", 1e9) > SPARSE_P95_MS:
        fail(
            f"with one request every {SPARSE_GAP_MS:g} ms on average, the 95th-percentile latency was "
            f"{sparse['p95_ms']:.1f} ms; with max_wait_ms={MAX_WAIT_MS:g} it must be <= {SPARSE_P95_MS:g} ms. A "
            "batch must start once its oldest request has waited max_wait_ms, full or not."
        )


@requirement("gpu-steps")
def test_gpu_steps(learner, figures):
    out = drive(learner, "cuda")
    eager = eager_baseline(out, "cuda")
    devs = eager.get("param_devices", [])
    if not devs or not all(d.startswith("cuda") for d in devs):
        fail(f"apply('eager', model, 'cuda') serves a model whose parameters are on {devs}; move it to the GPU")
    half = step_result(out, "half", "cuda")
    seen = half.get("matmul_dtypes", {})
    ratio = half["big_batch_ms"] / eager["big_batch_ms"]
    figures.add("fp32 eager, one batch", eager["big_batch_ms"], "ms", f"{GPU_BATCH} requests, CUDA events")
    figures.add("half, one batch", half["big_batch_ms"], "ms", f"{ratio:.2f}x eager; needs <= {GPU_HALF_RATIO}")
    figures.add("half on the GPU: matmuls by dtype", ", ".join(f"{k} x{v}" for k, v in seen.items()) or "none seen")
    if not seen or seen.get("float16", 0) < sum(seen.values()):
        fail(f"on the GPU the half step ran its matrix multiplies in {seen or 'nothing the check saw'}; use float16")
    if abs(half["accuracy"] - eager["accuracy"]) > ACC_TOL:
        fail(
            f"on the GPU the half step gets {half['accuracy']:.1%} right against eager's {eager['accuracy']:.1%}; "
            f"needs within {ACC_TOL * 100:.0f} percentage point"
        )
    if ratio > GPU_HALF_RATIO:
        fail(
            f"on the GPU, one batch of {GPU_BATCH} requests took {half['big_batch_ms']:.3f} ms in your half step "
            f"against {eager['big_batch_ms']:.3f} ms in fp32 eager: {ratio:.2f}x; needs <= {GPU_HALF_RATIO}x "
            "(float16 matrix multiplies run on the tensor cores)"
        )
    comp = step_result(out, "compile", "cuda")
    graphs = comp["compiled_first_call"]["graphs"]
    figures.add("compiled on the GPU: p50", comp["p50_ms"], "ms", f"eager: {eager['p50_ms']:.3f} ms; graphs {graphs}")
    if graphs < 1:
        fail("on the GPU, calling the compile step compiled no graph: return torch.compile(model) for CUDA too")
    if abs(comp["accuracy"] - eager["accuracy"]) > ACC_TOL:
        fail(f"on the GPU the compiled step gets {comp['accuracy']:.1%} right against eager's {eager['accuracy']:.1%}")
    int8 = out["steps"].get("int8", {})
    if "skipped" not in int8:
        did = "raised: " + int8["error"][-300:] if "error" in int8 else "returned a predictor"
        fail(
            "on the GPU, apply('int8', model, 'cuda') must raise StepSkipped with the reason (quantize_dynamic has "
            f"CPU kernels only); it {did}"
        )
    figures.add("int8 on the GPU", "skipped", "", int8["skipped"][:120])
