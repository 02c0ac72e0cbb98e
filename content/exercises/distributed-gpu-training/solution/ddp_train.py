"""ddp_train.py: data-parallel training with DistributedDataParallel, end to end.

    torchrun --nproc-per-node 2 ddp_train.py --epochs 4 --ckpt-dir ckpt --json
    torchrun --nproc-per-node 2 --max-restarts 2 --rdzv-backend c10d \
        --rdzv-endpoint 127.0.0.1:29400 ddp_train.py --epochs 4 --ckpt-dir ckpt --json
    python ddp_train.py --epochs 4 --ckpt-dir ckpt       # one process, no torchrun needed

Every rank builds the same synthetic dataset and the same initial weights from --seed, and
trains on its own shard of every epoch (DistributedSampler). Rank 0 writes a checkpoint every
--ckpt-every steps (and when the run ends); on start every rank loads the latest checkpoint in
--ckpt-dir, if there is one, and continues from it: the same code path serves a rerun by hand
and an elastic restart by torchrun. With --json, rank 0 prints one JSON line per step.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

FEATURES = 32
CLASSES = 8
CKPT_NAME = re.compile(r"^ckpt_(\d+)\.pt$")
KEEP_CHECKPOINTS = 2  # the newest two: one to resume from, one spare


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
    """Join the process group: NCCL with one GPU per rank, gloo on the CPU otherwise."""
    alone_as_one_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"]))
    if torch.cuda.is_available() and torch.cuda.device_count() >= local_world:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)  # before the process group: NCCL binds this rank to this GPU
        backend = "nccl"
    else:
        device = torch.device("cpu")
        # One compute thread per rank, as each GPU rank drives one GPU: N ranks with a thread
        # per core each would fight over the same cores.
        torch.set_num_threads(1)
        backend = "gloo"
    dist.init_process_group(backend=backend)
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
    torch.manual_seed(seed)  # the same initial weights on every rank (DDP would broadcast rank 0's anyway)
    return nn.Sequential(
        nn.Linear(FEATURES, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, CLASSES),
    )


class ResumableSampler(DistributedSampler):
    """A DistributedSampler that can start an epoch part-way through.

    The order of epoch e depends only on (seed, e), so the position in the data stream is two
    numbers: the epoch, and the samples of it this rank has already trained on. set_start()
    skips those, for the current epoch only; set_epoch() begins the next one from its start."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.start = 0

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.start = 0

    def set_start(self, samples: int) -> None:
        self.start = min(samples, self.num_samples)

    def __iter__(self):
        indices = list(super().__iter__())
        return iter(indices[self.start :])

    def __len__(self) -> int:
        return self.num_samples - self.start


# --- checkpoints -----------------------------------------------------------------------------


def latest_checkpoint(ckpt_dir: Path) -> Path | None:
    """The checkpoint with the highest step; temporary files never match the name."""
    found = []
    if ckpt_dir.is_dir():
        for path in ckpt_dir.iterdir():
            m = CKPT_NAME.match(path.name)
            if m:
                found.append((int(m.group(1)), path))
    return max(found)[1] if found else None


def save_checkpoint(ckpt_dir: Path, state: dict) -> Path:
    """Write atomically: torch.save to a temporary file in the same folder, flush it to disk,
    then rename it into place. A reader (or a restarted job) sees the old checkpoint or the
    new one, never half a file, even if this process is killed in the middle of the write."""
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    final = ckpt_dir / f"ckpt_{state['step']:07d}.pt"
    tmp = ckpt_dir / f".{final.name}.tmp"
    torch.save(state, tmp)
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, final)  # atomic on POSIX within one filesystem
    old = sorted(p for p in ckpt_dir.iterdir() if CKPT_NAME.match(p.name))
    for stale in old[:-KEEP_CHECKPOINTS]:
        stale.unlink(missing_ok=True)
    return final


def find_resume_point(ckpt_dir: Path) -> Path | None:
    """Rank 0 picks the checkpoint and tells everyone: all ranks must load the same file,
    even if the folder listing differed between them (a slow shared filesystem)."""
    choice = [str(latest_checkpoint(ckpt_dir) or "") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(choice, src=0)
    return Path(choice[0]) if choice[0] else None


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


@record  # on an exception, torchrun's error file gets the traceback (and the root cause is shown)
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = setup()
    rank, world = dist.get_rank(), dist.get_world_size()
    restarts = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))

    dataset = make_dataset(args.samples, args.seed)
    model = make_model(args.hidden, args.seed).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sampler = ResumableSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, pin_memory=device.type == "cuda")
    steps_per_epoch = -(-sampler.num_samples // args.batch_size)

    # Resume: every rank loads the same checkpoint (model and optimizer state both: each rank
    # has its own optimizer, and a rank with fresh Adam moments would drift away from the others).
    step, start_epoch, position = 0, 0, 0
    ckpt = find_resume_point(args.ckpt_dir)
    if ckpt is not None:
        state = torch.load(ckpt, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, start_epoch, position = state["step"], state["epoch"], state["sampler_position"]
        if state.get("world_size", world) != world:
            # Each rank's shard of an epoch depends on the world size: the batches done under
            # another world size say nothing about this one's. Start that epoch over.
            position = 0
        if rank == 0:
            print(
                f"restart {restarts}: resuming from {ckpt.name} (step {step}, epoch {start_epoch}, "
                f"batch {position} of {steps_per_epoch})",
                file=sys.stderr,
                flush=True,
            )
    dist.barrier()  # nobody trains (or overwrites checkpoints) before everyone has loaded

    # DDP broadcasts rank 0's parameters when it wraps the model, then averages the gradients
    # across ranks during backward().
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)

    def checkpoint(epoch: int, batches_done: int) -> None:
        if rank == 0:  # the replicas are identical: one copy on disk is enough
            save_checkpoint(
                args.ckpt_dir,
                {
                    "model": model.state_dict(),  # the bare module's: loads without DDP too
                    "optimizer": optimizer.state_dict(),
                    "epoch": epoch,
                    "step": step,
                    "sampler_position": batches_done,  # batches of `epoch` already trained
                    "world_size": world,
                },
            )

    last_saved = step
    done = bool(args.max_steps) and step >= args.max_steps
    last = time.perf_counter()
    for epoch in range(start_epoch, args.epochs):
        if done:
            break
        sampler.set_epoch(epoch)  # a new shuffle every epoch, the same on every rank
        first = position if epoch == start_epoch else 0
        sampler.set_start(first * args.batch_size)
        ddp.train()
        for batch_index, (x, y) in enumerate(loader, start=first):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()  # gradients averaged across ranks before this returns
            optimizer.step()
            # The step's loss over the global batch: the mean of the ranks' losses.
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss)
            value = mean_loss.item() / world  # .item() waits for the device: the time below is real
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
                checkpoint(epoch, batch_index + 1)
                last_saved = step
            if args.max_steps and step >= args.max_steps:
                done = True
                break
        if done:
            break  # here, not at the loop's top: `epoch` must stay the one the last step was in
    if step != last_saved:
        # The end of the run (or of --max-steps): saved too, so a rerun continues from here.
        checkpoint(epoch, batch_index + 1)

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
