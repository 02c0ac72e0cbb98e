"""A small, complete training pipeline: a seeded synthetic dataset, a DataLoader with worker
processes and pinned memory, mixed precision, gradient accumulation, a warm-up + cosine
learning-rate schedule, and checkpoints that resume to the same losses.

The functions below are the pipeline's API; train.py is its command line. Each piece can be
used on its own:

    cfg = Config(micro_batch=32, accum=4)
    loader = build_loader(cfg)                      # batches of (x, y)
    lr = lr_at(step, cfg)                           # the schedule as a formula
    metrics = train(cfg, steps=100, ckpt_dir="ckpt", resume=True)
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
CHECKPOINT_NAME = "last.pt"


@dataclass
class Config:
    """Everything a run depends on. Sizes are counts, learning rates are per step."""

    seed: int = 0
    samples: int = 2048  # dataset size
    features: int = 32  # inputs per sample
    hidden: int = 128  # width of the MLP's hidden layers
    classes: int = 10
    dropout: float = 0.1
    micro_batch: int = 32  # samples per forward/backward
    accum: int = 4  # micro-batches per optimizer step: effective batch = micro_batch * accum
    lr: float = 3e-3  # peak learning rate, reached at the end of the warm-up
    min_lr: float = 3e-4  # where the cosine decay ends
    warmup_steps: int = 20
    total_steps: int = 200  # length of the schedule (optimizer steps)
    weight_decay: float = 0.01
    grad_clip: float = 1.0  # max global gradient norm; 0 disables clipping
    precision: str = "auto"  # auto | fp32 | bf16 | fp16
    num_workers: int = 2
    ckpt_every: int = 50  # save a checkpoint after every this many optimizer steps
    device: str = "auto"  # auto | cpu | cuda | cuda:N

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        for name in ("samples", "features", "hidden", "classes", "micro_batch", "accum", "total_steps", "ckpt_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.warmup_steps < 0 or self.num_workers < 0:
            raise ValueError("warmup_steps and num_workers must not be negative")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Config:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)}")
        return cls(**values)


def load_config(path: str | os.PathLike[str]) -> Config:
    """A Config from a JSON file of field: value pairs (missing fields keep their defaults)."""
    return Config.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


# --- device and precision -------------------------------------------------------------------


def pick_device(cfg: Config) -> torch.device:
    if cfg.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(cfg.device)


def resolve_precision(cfg: Config, device: torch.device) -> str:
    """What "auto" means on this device: bf16 on the CPU and on GPUs with bf16 tensor cores,
    fp16 (with a GradScaler) on older GPUs."""
    if cfg.precision != "auto":
        return cfg.precision
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        return "fp16"
    return "bf16"


def autocast(cfg: Config, device: torch.device) -> contextlib.AbstractContextManager:
    """The forward pass's precision: an autocast region in bf16 or fp16, or nothing for fp32."""
    precision = resolve_precision(cfg, device)
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def make_scaler(cfg: Config, device: torch.device) -> torch.amp.GradScaler:
    """A GradScaler, enabled only for fp16: bf16 has fp32's exponent range and needs none."""
    return torch.amp.GradScaler(device.type, enabled=resolve_precision(cfg, device) == "fp16")


# --- data -----------------------------------------------------------------------------------


class SyntheticDataset(Dataset):
    """Gaussian inputs labelled by a fixed random linear teacher (plus a little label noise),
    all drawn once from a generator seeded with cfg.seed: the same data in every process."""

    def __init__(self, cfg: Config) -> None:
        g = torch.Generator().manual_seed(cfg.seed)
        self.x = torch.randn(cfg.samples, cfg.features, generator=g)
        teacher = torch.randn(cfg.features, cfg.classes, generator=g)
        noise = 0.5 * torch.randn(cfg.samples, cfg.classes, generator=g)
        self.y = (self.x @ teacher + noise).argmax(dim=1)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i], self.y[i]


class StreamSampler(Sampler[int]):
    """An endless stream of sample indices, epoch after epoch, each epoch a permutation drawn
    from (seed, epoch) alone. Starting at sample position ``start`` gives exactly the stream a
    run that began at 0 would have reached there: this is what makes the data position
    resumable, with any number of workers."""

    def __init__(self, size: int, seed: int, start: int = 0) -> None:
        self.size, self.seed, self.start = size, seed, start

    def order(self, epoch: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        return torch.randperm(self.size, generator=g)

    def __iter__(self) -> Iterator[int]:
        epoch, offset = divmod(self.start, self.size)
        while True:
            yield from self.order(epoch)[offset:].tolist()
            epoch, offset = epoch + 1, 0


def build_loader(cfg: Config, start_batch: int = 0) -> DataLoader:
    """Micro-batches of (x [micro_batch, features] float32, y [micro_batch] int64), endlessly,
    beginning at micro-batch number ``start_batch`` of the stream."""
    return DataLoader(
        SyntheticDataset(cfg),
        batch_size=cfg.micro_batch,
        sampler=StreamSampler(cfg.samples, cfg.seed, start_batch * cfg.micro_batch),
        num_workers=cfg.num_workers,  # batches are built in other processes, ahead of the loop
        # Page-locked batches let the host-to-device copy run by DMA, asynchronously; on a
        # machine without CUDA there is nothing to pin for.
        pin_memory=pick_device(cfg).type == "cuda",
        # Workers survive between iterators (epochs) instead of being started again each time.
        persistent_workers=cfg.num_workers > 0,
        prefetch_factor=4 if cfg.num_workers > 0 else None,
        # Its own generator: creating the iterator would otherwise draw a worker seed from the
        # global RNG, shifting dropout's random numbers between a fresh and a resumed run.
        generator=torch.Generator().manual_seed(cfg.seed),
    )


# --- model, optimizer, schedule -------------------------------------------------------------


def build_model(cfg: Config) -> nn.Module:
    return nn.Sequential(
        nn.Linear(cfg.features, cfg.hidden),
        nn.GELU(),
        nn.Dropout(cfg.dropout),
        nn.Linear(cfg.hidden, cfg.hidden),
        nn.GELU(),
        nn.Dropout(cfg.dropout),
        nn.Linear(cfg.hidden, cfg.classes),
    )


def lr_at(step: int, cfg: Config) -> float:
    """The learning rate of optimizer step ``step`` (0-based): linear warm-up from
    lr/warmup_steps to lr, then cosine decay from lr to min_lr at total_steps, then min_lr."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if step >= cfg.total_steps:
        return cfg.min_lr
    progress = (step - cfg.warmup_steps) / max(1, cfg.total_steps - cfg.warmup_steps)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + math.cos(math.pi * progress))


def build_optimizer(
    model: nn.Module, cfg: Config
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """AdamW and a scheduler that sets the learning rate of step s to lr_at(s, cfg)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    # LambdaLR multiplies the base lr (cfg.lr) by the factor of its step count, which starts
    # at 0 and advances with each scheduler.step() after an optimizer step.
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_at(s, cfg) / cfg.lr)
    return optimizer, scheduler


# --- one optimizer step ---------------------------------------------------------------------


def forward_backward(
    model: nn.Module,
    micro_batches: list[tuple[torch.Tensor, torch.Tensor]],
    cfg: Config,
    scaler: torch.amp.GradScaler | None = None,
) -> float:
    """Add the gradient of the mean loss over all the micro-batches to each parameter's .grad
    (no zeroing, no optimizer step); return that mean loss. With k equal micro-batches the
    result equals one backward pass over the whole batch."""
    device = next(model.parameters()).device
    k = len(micro_batches)
    total = torch.zeros((), device=device)
    for x, y in micro_batches:
        # From pinned memory these copies are queued and return at once (no effect on the CPU).
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        with autocast(cfg, device):
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y)  # the loss in fp32, outside autocast
        # Each micro-batch's mean loss counts 1/k, so the summed gradients are the batch mean's.
        scaled = loss / k
        (scaler.scale(scaled) if scaler is not None else scaled).backward()
        total += loss.detach()  # no .item() here: that would wait for the GPU every micro-batch
    return (total / k).item()


def optimizer_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler,
    cfg: Config,
) -> None:
    """Clip, step (skipped by the scaler on an fp16 overflow), advance the schedule, zero."""
    if cfg.grad_clip > 0:
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)


# --- checkpoints ----------------------------------------------------------------------------


def save_checkpoint(path: Path, step: int, model, optimizer, scheduler, scaler, cfg: Config) -> None:
    """Everything the next step depends on, written atomically (a crash mid-write leaves the
    previous checkpoint intact). ``step``: optimizer steps completed."""
    state = {
        "step": step,
        "next_batch": step * cfg.accum,  # the data position: micro-batches consumed so far
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),
        "rng": {
            "torch": torch.get_rng_state(),  # dropout masks on the CPU
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "python": random.getstate(),
        },
        "config": asdict(cfg),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path, model, optimizer, scheduler, scaler, device: torch.device) -> dict[str, Any]:
    """Restore a checkpoint into the given objects; returns it (step and next_batch)."""
    state = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    scaler.load_state_dict(state["scaler"])
    rng = state["rng"]
    torch.set_rng_state(rng["torch"].cpu())
    if rng["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])
    random.setstate(rng["python"])
    return state


# --- the loop -------------------------------------------------------------------------------


def print_json(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def train(
    cfg: Config,
    steps: int | None = None,
    ckpt_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    log: Callable[[dict[str, Any]], None] = print_json,
) -> list[dict[str, Any]]:
    """Train until ``steps`` optimizer steps are done (default cfg.total_steps), saving a
    checkpoint in ``ckpt_dir`` every cfg.ckpt_every steps; with ``resume``, continue from the
    checkpoint there if there is one. Returns (and logs) one record per step taken:
    {"step", "loss", "lr", "samples_per_s"}."""
    steps = cfg.total_steps if steps is None else steps
    device = pick_device(cfg)
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    model = build_model(cfg).to(device)  # before the optimizer, so its state lands on device
    optimizer, scheduler = build_optimizer(model, cfg)
    scaler = make_scaler(cfg, device)

    ckpt = Path(ckpt_dir) / CHECKPOINT_NAME if ckpt_dir is not None else None
    start = 0
    if resume and ckpt is not None and ckpt.is_file():
        # Restored after the model is built (building it draws from the RNG) and before any
        # batch is drawn, so the run continues exactly where the checkpoint left it.
        start = load_checkpoint(ckpt, model, optimizer, scheduler, scaler, device)["step"]
    batches = iter(build_loader(cfg, start_batch=start * cfg.accum))

    model.train()
    records = []
    for step in range(start, steps):
        t0 = time.perf_counter()
        micro = [next(batches) for _ in range(cfg.accum)]
        lr = optimizer.param_groups[0]["lr"]
        loss = forward_backward(model, micro, cfg, scaler)  # .item() inside: the step is done
        optimizer_step(model, optimizer, scheduler, scaler, cfg)
        seconds = time.perf_counter() - t0
        record = {
            "step": step,
            "loss": loss,
            "lr": lr,
            "samples_per_s": cfg.micro_batch * cfg.accum / seconds,
        }
        log(record)
        records.append(record)
        if ckpt is not None and (step + 1) % cfg.ckpt_every == 0:
            save_checkpoint(ckpt, step + 1, model, optimizer, scheduler, scaler, cfg)
    return records
