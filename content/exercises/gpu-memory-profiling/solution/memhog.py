"""memhog: a training script whose memory goes to the four usual places.

    python memhog.py                                 # Adam, every activation kept
    python memhog.py --checkpointing                 # recompute each block's insides in backward
    python memhog.py --optimizer sgd                 # SGD with momentum: one state tensor per parameter
    python memhog.py --optimizer adafactor           # factored second moments: far less state

The model is a deep residual MLP. Each block widens to four times the width and back, so a
block holds 8 * width^2 parameters but keeps 9 * width values per sample for backward: with a
large batch the activations outweigh the parameters, gradients and optimizer state together.

Prints one JSON line per step: {"step", "loss"}. profile_mem.py measures where the memory goes.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

OPTIMIZERS = ("adam", "sgd", "adafactor")


@dataclass
class Config:
    width: int = 64  # the residual stream; each block's hidden layer is 4x wider
    depth: int = 8  # residual blocks
    batch: int = 512  # samples per step
    features: int = 32  # inputs per sample
    classes: int = 10
    steps: int = 3
    lr: float = 1e-3
    optimizer: str = "adam"  # adam | sgd | adafactor
    checkpointing: bool = False  # recompute each block's activations in backward
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda | cuda:N

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {self.optimizer!r}")
        for name in ("width", "depth", "batch", "features", "classes", "steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


def pick_device(cfg: Config) -> torch.device:
    if cfg.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(cfg.device)


class Block(nn.Module):
    """x + fc2(gelu(fc1(x))). Kept for backward, per sample: x (fc1's input), fc1's output
    (GELU's input, 4 * width) and GELU's output (fc2's input, 4 * width)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(x)))


class DeepMLP(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.stem = nn.Linear(cfg.features, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg.width) for _ in range(cfg.depth))
        self.head = nn.Linear(cfg.width, cfg.classes)
        self.checkpointing = cfg.checkpointing

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        recompute = self.checkpointing and self.training and torch.is_grad_enabled()
        for block in self.blocks:
            # Checkpointed, a block keeps only its input; backward runs it again, one block at
            # a time, to rebuild the 8 * width values per sample it needs. The math is the same.
            h = checkpoint(block, h, use_reentrant=False) if recompute else block(h)
        return self.head(h)


def build_model(cfg: Config) -> nn.Module:
    """The model, seeded from cfg.seed, on the config's device."""
    torch.manual_seed(cfg.seed)
    return DeepMLP(cfg).to(pick_device(cfg))


def build_optimizer(model: nn.Module, cfg: Config) -> torch.optim.Optimizer:
    """Optimizer state per parameter, fp32: Adam 8 bytes (m and v), SGD with momentum 4 bytes
    (one buffer), Adafactor about 4 * (rows + columns) bytes per weight matrix (a row and a
    column of second-moment statistics instead of a full v, and no first moment)."""
    params = model.parameters()
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=10 * cfg.lr, momentum=0.9)
    if cfg.optimizer == "adafactor":
        return torch.optim.Adafactor(params, lr=10 * cfg.lr)
    return torch.optim.Adam(params, lr=cfg.lr)


def make_batch(cfg: Config, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch number ``step``: Gaussian inputs labelled by a fixed random linear teacher, the
    same for a given (seed, step) whatever else the run does."""
    g = torch.Generator().manual_seed(cfg.seed * 100_003 + step)
    x = torch.randn(cfg.batch, cfg.features, generator=g)
    teacher = torch.randn(cfg.features, cfg.classes, generator=torch.Generator().manual_seed(cfg.seed))
    y = (x @ teacher).argmax(dim=1)
    device = pick_device(cfg)
    return x.to(device), y.to(device)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> float:
    """One forward, backward and optimizer step; returns the loss."""
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)  # gradients live only from backward to the step
    return loss.item()


def train(cfg: Config) -> list[float]:
    """cfg.steps training steps from a fresh, seeded model; the loss of each."""
    model = build_model(cfg)
    model.train()
    optimizer = build_optimizer(model, cfg)
    return [train_step(model, optimizer, *make_batch(cfg, step)) for step in range(cfg.steps)]


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--width", type=int, default=Config.width)
    p.add_argument("--depth", type=int, default=Config.depth)
    p.add_argument("--batch", type=int, default=Config.batch)
    p.add_argument("--steps", type=int, default=Config.steps)
    p.add_argument("--optimizer", choices=OPTIMIZERS, default=Config.optimizer)
    p.add_argument("--checkpointing", action="store_true", help="torch.utils.checkpoint on every block")
    p.add_argument("--seed", type=int, default=Config.seed)
    p.add_argument("--device", default=Config.device)


def config_from(args: argparse.Namespace) -> Config:
    return Config(
        width=args.width,
        depth=args.depth,
        batch=args.batch,
        steps=args.steps,
        optimizer=args.optimizer,
        checkpointing=args.checkpointing,
        seed=args.seed,
        device=args.device,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_config_args(p)
    try:
        cfg = config_from(p.parse_args(argv))
    except ValueError as err:
        print(f"memhog.py: {err}", file=sys.stderr)
        return 2
    for step, loss in enumerate(train(cfg)):
        print(json.dumps({"step": step, "loss": loss}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
