"""Checks for the pytorch-pipeline exercise.

Every check runs the learner's pipeline.py / train.py in a child process (learner.drive or
learner.run) on sizes, seeds and steps chosen here, and compares with references computed
here: the schedule's formula, a full-batch gradient, an uninterrupted run's losses. The resumed
run goes through train_hook.py, which records its torch.load calls and optimizer steps: a
replay from step 0 that prints only the later steps has the right losses but not those.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from gpudojo.worker.checkkit import fail, requirement

# --- the loader -----------------------------------------------------------------------------

LOADER_DRIVER = r"""
import json, sys
import torch
import pipeline

seed, micro_batch, features, samples = (int(a) for a in sys.argv[1:5])
cfg = pipeline.Config(seed=seed, micro_batch=micro_batch, features=features, samples=samples)
loader = pipeline.build_loader(cfg)
x, y = next(iter(loader))
print(json.dumps({
    "cuda": torch.cuda.is_available(),
    "num_workers": loader.num_workers,
    "pin_memory": bool(loader.pin_memory),
    "persistent_workers": bool(loader.persistent_workers),
    "x_shape": list(x.shape), "x_dtype": str(x.dtype),
    "y_shape": list(y.shape), "y_dtype": str(y.dtype),
}))
"""


@requirement("loader-workers-pinned")
def test_loader_uses_workers_and_pins_for_cuda(learner, figures):
    learner.require("pipeline.py")
    rng = random.Random()
    seed, micro_batch, features, samples = rng.randint(1, 10**6), rng.randint(9, 23), rng.randint(5, 19), 257
    res = learner.drive(LOADER_DRIVER, str(seed), str(micro_batch), str(features), str(samples), timeout_s=60)
    if res.returncode != 0:
        fail(f"build_loader(Config(...)) failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    figures.add("num_workers", got["num_workers"])
    figures.add("pin_memory", str(got["pin_memory"]), note="CUDA available" if got["cuda"] else "no CUDA here")
    figures.add("persistent_workers", str(got["persistent_workers"]))
    if got["num_workers"] < 2:
        fail(
            f"build_loader() with the default Config gives a DataLoader with num_workers={got['num_workers']}; "
            "it needs at least 2 worker processes so batches are prepared while the model trains."
        )
    if not got["persistent_workers"]:
        fail("the DataLoader restarts its workers for every iterator: set persistent_workers=True.")
    if got["pin_memory"] != got["cuda"]:
        where = "CUDA is available here" if got["cuda"] else "there is no CUDA device here"
        fail(
            f"pin_memory={got['pin_memory']} but {where}: pin memory exactly when the batches go to a "
            "CUDA device (page-locked memory is what lets the copy run asynchronously; without CUDA it only costs)."
        )
    want_x, want_y = [micro_batch, features], [micro_batch]
    if got["x_shape"] != want_x or got["y_shape"] != want_y:
        fail(
            f"with micro_batch={micro_batch} and features={features} the first batch has x {got['x_shape']} and "
            f"y {got['y_shape']}; expected x {want_x} and y {want_y}."
        )
    if got["x_dtype"] != "torch.float32" or got["y_dtype"] != "torch.int64":
        fail(f"the batch has x {got['x_dtype']} and y {got['y_dtype']}; expected torch.float32 and torch.int64.")


# --- autocast -------------------------------------------------------------------------------

AUTOCAST_DRIVER = r"""
import json, sys
import torch
import pipeline

seed = int(sys.argv[1])
seen = {}


def hook(module, inputs, output):
    if isinstance(module, torch.nn.Linear) and torch.is_tensor(output):
        seen[str(output.dtype)] = seen.get(str(output.dtype), 0) + 1


torch.nn.modules.module.register_module_forward_hook(hook)
cfg = pipeline.Config(seed=seed, samples=256, micro_batch=16, accum=2, total_steps=4, warmup_steps=1, device="cpu")
records = pipeline.train(cfg, steps=2, log=lambda r: None)
print(json.dumps({"linear_output_dtypes": seen, "losses": [r["loss"] for r in records]}))
"""


@requirement("bf16-autocast-cpu")
def test_forward_runs_under_bf16_autocast_on_cpu(learner, figures):
    learner.require("pipeline.py")
    res = learner.drive(AUTOCAST_DRIVER, str(random.randint(1, 10**6)), timeout_s=60)
    if res.returncode != 0:
        fail(f"train(Config(device='cpu'), steps=2) failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    dtypes = got["linear_output_dtypes"]
    figures.add(
        "Linear output dtypes", ", ".join(f"{k.replace('torch.', '')} x{v}" for k, v in dtypes.items()) or "none"
    )
    if not dtypes:
        fail("no nn.Linear ran during train(): the check could not see the forward pass.")
    if set(dtypes) != {"torch.bfloat16"}:
        fail(
            f"during train() on the CPU with the default precision ('auto'), the Linear layers produced "
            f"{', '.join(sorted(dtypes))} outputs; under bf16 autocast every one produces torch.bfloat16."
        )
    if not all(math.isfinite(v) for v in got["losses"]):
        fail(f"the losses under bf16 autocast are not finite: {got['losses']}")


# --- gradient accumulation ------------------------------------------------------------------

ACCUM_DRIVER = r"""
import copy, json, sys
import torch
import torch.nn.functional as F
import pipeline

seed, k, micro, features = (int(a) for a in sys.argv[1:5])
cfg = pipeline.Config(seed=seed, features=features, hidden=48, classes=7, dropout=0.0, micro_batch=micro,
                      accum=k, precision="fp32", device="cpu", samples=256, total_steps=4, warmup_steps=1)
g = torch.Generator().manual_seed(seed + 1)
x = torch.randn(k * micro, features, generator=g)
y = torch.randint(0, 7, (k * micro,), generator=g)

torch.manual_seed(seed)
model = pipeline.build_model(cfg)
reference = copy.deepcopy(model)
F.cross_entropy(reference(x), y).backward()
full_loss = F.cross_entropy(reference(x), y).item()

model.zero_grad(set_to_none=True)
chunks = list(zip(x.split(micro), y.split(micro)))
loss = pipeline.forward_backward(model, chunks, cfg)
num = den = dot = 0.0
worst = 0.0
missing = 0
for p, q in zip(model.parameters(), reference.parameters()):
    if p.grad is None:
        missing += 1
        continue
    num += (p.grad - q.grad).pow(2).sum().item()
    den += q.grad.pow(2).sum().item()
    dot += (p.grad * q.grad).sum().item()
    worst = max(worst, ((p.grad - q.grad).abs().max() / q.grad.abs().max().clamp_min(1e-12)).item())

# How many micro-batches does one optimizer step of train() run? Count the first layer's calls.
calls = []
def hook(module, inputs, output):
    if isinstance(module, torch.nn.Linear) and module.in_features == features:
        calls.append(int(inputs[0].shape[0]))
torch.nn.modules.module.register_module_forward_hook(hook)
steps = 2
pipeline.train(cfg, steps=steps, log=lambda r: None)
print(json.dumps({
    "missing": missing, "rel_err": (num / den) ** 0.5 if den else None, "worst": worst,
    "ratio": dot / den if den else None, "loss": loss, "full_loss": full_loss,
    "forward_calls": calls, "steps": steps,
}))
"""


@requirement("grad-accumulation")
def test_accumulated_gradient_equals_full_batch_gradient(learner, figures):
    learner.require("pipeline.py")
    rng = random.Random()
    seed, k, micro, features = rng.randint(1, 10**6), rng.choice([3, 4, 5]), rng.randint(6, 14), rng.randint(8, 20)
    res = learner.drive(ACCUM_DRIVER, str(seed), str(k), str(micro), str(features), timeout_s=60)
    if res.returncode != 0:
        fail(f"forward_backward() or train() failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    figures.add("micro-batches", k, note=f"{micro} samples each, fp32")
    if got["missing"]:
        fail(f"after forward_backward() {got['missing']} parameter(s) have no .grad.")
    rel = got["rel_err"]
    figures.add("relative gradient error", rel, note="vs one backward pass over the whole batch")
    figures.add("accumulated / full gradient", got["ratio"])
    if rel is None or not math.isfinite(rel) or rel > 1e-4:
        ratio = got["ratio"]
        hint = (
            f" The accumulated gradient is {ratio:.2f}x the full-batch one: each micro-batch's loss must count 1/{k}."
            if ratio is not None and abs(ratio - 1) > 0.05
            else ""
        )
        fail(
            f"after forward_backward() over {k} micro-batches of {micro} (precision fp32), the gradients differ "
            f"from the full batch's by {rel:.3g} (relative); needs <= 1e-4.{hint}"
        )
    if abs(got["loss"] - got["full_loss"]) > 1e-4 * max(1.0, abs(got["full_loss"])):
        fail(
            f"forward_backward() returned a loss of {got['loss']:.6f}; the mean loss over the whole batch is "
            f"{got['full_loss']:.6f}."
        )
    calls = got["forward_calls"]
    per_step = len(calls) / got["steps"]
    figures.add("forward passes per optimizer step", per_step, note=f"accum={k}")
    if len(calls) != k * got["steps"] or any(c != micro for c in calls):
        fail(
            f"train() with accum={k} ran {len(calls)} forward pass(es) of sizes {sorted(set(calls))} in "
            f"{got['steps']} optimizer steps; each step should run {k} micro-batches of {micro}."
        )


# --- the learning-rate schedule -------------------------------------------------------------

LR_DRIVER = r"""
import json, sys
import torch
import pipeline

seed, warmup, total = (int(a) for a in sys.argv[1:4])
lr, min_lr = float(sys.argv[4]), float(sys.argv[5])
cfg = pipeline.Config(seed=seed, lr=lr, min_lr=min_lr, warmup_steps=warmup, total_steps=total, device="cpu")
n = total + 3
formula = [pipeline.lr_at(s, cfg) for s in range(n)]
model = torch.nn.Linear(3, 2)
optimizer, scheduler = pipeline.build_optimizer(model, cfg)
used = []
for s in range(n):
    used.append(optimizer.param_groups[0]["lr"])
    optimizer.step()
    scheduler.step()
print(json.dumps({"lr_at": formula, "used": used}))
"""


def expected_lr(step: int, lr: float, min_lr: float, warmup: int, total: int) -> float:
    """The README's schedule."""
    if step < warmup:
        return lr * (step + 1) / warmup
    if step >= total:
        return min_lr
    progress = (step - warmup) / max(1, total - warmup)
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


@requirement("lr-schedule")
def test_learning_rate_follows_warmup_then_cosine(learner, figures):
    learner.require("pipeline.py")
    rng = random.Random()
    warmup, total = rng.randint(3, 9), rng.randint(25, 45)
    lr = round(rng.uniform(1e-3, 9e-3), 6)
    min_lr = round(lr * rng.uniform(0.02, 0.2), 7)
    res = learner.drive(
        LR_DRIVER, str(rng.randint(1, 10**6)), str(warmup), str(total), repr(lr), repr(min_lr), timeout_s=60
    )
    if res.returncode != 0:
        fail(f"lr_at() or build_optimizer() failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    figures.add("schedule", f"lr={lr:g}, min_lr={min_lr:g}, warmup_steps={warmup}, total_steps={total}")
    want = [expected_lr(s, lr, min_lr, warmup, total) for s in range(total + 3)]
    probe = sorted({0, warmup - 1, (warmup + total) // 2, total})
    for name, values in (("lr_at(step, cfg)", got["lr_at"]), ("the optimizer's learning rate", got["used"])):
        for s in range(len(want)):
            if not math.isclose(values[s], want[s], rel_tol=1e-6, abs_tol=1e-12):
                figures.add(f"{name} at step {s}", values[s], note=f"expected {want[s]:.6g}")
                shown = ", ".join(f"step {p}: {values[p]:.4g} (expected {want[p]:.4g})" for p in probe)
                fail(
                    f"{name} is {values[s]:.6g} at step {s}; the schedule gives {want[s]:.6g} there "
                    f"(warm-up {warmup} steps to {lr:g}, cosine to {min_lr:g} at step {total}). {shown}"
                )
    figures.add("steps compared", len(want), note="lr_at and the optimizer's lr, every step")


# --- train.py: metrics and resume -----------------------------------------------------------


# The same arithmetic in every run: one CPU thread, and oneDNN/MKL on one code path whatever the
# tensors' alignment (a tensor loaded from a checkpoint may be aligned unlike one built in place).
DETERMINISTIC_CPU = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MKL_CBWR": "COMPATIBLE"}


HOOK = Path(__file__).resolve().parent / "train_hook.py"


def run_train(learner, cfg_path, *extra, timeout_s=60, record: Path | None = None):
    """train.py's metrics lines; with `record`, train.py runs under train_hook.py, which writes
    there every torch.load and every optimizer step the run made."""
    if record is None:
        argv, env = ["python", "train.py"], DETERMINISTIC_CPU
    else:
        argv = ["python", str(HOOK), str(learner.require("train.py"))]
        env = {**DETERMINISTIC_CPU, "GPUDOJO_TRAIN_RECORD": str(record)}
    argv += ["--config", str(cfg_path), *map(str, extra)]
    res = learner.run(argv, timeout_s=timeout_s, env=env)
    if res.returncode != 0:
        fail(
            f"python train.py --config cfg.json {' '.join(map(str, extra))} exited with {res.returncode}: {res.tail()}"
        )
    records = []
    for line in res.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            fail(f"train.py printed a line that starts like JSON but does not parse: {line[:120]!r}")
    return records


@requirement("metrics-json")
def test_train_prints_one_json_metrics_line_per_step(learner, figures, tmp_path):
    learner.require("train.py")
    rng = random.Random()
    steps = rng.randint(4, 6)
    cfg = {
        "seed": rng.randint(1, 10**6),
        "samples": 300,
        "micro_batch": 16,
        "accum": 2,
        "total_steps": 10,
        "warmup_steps": 2,
        "ckpt_every": 100,
    }
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    micro = rng.randint(5, 12)
    records = run_train(learner, path, "--steps", steps, "--micro-batch", micro)
    figures.add("JSON lines", len(records), note=f"for --steps {steps}")
    if len(records) != steps:
        fail(f"train.py --steps {steps} printed {len(records)} JSON line(s); expected one per optimizer step.")
    for i, rec in enumerate(records):
        missing = [k for k in ("step", "loss", "lr", "samples_per_s") if k not in rec]
        if missing:
            fail(f"the metrics line for step {i} lacks {', '.join(missing)}: {json.dumps(rec)[:160]}")
        if rec["step"] != i:
            fail(f"the metrics lines count steps {[r.get('step') for r in records]}; expected 0 to {steps - 1}.")
        for key in ("loss", "lr", "samples_per_s"):
            v = rec[key]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                fail(f"step {i}: {key} is {v!r}; expected a finite number.")
        if rec["samples_per_s"] <= 0 or rec["lr"] <= 0:
            fail(f"step {i}: lr {rec['lr']} and samples_per_s {rec['samples_per_s']} must be positive.")
    info = "as train.py printed it: shown for information, not counted"
    figures.add("last loss", records[-1]["loss"], note=info)
    figures.add("samples/s (last step)", records[-1]["samples_per_s"], note=info)


@requirement("checkpoint-resume")
def test_resumed_run_reproduces_uninterrupted_losses(learner, figures, tmp_path, gpus):
    learner.require("train.py")
    rng = random.Random()
    total, every, stop = 12, 3, 7  # the interrupted run stops at 7; its last checkpoint is after step 6
    cfg = {
        "seed": rng.randint(1, 10**6),
        "samples": rng.randint(70, 130),  # several epochs, and checkpoints in the middle of one
        "micro_batch": rng.randint(8, 16),
        "accum": rng.choice([2, 3]),
        "total_steps": total,
        "warmup_steps": 3,
        "ckpt_every": every,
    }
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    figures.add("run", f"{total} steps; interrupted after {stop}, checkpoints every {every}")

    straight = run_train(learner, path, "--steps", total, "--ckpt-dir", tmp_path / "straight")
    if [r.get("step") for r in straight] != list(range(total)):
        fail(f"the uninterrupted run printed steps {[r.get('step') for r in straight]}; expected 0 to {total - 1}.")
    run_train(learner, path, "--steps", stop, "--ckpt-dir", tmp_path / "resumed")
    record = tmp_path / "resumed-run.jsonl"
    resumed = run_train(learner, path, "--steps", total, "--ckpt-dir", tmp_path / "resumed", "--resume", record=record)
    if not resumed:
        fail("the resumed run printed no metrics lines.")
    first = resumed[0].get("step")
    figures.add("resumed at step", first)
    if not isinstance(first, int) or first < 1 or first > stop:
        fail(
            f"the resumed run began at step {first}; after an interrupted run of {stop} steps with "
            f"ckpt_every={every} it should continue from the checkpoint (step {stop - stop % every}, or {stop} "
            "if you also save on exit), not start over."
        )
    if [r.get("step") for r in resumed] != list(range(first, total)):
        fail(f"the resumed run printed steps {[r.get('step') for r in resumed]}; expected {first} to {total - 1}.")
    # Proof of a real resume: losses that match an uninterrupted run come as well from a run
    # that trains again from step 0 with the same seed and prints only the later steps.
    events = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    loads = [e for e in events if e["event"] == "load"]
    made = sum(e["event"] == "step" for e in events)
    figures.add("torch.load calls in the resumed run", len(loads))
    figures.add("optimizer steps in the resumed run", made, note=f"{total - first} left after step {first}")
    if not loads:
        fail(
            f"the resumed run printed losses from step {first} on but never called torch.load: it did not read "
            "the checkpoint. Load the model, optimizer, scheduler, scaler and RNG state from it and continue; "
            "training again from step 0 and printing only the later steps is not a resume."
        )
    if made != total - first:
        fail(
            f"the resumed run made {made} optimizer steps; continuing from step {first} to {total} leaves "
            f"{total - first}. A resumed run trains only the steps the checkpoint does not hold, instead of "
            "training the first steps again."
        )
    # bf16 autocast rounds to 8 bits of mantissa: one value rounded the other way moves the loss by
    # ~1e-5, while a state not restored (moments, schedule, data position) moves it by 1e-3 or more.
    tol = 1e-4
    worst = 0.0
    for r in resumed:
        want = straight[r["step"]]["loss"]
        diff = abs(r["loss"] - want)
        worst = max(worst, diff)
        if diff > tol * max(1.0, abs(want)):
            figures.add("largest loss difference", worst)
            fail(
                f"after resuming, the loss at step {r['step']} is {r['loss']:.7f}; the uninterrupted run had "
                f"{want:.7f} (difference {diff:.2g}, allowed {tol:g}). Something the next steps depend on was "
                "not restored: optimizer moments, the schedule's position, RNG state or the data position."
            )
    figures.add("largest loss difference", worst, note=f"{len(resumed)} steps compared, allowed {tol:g}")


# --- on a GPU -------------------------------------------------------------------------------

GPU_DRIVER = r"""
import dataclasses, json, math, sys
import torch
import pipeline

seed = int(sys.argv[1])
out = {"cuda": torch.cuda.is_available()}
if not out["cuda"]:
    print(json.dumps(out))
    sys.exit(0)

dtypes = {}
def hook(module, inputs, output):
    if isinstance(module, torch.nn.Linear) and torch.is_tensor(output) and output.is_cuda:
        dtypes[str(output.dtype)] = dtypes.get(str(output.dtype), 0) + 1
torch.nn.modules.module.register_module_forward_hook(hook)

copies = {"h2d": 0, "pinned_non_blocking": 0}
def note(src, dst, non_blocking):
    if torch.is_tensor(dst) and src.device.type == "cpu" and dst.device.type == "cuda":
        copies["h2d"] += 1
        copies["pinned_non_blocking"] += int(bool(non_blocking) and src.is_pinned())
orig_to, orig_cuda = torch.Tensor.to, torch.Tensor.cuda
def to(self, *args, **kwargs):
    dst = orig_to(self, *args, **kwargs)
    note(self, dst, kwargs.get("non_blocking", False) or any(a is True for a in args))
    return dst
def cuda(self, *args, **kwargs):
    dst = orig_cuda(self, *args, **kwargs)
    note(self, dst, kwargs.get("non_blocking", False) or any(a is True for a in args))
    return dst
torch.Tensor.to, torch.Tensor.cuda = to, cuda

scaled = {"n": 0}
orig_scale = torch.amp.GradScaler.scale
def scale(self, outputs):
    if self.is_enabled():
        scaled["n"] += 1
    return orig_scale(self, outputs)
torch.amp.GradScaler.scale = scale

cfg = pipeline.Config(seed=seed, samples=1024, micro_batch=64, accum=2, total_steps=6, warmup_steps=1)
steps = 3
loader = pipeline.build_loader(cfg)
out["loader_pin_memory"] = bool(loader.pin_memory)
out["batch_pinned"] = bool(next(iter(loader))[0].is_pinned())
del loader

auto = pipeline.train(cfg, steps=steps, log=lambda r: None)
out["auto"] = {"dtypes": dict(dtypes), "scaled": scaled["n"], "copies": dict(copies),
               "losses": [r["loss"] for r in auto], "micro_batches": steps * cfg.accum}
dtypes.clear(); scaled["n"] = 0
fp16 = pipeline.train(dataclasses.replace(cfg, precision="fp16"), steps=steps, log=lambda r: None)
out["fp16"] = {"dtypes": dict(dtypes), "scaled": scaled["n"], "losses": [r["loss"] for r in fp16],
               "micro_batches": steps * cfg.accum}
print(json.dumps(out))
"""


@requirement("cuda-amp-pinned")
def test_cuda_mixed_precision_and_pinned_copies(learner, figures):
    learner.require("pipeline.py")
    res = learner.drive(GPU_DRIVER, str(random.randint(1, 10**6)), timeout_s=120)
    if res.returncode != 0:
        fail(f"train() on the GPU failed (exit code {res.returncode}): {res.tail()}")
    got = res.json()
    if not got["cuda"]:
        fail("torch.cuda.is_available() is False in your program, though the check runs with a GPU.")
    auto, fp16 = got["auto"], got["fp16"]
    figures.add("Linear outputs (auto)", ", ".join(sorted(auto["dtypes"])) or "none")
    figures.add(
        "pinned non_blocking copies",
        auto["copies"]["pinned_non_blocking"],
        note=f"of {auto['copies']['h2d']} host-to-device copies, {auto['micro_batches']} micro-batches",
    )
    figures.add("GradScaler.scale calls (fp16)", fp16["scaled"], note=f"{fp16['micro_batches']} micro-batches")
    if not got["loader_pin_memory"] or not got["batch_pinned"]:
        fail("on the GPU, build_loader() should pin memory: its batches are not page-locked (is_pinned() is False).")
    low = set(auto["dtypes"])
    if not low or not low <= {"torch.bfloat16", "torch.float16"}:
        fail(
            f"with precision 'auto' on the GPU the Linear layers produced {sorted(low)}; "
            "expected bf16 or fp16 autocast."
        )
    if "torch.float16" in low and auto["scaled"] == 0:
        fail("precision 'auto' chose fp16 on this GPU but no enabled GradScaler scaled the loss.")
    if set(fp16["dtypes"]) != {"torch.float16"}:
        fail(f"with precision 'fp16' the Linear layers produced {sorted(fp16['dtypes'])}; expected torch.float16.")
    if fp16["scaled"] < 3:
        fail(
            f"with precision 'fp16', an enabled GradScaler scaled the loss {fp16['scaled']} time(s) in 3 steps; "
            "fp16 gradients need loss scaling."
        )
    if not all(math.isfinite(v) for v in auto["losses"] + fp16["losses"]):
        fail(f"losses on the GPU are not finite: auto {auto['losses']}, fp16 {fp16['losses']}")
    if auto["copies"]["pinned_non_blocking"] < auto["micro_batches"]:
        fail(
            f"{auto['copies']['pinned_non_blocking']} of {auto['copies']['h2d']} host-to-device copies in "
            f"{auto['micro_batches']} micro-batches were non_blocking from pinned memory; copy each batch "
            "with .to(device, non_blocking=True)."
        )
