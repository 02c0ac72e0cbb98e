"""gpu-performance-optimization: a small classifier, its training loop made fast.

    python train.py [--samples 8192 | --steps N] [--seed 0] [--device cpu|cuda] [--json]

The task, the model's inputs and the function the model computes are the starter's; what
changed is how the work is done:

- the data: the standardise-and-clip transform runs once, vectorised over the whole
  dataset, and the dataset lives on the training device; a batch is one indexing operation
  (no DataLoader, no per-sample Python, no per-step host-to-device copy);
- the model: GELU is one fused operator (F.gelu, tanh approximation: the same function) and
  the per-feature gain is one broadcast multiply instead of a Python loop;
- the loop: no host reads while it runs. Losses and accuracies stay on the device and are
  read once, after the last step; no torch.cuda.synchronize;
- the batch: 64 instead of 8, with the learning rate raised with it (the usual rule for
  Adam scales it by sqrt(8), about 2.8x; 4x was better on the loss curves), so the loss
  after the same number of samples stays where it was;
- on a GPU, Adam's fused implementation updates all parameters in one kernel.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

N_FEATURES = 32
N_CLASSES = 10
HIDDEN = 64
TASK_SEED = 20240611  # defines the task: do not change it
CLIP = 3.0  # standardised features are clipped to [-CLIP, CLIP]

BATCH_SIZE = 64  # per-step costs (launches, the optimizer's pass, Python) now cover 8x the samples
LR = 4e-3  # the starter's 1e-3 scaled up with the batch (sqrt(8) ~ 2.8x, tuned to 4x on loss curves)
LOG_EVERY = 50  # steps between two points of the loss history (the starter's, for comparison)


# --- the task (unchanged) ----------------------------------------------------------------------


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


def make_features(n: int, seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole training set, standardised and clipped in three vectorised operations, on `device`.

    32 x n floats is a few hundred kB: it fits on any GPU many times over, so it is copied
    once instead of once per batch."""
    raw, labels = make_raw(n, seed)
    offset, scale, _, _ = task()
    x = ((raw - offset) / scale).clamp_(-CLIP, CLIP)
    return x.to(device), labels.to(device)


# --- the model (the same function as the starter's) ---------------------------------------------


class Net(nn.Module):
    """32 -> 64 -> 64 -> 10 MLP with GELU and a learned per-feature gain after the first layer."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(N_FEATURES, HIDDEN)
        self.gain = nn.Parameter(torch.ones(HIDDEN))
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # One fused GELU per layer (the tanh approximation the starter spelled out in eight
        # operators), and the gain as one broadcast multiply over the batch.
        h = F.gelu(self.fc1(x), approximate="tanh") * self.gain
        h = F.gelu(self.fc2(h), approximate="tanh")
        return self.out(h)


# --- training ------------------------------------------------------------------------------------


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
    x, y = make_features(samples, seed, dev)
    model = Net().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=LR, fused=dev.type == "cuda")

    # One shuffled pass over the data, as the starter's DataLoader made. The permutation is
    # drawn on the CPU (seeded) and moved once; indexing with it on the device needs no sync.
    order = torch.randperm(samples, generator=torch.Generator().manual_seed(seed)).to(dev)
    losses, correct = [], []
    t_loop = time.perf_counter()
    for i in range(0, samples, BATCH_SIZE):
        idx = order[i : i + BATCH_SIZE]
        xb, yb = x[idx], y[idx]
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        # Keep the step's figures on the device: detach() and a comparison queue work, they
        # read nothing back, so the host runs ahead and queues the next step at once.
        losses.append(loss.detach())
        correct.append((logits.detach().argmax(1) == yb).float().mean())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    # The one host read of the run: every step's loss and accuracy in one transfer.
    losses_h = torch.stack(losses).cpu()
    acc_h = torch.stack(correct).cpu()
    t_end = time.perf_counter()
    seconds, loop_seconds = t_end - t_start, t_end - t_loop

    # The loss history averages over the same number of samples per point as the starter's
    # (LOG_EVERY steps of 8 samples), so the two curves can be laid over each other.
    per_point = max(1, LOG_EVERY * 8 // BATCH_SIZE)
    history = [chunk.mean().item() for chunk in losses_h.split(per_point)]
    steps = len(losses)
    metrics = {
        "device": str(dev),
        "samples": samples,
        "steps": steps,
        "batch_size": BATCH_SIZE,
        "seconds": seconds,
        "samples_per_s": samples / seconds,
        "step_ms": 1e3 * loop_seconds / steps,
        "final_loss": history[-1],
        "final_accuracy": acc_h[-per_point:].mean().item(),
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
