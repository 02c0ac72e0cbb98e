"""lab-06-memory: record the memory of a training run, find what fills it, force an OOM and
take memory back with gradient checkpointing.

    python train_memory.py                                   # record a timeline
    python train_memory.py --budget_mb 8                     # force an OOM (CPU: a simulated one)
    python train_memory.py --checkpointing                   # the same run, recomputing activations
    python train_memory.py --width 1024 --micro_batch 8192 --layers 24 --budget_mb 6000   # on a GPU

The model is a deep residual MLP whose blocks widen to four times the width and back, with few
parameters and wide activations: at the default micro-batch the activations kept for backward
outweigh the weights, gradients and Adam's state together. The run is always recorded
(labkit.memory_capture(force=True)): on a GPU a CUDA memory snapshot, on the CPU the PyTorch
profiler's memory timeline, with categories. --budget_mb caps memory: on a GPU the allocator
is limited to that much and the run raises torch.OutOfMemoryError; on the CPU the capture is
checked against the budget afterwards and the first allocation over it is recorded as a
*simulated* OOM (training goes on).

Before training, two one-step probes at the same size, one with checkpointing and one without,
measure what checkpointing saves (check checkpointing-lowers-peak). Reports through labkit,
per step: loss; at the end: peak_mib, estimate_mib, the probes' peaks and, on the CPU,
activation_peak_mib. Exits 0 unless the GPU ran out of memory.
"""

from __future__ import annotations

import argparse
import gc
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from gpudojo import labkit
from gpudojo.memory.analysis import analyse
from gpudojo.memory.estimator import estimate
from gpudojo.memory.models import EstimateRequest
from gpudojo.memory.snapshot import read_capture

FEATURES = 32
CLASSES = 10
MIB = 2**20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--checkpointing",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="recompute each block's activations in backward (torch.utils.checkpoint)",
    )
    p.add_argument("--micro_batch", type=int, default=512, help="samples per step")
    p.add_argument("--layers", type=int, default=12, help="residual blocks")
    p.add_argument("--width", type=int, default=64, help="model width; each block's hidden layer is 4x wider")
    p.add_argument("--budget_mb", type=float, default=0.0, help="memory cap in MiB (CPU: simulated); 0: none")
    p.add_argument("--steps", type=int, default=4, help="optimizer steps")
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="adam", help="adam, or SGD with momentum 0.9")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for name in ("micro_batch", "layers", "width", "steps"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.budget_mb < 0:
        p.error("--budget_mb must be 0 (no budget) or positive")
    return args


class Block(nn.Module):
    """x + W2 gelu(W1 x): GELU keeps its input (4 x width per sample) for backward and the
    second linear layer keeps GELU's output (4 x width more), so each block keeps eight times
    the width per sample, against 8 x width^2 parameters."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(x)))


class DeepMLP(nn.Module):
    def __init__(self, width: int, layers: int, checkpointing: bool) -> None:
        super().__init__()
        self.stem = nn.Linear(FEATURES, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(layers))
        self.head = nn.Linear(width, CLASSES)
        self.checkpointing = checkpointing

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        recompute = self.checkpointing and self.training
        for block in self.blocks:
            # Checkpointed, a block keeps only its input and runs again in backward to get the rest.
            h = checkpoint(block, h, use_reentrant=False) if recompute else block(h)
        return self.head(h)


def activation_bytes_per_sample(width: int, layers: int) -> int:
    """What one sample keeps for backward without checkpointing, fp32 (bytes): per block the
    block's input (width) and 8 x width inside it; the head keeps its input, the loss its
    log-probabilities."""
    return 4 * (layers * 9 * width + width + CLASSES)


def make_optimizer(name: str, model: nn.Module) -> torch.optim.Optimizer:
    if name == "adam":
        return torch.optim.Adam(model.parameters(), lr=1e-3)
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


class Batches:
    """Gaussian inputs labelled by a fixed random linear 'teacher': learnable, nothing downloaded."""

    def __init__(self, micro_batch: int, seed: int, device: torch.device) -> None:
        self.g = torch.Generator(device=device).manual_seed(seed)
        teacher = torch.Generator().manual_seed(seed + 1)
        self.w = torch.randn(FEATURES, CLASSES, generator=teacher).to(device)
        self.micro_batch, self.device = micro_batch, device

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(self.micro_batch, FEATURES, generator=self.g, device=self.device)
        return x, (x @ self.w).argmax(dim=1)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, batches: Batches) -> float:
    labkit.memory_phase("forward")  # on a GPU these marks group the snapshot's allocations
    x, y = batches.next()
    loss = F.cross_entropy(model(x), y)
    labkit.memory_phase("backward")
    loss.backward()
    labkit.memory_phase("optimizer")
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def probe(args: argparse.Namespace, device: torch.device, checkpointing: bool) -> dict[str, int] | str:
    """One training step of a fresh model at this size: its peak bytes (CPU: also the activation
    category's own peak), or why it could not be measured."""
    labkit.seed_everything(args.seed)
    model = DeepMLP(args.width, args.layers, checkpointing).to(device)
    optimizer = make_optimizer(args.optimizer, model)
    batches = Batches(args.micro_batch, args.seed, device)
    try:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            train_step(model, optimizer, batches)
            torch.cuda.synchronize(device)
            return {"peak": torch.cuda.max_memory_allocated(device) - before}
        with labkit.memory_capture(force=True, save=False) as mem:
            train_step(model, optimizer, batches)
        return {"peak": mem.peak_bytes, "activation": mem.category_peaks.get("activation", 0)}
    except torch.OutOfMemoryError:
        return "the probe itself ran out of GPU memory at this size"
    finally:
        del model, optimizer, batches
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()


def mib(n: float) -> str:
    return f"{n / MIB:.2f} MiB"


def explain_oom(path, budget: int, simulated: bool) -> tuple[bool, str]:
    """Read the capture back as the run view does and say what was live at the OOM and what would fix it."""
    summary = analyse(read_capture(path))[1]
    if not summary["ooms"]:
        return False, f"the capture {path.name} holds no OOM"
    oom = summary["ooms"][0]
    live = ", ".join(f"{c['category']} {mib(c['bytes'])}" for c in oom["live"]["by_category"][:4])
    fixes = "; ".join(f"{f['action']} (-{mib(f['saving_bytes'])})" for f in oom["fixes"][:3]) or "none estimated"
    what = "simulated OOM (CPU: checked after the run)" if simulated else "OOM"
    t = (oom["t_us"] - summary["t_start_us"]) / 1e6
    return True, (
        f"{what} at +{t:.3f} s: asked for {mib(oom['requested_bytes'])} with "
        f"{mib(oom.get('device_free_bytes') or 0)} left of a {mib(budget)} budget; live: {live}; fixes: {fixes}"
    )


@labkit.record
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = labkit.device()
    on_gpu = device.type == "cuda"
    if on_gpu:
        torch.cuda.set_device(device)

    # What checkpointing saves, measured at this size before anything else holds memory.
    without, with_ckpt = probe(args, device, False), probe(args, device, True)

    labkit.seed_everything(args.seed)
    model = DeepMLP(args.width, args.layers, args.checkpointing).to(device)
    optimizer = make_optimizer(args.optimizer, model)
    batches = Batches(args.micro_batch, args.seed, device)
    per_sample = activation_bytes_per_sample(args.width, args.layers)
    context = labkit.model_context(
        model,
        optimizer=optimizer,
        micro_batch=args.micro_batch,
        layers=args.layers,
        checkpointing=args.checkpointing,
        activation_bytes_per_sample=per_sample,
    )
    budget = int(args.budget_mb * MIB) if args.budget_mb > 0 else None
    print(
        f"device {device.type}; {args.layers} blocks of width {args.width} (hidden {4 * args.width}), "
        f"{context['parameters']:,} parameters; micro-batch {args.micro_batch}; {args.optimizer}; "
        f"checkpointing {'on' if args.checkpointing else 'off'}; budget "
        + (
            f"{mib(budget)}" + ("" if on_gpu else " (simulated: checked against the CPU capture)") if budget else "none"
        ),
        flush=True,
    )

    oom_error: torch.OutOfMemoryError | None = None
    step = -1
    start = time.perf_counter()
    try:
        with labkit.memory_capture(force=True, context=context, budget_bytes=budget) as mem:
            for step in range(args.steps):
                loss = train_step(model, optimizer, batches)
                labkit.report(step, loss=loss)
    except torch.OutOfMemoryError as err:  # the snapshot is already on disk, OOM included
        oom_error = err
        print(f"step {step}: torch.OutOfMemoryError: {str(err).splitlines()[0]}", flush=True)
    print(f"{step + 1} step(s) in {time.perf_counter() - start:.2f} s; capture {mem.path}", flush=True)

    # --- what the run took, against what the estimator predicts ---
    peak = mem.peak_bytes or 0
    fields = set(EstimateRequest.model_fields)
    predicted = estimate(EstimateRequest(**{k: v for k, v in context.items() if k in fields}, measured_peak_bytes=peak))
    print("estimate: " + "; ".join(f"{t.component} {mib(t.bytes)} ({t.formula})" for t in predicted.terms))
    for line in predicted.gap_explained:
        print("gap: " + line)
    values = {"peak_mib": peak / MIB, "estimate_mib": predicted.total_bytes / MIB}
    if not on_gpu:
        values["activation_peak_mib"] = mem.category_peaks.get("activation", 0) / MIB
        print("at the peak: " + ", ".join(f"{k} {mib(v)}" for k, v in mem.peak_by_category.items()))
    for name, result in (("no_checkpointing", without), ("checkpointing", with_ckpt)):
        if isinstance(result, dict):
            values[f"probe_peak_mib_{name}"] = result["peak"] / MIB
    labkit.report(max(step, 0), **values)

    where = "torch.cuda.max_memory_allocated" if on_gpu else "the profiler's memory timeline"
    labkit.check(
        "peak-measured",
        peak > 0,
        f"peak {mib(peak)} ({where}); the estimator predicts {mib(predicted.total_bytes)}, "
        f"a gap of {mib(peak - predicted.total_bytes)}",
    )

    if budget is None:
        labkit.check("oom-explained", None, "no budget: set budget_mb below the peak to force an OOM")
    elif oom_error is not None or mem.simulated_oom is not None:
        ok, detail = explain_oom(mem.path, budget, simulated=oom_error is None)
        labkit.check("oom-explained", ok, detail)
    else:
        labkit.check(
            "oom-explained",
            None,
            f"the run fits: peak {mib(peak)} within the {mib(budget)} budget, so there is no OOM to explain; "
            "lower budget_mb below the peak to force one",
        )

    if isinstance(without, str) or isinstance(with_ckpt, str):
        labkit.check("checkpointing-lowers-peak", None, without if isinstance(without, str) else with_ckpt)
    else:
        detail = (
            f"one step at this size: peak {mib(without['peak'])} without checkpointing, {mib(with_ckpt['peak'])} with"
        )
        if "activation" in without:
            detail += f"; activations {mib(without['activation'])} -> {mib(with_ckpt['activation'])}"
            detail += f" (1/sqrt({args.layers}) would be {mib(without['activation'] / math.sqrt(args.layers))})"
        labkit.check("checkpointing-lowers-peak", with_ckpt["peak"] < without["peak"], detail)

    if oom_error is not None:
        raise oom_error  # a run that ran out of GPU memory fails, as it would outside gpudojo
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
