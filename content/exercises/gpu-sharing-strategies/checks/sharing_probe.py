"""The check's own time-slicing measurement, run by the measure-gpu check (never by the learner's
code): the same loop of size x size matmuls (bf16, fp16 before compute capability 8.0) alone in
one process, then in two processes started together, each timing its own matmuls per second
over the same window. The learner's printed figures are held to these.

    python sharing_probe.py SIZE SECONDS [DEVICE]   ->  {"alone": x, "shared": [a, b]} on stdout
"""

from __future__ import annotations

import json
import multiprocessing as mp
import queue as queues
import sys
import time


def tenant(rank, size, seconds, device, ready, start, results):
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.get_device_capability(dev)[0] >= 8 else torch.float16
        sync = torch.cuda.synchronize
    else:  # a CPU run only exercises the plumbing (the check's own tests)
        torch.set_num_threads(1)
        dtype, sync = torch.float32, (lambda: None)
    a = torch.randn(size, size, device=dev, dtype=dtype)
    b = torch.randn(size, size, device=dev, dtype=dtype)
    for _ in range(3):
        a @ b
    sync()
    ready.put(rank)
    start.wait()
    iters, t0 = 0, time.perf_counter()
    while True:
        for _ in range(4):
            a @ b
        sync()
        iters += 4
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            break
    results.put((rank, iters / elapsed))


def collect(q, procs, n, timeout_s):
    items, deadline = [], time.monotonic() + timeout_s
    while len(items) < n:
        try:
            items.append(q.get(timeout=1.0))
        except queues.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError("a probe process failed") from None
            if time.monotonic() > deadline:
                raise RuntimeError("the probe processes did not report in time") from None
    return items


def run(n, size, seconds, device):
    ctx = mp.get_context("spawn")
    ready, results, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=tenant, args=(r, size, seconds, device, ready, start, results)) for r in range(n)]
    for p in procs:
        p.start()
    try:
        collect(ready, procs, n, 300)
        start.set()
        out = collect(results, procs, n, 120 + 10 * seconds)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    return [rate for _, rate in sorted(out)]


def main() -> None:
    size, seconds = int(sys.argv[1]), float(sys.argv[2])
    device = sys.argv[3] if len(sys.argv) > 3 else "cuda"
    alone = run(1, size, seconds, device)[0]
    shared = run(2, size, seconds, device)
    print(json.dumps({"alone": alone, "shared": shared}))


if __name__ == "__main__":
    main()
