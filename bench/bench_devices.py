"""GET gpu/devices under 50 concurrent clients: latency p50/p99 (ms) and throughput.

Each client sends its next request as soon as the previous answer arrives (closed loop),
for --seconds. The load generator shares the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from tornado.httpclient import AsyncHTTPClient

from server import TOKEN, jupyter_server


async def load(port: int, clients: int, seconds: float) -> list[float]:
    AsyncHTTPClient.configure(None, max_clients=clients)
    http = AsyncHTTPClient()
    url = f"http://127.0.0.1:{port}/gpudojo/api/gpu/devices"
    headers = {"Authorization": f"token {TOKEN}"}
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def client() -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            r = await http.fetch(url, headers=headers)
            latencies.append((time.perf_counter() - t0) * 1000)
            assert r.code == 200

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run(replay: str | None, clients: int, seconds: float) -> dict:
    with jupyter_server(replay=replay) as (_, port):
        asyncio.run(load(port, clients, 1.0))  # warm-up: first probe, caches
        lat = asyncio.run(load(port, clients, seconds))
    return {
        "scenario": f"replay {replay}" if replay else "live NVML (no GPU here)",
        "clients": clients,
        "requests": len(lat),
        "rps": round(len(lat) / seconds),
        "p50_ms": round(pct(lat, 50), 1),
        "p99_ms": round(pct(lat, 99), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    for replay in ("2gpu-h100-nvlink", None):
        print(json.dumps(run(replay, args.clients, args.seconds)))


if __name__ == "__main__":
    main()
