"""Server CPU while streaming telemetry: N websocket subscribers at R Hz.

CPU is the server process's user+system time over the window, as % of one core.
The anchor, jupyterlab-nvdashboard 0.15.0 serving its host-metrics socket
(/nvdashboard/cpu_resource) to the same subscribers at the same rate, is measured in
the same run, in its own venv (bench/.anchor-venv, made on first use).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import websockets

from server import TOKEN, jupyter_server

ANCHOR_VENV = Path(__file__).resolve().parent / ".anchor-venv"


def anchor_python() -> str:
    """Python of a venv holding jupyterlab-nvdashboard 0.15.0 (created once)."""
    py = ANCHOR_VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(ANCHOR_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "jupyterlab-nvdashboard==0.15.0"], check=True)
    return str(py)


async def subscribe(port: int, n: int, hz: float, seconds: float, pid: int, anchor: bool = False) -> dict:
    if anchor:
        url = f"ws://127.0.0.1:{port}/nvdashboard/cpu_resource?token={TOKEN}"
    else:
        url = f"ws://127.0.0.1:{port}/gpudojo/api/gpu/telemetry?hz={hz}&token={TOKEN}"
    received = [0] * n

    async def client(i: int, ws) -> None:
        async for _ in ws:
            received[i] += 1

    socks = [await websockets.connect(url, max_size=None) for _ in range(n)]
    if anchor:  # nvdashboard's own protocol: a period in ms per socket
        for ws in socks:
            await ws.send(json.dumps({"updateFrequency": round(1000 / hz), "isPaused": False}))
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
    ap.add_argument("--no-anchor", action="store_true", help="Skip jupyterlab-nvdashboard.")
    args = ap.parse_args()
    results = []
    scenarios = [("gpudojo", None), ("gpudojo", "2gpu-h100-nvlink")]
    if not args.no_anchor:
        scenarios.append(("nvdashboard 0.15.0", None))
    for name, replay in scenarios:
        anchor = name != "gpudojo"
        server = jupyter_server(
            replay=replay,
            gpudojo=not anchor,
            python=anchor_python() if anchor else sys.executable,
            other_extensions={"jupyterlab_nvdashboard": True} if anchor else None,
        )
        with server as (proc, port):
            base = asyncio.run(idle(proc.pid, 5.0))
            for n in (1, 20):
                r = asyncio.run(subscribe(port, n, 10.0, args.seconds, proc.pid, anchor=anchor))
                r["server"] = name
                r["scenario"] = f"replay {replay}" if replay else "no GPU (host metrics)"
                r["server_idle_cpu_pct"] = base
                results.append(r)
                print(json.dumps(r), flush=True)
    ours = next(r for r in results if r["server"] == "gpudojo" and r["subscribers"] == 20)
    theirs = [r for r in results if r["server"] != "gpudojo" and r["subscribers"] == 20]
    if theirs:
        ratio = theirs[0]["cpu_pct_of_one_core"] / max(ours["cpu_pct_of_one_core"], 0.01)
        print(json.dumps({"anchor_over_gpudojo_cpu_ratio_20_subscribers": round(ratio, 1)}))


if __name__ == "__main__":
    main()
