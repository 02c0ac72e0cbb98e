"""Server CPU while streaming telemetry: N websocket subscribers at R Hz.

CPU is the server process's user+system time over the window, as % of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import psutil
import websockets

from server import TOKEN, jupyter_server


async def subscribe(port: int, n: int, hz: float, seconds: float, pid: int) -> dict:
    url = f"ws://127.0.0.1:{port}/gpudojo/api/gpu/telemetry?hz={hz}&token={TOKEN}"
    received = [0] * n

    async def client(i: int, ws) -> None:
        async for _ in ws:
            received[i] += 1

    socks = [await websockets.connect(url, max_size=None) for _ in range(n)]
    tasks = [asyncio.create_task(client(i, ws)) for i, ws in enumerate(socks)]
    await asyncio.sleep(2.0)  # settle
    proc = psutil.Process(pid)
    before = proc.cpu_times()
    got_before = sum(received)
    t0 = time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - t0
    after = proc.cpu_times()
    got = sum(received) - got_before
    for ws in socks:
        await ws.close()
    for t in tasks:
        t.cancel()
    cpu = (after.user - before.user + after.system - before.system) / elapsed * 100
    return {"subscribers": n, "hz": hz, "cpu_pct_of_one_core": round(cpu, 2), "messages_per_s": round(got / elapsed, 1)}


async def idle(pid: int, seconds: float) -> float:
    proc = psutil.Process(pid)
    before = proc.cpu_times()
    await asyncio.sleep(seconds)
    after = proc.cpu_times()
    return round((after.user - before.user + after.system - before.system) / seconds * 100, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    for replay in (None, "2gpu-h100-nvlink"):
        with jupyter_server(replay=replay) as (proc, port):
            base = asyncio.run(idle(proc.pid, 5.0))
            for n in (1, 20):
                r = asyncio.run(subscribe(port, n, 10.0, args.seconds, proc.pid))
                r["scenario"] = f"replay {replay}" if replay else "no GPU (host metrics only)"
                r["server_idle_cpu_pct"] = base
                print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
