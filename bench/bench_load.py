"""Mixed load: REST clients, telemetry websockets and running labs together, for a duration.

Issue 15's load: 50 REST clients (a mix of the GET routes the sidebar and views poll, and
compiles of a small kernel the cache already holds), 20 telemetry websockets at 10 Hz and 2
labs running (lab-03-ddp, 2 processes on gloo, started again as each one ends), all at once
against one real `jupyter server` (bench/server.py). Measured:

- latency per route, p50 and p99 in ms, counted from when each request was due (each client
  asks --per-client-hz times a second, so a stalled server cannot hide its queue), and errors;
  jupyter_server's own /api/status is among the routes as a control, and the load generator's
  own event-loop lateness is measured: on a shared machine both say how much of a tail is not
  gpudojo's;
- the server process's CPU (% of one core) and RSS (MiB), sampled every second with psutil;
  the RSS slope over the last two minutes (MiB/min) says whether memory grows under load;
- telemetry messages received per socket;
- for every lab run: the stream's events numbered without a gap, each rank's log lines as
  streamed equal to that rank's stdout.log / stderr.log in the run folder (a run cancelled at
  the end: the streamed lines are a prefix of the files), each rank's metric events equal to
  its metrics file's lines;
- processes of these runs left after the end (any process whose GPUDOJO_RUN_DIR is under the
  bench's data dir), with the server up after the last cancel, and after it stopped.

    cd bench && ../.venv/bin/python bench_load.py --duration 300
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import websockets
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from server import TOKEN, jupyter_server, machine

RUN_DIR_ENV = "GPUDOJO_RUN_DIR"
FINAL = {"succeeded", "failed", "cancelled", "timed_out", "lost"}
KERNEL = """extern "C" __global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""
COMPILE = {"source": KERNEL, "language": "cuda", "arch": "sm_80"}


@dataclass(frozen=True)
class Route:
    """One request the REST clients make: a label for the table, a path template, a weight."""

    label: str
    path: str
    weight: int
    body: dict[str, Any] | None = None


# What open JupyterLab panels ask for, weighted roughly as they poll: the GPU cards most, the
# run views and lists next, a compile now and then (the playground recompiles as one types;
# the same source again is a cache hit).
ROUTES = [
    Route("GET gpu/devices", "gpu/devices", 6),
    Route("GET course/catalog", "course/catalog", 2),
    Route("GET course/lessons/{id}", "course/lessons/gpu-intro", 1),
    Route("GET exercises/{id}", "exercises/cuda-kernel", 1),
    Route("GET runs/labs", "runs/labs", 1),
    Route("GET runs", "runs?limit=20", 3),
    Route("GET runs/{id}", "runs/{run}", 3),
    Route("GET memory/captures", "memory/captures?run={run}", 1),
    Route("GET profile/traces", "profile/traces?run={run}", 1),
    Route("GET kernels/archs", "kernels/archs", 1),
    Route("POST kernels/compile (cached)", "kernels/compile", 1, COMPILE),
    # Not gpudojo: jupyter_server's own status route, the floor any extension's route sits on.
    Route("GET /api/status (jupyter_server, control)", "/api/status", 2),
]


@dataclass
class RouteStats:
    latencies_ms: list[float] = field(default_factory=list)
    due_s: list[float] = field(default_factory=list)  # when each answered request was due, from the start
    errors: int = 0
    first_errors: list[str] = field(default_factory=list)


@dataclass
class LabRun:
    """What a lab slot saw of one run, and whether it was complete."""

    id: str
    status: str = ""
    seconds: float = 0.0
    events: int = 0
    log_lines: int = 0
    reconnects: int = 0
    seq_ok: bool = False
    logs_ok: bool = False
    metrics_ok: bool = False
    problems: list[str] = field(default_factory=list)


class Bench:
    def __init__(self, port: int, data_dir: Path, args: argparse.Namespace) -> None:
        self.port = port
        self.data_dir = data_dir
        self.args = args
        self.base = f"http://127.0.0.1:{port}/gpudojo/api/"
        self.ws_base = f"ws://127.0.0.1:{port}/gpudojo/api/"
        self.headers = {"Authorization": f"token {TOKEN}", "Content-Type": "application/json"}
        self.stats: dict[str, RouteStats] = {r.label: RouteStats() for r in ROUTES}
        self.runs: list[LabRun] = []
        self.current: dict[int, str] = {}
        self.telemetry_counts: list[int] = [0] * args.sockets
        self.telemetry_closed = 0
        self.samples: list[tuple[float, float, float, int]] = []  # t s, cpu %, rss MiB, children
        self.load: list[float] = []  # the machine's 1-minute load average (others share it)
        self.lag_ms: list[float] = []
        self.t0 = 0.0
        self.elapsed = 0.0
        self.leaked_up: list[str] = []
        self.stopping = asyncio.Event()
        self.rest: Any = None  # made in run(): tornado's clients belong to the loop they start on
        self.control: Any = None

    # --- plumbing -----------------------------------------------------------------------------

    async def call(self, path: str, body: dict[str, Any] | None = None, client: Any = None) -> dict[str, Any]:
        http = client or self.control
        r = await http.fetch(
            self.base + path if not path.startswith("/") else f"http://127.0.0.1:{self.port}{path}",
            method="POST" if body is not None else "GET",
            body=json.dumps(body) if body is not None else None,
            headers=self.headers,
            request_timeout=120,
        )
        return json.loads(r.body)

    def latest_run(self) -> str:
        return self.current.get(0) or (self.runs[-1].id if self.runs else "20000101-000000-000000")

    # --- REST clients -------------------------------------------------------------------------

    async def rest_client(self, k: int, until: float) -> None:
        rng = random.Random(k)
        weights = [r.weight for r in ROUTES]
        period = 1.0 / self.args.per_client_hz
        due = time.perf_counter() + rng.random() * period
        while due < until:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            route = rng.choices(ROUTES, weights)[0]
            stats = self.stats[route.label]
            try:
                await self.call(route.path.format(run=self.latest_run()), route.body, self.rest)
                stats.latencies_ms.append((time.perf_counter() - due) * 1000)
                stats.due_s.append(due - self.t0)
            except Exception as err:  # every failure counts; the first few are kept to say why
                stats.errors += 1
                if len(stats.first_errors) < 3:
                    text = err.response.body.decode()[:200] if isinstance(err, HTTPClientError) and err.response else ""
                    stats.first_errors.append(f"{type(err).__name__}: {err} {text}".strip())
            due += period

    # --- telemetry sockets --------------------------------------------------------------------

    async def telemetry(self, i: int) -> None:
        url = f"{self.ws_base}gpu/telemetry?hz={self.args.telemetry_hz}&token={TOKEN}"
        async with websockets.connect(url, max_size=None) as ws:
            stop = asyncio.ensure_future(self.stopping.wait())
            while True:
                recv = asyncio.ensure_future(ws.recv())
                done, _ = await asyncio.wait({recv, stop}, return_when=asyncio.FIRST_COMPLETED)
                if stop in done:
                    recv.cancel()
                    return
                try:
                    recv.result()
                except websockets.ConnectionClosed:
                    self.telemetry_closed += 1
                    return
                self.telemetry_counts[i] += 1

    # --- labs ---------------------------------------------------------------------------------

    async def lab_slot(self, slot: int) -> None:
        params = {"nproc": 2, "epochs": self.args.epochs, "samples": self.args.samples}
        while not self.stopping.is_set():
            doc = await self.call("runs", {"kind": "lab", "lab": "lab-03-ddp", "params": params})
            run = LabRun(id=doc["runs"][0]["id"])
            self.current[slot] = run.id
            if self.stopping.is_set():  # started as the load ended: the end's cancel may have missed it
                await self.call(f"runs/{run.id}/cancel", {})
            t0 = time.perf_counter()
            events = await self.follow(run)
            run.seconds = time.perf_counter() - t0
            self.verify(run, events)
            self.runs.append(run)
            self.current.pop(slot, None)

    async def follow(self, run: LabRun) -> list[dict[str, Any]]:
        """Every event of the run's stream until the server closes it at the run's end; a
        dropped socket resumes with ?after= as the browser does."""
        events: list[dict[str, Any]] = []
        while True:
            after = events[-1]["seq"] if events else -1
            url = f"{self.ws_base}runs/{run.id}/stream?after={after}&token={TOKEN}"
            try:
                async with websockets.connect(url, max_size=None) as ws:
                    async for message in ws:
                        events.extend(json.loads(message)["events"])
                    if ws.close_code == 1000:
                        return events
            except (websockets.ConnectionClosedError, OSError):
                pass
            run.reconnects += 1
            await asyncio.sleep(0.5)

    def verify(self, run: LabRun, events: list[dict[str, Any]]) -> None:
        """Whether nothing of the run was lost between its processes and the stream."""
        folder = self.data_dir / "runs" / run.id
        run.events = len(events)
        statuses = [e["run"]["status"] for e in events if e["type"] == "status"]
        run.status = statuses[-1] if statuses else "?"
        run.seq_ok = [e["seq"] for e in events] == list(range(len(events)))
        if not run.seq_ok:
            run.problems.append("the stream's seq numbers have a gap or repeat")
        if any(e["type"] == "truncated" for e in events):
            run.problems.append("the stream was truncated")
        streamed: dict[tuple[int, str], list[str]] = {}
        for e in events:
            if e["type"] == "log" and e["rank"] is not None:
                streamed.setdefault((e["rank"], e["stream"]), []).append(e["text"])
        run.log_lines = sum(len(v) for v in streamed.values())
        on_disk = rank_logs(folder)
        # A finished run must have its rank logs; one cancelled before torchrun started a rank has none.
        run.logs_ok = bool(on_disk) or (run.status != "succeeded" and not streamed)
        for key in sorted(set(on_disk) | set(streamed)):
            got, want = streamed.get(key, []), on_disk.get(key, [])
            same = got == want if run.status == "succeeded" else got == want[: len(got)]
            if not same:
                run.logs_ok = False
                run.problems.append(f"rank {key[0]} {key[1]}: {len(got)} lines streamed, {len(want)} in the file")
        metric_events: dict[int, int] = {}
        for e in events:
            if e["type"] == "metric":
                metric_events[e["rank"]] = metric_events.get(e["rank"], 0) + 1
        run.metrics_ok = True
        for path in sorted((folder / "metrics").glob("rank*.jsonl")):
            rank = int(path.stem.removeprefix("rank"))
            lines = [ln for ln in path.read_text().splitlines() if ln.strip() and '"check"' not in ln]
            if metric_events.get(rank, 0) != len(lines):
                run.metrics_ok = False
                run.problems.append(f"rank {rank}: {metric_events.get(rank, 0)} metric events, {len(lines)} lines")

    # --- the server's CPU and memory ----------------------------------------------------------

    async def sample(self, pid: int, t0: float) -> None:
        proc = psutil.Process(pid)
        proc.cpu_percent(None)
        while not self.stopping.is_set():
            await asyncio.sleep(1.0)
            with proc.oneshot():
                cpu = proc.cpu_percent(None)
                rss = proc.memory_info().rss / 2**20
            self.samples.append((time.perf_counter() - t0, cpu, rss, len(proc.children(recursive=True))))
            self.load.append(os.getloadavg()[0])

    async def loop_lag(self) -> None:
        """How late this load generator's own event loop wakes (ms): on a shared machine the
        clients are starved too, and their lateness counts in every latency above."""
        while not self.stopping.is_set():
            t = time.perf_counter()
            await asyncio.sleep(0.1)
            self.lag_ms.append((time.perf_counter() - t - 0.1) * 1000)

    # --- the whole bench ----------------------------------------------------------------------

    async def run(self, pid: int) -> None:
        self.rest = AsyncHTTPClient(force_instance=True, max_clients=self.args.clients)
        self.control = AsyncHTTPClient(force_instance=True, max_clients=8)
        await self.call("kernels/compile", COMPILE)  # the compile worker started, the kernel cached
        await self.call("course/catalog")
        slots = [asyncio.ensure_future(self.lab_slot(s)) for s in range(self.args.labs)]
        while len(self.current) < self.args.labs:  # the labs are there before the clients start
            await asyncio.sleep(0.1)
        t0 = self.t0 = time.perf_counter()
        until = t0 + self.args.duration
        sampler = asyncio.ensure_future(self.sample(pid, t0))
        lag = asyncio.ensure_future(self.loop_lag())
        sockets = [asyncio.ensure_future(self.telemetry(i)) for i in range(self.args.sockets)]
        await asyncio.gather(*(self.rest_client(k, until) for k in range(self.args.clients)))
        self.elapsed = time.perf_counter() - t0
        self.stopping.set()
        await asyncio.gather(*sockets, sampler, lag)
        for run_id in list(self.current.values()):
            with contextlib.suppress(HTTPClientError):  # it ended meanwhile
                await self.call(f"runs/{run_id}/cancel", {})
        await asyncio.gather(*slots)
        await asyncio.sleep(2.0)
        self.leaked_up = leftover_processes(self.data_dir)


def rank_logs(folder: Path) -> dict[tuple[int, str], list[str]]:
    """Each rank's stdout and stderr lines as torchrun's --log-dir kept them (last attempt)."""
    logs: dict[tuple[int, str], list[str]] = {}
    for attempt in sorted((folder / "torchrun").glob("*/attempt_*")):
        for rank_dir in attempt.iterdir():
            if not rank_dir.name.isdigit():
                continue
            for stream in ("stdout", "stderr"):
                path = rank_dir / f"{stream}.log"
                text = path.read_bytes().decode(errors="replace") if path.is_file() else ""
                lines = text.split("\n")
                logs[(int(rank_dir.name), stream)] = lines[:-1] if lines and lines[-1] == "" else lines
    return logs


def leftover_processes(data_dir: Path) -> list[str]:
    """Processes started for a run of this bench that are still alive."""
    marker = str(data_dir)
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if p.environ().get(RUN_DIR_ENV, "").startswith(marker):
                found.append(f"{p.pid} {' '.join(p.info['cmdline'] or [])[:120]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def pct(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def slope_mib_per_min(samples: list[tuple[float, float, float, int]], window_s: float) -> float:
    """Least-squares slope of RSS over the last ``window_s`` seconds, in MiB per minute."""
    end = samples[-1][0]
    pts = [(t, rss) for t, _, rss, _ in samples if t >= end - window_s]
    n = len(pts)
    mt = sum(t for t, _ in pts) / n
    mr = sum(r for _, r in pts) / n
    var = sum((t - mt) ** 2 for t, _ in pts)
    return sum((t - mt) * (r - mr) for t, r in pts) / var * 60 if var else 0.0


def window_p99(bench: Bench, width_s: float) -> list[float]:
    """p99 latency (ms) of all routes together in each ``width_s`` window, in order."""
    by_window: dict[int, list[float]] = {}
    for st in bench.stats.values():
        for due, ms in zip(st.due_s, st.latencies_ms, strict=True):
            by_window.setdefault(int(due // width_s), []).append(ms)
    return [round(pct(v, 99), 1) for _, v in sorted(by_window.items()) if len(v) >= 100]


def summary(bench: Bench, leaked_after_stop: list[str], window_s: float) -> dict[str, Any]:
    routes = {
        label: {
            "requests": len(s.latencies_ms),
            "errors": s.errors,
            "p50_ms": round(pct(s.latencies_ms, 50), 1),
            "p99_ms": round(pct(s.latencies_ms, 99), 1),
            "over_100ms_pct": round(100 * sum(x > 100 for x in s.latencies_ms) / max(1, len(s.latencies_ms)), 2),
            "first_errors": s.first_errors,
        }
        for label, s in bench.stats.items()
    }
    everything = [x for s in bench.stats.values() for x in s.latencies_ms]
    windows = window_p99(bench, 10.0)
    cpu = [c for _, c, _, _ in bench.samples]
    rss = [r for _, _, r, _ in bench.samples]
    counts = bench.telemetry_counts
    return {
        "duration_s": round(bench.elapsed, 1),
        "clients": bench.args.clients,
        "per_client_hz": bench.args.per_client_hz,
        "requests": len(everything),
        "requests_per_s": round(len(everything) / bench.elapsed, 1),
        "errors": sum(s.errors for s in bench.stats.values()),
        "all_p50_ms": round(pct(everything, 50), 1),
        "all_p99_ms": round(pct(everything, 99), 1),
        "all_over_100ms_pct": round(100 * sum(x > 100 for x in everything) / max(1, len(everything)), 2),
        "p99_per_10s_window_ms": {
            "min": min(windows),
            "median": statistics.median(windows),
            "max": max(windows),
            "windows": windows,
        },
        "client_loop_lag_ms": {
            "p50": round(pct(bench.lag_ms, 50), 1),
            "p99": round(pct(bench.lag_ms, 99), 1),
            "max": round(max(bench.lag_ms), 1),
        },
        "routes": routes,
        "server_cpu_pct_of_one_core": {
            "mean": round(statistics.fmean(cpu), 1),
            "p50": round(pct(cpu, 50), 1),
            "max": round(max(cpu), 1),
        },
        "server_rss_mib": {"start": round(rss[0], 1), "end": round(rss[-1], 1), "max": round(max(rss), 1)},
        "machine_load_avg_1min": {"mean": round(statistics.fmean(bench.load), 2), "max": round(max(bench.load), 2)},
        "rss_slope_window_s": window_s,
        "rss_slope_mib_per_min": round(slope_mib_per_min(bench.samples, window_s), 2),
        "samples": [(round(t, 1), round(c, 1), round(r, 1), n) for t, c, r, n in bench.samples],
        "telemetry": {
            "sockets": len(counts),
            "hz": bench.args.telemetry_hz,
            "messages_per_socket_min": min(counts),
            "messages_per_socket_median": statistics.median(counts),
            "messages_per_socket_max": max(counts),
            "per_socket": counts,
            "closed_by_server": bench.telemetry_closed,
        },
        "lab_runs": [run.__dict__ for run in bench.runs],
        "lab_runs_complete": sum(r.seq_ok and r.logs_ok and r.metrics_ok for r in bench.runs),
        "leaked_processes_server_up": bench.leaked_up,
        "leaked_processes_after_stop": leaked_after_stop,
    }


def print_markdown(s: dict[str, Any]) -> None:
    print(f"Machine: {machine()}")
    print(
        f"{s['duration_s']:.0f} s; {s['clients']} REST clients at {s['per_client_hz']:g} Hz each "
        f"({s['requests_per_s']} requests/s), {s['telemetry']['sockets']} telemetry sockets at "
        f"{s['telemetry']['hz']:g} Hz, 2 labs running\n"
    )
    print("| route | requests | errors | p50 | p99 | over 100 ms |")
    print("|---|---|---|---|---|---|")
    for label, r in s["routes"].items():
        print(
            f"| {label} | {r['requests']} | {r['errors']} | {r['p50_ms']} ms | {r['p99_ms']} ms | "
            f"{r['over_100ms_pct']}% |"
        )
    print(
        f"| **all** | {s['requests']} | {s['errors']} | {s['all_p50_ms']} ms | {s['all_p99_ms']} ms | "
        f"{s['all_over_100ms_pct']}% |\n"
    )
    w, lag = s["p99_per_10s_window_ms"], s["client_loop_lag_ms"]
    print(f"p99 of each 10 s window: min {w['min']} ms, median {w['median']} ms, max {w['max']} ms")
    print(f"the load generator's own loop wakes late by: p50 {lag['p50']} ms, p99 {lag['p99']} ms, max {lag['max']} ms")
    c, m, t = s["server_cpu_pct_of_one_core"], s["server_rss_mib"], s["telemetry"]
    print(f"server CPU (% of one core): mean {c['mean']}, median {c['p50']}, max {c['max']}")
    load = s["machine_load_avg_1min"]
    print(f"machine 1-minute load average: mean {load['mean']}, max {load['max']} (2 cores)")
    print(f"server RSS: {m['start']} MiB at the start, {m['end']} at the end, max {m['max']}")
    print(f"RSS slope over the last {s['rss_slope_window_s']:.0f} s: {s['rss_slope_mib_per_min']} MiB/min")
    print(
        f"telemetry messages per socket: min {t['messages_per_socket_min']}, median "
        f"{t['messages_per_socket_median']}, max {t['messages_per_socket_max']}; closed by the server: "
        f"{t['closed_by_server']}"
    )
    runs = s["lab_runs"]
    statuses: dict[str, int] = {}
    for r in runs:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(
        f"lab runs: {len(runs)} ({', '.join(f'{n} {k}' for k, n in sorted(statuses.items()))}), "
        f"complete (seq, logs, metrics): {s['lab_runs_complete']}/{len(runs)}; "
        f"log lines {sum(r['log_lines'] for r in runs)}, events {sum(r['events'] for r in runs)}, "
        f"stream reconnects {sum(r['reconnects'] for r in runs)}"
    )
    for r in runs:
        for problem in r["problems"]:
            print(f"  {r['id']} ({r['status']}): {problem}")
    print(
        f"processes of the runs left: {len(s['leaked_processes_server_up'])} with the server up, "
        f"{len(s['leaked_processes_after_stop'])} after it stopped"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=300.0, help="seconds of load")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--per-client-hz", type=float, default=2.0, help="requests per second of each REST client")
    ap.add_argument("--sockets", type=int, default=20, help="telemetry websockets")
    ap.add_argument("--telemetry-hz", type=float, default=10.0)
    ap.add_argument("--labs", type=int, default=2, help="lab-03-ddp runs kept going")
    ap.add_argument("--epochs", type=int, default=50, help="lab-03-ddp --epochs (how long one run lasts)")
    ap.add_argument("--samples", type=int, default=16384, help="lab-03-ddp --samples")
    ap.add_argument("--json", type=Path, help="also write the figures (with every sample) to this file")
    args = ap.parse_args()
    window_s = min(120.0, args.duration / 2)
    with tempfile.TemporaryDirectory(prefix="gpudojo-load-") as tmp:
        data_dir = Path(tmp) / "data"
        extra = [f"--GPUDojo.data_dir={data_dir}"]
        with jupyter_server(replay="2gpu-h100-nvlink", extra=extra) as (proc, port):
            bench = Bench(port, data_dir, args)
            asyncio.run(bench.run(proc.pid))
        time.sleep(1.0)
        result = summary(bench, leftover_processes(data_dir), window_s)
    print_markdown(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
