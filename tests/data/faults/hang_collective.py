"""Rank 0 enters an all_reduce that rank 1 never joins: a hang only the run's timeout ends."""

import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} up", flush=True)
if rank == 0:
    dist.all_reduce(torch.ones(1))
time.sleep(3600)
