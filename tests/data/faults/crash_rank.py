"""Rank 1 raises once both ranks are up; rank 0 waits in a barrier it never leaves."""

import torch.distributed as dist

from gpudojo import labkit


@labkit.record
def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print(f"rank {rank} up", flush=True)
    if rank == 1:
        raise ZeroDivisionError(f"rank {rank} divides by zero")
    dist.barrier()


if __name__ == "__main__":
    main()
