"""cuda-kernel: benchmark ops.fused against the same expression in PyTorch.

    python bench.py [--rows 16384] [--cols 4096] [--repeats 20] [--json]

Report, for the fused kernel and for torch.nn.functional.gelu(a * x + b): the median time
per call and the effective bandwidth (the bytes the operation must move at the least,
divided by the time). With --json, print them as one JSON line with the keys kernel_ms,
torch_ms, kernel_gbps, torch_gbps and speedup.

Needs a CUDA GPU (exit code 2 without one).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def time_ms(fn, *, warmup: int = 3, repeats: int = 20) -> float:
    """Milliseconds per call of fn()."""
    # TODO: this measures how long Python takes to *launch* the work, not how long the GPU
    #       takes to do it, and it trusts a single cold call. Time with CUDA events
    #       (torch.cuda.Event(enable_timing=True)), after a warm-up, and return the median
    #       of `repeats` measurements.
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=16384)
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--a", type=float, default=0.5, help="the scale a in GELU(a * x + b)")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    args = p.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print(
            "bench.py needs a CUDA GPU; this machine has none (the CPU variant runs kernel.cu in gpudojo's CPU "
            "emulator and kernel_numba.py in the simulator instead).",
            file=sys.stderr,
        )
        return 2

    import ops

    x = torch.randn(args.rows, args.cols, device="cuda")
    b = torch.randn(args.cols, device="cuda")

    kernel_ms = time_ms(lambda: ops.fused(x, b, args.a), repeats=args.repeats)
    torch_ms = time_ms(lambda: torch.nn.functional.gelu(args.a * x + b), repeats=args.repeats)
    # TODO: the effective bandwidth of each, in GB/s: count the bytes the fused operation
    #       must read and write at the least, and divide by the time.
    kernel_gbps = torch_gbps = 0.0

    result = {
        "kernel_ms": kernel_ms,
        "torch_ms": torch_ms,
        "kernel_gbps": kernel_gbps,
        "torch_gbps": torch_gbps,
        "speedup": torch_ms / kernel_ms,
    }
    print(json.dumps(result) if args.json else result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
