"""ddp_train.py: data-parallel training with DistributedDataParallel, end to end.

    torchrun --nproc-per-node 2 ddp_train.py --epochs 4 --ckpt-dir ckpt --json
    torchrun --nproc-per-node 2 --max-restarts 2 --rdzv-backend c10d \
        --rdzv-endpoint 127.0.0.1:29400 ddp_train.py --epochs 4 --ckpt-dir ckpt --json
    python ddp_train.py --epochs 4 --ckpt-dir ckpt       # one process, no torchrun needed

The starter is a one-process training loop with DDP around the model. It runs under torchrun,
but every rank reads the whole dataset, every rank writes checkpoints, and a restart starts
from scratch. The TODOs say what to change; the README says what the checks expect.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

FEATURES = 32
CLASSES = 8


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=4, help="passes over the dataset")
    p.add_argument("--ckpt-dir", type=Path, default=Path("checkpoints"), help="where checkpoints are written and read")
    p.add_argument(
        "--ckpt-every", type=int, default=4, help="rank 0 writes a checkpoint every K steps; 0: only at the end"
    )
    p.add_argument("--json", action="store_true", help="one JSON line of metrics per step (rank 0)")
    p.add_argument("--batch-size", type=int, default=16, help="samples per step on each rank")
    p.add_argument("--samples", type=int, default=512, help="size of the synthetic dataset")
    p.add_argument("--hidden", type=int, default=64, help="width of the MLP's hidden layers")
    p.add_argument("--lr", type=float, default=0.01, help="AdamW learning rate")
    p.add_argument("--seed", type=int, default=0, help="seeds the data, the weights and the shuffle")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps in all (0: no limit)")
    args = p.parse_args(argv)
    for name in ("epochs", "batch_size", "samples", "hidden"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.ckpt_every < 0 or args.max_steps < 0:
        p.error("--ckpt-every and --max-steps must not be negative")
    return args


# --- the job: processes, devices, backend ----------------------------------------------------


def alone_as_one_rank() -> None:
    """Let `python ddp_train.py` run as a job of one process: torchrun would set these."""
    if "WORLD_SIZE" in os.environ:
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(
        RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )


def setup() -> torch.device:
    """Join the process group and pick this rank's device."""
    alone_as_one_rank()
    # TODO(nccl): with one GPU per rank (torch.cuda.device_count() >= LOCAL_WORLD_SIZE), use the
    # nccl backend and the device cuda:LOCAL_RANK, set with torch.cuda.set_device before
    # init_process_group. Without, keep gloo on the CPU.
    device = torch.device("cpu")
    torch.set_num_threads(1)  # one compute thread per rank: ranks sharing cores should not fight over them
    dist.init_process_group(backend="gloo")
    return device


# --- data and model --------------------------------------------------------------------------


def make_dataset(samples: int, seed: int) -> TensorDataset:
    """Gaussian inputs labelled by a fixed random 'teacher' network: learnable, nothing downloaded."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, FEATURES, generator=g)
    w1 = torch.randn(FEATURES, 64, generator=g) / FEATURES**0.5
    w2 = torch.randn(64, CLASSES, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(dim=1)
    return TensorDataset(x, y)


def make_model(hidden: int, seed: int) -> nn.Module:
    torch.manual_seed(seed)  # the same initial weights on every rank
    return nn.Sequential(
        nn.Linear(FEATURES, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, CLASSES),
    )


# --- checkpoints -----------------------------------------------------------------------------


def save_checkpoint(ckpt_dir: Path, state: dict) -> Path:
    # TODO(atomic): a process killed in the middle of this write leaves half a file under the
    # very name a restart will load. Write to a temporary file in the same folder, then
    # os.replace() it onto the final name.
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    final = ckpt_dir / f"ckpt_{state['step']:07d}.pt"
    torch.save(state, final)
    return final


def latest_checkpoint(ckpt_dir: Path) -> Path | None:
    # TODO(resume): the newest complete checkpoint in ckpt_dir, or None.
    return None


# --- training --------------------------------------------------------------------------------


def log(args: argparse.Namespace, record_: dict) -> None:
    if args.json:
        print(json.dumps(record_), flush=True)
    else:
        print(
            f"step {record_['step']:5d}  epoch {record_['epoch']}  loss {record_['loss']:.4f}  "
            f"{record_['samples_per_s']:,.0f} samples/s on {record_['world_size']} rank(s)",
            flush=True,
        )


@record  # on an exception, torchrun's error file gets the traceback
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = setup()
    rank, world = dist.get_rank(), dist.get_world_size()

    dataset = make_dataset(args.samples, args.seed)
    model = make_model(args.hidden, args.seed).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    # TODO(sampler): this is the one-process loader: every rank shuffles and reads the whole
    # dataset, so two ranks train on the same batches twice. Give the DataLoader a
    # DistributedSampler (seeded with args.seed) and call its set_epoch(epoch) every epoch.
    # To resume in the middle of an epoch, the sampler must also be able to skip the batches
    # of that epoch already trained.
    shuffle = torch.Generator().manual_seed(args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, generator=shuffle)

    step, start_epoch = 0, 0
    # TODO(resume): if ckpt_dir holds a checkpoint, every rank loads the latest one (model,
    # optimizer, epoch, step, position in the epoch) and continues from there; then a barrier,
    # so no rank trains before all have loaded. torchrun's restarts run this same code.

    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)

    last = time.perf_counter()
    done = False
    for epoch in range(start_epoch, args.epochs):
        ddp.train()
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()  # DDP averages the gradients across ranks here
            optimizer.step()
            value = loss.item()
            now = time.perf_counter()
            if rank == 0:
                log(
                    args,
                    {
                        "step": step,
                        "epoch": epoch,
                        "loss": value,
                        "world_size": world,
                        "samples_per_s": world * len(x) / (now - last),
                    },
                )
            last = now
            step += 1
            if args.ckpt_every and step % args.ckpt_every == 0:
                # TODO(checkpoint): only rank 0 should write (the replicas are identical), and a
                # checkpoint needs everything a resume needs: model, optimizer, epoch, step and
                # sampler_position (batches of this epoch already trained).
                save_checkpoint(args.ckpt_dir, {"model": model.state_dict(), "step": step})
            if args.max_steps and step >= args.max_steps:
                done = True
                break
        if done:
            break

    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without interpreter shutdown: gloo's worker threads can still be releasing tensors
    # after destroy_process_group(), and racing them at exit aborts the process now and then.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
