"""Click to first log line, and 100k log lines streamed, against plain torchrun in a terminal.

DESIGN.md's budget: click to first log line of a lab <= 300 ms over plain torchrun. The
anchor is the same torchrun command typed in a terminal: spawn
`python -m torch.distributed.run ... lines.py` and read its stdout until the first line.
Ours: POST runs (the lab bench/labs/lab-bench-lines) and read the run's websocket until the
first log line arrives. Both measured in the same run, interleaved.

Streaming: the same lab printing 100,000 lines; the time until the last line has reached a
websocket client (what the browser receives), against plain torchrun piped to a reader.

    cd bench && ../.venv/bin/python bench_runs.py --runs 5 --lines 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from server import TOKEN, free_port, jupyter_server, machine

LAB = Path(__file__).resolve().parent / "labs" / "lab-bench-lines"


def plain_torchrun(lines: int) -> tuple[float, float]:
    """Seconds to torchrun's first line and to its last ("done"), read from its stdout."""
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "1",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        "--tee",
        "3",
        str(LAB / "lines.py"),
        "--lines",
        str(lines),
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = last = None
    for line in proc.stdout:
        if first is None and "first line" in line:
            first = time.perf_counter() - t0
        if line.rstrip().endswith("done"):
            last = time.perf_counter() - t0
    proc.wait()
    return first, last


async def via_gpudojo(port: int, lines: int) -> tuple[float, float, int]:
    """Seconds from POST to the first log line and to "done" on the run's websocket, and the
    number of log lines received."""
    import websockets

    body = json.dumps({"kind": "lab", "lab": "lab-bench-lines", "params": {"lines": lines}}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/gpudojo/api/runs",
        data=body,
        method="POST",
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
    )
    t0 = time.perf_counter()
    loop = asyncio.get_running_loop()
    doc = await loop.run_in_executor(None, lambda: json.loads(urllib.request.urlopen(req, timeout=30).read()))
    run_id = doc["runs"][0]["id"]
    url = f"ws://127.0.0.1:{port}/gpudojo/api/runs/{run_id}/stream?token={TOKEN}"
    first = last = None
    count = 0
    async with websockets.connect(url, max_size=None) as ws:
        async for message in ws:
            for event in json.loads(message)["events"]:
                if event["type"] != "log" or event["rank"] is None:
                    continue
                count += 1
                if first is None and event["text"] == "first line":
                    first = time.perf_counter() - t0
                if event["text"] == "done":
                    last = time.perf_counter() - t0
    return first, last, count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args()
    labs = str(LAB.parent)
    with jupyter_server(replay="2gpu-h100-nvlink", extra=[f"--GPUDojo.labs_dir={labs}"]) as (_, port):
        asyncio.run(via_gpudojo(port, 0))  # warm: first request loads the run service
        plain_first, ours_first = [], []
        for _ in range(args.runs):
            plain_first.append(plain_torchrun(0)[0])
            ours_first.append(asyncio.run(via_gpudojo(port, 0))[0])
        plain_all, ours_all = [], []
        for _ in range(max(2, args.runs // 2)):
            plain_all.append(plain_torchrun(args.lines)[1])
            _, last, count = asyncio.run(via_gpudojo(port, args.lines))
            assert count == args.lines + 2, count
            ours_all.append(last)
    med = statistics.median
    print(f"Machine: {machine()}")
    print(f"runs: {args.runs} (first line), {len(plain_all)} ({args.lines} lines); 1 process, gloo, CPU")
    print("| what | plain torchrun (anchor) | gpudojo | difference | ratio |")
    print("|---|---|---|---|---|")
    print(
        f"| click to first log line | {med(plain_first) * 1000:.0f} ms | {med(ours_first) * 1000:.0f} ms | "
        f"**{(med(ours_first) - med(plain_first)) * 1000:+.0f} ms** | {med(ours_first) / med(plain_first):.2f} |"
    )
    print(
        f"| {args.lines:,} lines, start to last line received | {med(plain_all):.2f} s | {med(ours_all):.2f} s | "
        f"{med(ours_all) - med(plain_all):+.2f} s | {med(ours_all) / med(plain_all):.2f} |"
    )


if __name__ == "__main__":
    main()
