"""Tiny DDP run for the run service's tests (gloo on CPU)."""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from gpudojo import labkit


@labkit.record
def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--crash_rank", type=int)
    p.add_argument("--sleep_s", type=float)
    p.add_argument("--optimizer")
    p.add_argument("--sync", action=argparse.BooleanOptionalAction)
    args = p.parse_args()
    dist.init_process_group(backend=labkit.backend())
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(rank))
    y = x.sum(dim=1, keepdim=True)
    print(f"rank {rank} of {dist.get_world_size()} starts", flush=True)
    for step in range(args.steps):
        if step == 2 and rank == args.crash_rank:
            raise RuntimeError(f"rank {rank} fails on purpose at step {step}")
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        labkit.report(step=step, loss=loss.item())
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        print(f"stderr line {step}", file=sys.stderr, flush=True)
    time.sleep(args.sleep_s)
    labkit.report(step=args.steps, param_checksum=sum(p.sum().item() for p in model.parameters()))
    labkit.check("said-hello", True, "hello")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # As lab-03 does: leave without interpreter shutdown, which can race gloo's worker threads
    # after destroy_process_group() and abort a rank that has finished (SIGABRT, "terminate
    # called without an active exception"). An exception in main() still exits 1 above.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
