"""lab-03-ddp: train a small MLP with DistributedDataParallel on a synthetic dataset.

    torchrun --nproc-per-node 2 train_ddp.py --epochs 3 --batch_size 64 --lr 0.05
    python train_ddp.py --epochs 3          # one process: the baseline to compare with

Every rank builds the same dataset and the same initial weights from the seed. With
--use_sampler (the default) a DistributedSampler gives each rank its own share of every epoch;
--no-use_sampler leaves the sampler out, as a script written for one process does, and every
rank then reads the whole dataset. --crash_rank R makes rank R raise at step 3, so that you can
practise finding the root cause of a failed distributed job.

Reports through labkit, per step: loss, samples_per_s and mfu; per epoch: epoch_time_s,
samples_seen and epoch_loss (averaged over all ranks); at the end: param_checksum, the sum of
all parameters, which must be the same on every rank. Exits 0 when training finished.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from gpudojo import labkit

FEATURES = 32
CLASSES = 8
CRASH_STEP = 3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3, help="passes over the dataset")
    p.add_argument("--batch_size", type=int, default=64, help="samples per step on each rank")
    p.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (momentum 0.9)")
    p.add_argument(
        "--use_sampler",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="shard each epoch across ranks with DistributedSampler",
    )
    p.add_argument("--crash_rank", type=int, default=-1, help="this rank raises at step 3; -1: none")
    p.add_argument("--samples", type=int, default=4096, help="size of the synthetic dataset")
    p.add_argument("--hidden", type=int, default=128, help="width of the MLP's two hidden layers")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for name in ("epochs", "batch_size", "samples", "hidden"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.lr <= 0:
        p.error("--lr must be positive")
    return args


def make_dataset(samples: int, seed: int) -> TensorDataset:
    """Gaussian inputs labelled by a fixed random 'teacher' network: learnable, nothing downloaded."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, FEATURES, generator=g)
    w1 = torch.randn(FEATURES, 64, generator=g) / FEATURES**0.5
    w2 = torch.randn(64, CLASSES, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(dim=1)
    return TensorDataset(x, y)


def make_model(hidden: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(FEATURES, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, CLASSES),
    )


def alone_as_one_rank() -> None:
    """Let `python train_ddp.py` run as a job of one process: torchrun would set these."""
    if "WORLD_SIZE" in os.environ:
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))


@labkit.record
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    alone_as_one_rank()
    device = labkit.device()
    if device.type == "cuda":
        torch.cuda.set_device(device)  # before the process group: NCCL binds each rank to its GPU
    else:
        # One compute thread per rank, as each GPU rank has one GPU; N ranks with a thread per
        # core each would fight over the same cores.
        torch.set_num_threads(1)
    dist.init_process_group(backend=labkit.backend())
    rank, world = dist.get_rank(), dist.get_world_size()

    labkit.seed_everything(args.seed)  # the same seed everywhere: the same data and initial weights
    dataset = make_dataset(args.samples, args.seed)
    model = make_model(args.hidden).to(device)
    # Model FLOPs per training sample: each weight does a multiply-add (2 FLOPs) forward and two
    # backward (the input's gradient and its own): 6 per weight. labkit then reports mfu with
    # samples_per_s, against the GPU's datasheet fp32 peak or, on a CPU, a matmul it measures.
    weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    labkit.declare_flops(per_sample=6 * weights, dtype="fp32", device=device)
    # DDP broadcasts rank 0's parameters and buffers, then all-reduces (averages) the gradients
    # in buckets while backward() runs.
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    if args.use_sampler:
        sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
        loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, pin_memory=device.type == "cuda")
    else:
        # What a one-process script does: shuffle the whole dataset. Seeded the same on every
        # rank, so every rank trains on the very same batches.
        sampler = None
        shuffle = torch.Generator().manual_seed(args.seed)
        loader = DataLoader(
            dataset, batch_size=args.batch_size, shuffle=True, generator=shuffle, pin_memory=device.type == "cuda"
        )

    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(
            f"{world} rank(s), backend {dist.get_backend()}, device {device.type}; {args.samples:,} samples, "
            f"MLP with {params:,} parameters; batch {args.batch_size} per rank = {args.batch_size * world} per step; "
            f"{len(loader)} steps per epoch on each rank; sampler {'on' if sampler else 'OFF'}",
            flush=True,
        )
    if rank == 0 and args.crash_rank >= world:
        print(f"crash_rank {args.crash_rank} is not a rank of this {world}-rank job: nobody will crash", flush=True)

    step = 0
    for epoch in range(args.epochs):
        if sampler is not None:
            # Without this every epoch repeats epoch 0's order: the shuffle is seeded by seed + epoch.
            sampler.set_epoch(epoch)
        ddp.train()
        epoch_start = last = time.perf_counter()
        seen, loss_sum = 0, 0.0
        for x, y in loader:
            if rank == args.crash_rank and step == CRASH_STEP:
                raise RuntimeError(
                    f"rank {rank} fails on purpose at step {step} (crash_rank={args.crash_rank}): the stand-in "
                    "for a real bug such as a bad batch, a CUDA error or running out of memory"
                )
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()  # gradients are averaged across ranks before this returns
            optimizer.step()
            value = loss.item()  # waits for the device, so the step time below is real
            now = time.perf_counter()
            labkit.report(step, epoch=epoch, loss=value, samples_per_s=len(x) / (now - last))
            last = now
            seen += len(x)
            loss_sum += value * len(x)
            step += 1
        epoch_time = time.perf_counter() - epoch_start

        # The mean loss over every sample every rank saw this epoch: an all-reduce of two sums.
        totals = torch.tensor([loss_sum, float(seen)], dtype=torch.float64, device=device)
        dist.all_reduce(totals)
        epoch_loss = (totals[0] / totals[1]).item()
        labkit.report(step - 1, epoch=epoch, epoch_time_s=epoch_time, samples_seen=seen, epoch_loss=epoch_loss)
        print(
            f"rank {rank} epoch {epoch}: {seen:,} samples in {epoch_time:.2f} s, "
            f"mean loss over all ranks {epoch_loss:.4f}",
            flush=True,
        )

    # Summed on the CPU in float64, the same way on every rank: equal parameters, equal checksums.
    checksum = sum(p.detach().cpu().double().sum().item() for p in model.parameters())
    labkit.report(step - 1, param_checksum=checksum)
    everyone: list[float | None] = [None] * world
    dist.all_gather_object(everyone, checksum)
    if rank == 0:
        print("parameter checksums: " + ", ".join(f"rank {r} {c:.10g}" for r, c in enumerate(everyone)))
        per_epoch = seen * world
        print(
            f"each rank trained on {seen:,} samples in its last epoch; all ranks together on {per_epoch:,} "
            f"for a dataset of {args.samples:,} ({per_epoch / args.samples:.2f}x)",
            flush=True,
        )
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without interpreter shutdown: gloo's worker threads can still be releasing tensors
    # after destroy_process_group(), and racing them at exit aborts the process now and then
    # (lesson 4, "Leaving cleanly"). labkit has already flushed every metric line.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
