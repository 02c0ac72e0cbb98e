"""A small training pipeline: a seeded synthetic dataset, a DataLoader, an MLP, AdamW, and
checkpoints. It trains, but naively; the TODOs mark what the exercise asks you to fix
(README.md lists the requirements and how each is checked).

The functions below are the pipeline's API, and the checks call them directly, so keep
their names and arguments; train.py is its command line:

    cfg = Config(micro_batch=32, accum=4)
    loader = build_loader(cfg)                      # batches of (x, y)
    lr = lr_at(step, cfg)                           # the schedule as a formula
    metrics = train(cfg, steps=100, ckpt_dir="ckpt", resume=True)
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

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
    """What cfg.precision means on this device: "fp32", "bf16" or "fp16"."""
    # TODO: "auto" should mean bf16 on the CPU and on GPUs that support it, fp16 on older GPUs.
    return "fp32" if cfg.precision == "auto" else cfg.precision


def autocast(cfg: Config, device: torch.device) -> contextlib.AbstractContextManager:
    """The forward pass's precision."""
    # TODO: an autocast region in bf16 or fp16 (resolve_precision), nothing for fp32.
    return contextlib.nullcontext()


def make_scaler(cfg: Config, device: torch.device) -> torch.amp.GradScaler:
    # TODO: fp16 needs an enabled GradScaler; bf16 and fp32 do not.
    return torch.amp.GradScaler(device.type, enabled=False)


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


def build_loader(cfg: Config, start_batch: int = 0) -> DataLoader:
    """Micro-batches of (x [micro_batch, features] float32, y [micro_batch] int64), beginning
    at micro-batch number ``start_batch`` of the run's stream of batches."""
    # TODO: load in cfg.num_workers worker processes (persistent ones), pin memory when the
    # batches go to a CUDA device, and make the order resumable: start_batch is ignored here,
    # and shuffle=True draws each epoch's order from the global RNG.
    return DataLoader(
        SyntheticDataset(cfg),
        batch_size=cfg.micro_batch,
        shuffle=True,
        drop_last=True,
        num_workers=0,
        pin_memory=False,
    )


def batch_stream(loader: DataLoader) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The loader's batches, epoch after epoch, forever."""
    while True:
        yield from loader


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
    """The learning rate of optimizer step ``step`` (0-based)."""
    # TODO: linear warm-up, then cosine decay to cfg.min_lr (the README states the formula).
    return cfg.lr


def build_optimizer(
    model: nn.Module, cfg: Config
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """AdamW and a scheduler that sets the learning rate of step s to lr_at(s, cfg)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    # TODO: a constant factor of 1 keeps the learning rate at cfg.lr for ever.
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    return optimizer, scheduler


# --- one optimizer step ---------------------------------------------------------------------


def forward_backward(
    model: nn.Module,
    micro_batches: list[tuple[torch.Tensor, torch.Tensor]],
    cfg: Config,
    scaler: torch.amp.GradScaler | None = None,
) -> float:
    """Add the gradient of the mean loss over all the micro-batches to each parameter's .grad
    (no zeroing, no optimizer step); return that mean loss."""
    device = next(model.parameters()).device
    losses = []
    for x, y in micro_batches:
        x, y = x.to(device), y.to(device)
        # TODO: run the forward pass under autocast(cfg, device).
        logits = model(x)
        loss = F.cross_entropy(logits.float(), y)
        # TODO: each micro-batch's loss should count 1/len(micro_batches), and go through the
        # scaler when there is one.
        loss.backward()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def optimizer_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler,
    cfg: Config,
) -> None:
    """Clip, step, advance the schedule, zero the gradients."""
    # TODO: with an fp16 GradScaler, unscale before clipping and step through the scaler.
    if cfg.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)


# --- checkpoints ----------------------------------------------------------------------------


def save_checkpoint(path: Path, step: int, model, optimizer, scheduler, scaler, cfg: Config) -> None:
    """Save what the next step depends on. ``step``: optimizer steps completed."""
    # TODO: the model alone is not enough to continue a run where it stopped.
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict()}, path)


def load_checkpoint(path: Path, model, optimizer, scheduler, scaler, device: torch.device) -> dict[str, Any]:
    """Restore a checkpoint into the given objects; returns it (with the step to start from)."""
    state = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    # TODO: restore everything else save_checkpoint should have written.
    return {"step": 0}


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
    model = build_model(cfg).to(device)
    optimizer, scheduler = build_optimizer(model, cfg)
    scaler = make_scaler(cfg, device)

    ckpt = Path(ckpt_dir) / CHECKPOINT_NAME if ckpt_dir is not None else None
    start = 0
    if resume and ckpt is not None and ckpt.is_file():
        start = load_checkpoint(ckpt, model, optimizer, scheduler, scaler, device)["step"]
    batches = batch_stream(build_loader(cfg, start_batch=start * cfg.accum))

    model.train()
    records = []
    for step in range(start, steps):
        t0 = time.perf_counter()
        # TODO: an optimizer step should take cfg.accum micro-batches.
        micro = [next(batches)]
        lr = optimizer.param_groups[0]["lr"]
        loss = forward_backward(model, micro, cfg, scaler)
        optimizer_step(model, optimizer, scheduler, scaler, cfg)
        seconds = time.perf_counter() - t0
        record = {"step": step, "loss": loss, "lr": lr, "samples_per_s": cfg.micro_batch * len(micro) / seconds}
        log(record)
        records.append(record)
        if ckpt is not None and (step + 1) % cfg.ckpt_every == 0:
            save_checkpoint(ckpt, step + 1, model, optimizer, scheduler, scaler, cfg)
    return records
