"""Checks for the gpu-memory-profiling exercise.

The check measures the learner's memhog itself, in a driver: it builds the learner's model and
optimizer, runs training steps under the PyTorch profiler, and reads the memory timeline's
categories with gpudojo.labkit's own walk (an implementation the learner never sees). The
learner's profile_mem.py report is compared with that, on sizes chosen here.
"""

from __future__ import annotations

import json
import math
import random

from gpudojo.worker.checkkit import fail, requirement

MIB = 2**20
TOLERANCE_STATE = 0.01  # parameters, gradients, optimizer state: within 1%
TOLERANCE_ACTIVATIONS = 0.10  # activations: within 10% of the check's own measurement
MAX_ACTIVATION_SHARE = 0.5  # checkpointing keeps at most half the activations...
MAX_PEAK_SHARE = 0.8  # ...and cuts the peak by at least 20%
MAX_STATE_SHARE = 0.5  # a lighter optimizer keeps at most half of Adam's state

# The configurations the check measures: (optimizer, checkpointing).
RUNS = [("adam", False), ("adam", True), ("sgd", False), ("adafactor", False), ("sgd", True)]
REPORTED = [("adam", False), ("sgd", True)]  # the ones profile_mem.py is asked for

MEASURE_DRIVER = r"""
import json, sys
import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import MemoryProfileTimeline
from gpudojo.labkit.memory import CPU_CATEGORIES, cpu_events, live_bytes_walk
import memhog

spec = json.loads(sys.argv[1])
out = []
for optimizer_name, checkpointing in spec["runs"]:
    cfg = memhog.Config(width=spec["width"], depth=spec["depth"], batch=spec["batch"], steps=2,
                        optimizer=optimizer_name, checkpointing=checkpointing, seed=spec["seed"], device="cpu")
    model = memhog.build_model(cfg)
    model.train()
    optimizer = memhog.build_optimizer(model, cfg)
    rows, losses = [], []
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True) as prof:
        for step in range(cfg.steps):
            x, y = memhog.make_batch(cfg, step)
            rows.append(int(x.shape[0]))
            losses.append(memhog.train_step(model, optimizer, x, y))
    memory = MemoryProfileTimeline(prof._memory_profile())
    walk = live_bytes_walk(cpu_events(memory.timeline, memory.categories, "cpu"), len(CPU_CATEGORIES))
    params = {id(p): p for p in model.parameters()}.values()
    state = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    out.append({
        "optimizer": optimizer_name, "checkpointing": checkpointing,
        "optimizer_class": type(optimizer).__name__,
        "momentum": optimizer.param_groups[0].get("momentum"),
        "param_count": sum(p.numel() for p in params),
        "param_bytes": sum(p.numel() * p.element_size() for p in params),
        "state_bytes": sum(t.numel() * t.element_size() for t in state),
        "peak": walk["peak_bytes"],
        "highest": dict(zip(CPU_CATEGORIES, walk["category_peaks"])),
        "rows": rows, "losses": losses,
    })
print(json.dumps(out))
"""

_CACHE: dict[str, object] = {}


def _sizes() -> dict[str, int]:
    if "sizes" not in _CACHE:
        rng = random.Random()
        _CACHE["sizes"] = {
            "width": rng.randrange(48, 81, 8),
            "depth": rng.randint(6, 10),
            "batch": rng.randrange(384, 641, 32),
            "seed": rng.randint(1, 10**6),
        }
    return _CACHE["sizes"]  # type: ignore[return-value]


def _describe(sizes: dict[str, int]) -> str:
    return f"width {sizes['width']}, depth {sizes['depth']}, batch {sizes['batch']}"


def measured(learner) -> dict[tuple[str, bool], dict]:
    """The check's own measurements of the learner's memhog, once per check run."""
    if "measured" not in _CACHE:
        learner.require("memhog.py")
        sizes = _sizes()
        spec = dict(sizes, runs=RUNS)
        res = learner.drive(MEASURE_DRIVER, json.dumps(spec), timeout_s=90)
        if res.returncode != 0:
            _CACHE["measured"] = f"training memhog under the profiler failed (exit code {res.returncode}): {res.tail()}"
        else:
            _CACHE["measured"] = {(r["optimizer"], r["checkpointing"]): r for r in res.json()}
    got = _CACHE["measured"]
    if isinstance(got, str):
        fail(got)
    for r in got.values():  # type: ignore[union-attr]
        if r["rows"] != [_sizes()["batch"]] * len(r["rows"]):
            fail(f"make_batch() gave batches of {r['rows']} samples with Config(batch={_sizes()['batch']}).")
    return got  # type: ignore[return-value]


def _flags(optimizer: str, checkpointing: bool) -> list[str]:
    return ["--optimizer", optimizer] + (["--checkpointing"] if checkpointing else [])


def reports(learner) -> dict[tuple[str, bool], dict]:
    """The learner's profile_mem.py --json for the REPORTED configurations, once per check run."""
    if "reports" not in _CACHE:
        learner.require("profile_mem.py")
        sizes = _sizes()
        out: dict[tuple[str, bool], dict] | str = {}
        for optimizer, ckpt in REPORTED:
            argv = [
                "python",
                "profile_mem.py",
                "--json",
                "--device",
                "cpu",
                "--seed",
                str(sizes["seed"]),
                "--width",
                str(sizes["width"]),
                "--depth",
                str(sizes["depth"]),
                "--batch",
                str(sizes["batch"]),
                *_flags(optimizer, ckpt),
            ]
            res = learner.run(argv, timeout_s=90)
            cmd = "python profile_mem.py --json " + " ".join(_flags(optimizer, ckpt))
            if res.returncode != 0:
                out = f"{cmd} exited with {res.returncode}: {res.tail()}"
                break
            report = res.json()
            if not isinstance(report, dict):
                out = f"{cmd} printed {type(report).__name__} JSON; expected one object of bytes per category."
                break
            out[(optimizer, ckpt)] = report
        _CACHE["reports"] = out
    got = _CACHE["reports"]
    if isinstance(got, str):
        fail(got)
    return got  # type: ignore[return-value]


def _number(report: dict, key: str, cmd: str) -> float:
    if key not in report:
        fail(f"{cmd} reported no {key!r} (it reported: {', '.join(sorted(report)) or 'nothing'}).")
    value = report[key]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        fail(f"{cmd} reported {key} = {value!r}; expected a number of bytes.")
    return float(value)


def _off_by(got: float, want: float) -> float:
    return abs(got - want) / want if want else (0.0 if got == 0 else math.inf)


@requirement("reports-model-state")
def test_reported_parameter_gradient_optimizer_bytes(learner, figures):
    meas, reps = measured(learner), reports(learner)
    figures.add("sizes", _describe(_sizes()))
    for optimizer, ckpt in REPORTED:
        cmd = "profile_mem.py --json " + " ".join(_flags(optimizer, ckpt))
        m, r = meas[(optimizer, ckpt)], reps[(optimizer, ckpt)]
        want = {"parameters": m["param_bytes"], "gradients": m["param_bytes"], "optimizer_state": m["state_bytes"]}
        for key, expected in want.items():
            value = _number(r, key, cmd)
            figures.add(
                f"{key} ({optimizer}{', checkpointing' if ckpt else ''})",
                value / MIB,
                "MiB",
                f"expected {expected / MIB:.3f} MiB",
            )
            if _off_by(value, expected) > TOLERANCE_STATE:
                why = {
                    "parameters": f"{m['param_count']:,} fp32 parameters",
                    "gradients": "one fp32 gradient per parameter",
                    "optimizer_state": f"the tensors in {m['optimizer_class']}.state after a step",
                }[key]
                fail(
                    f"{cmd} reports {key} = {value:,.0f} bytes; {why} take {expected:,} bytes "
                    f"({_off_by(value, expected):.1%} off, allowed {TOLERANCE_STATE:.0%})."
                )


@requirement("reports-activations")
def test_reported_activations_match_profiler(learner, figures):
    meas, reps = measured(learner), reports(learner)
    for optimizer, ckpt in REPORTED:
        cmd = "profile_mem.py --json " + " ".join(_flags(optimizer, ckpt))
        want = meas[(optimizer, ckpt)]["highest"]["activation"]
        value = _number(reps[(optimizer, ckpt)], "activations", cmd)
        off = _off_by(value, want)
        figures.add(
            f"activations ({optimizer}{', checkpointing' if ckpt else ''})",
            value / MIB,
            "MiB",
            f"the check measured {want / MIB:.3f} MiB ({off:.1%} off)",
        )
        if off > TOLERANCE_ACTIVATIONS:
            fail(
                f"{cmd} reports activations = {value / MIB:.3f} MiB; the profiler's activation category peaks "
                f"at {want / MIB:.3f} MiB for the same run ({off:.1%} off, allowed {TOLERANCE_ACTIVATIONS:.0%})."
            )


@requirement("checkpointing-cuts-memory")
def test_checkpointing_cuts_activations_and_peak(learner, figures):
    meas = measured(learner)
    base, ckpt = meas[("adam", False)], meas[("adam", True)]
    act0, act1 = base["highest"]["activation"], ckpt["highest"]["activation"]
    share_act = act1 / act0 if act0 else math.inf
    share_peak = ckpt["peak"] / base["peak"] if base["peak"] else math.inf
    figures.add(
        "activations without / with checkpointing",
        f"{act0 / MIB:.2f} / {act1 / MIB:.2f}",
        "MiB",
        f"{share_act:.0%} kept; needs <= {MAX_ACTIVATION_SHARE:.0%}",
    )
    figures.add(
        "peak without / with checkpointing",
        f"{base['peak'] / MIB:.2f} / {ckpt['peak'] / MIB:.2f}",
        "MiB",
        f"{share_peak:.0%} kept; needs <= {MAX_PEAK_SHARE:.0%}",
    )
    if share_act > MAX_ACTIVATION_SHARE:
        fail(
            f"with Config(checkpointing=True) the activations peak at {act1 / MIB:.2f} MiB against "
            f"{act0 / MIB:.2f} MiB without ({share_act:.0%} kept, {_describe(_sizes())}); checkpointing every block "
            f"should keep at most {MAX_ACTIVATION_SHARE:.0%}."
        )
    if share_peak > MAX_PEAK_SHARE:
        fail(
            f"with Config(checkpointing=True) the peak is {ckpt['peak'] / MIB:.2f} MiB against "
            f"{base['peak'] / MIB:.2f} MiB without ({share_peak:.0%}); it should fall to {MAX_PEAK_SHARE:.0%} or less."
        )


SAME_LOSS_DRIVER = r"""
import json, sys
import memhog

spec = json.loads(sys.argv[1])
out = {}
for ckpt in (False, True):
    cfg = memhog.Config(width=spec["width"], depth=spec["depth"], batch=spec["batch"], steps=3,
                        checkpointing=ckpt, seed=spec["seed"], device="cpu")
    out[str(ckpt)] = memhog.train(cfg)
print(json.dumps(out))
"""


@requirement("checkpointing-same-loss")
def test_checkpointing_does_not_change_the_losses(learner, figures):
    learner.require("memhog.py")
    sizes = dict(_sizes(), batch=128)
    res = learner.drive(SAME_LOSS_DRIVER, json.dumps(sizes), timeout_s=60)
    if res.returncode != 0:
        fail(f"memhog.train() failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    plain, ckpt = got["False"], got["True"]
    if len(plain) != 3 or len(ckpt) != 3:
        fail(f"memhog.train(Config(steps=3)) returned {len(plain)} and {len(ckpt)} losses; expected 3 each.")
    worst = max(abs(a - b) / max(1.0, abs(a)) for a, b in zip(plain, ckpt, strict=True))
    figures.add("losses without checkpointing", ", ".join(f"{v:.6f}" for v in plain))
    figures.add("largest relative difference with checkpointing", worst, note="allowed 1e-6")
    if not all(math.isfinite(v) for v in plain + ckpt):
        fail(f"the losses are not finite: {plain} and {ckpt}")
    if worst > 1e-6:
        fail(
            f"three Adam steps give losses {', '.join(f'{v:.6f}' for v in plain)} without checkpointing and "
            f"{', '.join(f'{v:.6f}' for v in ckpt)} with it; recomputation must not change the math "
            "(is a checkpointed block's input detached, or its output not used?)."
        )


@requirement("lighter-optimizer-state")
def test_lighter_optimizers_keep_at_most_half_of_adams_state(learner, figures):
    meas = measured(learner)
    adam = meas[("adam", False)]
    adam_state = adam["highest"]["optimizer state"]
    figures.add("Adam optimizer state", adam_state / MIB, "MiB", f"{adam_state / adam['param_count']:.2f} B/parameter")
    for name in ("sgd", "adafactor"):
        m = meas[(name, False)]
        state = m["highest"]["optimizer state"]
        share = state / adam_state if adam_state else math.inf
        figures.add(
            f"{name} optimizer state",
            state / MIB,
            "MiB",
            f"{m['optimizer_class']}: {state / m['param_count']:.2f} B/parameter, {share:.0%} of Adam's",
        )
        if share > MAX_STATE_SHARE:
            fail(
                f"with Config(optimizer={name!r}) the optimizer state measures {state / MIB:.2f} MiB "
                f"({m['optimizer_class']}), {share:.0%} of Adam's {adam_state / MIB:.2f} MiB; it should be at most "
                f"{MAX_STATE_SHARE:.0%}."
            )
    sgd = meas[("sgd", False)]
    if sgd["optimizer_class"] != "SGD" or not sgd["momentum"]:
        fail(
            f"Config(optimizer='sgd') built {sgd['optimizer_class']} with momentum {sgd['momentum']}; "
            "the README asks for SGD with momentum 0.9."
        )
    if _off_by(sgd["state_bytes"], sgd["param_bytes"]) > TOLERANCE_STATE:
        fail(
            f"SGD with momentum keeps one buffer per parameter ({sgd['param_bytes']:,} bytes); its state holds "
            f"{sgd['state_bytes']:,} bytes."
        )


# --- on a GPU -------------------------------------------------------------------------------

GPU_DRIVER = r"""
import gc, json, sys
import torch
import memhog

spec = json.loads(sys.argv[1])
dev = torch.device("cuda", torch.cuda.current_device())


def run(optimizer_name, checkpointing, record):
    cfg = memhog.Config(width=spec["width"], depth=spec["depth"], batch=spec["batch"], steps=2,
                        optimizer=optimizer_name, checkpointing=checkpointing, seed=spec["seed"], device=str(dev))
    gc.collect()
    torch.cuda.synchronize(dev)
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    if record:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=200000)
    model = memhog.build_model(cfg)
    model.train()
    optimizer = memhog.build_optimizer(model, cfg)
    losses = [memhog.train_step(model, optimizer, *memhog.make_batch(cfg, s)) for s in range(cfg.steps)]
    torch.cuda.synchronize(dev)
    result = {
        "peak": torch.cuda.max_memory_allocated(dev) - base,
        "param_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
        "state_bytes": sum(t.numel() * t.element_size() for s in optimizer.state.values()
                           for t in s.values() if torch.is_tensor(t) and t.is_cuda),
        "losses": losses,
        "on_gpu": all(p.is_cuda for p in model.parameters()),
    }
    if record:
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        trace = snapshot["device_traces"][dev.index] if len(snapshot["device_traces"]) > dev.index else []
        live, now, top = {}, 0, 0
        for e in trace:  # replay the trace: the highest bytes live it saw
            if e["action"] == "alloc":
                live[e["addr"]] = e["size"]
                now += e["size"]
                top = max(top, now)
            elif e["action"] == "free_completed" and e["addr"] in live:
                now -= live.pop(e["addr"])
        result["snapshot_allocs"] = sum(1 for e in trace if e["action"] == "alloc")
        result["snapshot_peak"] = top
    del model, optimizer
    return result


out = {"cuda": torch.cuda.is_available()}
if out["cuda"]:
    out["adam"] = run("adam", False, True)
    out["adam_ckpt"] = run("adam", True, True)
    out["sgd"] = run("sgd", False, False)
print(json.dumps(out))
"""


@requirement("cuda-memory")
def test_on_cuda_checkpointing_and_lighter_state_cut_memory(learner, figures):
    learner.require("memhog.py")
    sizes = {"width": 512, "depth": 12, "batch": 8192, "seed": random.randint(1, 10**6)}
    res = learner.drive(GPU_DRIVER, json.dumps(sizes), timeout_s=180)
    if res.returncode != 0:
        fail(f"memhog on the GPU failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    if not got["cuda"]:
        fail("torch.cuda.is_available() is False in your program, though the check runs with a GPU.")
    adam, ckpt, sgd = got["adam"], got["adam_ckpt"], got["sgd"]
    if not adam["on_gpu"]:
        fail("Config(device='cuda:N') left the model's parameters on the CPU.")
    share_peak = ckpt["peak"] / adam["peak"]
    figures.add(
        "max_memory_allocated without / with checkpointing",
        f"{adam['peak'] / MIB:.0f} / {ckpt['peak'] / MIB:.0f}",
        "MiB",
        f"{share_peak:.0%} kept",
    )
    figures.add(
        "snapshot: allocations recorded",
        adam["snapshot_allocs"],
        note=f"replayed peak {adam['snapshot_peak'] / MIB:.0f} MiB",
    )
    figures.add(
        "optimizer state sgd / adam", f"{sgd['state_bytes'] / MIB:.0f} / {adam['state_bytes'] / MIB:.0f}", "MiB"
    )
    if adam["snapshot_allocs"] == 0:
        fail("the CUDA memory snapshot recorded no allocation during two training steps on the GPU.")
    if share_peak > MAX_PEAK_SHARE:
        fail(
            f"on the GPU ({_describe(sizes)}) checkpointing keeps the peak at {ckpt['peak'] / MIB:.0f} MiB against "
            f"{adam['peak'] / MIB:.0f} MiB ({share_peak:.0%}); it should fall to {MAX_PEAK_SHARE:.0%} or less."
        )
    if sgd["state_bytes"] > MAX_STATE_SHARE * adam["state_bytes"]:
        fail(
            f"on the GPU the SGD state holds {sgd['state_bytes'] / MIB:.0f} MiB against Adam's "
            f"{adam['state_bytes'] / MIB:.0f} MiB; at most half."
        )
    worst = max(abs(a - b) / max(1.0, abs(a)) for a, b in zip(adam["losses"], ckpt["losses"], strict=True))
    figures.add("loss difference with checkpointing (GPU)", worst, note="allowed 1e-5")
    if worst > 1e-5:
        fail(
            f"on the GPU the losses with checkpointing ({ckpt['losses']}) differ from those without ({adam['losses']})."
        )
    # The learner's own report, on the GPU.
    small = {"width": 256, "depth": 8, "batch": 2048}
    argv = ["python", "profile_mem.py", "--json", "--device", "cuda", "--seed", str(sizes["seed"])]
    for k, v in small.items():
        argv += [f"--{k}", str(v)]
    res = learner.run(argv, timeout_s=180)
    if res.returncode != 0:
        fail(f"python profile_mem.py --json --device cuda exited with {res.returncode}: {res.tail()}")
    report = res.json()
    params = 4 * (32 * 256 + 256 + small["depth"] * (8 * 256 * 256 + 5 * 256) + 256 * 10 + 10)
    for key, want in (("parameters", params), ("gradients", params), ("optimizer_state", 2 * params)):
        value = _number(report, key, "profile_mem.py --json --device cuda")
        figures.add(f"{key} (GPU report)", value / MIB, "MiB", f"expected {want / MIB:.2f} MiB")
        if _off_by(value, want) > TOLERANCE_STATE:
            fail(
                f"on the GPU profile_mem.py reports {key} = {value:,.0f} bytes; expected {want:,} "
                f"({_off_by(value, want):.1%} off, allowed {TOLERANCE_STATE:.0%})."
            )
