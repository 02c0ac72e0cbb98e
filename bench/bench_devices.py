"""GET gpu/devices under 50 concurrent clients: latency p50/p99 (ms) and throughput.

Two loads, each for --seconds, with the load generator on the same 2 cores as the server:
- paced: every client asks --per-client-hz times a second (50 clients at 10 Hz is 500
  requests/s, 100 times what 50 open GPU panels polling every 5 s send); latency counts
  from the moment a request was due, so a stalled server cannot hide its queue.
- saturating: every client asks again as soon as its answer arrives; this measures
  throughput, and its latency is clients / throughput by construction.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from tornado.httpclient import AsyncHTTPClient

from server import TOKEN, jupyter_server


async def load(port: int, clients: int, seconds: float, per_client_hz: float | None = None) -> list[float]:
    AsyncHTTPClient.configure(None, max_clients=clients)
    http = AsyncHTTPClient()
    url = f"http://127.0.0.1:{port}/gpudojo/api/gpu/devices"
    headers = {"Authorization": f"token {TOKEN}"}
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def client(k: int) -> None:
        due = time.perf_counter() + (k / clients / per_client_hz if per_client_hz else 0.0)
        while due < stop:
            if per_client_hz:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
            else:
                due = time.perf_counter()
            r = await http.fetch(url, headers=headers)
            latencies.append((time.perf_counter() - due) * 1000)
            assert r.code == 200
            if per_client_hz:
                due += 1.0 / per_client_hz

    await asyncio.gather(*(client(k) for k in range(clients)))
    return latencies


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run(replay: str | None, clients: int, seconds: float, per_client_hz: float | None) -> dict:
    with jupyter_server(replay=replay) as (_, port):
        asyncio.run(load(port, clients, 1.0))  # warm-up: first probe, caches
        lat = asyncio.run(load(port, clients, seconds, per_client_hz))
    return {
        "scenario": f"replay {replay}" if replay else "live NVML (no GPU here)",
        "load": f"paced {per_client_hz:g} Hz per client" if per_client_hz else "saturating (closed loop)",
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
    ap.add_argument("--per-client-hz", type=float, default=10.0)
    args = ap.parse_args()
    for replay in ("2gpu-h100-nvlink", None):
        for hz in (args.per_client_hz, None):
            print(json.dumps(run(replay, args.clients, args.seconds, hz)), flush=True)


if __name__ == "__main__":
    main()
