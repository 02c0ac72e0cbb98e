"""gpu-performance-optimization: a small classifier whose training loop is slow on purpose.

    python train.py [--samples 8192 | --steps N] [--seed 0] [--device cpu|cuda] [--json]

The task is fixed: 32 raw features, each with its own offset and scale, labelled with one of
10 classes by a fixed random "teacher" network. The model is a 3-layer MLP. Your job is to
make train() process samples much faster without changing what it learns: the same task,
the same inputs to the model, the same model function, the same number of samples.

Everything marked SLOW below is a real performance problem. Find each one with a measurement
(torch.profiler, a timer around the loader, a count of host reads) before you change it.

The checks call train() directly:  model, metrics = train(samples, seed=..., device=...).
Keep that signature, keep the model's input (standardised, clipped features of shape
(batch, 32)) and output (logits of shape (batch, 10)).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

N_FEATURES = 32
N_CLASSES = 10
HIDDEN = 64
TASK_SEED = 20240611  # defines the task: do not change it
CLIP = 3.0  # standardised features are clipped to [-CLIP, CLIP]

BATCH_SIZE = 8  # SLOW: a tiny batch pays the per-step costs for very few samples
LR = 1e-3
LOG_EVERY = 50  # steps between two lines of the loss history


# --- the task (do not change what it computes) ------------------------------------------------


def task() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The fixed task: each raw feature's offset and scale, and the teacher's two weight matrices."""
    g = torch.Generator().manual_seed(TASK_SEED)
    offset = torch.randn(N_FEATURES, generator=g) * 5
    scale = torch.rand(N_FEATURES, generator=g) * 4 + 0.5
    w1 = torch.randn(N_FEATURES, 48, generator=g) / math.sqrt(N_FEATURES)
    w2 = torch.randn(48, N_CLASSES, generator=g)
    return offset, scale, w1, w2


def make_raw(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n raw samples (float32, shape (n, 32)) and their labels (int64, shape (n,))."""
    offset, scale, w1, w2 = task()
    z = torch.randn(n, N_FEATURES, generator=torch.Generator().manual_seed(seed))
    labels = (torch.tanh(2 * z @ w1) @ w2).argmax(1)
    return z * scale + offset, labels


class RawDataset(Dataset):
    """Raw samples, standardised and clipped one at a time as they are read."""

    def __init__(self, n: int, seed: int) -> None:
        self.raw, self.labels = make_raw(n, seed)
        offset, scale, _, _ = task()
        self.mean, self.std = offset, scale

    def __len__(self) -> int:
        return len(self.labels)

    def transform(self, row: torch.Tensor) -> torch.Tensor:
        """Standardise one sample and clip it to [-CLIP, CLIP]."""
        # SLOW: a Python loop over the features of one sample, for every sample, every time
        # it is read, in the training process (the loader below has no workers): about a
        # hundred tiny tensor operations per sample.
        out = []
        for j in range(N_FEATURES):
            v = (row[j] - self.mean[j]) / self.std[j]
            out.append(v.clamp(-CLIP, CLIP))
        return torch.stack(out)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.transform(self.raw[i]), self.labels[i]


# --- the model -----------------------------------------------------------------------------------


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    # SLOW: eight separate element-wise operators, each a pass over the tensor (a kernel
    # launch each on a GPU), each with its own autograd node.
    x3 = x * x * x
    inner = x + 0.044715 * x3
    inner = inner * math.sqrt(2.0 / math.pi)
    t = torch.tanh(inner)
    return 0.5 * x * (1.0 + t)


class Net(nn.Module):
    """32 -> 64 -> 64 -> 10 MLP with GELU and a learned per-feature gain after the first layer."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(N_FEATURES, HIDDEN)
        self.gain = nn.Parameter(torch.ones(HIDDEN))
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = gelu_tanh(self.fc1(x))
        # SLOW: a Python loop over the hidden features: 64 slices, 64 multiplies and a
        # stack, forward and backward, for what is one element-wise multiply.
        h = torch.stack([h[:, j] * self.gain[j] for j in range(HIDDEN)], dim=1)
        h = gelu_tanh(self.fc2(h))
        return self.out(h)


# --- training --------------------------------------------------------------------------------------


def pick_device(device: str | None) -> torch.device:
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def train(samples: int, seed: int = 0, device: str | None = None) -> tuple[nn.Module, dict]:
    """Train a fresh model on `samples` training samples drawn with `seed`.

    Returns the trained model and a dict of metrics (see main)."""
    dev = pick_device(device)
    t_start = time.perf_counter()
    torch.manual_seed(seed)
    data = RawDataset(samples, seed)
    loader = DataLoader(  # SLOW: no workers: every sample is transformed by the training loop itself
        data,
        batch_size=BATCH_SIZE,
        shuffle=True,
        num_workers=0,
        generator=torch.Generator().manual_seed(seed),
    )
    model = Net().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=LR)

    losses, accuracies, step_times = [], [], []
    seen = 0
    for xb, yb in loader:
        t0 = time.perf_counter()
        xb, yb = xb.to(dev), yb.to(dev)
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        # SLOW: three host-device synchronisations every step. On a GPU each one makes the
        # CPU wait until the GPU has finished everything queued so far, so the CPU cannot
        # run ahead and prepare the next step while the GPU works.
        losses.append(loss.item())
        accuracies.append((logits.argmax(1) == yb).float().mean().cpu())
        if dev.type == "cuda":
            torch.cuda.synchronize()
        step_times.append(time.perf_counter() - t0)
        seen += len(yb)

    seconds = time.perf_counter() - t_start
    history = [
        sum(losses[i : i + LOG_EVERY]) / len(losses[i : i + LOG_EVERY]) for i in range(0, len(losses), LOG_EVERY)
    ]
    metrics = {
        "device": str(dev),
        "samples": seen,
        "steps": len(losses),
        "batch_size": BATCH_SIZE,
        "seconds": seconds,
        "samples_per_s": seen / seconds,
        "step_ms": 1e3 * float(np.median(step_times)),
        "final_loss": history[-1],
        "final_accuracy": float(torch.stack(accuracies[-LOG_EVERY:]).mean()),
        "loss_history": history,
    }
    return model, metrics


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Train the classifier and report speed and loss.")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--samples", type=int, default=8192, help="training samples to process")
    size.add_argument("--steps", type=int, default=None, help="optimizer steps (samples = steps x batch size)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when there is one)")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON line")
    args = p.parse_args(argv)
    samples = args.steps * BATCH_SIZE if args.steps else args.samples
    _, metrics = train(samples, seed=args.seed, device=args.device)
    if args.json:
        print(json.dumps(metrics))
    else:
        print(
            f"{metrics['samples']} samples in {metrics['steps']} steps on {metrics['device']}: "
            f"{metrics['samples_per_s']:.0f} samples/s, {metrics['step_ms']:.2f} ms per step, "
            f"final loss {metrics['final_loss']:.4f}, accuracy {metrics['final_accuracy']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
