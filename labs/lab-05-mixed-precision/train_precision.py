"""lab-05-mixed-precision: train one small model in fp32, in fp16 with GradScaler and in bf16,
and compare loss curves, step time and memory.

    python train_precision.py --precision all
    python train_precision.py --precision all --width 1024 --batch_size 8192 --steps 200   # on a GPU

Every run starts from the same weights and sees the same batches, so the curves differ only
by arithmetic. fp32 always runs, as the reference. fp16 needs a GPU here; on the CPU bf16 runs
under CPU autocast. Reports through labkit, per step: loss_<precision> and
step_time_ms_<precision> (and grad_scale in the fp16 run); per run: saved_for_backward_mb_,
peak_memory_mb_, median_step_ms_ and final_loss_<precision>. Exits 0 when every check that
applies passed.

With "Record profile" (labkit.profile), the training steps of the last precision that runs (the
one chosen; bf16 for "all" where it runs, fp32 when fp32 was chosen) are profiled, one profiler
step per optimizer step: the first WARMUP_STEPS steps are its wait and warm-up, the next three
(steps 5 to 7) are recorded into profile/rank0.trace.json; those steps' times include some of
the profiler's overhead. Record one run with --precision fp32 and one with bf16 and compare
the two profiles.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import sys
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from gpudojo import labkit

FEATURES = 64
CLASSES = 10
DTYPES = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}
# A lower precision "tracks" fp32 when its mean loss over the last fifth of the steps is within
# this fraction of fp32's (or within TRACK_ABS, for losses near zero).
TRACK_REL = 0.10
TRACK_ABS = 0.02
# Below this width the GPU spends a step mostly launching kernels, so 16-bit arithmetic has
# nothing to speed up; the speed check does not apply.
GPU_SPEED_MIN_WIDTH = 1024
WARMUP_STEPS = 5
# "Record profile": steps skipped, run with the profiler on and discarded, then recorded. The
# first two together are the WARMUP_STEPS that the median step time leaves out too.
PROFILE_WARMUP = 2
PROFILE_WAIT = WARMUP_STEPS - PROFILE_WARMUP
PROFILE_ACTIVE = 3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--precision", choices=[*DTYPES, "all"], default="all", help="besides fp32, which always runs")
    p.add_argument("--steps", type=int, default=80, help="optimizer steps per precision")
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--width", type=int, default=128, help="model width; each block's hidden layer is 4x wider")
    p.add_argument("--depth", type=int, default=3, help="residual blocks")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate")
    p.add_argument("--samples", type=int, default=8192, help="size of the synthetic dataset")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "width", "depth", "samples"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.steps < 2:
        p.error("--steps must be at least 2, to have a first and a last loss")
    return args


class Block(nn.Module):
    """Pre-norm residual MLP block: x + W2 gelu(W1 norm(x)), the feed-forward half of a transformer layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


def build_model(width: int, depth: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(FEATURES, width),
        *(Block(width) for _ in range(depth)),
        nn.LayerNorm(width),
        nn.Linear(width, CLASSES),
    )


def make_data(samples: int, seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian inputs labelled by a fixed random 'teacher' network, on the device."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, FEATURES, generator=g)
    w1 = torch.randn(FEATURES, 128, generator=g) / FEATURES**0.5
    w2 = torch.randn(128, CLASSES, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(dim=1)
    return x.to(device), y.to(device)


def autocast_for(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    dtype = DTYPES[precision]
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()


def saved_for_backward_bytes(model: nn.Module, x: torch.Tensor, y: torch.Tensor, precision: str) -> int:
    """Bytes autograd keeps from one forward pass for the backward pass, parameters excluded.

    Counted with saved-tensor hooks, once per storage, on any device: activations, and under
    autocast the 16-bit copies of the weights too.
    """
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        if s.data_ptr() not in params:
            storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast_for(x.device, precision):
        F.cross_entropy(model(x), y)  # the graph is dropped without a backward pass
    return sum(storages.values())


def peak_memory_mb(device: torch.device) -> float:
    """GPU: the most memory tensors held during this run (MiB). CPU: the process's peak resident set (MiB)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    try:
        import resource
    except ImportError:  # Windows: the working set's peak, from psutil
        import psutil

        return psutil.Process().memory_info().peak_wset / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def state_bytes(model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Bytes of parameters, gradients and optimizer state: what mixed precision leaves in fp32."""
    tensors = [*model.parameters(), *(p.grad for p in model.parameters() if p.grad is not None)]
    tensors += [t for state in optimizer.state.values() for t in state.values() if torch.is_tensor(t)]
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclass
class Result:
    precision: str
    losses: list[float] = field(default_factory=list)
    step_ms: list[float] = field(default_factory=list)
    saved_bytes: int = 0
    state_bytes: int = 0  # parameters + gradients + optimizer state
    peak_mb: float = 0.0
    skipped_steps: int = 0

    @property
    def final_loss(self) -> float:
        tail = self.losses[-max(1, len(self.losses) // 5) :]
        return sum(tail) / len(tail)

    @property
    def median_step_ms(self) -> float:
        timed = self.step_ms[WARMUP_STEPS:] or self.step_ms
        return statistics.median(timed)


def train(
    precision: str,
    args: argparse.Namespace,
    device: torch.device,
    data: tuple[torch.Tensor, ...],
    profiled: bool = False,
) -> Result:
    """Train one precision from the shared initial weights; ``profiled``: this is the run that
    "Record profile" records (labkit.profile stays off in the others)."""
    x_all, y_all = data
    labkit.seed_everything(args.seed)  # the same initial weights in every run
    model = build_model(args.width, args.depth).to(device)  # fp32 weights whatever the precision
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    # Loss scaling for fp16 only: bf16 has fp32's exponent range, so its gradients do not underflow.
    # A disabled scaler passes the loss and the step straight through.
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    result = Result(precision)
    # A batch of its own (a slice would share the whole dataset's storage and be counted with it).
    first = slice(0, args.batch_size)
    result.saved_bytes = saved_for_backward_bytes(model, x_all[first].clone(), y_all[first].clone(), precision)

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    order = torch.Generator().manual_seed(args.seed)  # the same batches in every run
    perm = torch.randperm(len(x_all), generator=order)
    cursor = 0
    # Only the profiled run records; the step is the optimizer step, as in the metrics.
    with labkit.profile(
        wait=PROFILE_WAIT, warmup=PROFILE_WARMUP, active=PROFILE_ACTIVE, enabled=None if profiled else False
    ):
        for step in range(args.steps):
            if cursor + args.batch_size > len(perm):
                perm, cursor = torch.randperm(len(x_all), generator=order), 0
            idx = perm[cursor : cursor + args.batch_size].to(device)
            cursor += args.batch_size
            x, y = x_all[idx], y_all[idx]

            scale_before = scaler.get_scale() if scaler.is_enabled() else 1.0  # read outside the timed region
            t0 = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            with autocast_for(device, precision):
                loss = F.cross_entropy(model(x), y)  # autocast runs the loss itself in fp32
            scaler.scale(loss).backward()  # outside autocast: backward ops use their forward's dtypes
            scaler.step(optimizer)  # unscales; skips the step if a gradient is inf or NaN
            scaler.update()
            value = loss.item()  # waits for the device
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            ms = (time.perf_counter() - t0) * 1e3

            values = {f"loss_{precision}": value, f"step_time_ms_{precision}": ms}
            if scaler.is_enabled():
                scale = scaler.get_scale()
                values["grad_scale"] = scale
                result.skipped_steps += scale < scale_before  # the scale halves after a skipped step
            labkit.report(step, **values)
            result.losses.append(value)
            result.step_ms.append(ms)
            labkit.profile_step()  # outside the timed region: the profiler's step costs no step time

    result.peak_mb = peak_memory_mb(device)
    result.state_bytes = state_bytes(model, optimizer)
    del model, optimizer, scaler
    gc.collect()
    if device.type == "cuda":
        # Hand the cached blocks back. The peak counter counts live tensors and is reset at the start
        # of each run, so each run's peak is its own either way.
        torch.cuda.empty_cache()
    return result


@labkit.record
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = labkit.device()
    on_gpu = device.type == "cuda"
    wanted = list(DTYPES) if args.precision == "all" else ["fp32", args.precision]
    runs, notes = [], []
    for p in dict.fromkeys(wanted):  # fp32 first, once
        if p == "fp16" and not on_gpu:
            notes.append("fp16: needs a GPU here (CPU fp16 autocast exists, but it is slow and not what you deploy)")
        elif p == "bf16" and on_gpu and torch.cuda.get_device_capability(device) < (8, 0):
            notes.append(f"bf16: {torch.cuda.get_device_name(device)} has no bf16 tensor cores (compute 8.0+)")
        else:
            runs.append(p)

    data = make_data(args.samples, args.seed, device)
    params = sum(p.numel() for p in build_model(args.width, args.depth).parameters())
    where = torch.cuda.get_device_name(device) if on_gpu else f"CPU, {torch.get_num_threads()} threads"
    print(
        f"{where}: {params:,} parameters, width {args.width}, depth {args.depth}, batch {args.batch_size}, "
        f"{args.steps} steps each for {', '.join(runs)}"
    )
    for note in notes:
        print(f"  not run: {note}")

    results: dict[str, Result] = {}
    for p in runs:
        r = results[p] = train(p, args, device, data, profiled=p == runs[-1])
        labkit.report(
            args.steps - 1,
            **{
                f"final_loss_{p}": r.final_loss,
                f"median_step_ms_{p}": r.median_step_ms,
                f"saved_for_backward_mb_{p}": r.saved_bytes / 2**20,
                f"peak_memory_mb_{p}": r.peak_mb,
            },
        )
        print(f"  {p}: loss {r.losses[0]:.3f} -> {r.losses[-1]:.3f}", flush=True)

    fp32 = results["fp32"]
    print(
        f"\n{'':6} {'final loss':>10} {'vs fp32':>8} {'step ms':>8} {'saved for bwd':>14} "
        f"{'peak memory':>12} {'skipped':>8}"
    )
    for p, r in results.items():
        gap = (r.final_loss - fp32.final_loss) / fp32.final_loss
        print(
            f"{p:6} {r.final_loss:10.4f} {gap:+8.1%} {r.median_step_ms:8.2f} {r.saved_bytes / 2**20:11.2f} MiB "
            f"{r.peak_mb:8.0f} MiB {r.skipped_steps:8d}"
        )
    if on_gpu:
        print("peak memory: torch.cuda.max_memory_allocated() during each run (the dataset included)")
    else:
        print(
            "peak memory: the process's peak resident set so far, from getrusage. It counts Python, torch and every "
            "earlier run, and never goes down: it cannot compare precisions. Compare 'saved for bwd' instead."
        )
    print()

    lower = [p for p in results if p != "fp32"]
    verdicts: list[bool | None] = []

    def verdict(check: str, ok: bool | None, detail: str) -> None:
        labkit.check(check, ok, detail)
        verdicts.append(ok)

    if not lower:
        verdict("tracks-fp32", None, "only fp32 ran: nothing to compare")
        verdict("smaller-activations", None, "only fp32 ran: nothing to compare")
    else:
        gaps = {p: abs(results[p].final_loss - fp32.final_loss) for p in lower}
        limit = max(TRACK_REL * fp32.final_loss, TRACK_ABS)
        verdict(
            "tracks-fp32",
            all(g <= limit for g in gaps.values()),
            f"mean loss over the last fifth of the steps: fp32 {fp32.final_loss:.4f}; "
            + ", ".join(f"{p} {results[p].final_loss:.4f}" for p in lower)
            + f" (allowed difference {limit:.4f})",
        )
        verdict(
            "smaller-activations",
            all(results[p].saved_bytes < fp32.saved_bytes for p in lower),
            "kept for backward per step: "
            + ", ".join(f"{p} {r.saved_bytes / 2**20:.2f} MiB" for p, r in results.items()),
        )

    if not on_gpu:
        verdict("faster-on-gpu", None, "no GPU: CPU step times do not say what tensor cores would do")
        verdict("lighter-on-gpu", None, "no GPU: the CPU has no allocator statistics to compare")
    elif not lower:
        verdict("faster-on-gpu", None, "only fp32 ran: nothing to compare")
        verdict("lighter-on-gpu", None, "only fp32 ran: nothing to compare")
    else:
        if args.width < GPU_SPEED_MIN_WIDTH:
            verdict(
                "faster-on-gpu",
                None,
                f"width {args.width} is too small: the GPU mostly waits for kernel launches; "
                f"try --width {GPU_SPEED_MIN_WIDTH} --batch_size 8192",
            )
        else:
            verdict(
                "faster-on-gpu",
                all(results[p].median_step_ms < fp32.median_step_ms for p in lower),
                "median step: " + ", ".join(f"{p} {r.median_step_ms:.2f} ms" for p, r in results.items()),
            )
        # 16-bit arithmetic shrinks activations, not the fp32 weights, gradients and Adam state,
        # and autocast adds 16-bit weight copies: the peak falls only when activations dominate.
        if fp32.saved_bytes <= fp32.state_bytes:
            verdict(
                "lighter-on-gpu",
                None,
                f"activations ({fp32.saved_bytes / 2**20:.0f} MiB) are smaller than weights, gradients and "
                f"optimizer state ({fp32.state_bytes / 2**20:.0f} MiB): raise --batch_size to see a difference",
            )
        else:
            verdict(
                "lighter-on-gpu",
                all(results[p].peak_mb < fp32.peak_mb for p in lower),
                "peak allocated: " + ", ".join(f"{p} {r.peak_mb:.0f} MiB" for p, r in results.items()),
            )
    return 1 if False in verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
