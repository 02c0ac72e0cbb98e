"""memhog: a training script whose memory goes to the four usual places.

    python memhog.py                                 # Adam, every activation kept
    python memhog.py --checkpointing                 # TODO: accepted, does nothing yet
    python memhog.py --optimizer sgd                 # TODO: accepted, still Adam
    python memhog.py --optimizer adafactor           # TODO: accepted, still Adam

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
from torch.utils.checkpoint import checkpoint  # noqa: F401  (for the TODO in DeepMLP.forward)

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
    """x + fc2(gelu(fc1(x)))."""

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
        for block in self.blocks:
            # TODO: with self.checkpointing on (and while training), run each block through
            # torch.utils.checkpoint so that it keeps only its input for backward.
            h = block(h)
        return self.head(h)


def build_model(cfg: Config) -> nn.Module:
    """The model, seeded from cfg.seed, on the config's device."""
    torch.manual_seed(cfg.seed)
    return DeepMLP(cfg).to(pick_device(cfg))


def build_optimizer(model: nn.Module, cfg: Config) -> torch.optim.Optimizer:
    """The optimizer named by cfg.optimizer."""
    # TODO: cfg.optimizer is ignored: "sgd" should be SGD with momentum 0.9 (lr 10 * cfg.lr)
    # and "adafactor" torch.optim.Adafactor (lr 10 * cfg.lr). How many bytes of state does
    # each keep per parameter, compared with Adam?
    return torch.optim.Adam(model.parameters(), lr=cfg.lr)


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
