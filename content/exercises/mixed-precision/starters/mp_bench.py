"""mp_bench.py: train one small model in fp32, TF32, fp16 and bf16 and recommend a precision.

Starter: only fp32 runs; the other precisions and the recommendation are TODOs.

    python mp_bench.py [--json] [--steps N] [--seed S] [--device cpu|cuda]

Every precision trains a fresh copy of the same seeded MLP on the same synthetic batches for
``steps`` steps. Each row of the matrix reports the median step time, the peak memory and the
losses; ``recommend`` then picks a precision from those numbers by the README's rule. On a
CPU only fp32 and bf16 run; TF32 and fp16 are marked "not measured: needs a GPU".

The module is also an API (the checks import it):
    build_model(cfg), make_optimizer(model, cfg), batches(cfg, device)
    make_step(model, optimizer, precision, device) -> (step, scaler)
    run_precision(cfg, precision, device) -> a row;  recommend(results) -> a precision
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator

import torch
from torch import nn

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
GPU_ONLY = {"tf32", "fp16"}  # what the CPU variant does not measure
LOSS_TOLERANCE = 0.02  # the README's rule: final loss within 2% of fp32's


@dataclasses.dataclass
class Config:
    seed: int = 0
    steps: int = 30
    warmup: int = 3  # first steps left out of the step time (kernel selection, allocator)
    batch: int = 256
    features: int = 128
    hidden: int = 512
    depth: int = 3  # hidden layers
    classes: int = 10
    lr: float = 1e-3


def default_config(device: str, **overrides) -> Config:
    """Small on a CPU; on a GPU, large enough that matmuls and activations dominate."""
    base = Config(batch=8192, features=1024, hidden=4096, depth=3, steps=25) if device == "cuda" else Config()
    return dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})


# --- the model, the optimizer and the data (the same for every precision) ------------------------


def build_model(cfg: Config) -> nn.Module:
    """A seeded MLP: the same initial weights for every precision."""
    torch.manual_seed(cfg.seed)
    layers: list[nn.Module] = []
    width = cfg.features
    for _ in range(cfg.depth):
        layers += [nn.Linear(width, cfg.hidden), nn.GELU()]
        width = cfg.hidden
    layers.append(nn.Linear(width, cfg.classes))
    return nn.Sequential(*layers)


def make_optimizer(model: nn.Module, cfg: Config) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=cfg.lr)


def batches(cfg: Config, device: str) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless synthetic batches: inputs ~ N(0, 1), labels from a fixed random linear teacher."""
    g = torch.Generator().manual_seed(cfg.seed + 1)
    teacher = torch.randn(cfg.features, cfg.classes, generator=g)
    while True:
        x = torch.randn(cfg.batch, cfg.features, generator=g)
        y = (x @ teacher).argmax(dim=1)
        yield x.to(device), y.to(device)


# --- one training step in one precision -----------------------------------------------------------


def make_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, precision: str, device: str
) -> tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], torch.amp.GradScaler | None]:
    """A function step(x, y) that runs one training step (forward, loss, backward, optimizer
    step) in ``precision`` and returns the loss (detached, fp32), and the GradScaler it uses
    (fp16 only; None otherwise). The weights and the optimizer state stay fp32 throughout."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; one of {PRECISIONS}")
    if precision != "fp32":
        # TODO tf32: TF32 matmuls for this step only (restore the setting afterwards).
        # TODO fp16: autocast to float16, and a torch.amp.GradScaler around backward and step.
        # TODO bf16: autocast to bfloat16 (no scaler).
        raise NotImplementedError(f"make_step does not support {precision} yet")

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.detach().float()

    return step, None


# --- measuring one precision ----------------------------------------------------------------------


def cpu_step_peak_bytes(step, x, y) -> int:
    """Peak of torch's CPU allocations during one step, relative to its start, summed in time
    order from the profiler's memory events (each allocation +bytes, each free -bytes)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(x, y)
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    now = peak = 0
    for e in events:
        now += e.nbytes()
        peak = max(peak, now)
    return peak


def run_precision(cfg: Config, precision: str, device: str) -> dict:
    """Train a fresh model for cfg.steps steps in ``precision``; one row of the matrix."""
    if precision in GPU_ONLY and device != "cuda":
        return {"measured": False, "reason": "not measured: needs a GPU"}
    model = build_model(cfg).to(device)
    optimizer = make_optimizer(model, cfg)
    try:
        step, scaler = make_step(model, optimizer, precision, device)
    except NotImplementedError as err:
        return {"measured": False, "reason": f"missing: {err}"}
    data = batches(cfg, device)
    cuda = device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    losses, times = [], []
    for i in range(cfg.steps):
        x, y = next(data)
        if cuda:
            # CUDA events time the GPU's work; the host only queues it.
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = step(x, y)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
        else:
            t0 = time.perf_counter()
            loss = step(x, y)
            ms = (time.perf_counter() - t0) * 1e3
        losses.append(loss.item())
        if i >= cfg.warmup:
            times.append(ms)
    if cuda:
        peak = torch.cuda.max_memory_allocated()
        method = "torch.cuda.max_memory_allocated over the run (weights, optimizer state, activations)"
    else:
        peak = cpu_step_peak_bytes(step, *next(data))
        method = "torch.profiler memory events: peak of allocations during one step, from its start"
    row = {
        "measured": True,
        "step_ms": statistics.median(times),
        "peak_memory_bytes": int(peak),
        "memory_method": method,
        "final_loss": losses[-1],
        "losses": losses,
        "scaler": scaler is not None,
        "grad_scale": scaler.get_scale() if scaler is not None else None,
    }
    del model, optimizer, step, scaler, data
    if cuda:
        torch.cuda.empty_cache()
    return row


# --- the recommendation ---------------------------------------------------------------------------


def recommend(results: dict) -> str:
    """The README's rule: among the measured precisions whose final loss is within 2% of fp32's
    (fp16 only when it trained with a GradScaler), the one with the lowest median step time.
    fp32 is the fallback; a tie goes to the earlier precision in PRECISIONS."""
    # TODO: apply the rule to the rows of `results` (the README's "Recommendation" section).
    return "fp32"


# --- the command line -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fp32 / TF32 / fp16 / bf16 training benchmark")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--steps", type=int, default=None, help="training steps per precision")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available")
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    cfg = default_config(device, steps=args.steps, seed=args.seed)
    if cfg.steps <= cfg.warmup:
        parser.error(f"--steps must be more than the {cfg.warmup} warm-up steps")

    results = {p: run_precision(cfg, p, device) for p in PRECISIONS}
    report = {
        "device": device,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "config": dataclasses.asdict(cfg),
        "results": results,
        "recommendation": recommend(results),
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{device} ({report['device_name']}), {cfg.steps} steps, batch {cfg.batch}, seed {cfg.seed}")
    print(f"{'precision':10} {'step ms':>9} {'peak MiB':>9} {'final loss':>11}")
    for name, row in results.items():
        if row["measured"]:
            print(f"{name:10} {row['step_ms']:9.2f} {row['peak_memory_bytes'] / 2**20:9.1f} {row['final_loss']:11.5f}")
        else:
            print(f"{name:10} {row['reason']}")
    print(f"recommendation: {report['recommendation']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
