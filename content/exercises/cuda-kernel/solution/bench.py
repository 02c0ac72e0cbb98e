"""cuda-kernel: benchmark ops.fused against the same expression in PyTorch.

    python bench.py [--rows 16384] [--cols 4096] [--repeats 20] [--json]

Both are timed with CUDA events after a warm-up, and the median of the repeats is
reported, with the effective bandwidth: the bytes the operation must move at the least
(read x and b once, write y once) divided by the time. PyTorch runs a * x + b then gelu as
three kernels that each read and write a whole tensor, so it moves about three times those
bytes; the effective figure counts only the useful ones, for both, so the two compare.

Needs a CUDA GPU (exit code 2 without one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys


def time_ms(fn, *, warmup: int = 3, repeats: int = 20, inner: int = 5) -> float:
    """Median milliseconds per call of fn(), timed on the GPU with CUDA events.

    Launches return before the GPU has run anything, so a wall-clock timer around a call
    measures the launch, not the kernel. Events are recorded into the stream itself; the
    elapsed time between them is what the GPU spent. Each repeat times `inner` calls back
    to back so that the Python overhead of one call hides behind the GPU work of the last."""
    import torch

    for _ in range(warmup):  # first calls compile the kernel and warm the allocator and clocks
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    return statistics.median(times)


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

    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(args.rows, args.cols, device="cuda", generator=gen)
    b = torch.randn(args.cols, device="cuda", generator=gen)
    n = x.numel()

    def ours():
        return ops.fused(x, b, args.a)

    def torch_expr():
        return torch.nn.functional.gelu(args.a * x + b)

    max_err = (ours() - torch_expr()).abs().max().item()  # a benchmark of a wrong kernel means nothing
    kernel_ms = time_ms(ours, repeats=args.repeats)
    torch_ms = time_ms(torch_expr, repeats=args.repeats)
    useful_bytes = 4 * (2 * n + args.cols)  # read x and b, write y (float32)

    result = {
        "device": torch.cuda.get_device_name(),
        "rows": args.rows,
        "cols": args.cols,
        "n": n,
        "bytes": useful_bytes,
        "kernel_ms": kernel_ms,
        "torch_ms": torch_ms,
        "kernel_gbps": useful_bytes / (kernel_ms * 1e-3) / 1e9,
        "torch_gbps": useful_bytes / (torch_ms * 1e-3) / 1e9,
        "speedup": torch_ms / kernel_ms,
        "max_abs_error": max_err,
    }
    if args.json:
        print(json.dumps(result))
    else:
        size = f"{args.rows} x {args.cols} float32 ({useful_bytes / 1e6:.0f} MB moved)"
        print(f"{result['device']}: GELU(a * x + b) on {size}")
        print(f"  fused kernel   {kernel_ms:8.3f} ms   {result['kernel_gbps']:7.0f} GB/s")
        print(f"  torch (3 ops)  {torch_ms:8.3f} ms   {result['torch_gbps']:7.0f} GB/s")
        print(f"  speedup {result['speedup']:.2f}x, max |difference| {max_err:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
