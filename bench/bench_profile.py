"""Profiles: server analysis and windowed queries against Holistic Trace Analysis, and the
browser's first paint against the floor any in-browser viewer pays, on traces of 100k and 1M
events, in one run.

Traces (copied into the server's root): "cpu", a real torch.profiler CPU trace of an MLP
training loop with with_stack and record_shapes, every step recorded (not copies of one step:
real_profile_traces.py, about 430 events a step, cached in bench/.cache); "gpu", the synthetic
Kineto-shaped stand-in (tests/python/profile_traces.py ``make_gpu_standin``, written into
--cache-dir: kernels on two streams, runtime calls, flows; made-up figures, no GPU here) with as
many steps as make N events. An "event" is an entry of traceEvents (complete spans, flows,
metadata).

On the cpu traces, in the same run: the warm worker's peak RSS for the first analysis (its
VmHWM, which the worker resets as each request is sent), the one-shot CLI ``gpudojo profile
summary`` from a cold data dir (seconds, peak RSS by wait4), and the parse floors, ``json.load``
and ``orjson.loads`` of the whole file in a child of their own, with their ratios to the first
analysis. Past FLOOR_MAX_BYTES the floors are not run (json.load peaks at some 5.5 times the
file's size and orjson at 7: a 4 GB trace would need more memory than the machine has) and the
trace's events are counted by their "ph" keys, read a piece at a time, not by orjson.

Server side: POST profile/analyze, first call (the analysis, in the server's warm worker: the
median of --firsts never-seen copies, each synced to disk before it is analysed) and second call
(cached); GET profile/summary (cached, median of --repeats); the analysis child's
peak RSS (the one-shot ``python -m gpudojo.worker.profile_analyze OUT SRC``, waited for with
wait4); GET profile/window at px=1200, median of --repeats, for the whole trace and a 1% zoom.

HTA anchor: ``TraceAnalysis(trace_dir=...)`` on a folder holding the same file, then
get_temporal_breakdown, get_gpu_kernel_breakdown and get_cuda_kernel_launch_stats, in a child
process of its own (this script with --hta-child), timed per phase, with its peak RSS; an
error (a CPU-only trace has no kernels) is caught and its text recorded.

Browser side (Debian Chromium through the repo's playwright-core, headless, a fresh browser per
measurement, profile_browser.mjs): gpudojo's command ``gpudojo:open-profile`` on the trace
whose analysis is cached, to the frame after the timeline canvas is drawn and the step chart is
in the page, then wheel zooms to the repainted window; and the JSON floor: the same file
fetched from a local http server and JSON.parse-d in a blank page (Perfetto UI itself is not
available on this machine: see RESULTS.md). chrome://tracing is probed in the same Chromium.

    cd bench && ../.venv/bin/python bench_profile.py [--sizes 100000,1000000]
"""

from __future__ import annotations

import argparse
import http.server
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from gpudojo.worker.pipe import peak_rss
from real_profile_traces import cached_trace
from server import REPO, TOKEN, api, free_port, jupyter_server, machine, run_browser, size_label

HERE = Path(__file__).resolve().parent
TESTS = REPO / "tests" / "python"
SHAPES = ("cpu", "gpu")
MIB = 1024**2


def median_of(repeats: int, call) -> tuple[float, dict, int]:
    """The median seconds of ``repeats`` calls after one warm-up call, and the last answer."""
    call()
    times, answer, size = [], {}, 0
    for _ in range(repeats):
        seconds, answer, size = call()
        times.append(seconds)
    return statistics.median(times), answer, size


# --- children with a peak RSS -----------------------------------------------------------------

# Started from a small launcher, not forked from this process: a forked child's ru_maxrss counts
# the parent's pages it held until exec. The launcher kills the child after a time limit.
LAUNCH = """
import os, signal, sys, time
limit = float(sys.argv[1])
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
start = time.monotonic()
while True:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() - start > limit:
        os.kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
        break
    time.sleep(0.02)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, time.monotonic() - start)
"""


def spawn_measured(argv: list[str], limit_s: float) -> tuple[int, int, float]:
    """Exit code, peak RSS (bytes) and seconds of ``argv`` (killed after ``limit_s``: code -9)."""
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, str(limit_s), *argv], capture_output=True, text=True, check=True
    )
    code, maxrss_kib, seconds = done.stdout.split()
    return int(code), int(maxrss_kib) * 1024, float(seconds)


def gpudojo_child(src: Path) -> dict:
    """The one-shot analysis child, run as the server runs it: seconds and peak RSS."""
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "gpudojo.worker.profile_analyze", str(Path(out) / "analysis"), str(src)]
        code, rss, seconds = spawn_measured(argv, 1200)
    assert code == 0, f"profile_analyze exited {code} on {src}"
    return {"seconds": seconds, "rss": rss}


def cli_child(src: Path) -> dict:
    """``gpudojo profile summary SRC`` from a cold start (a fresh data dir: nothing cached), as
    a user types it over ssh: seconds and the largest process's peak RSS (wait4 takes the
    maximum over the command and the analysis worker it waits for). A trace past the server's
    size cap is refused (exit code 2): the code is kept for the report."""
    with tempfile.TemporaryDirectory() as data:
        argv = [sys.executable, "-m", "gpudojo.cli", "profile", "summary", "--data-dir", data, str(src)]
        code, rss, seconds = spawn_measured(argv, 1200)
    assert code in (0, 2), f"gpudojo profile summary exited {code} on {src}"
    return {"seconds": seconds, "rss": rss, "code": code}


FLOOR = """
import gc, json, sys, time
import orjson
path, how = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
with open(path, "rb") as f:
    doc = json.load(f) if how == "json.load" else orjson.loads(f.read())
print(time.perf_counter() - t0, len(doc["traceEvents"]))
"""


# Above this size the parse floors are not run: json.load took 2,174 MiB and orjson 2,807 MiB for
# 395 MB (5.5x and 7x the file), past the 24 GiB of the bench's machine at 10M events (3.9 GB).
FLOOR_MAX_BYTES = 2 * 1000**3


def parse_floor(src: Path, how: str) -> dict:
    """Seconds for ``json.load`` or ``orjson.loads`` of the whole file alone, in a child of its
    own (peak RSS by wait4): what any reader that builds the events as objects pays first."""
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, "1200", sys.executable, "-c", FLOOR, str(src), how],
        capture_output=True,
        text=True,
        check=True,
    )
    code, maxrss_kib, _ = done.stdout.split()
    assert int(code) == 0, f"{how} exited {code}"
    timed = subprocess.run(
        [sys.executable, "-c", FLOOR, str(src), how], capture_output=True, text=True, check=True
    ).stdout.split()
    return {"seconds": float(timed[0]), "events": int(timed[1]), "rss": int(maxrss_kib) * 1024}


def worker_pid(server_pid: int) -> int | None:
    """The server's warm profile-analysis worker (a child running profile_analyze --serve)."""
    import psutil

    for child in psutil.Process(server_pid).children(recursive=True):
        try:
            if "gpudojo.worker.profile_analyze" in child.cmdline():
                return child.pid
        except psutil.Error:
            continue
    return None


def hta_child_main(trace_dir: str, out: str) -> None:
    """In the HTA child: load the folder and run the three analyses, timing each; errors caught."""
    import logging
    import traceback
    import warnings

    warnings.simplefilter("ignore")
    result: dict = {"phases": {}, "errors": {}}

    def timed(name: str, call) -> object:
        t0 = time.perf_counter()
        try:
            return call()
        except Exception as err:  # recorded, not raised: the anchor's failure is a result
            result["errors"][name] = f"{type(err).__name__}: {err}"
            result["traceback"] = traceback.format_exc(limit=4)[-1500:]
            return None
        finally:
            result["phases"][name] = time.perf_counter() - t0

    def rows(value: object) -> int | None:
        """Rows of what an HTA call returned (a DataFrame, a tuple of them, or one per rank)."""
        if isinstance(value, tuple | list):
            return sum(rows(v) or 0 for v in value)
        if isinstance(value, dict):
            return sum(rows(v) or 0 for v in value.values())
        return len(value) if hasattr(value, "__len__") else None

    def save() -> None:
        Path(out).write_text(json.dumps(result))

    try:
        ta = timed("import", lambda: __import__("hta.trace_analysis", fromlist=["TraceAnalysis"]).TraceAnalysis)
        logging.getLogger("hta").setLevel(logging.ERROR)
        analysis = ta and timed("load", lambda: ta(trace_dir=trace_dir))
        save()
        calls = {
            "get_temporal_breakdown": lambda: analysis.get_temporal_breakdown(visualize=False),
            "get_gpu_kernel_breakdown": lambda: analysis.get_gpu_kernel_breakdown(visualize=False),
            "get_cuda_kernel_launch_stats": lambda: analysis.get_cuda_kernel_launch_stats(visualize=False),
        }
        for name, call in calls.items() if analysis is not None else ():
            result.setdefault("rows", {})[name] = rows(timed(name, call))
            save()
    finally:
        save()


def hta_anchor(src: Path, limit_s: float) -> dict:
    """HTA on a folder holding ``src`` as rank 0, in its own process: phases, errors, peak RSS."""
    with tempfile.TemporaryDirectory(prefix="hta-bench-") as tmp:
        folder = Path(tmp) / "trace"
        folder.mkdir()
        (folder / "rank0.trace.json").symlink_to(src.resolve())
        out = Path(tmp) / "result.json"
        argv = [sys.executable, str(HERE / "bench_profile.py"), "--hta-child", str(folder), str(out)]
        code, rss, seconds = spawn_measured(argv, limit_s)
        result = json.loads(out.read_text()) if out.is_file() else {"phases": {}, "errors": {}}
    result.update(code=code, rss=rss, seconds=seconds, timed_out=code == -9, limit_s=limit_s)
    return result


# --- traces ----------------------------------------------------------------------------------


def make_traces(cache: Path, sizes: list[int], shapes: list[str]) -> dict[tuple[str, int], Path]:
    """The bench's traces by (shape, events) for the shapes asked for, made once into ``cache``."""
    sys.path.insert(0, str(TESTS))
    from profile_traces import make_gpu_standin

    cache.mkdir(parents=True, exist_ok=True)
    one_step = make_gpu_standin(cache / "gpu-1step.json", steps=1)
    per_step = len(json.loads(one_step.read_text())["traceEvents"]) - 3  # three metadata events
    made = {}
    for n in sizes:
        t0 = time.perf_counter()
        # cpu: a real trace of that many steps, recorded once into bench/.cache (its own process)
        if "cpu" in shapes:
            made[("cpu", n)] = cached_trace(n)
        if "gpu" in shapes:
            gpu = made[("gpu", n)] = cache / f"gpu-{size_label(n)}.json"
            if not gpu.is_file():
                make_gpu_standin(gpu.with_suffix(".tmp"), steps=math.ceil(n / per_step)).replace(gpu)
        print(f"{size_label(n)}: traces ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return made


def count_events(path: Path) -> int:
    """The entries of traceEvents: by orjson, or past FLOOR_MAX_BYTES by counting the '"ph":'
    keys a piece at a time (each event has one; torch.profiler writes no space before the ':'
    and no other key of that name; in a string the quotes would be escaped)."""
    if path.stat().st_size <= FLOOR_MAX_BYTES:
        import orjson

        return len(orjson.loads(path.read_bytes())["traceEvents"])
    key, count, tail = b'"ph":', 0, b""
    with path.open("rb") as f:
        while piece := f.read(64 << 20):
            both = tail + piece
            count += both.count(key)
            tail = both[-(len(key) - 1) :]
            count -= tail.count(key)  # counted again with the next piece
    return count + tail.count(key)


# --- the floor's page ------------------------------------------------------------------------


def file_server(folder: Path) -> tuple[http.server.HTTPServer, int]:
    """A local http server for the JSON floor: a blank page and the trace files."""
    page = b"<!doctype html><html><head><meta charset='utf-8'><title>json floor</title></head><body></body></html>"

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = urllib.parse.unquote(self.path.split("?", 1)[0])
            if path in ("/", "/index.html"):
                return self._send(page, "text/html")
            file = folder / Path(path).name
            if path.startswith("/trace/") and file.is_file():
                return self._send(file.read_bytes(), "application/json")
            self.send_error(404)

    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, port


def browser(jobs: list[dict], zooms: int, timeout_s: float) -> list[dict]:
    return run_browser("profile_browser.mjs", {"zooms": zooms, "timeoutMs": timeout_s * 1000, "jobs": jobs})


# --- the run ---------------------------------------------------------------------------------


def measure_server(
    port: int, root: Path, key: tuple[str, int], src: Path, args: argparse.Namespace, server_pid: int
) -> dict:
    shape, n = key
    name = f"profile-{shape}-{size_label(n)}.json"
    load = os.getloadavg()[0]
    firsts: list[tuple[float, dict, int | None]] = []  # (POST seconds, reply, worker peak) per copy
    try:
        # --firsts never-seen copies of the trace, one after the other (each a new name: not
        # cached), the last one under `name`; each written out to disk (sync) before it is
        # analysed, so that the kernel's writeback of a file copied a moment ago does not run
        # beside the analysis (a trace a learner opens was written by the profiler before).
        for k in range(args.firsts):
            copy = name if k == args.firsts - 1 else f"profile-{shape}-{size_label(n)}-first{k}.json"
            shutil.copyfile(src, root / copy)
            os.sync()
            seconds, reply, _ = api(port, "profile/analyze", {"path": copy})
            # The worker resets its peak (VmHWM) as each request is sent: this analysis's peak.
            pid = worker_pid(server_pid)
            firsts.append((seconds, reply, peak_rss(pid) if pid else None))
            if copy != name:
                (root / copy).unlink()
        first = firsts[-1][1]
    except urllib.error.HTTPError as err:  # past the server's size cap (413): the child still analyses it
        refused = f"{err.code}: {err.read().decode(errors='replace')[:300]}"
        for extra in root.glob(f"profile-{shape}-{size_label(n)}-first*.json"):
            extra.unlink()
        if not (root / name).exists():
            shutil.copyfile(src, root / name)
        print(f"server {shape} {size_label(n)}: POST profile/analyze refused ({refused})", file=sys.stderr)
        return {
            "refused": refused,
            "load": load,
            "shape": shape,
            "label": size_label(n),
            "trace_events": count_events(src),
            "mb": src.stat().st_size / 1e6,
            "name": name,
            "child": gpudojo_child(root / name),
            **({"cli": cli_child(root / name)} if shape == "cpu" else {}),
        }
    trace = urllib.parse.quote(f"file:{name}", safe="")
    peaks = [peak for _, _, peak in firsts if peak is not None]
    worker_peak = max(peaks) if peaks else None
    first_ms = sorted(reply["analysis_ms"] for _, reply, _ in firsts)
    second_s, second, _ = api(port, "profile/analyze", {"path": name})
    assert not first["cached"] and second["cached"], (first["cached"], second["cached"])
    summary_s, summary, summary_size = median_of(args.repeats, lambda: api(port, f"profile/summary?trace={trace}"))
    assert summary["cached"] and summary["events"] == first["events"]
    t0, t1 = first["t_start_us"], first["t_end_us"]
    mid, span = (t0 + t1) / 2, (t1 - t0) / 100
    windows = {}
    for part, extra in (("full", ""), ("zoom", f"&t0={mid - span / 2}&t1={mid + span / 2}")):
        query = f"profile/window?trace={trace}&px=1200{extra}"
        seconds, doc, size = median_of(args.repeats, lambda q=query: api(port, q))
        windows[part] = {"s": seconds, "bytes": size, "spans": sum(len(lane["spans"]) for lane in doc["lanes"])}
    child = gpudojo_child(root / name)
    extra = {}
    if shape == "cpu":
        big = src.stat().st_size > FLOOR_MAX_BYTES
        extra = {
            "cli": cli_child(root / name),
            "floors": {} if big else {how: parse_floor(src, how) for how in ("json.load", "orjson")},
        }
    return {
        **extra,
        "load": load,
        "worker_peak": worker_peak,
        "worker_peaks": [peak for _, _, peak in firsts],
        "shape": shape,
        "label": size_label(n),
        "trace_events": count_events(src),
        "complete_events": first["events"],
        "mb": src.stat().st_size / 1e6,
        "name": name,
        "first_s": statistics.median(seconds for seconds, _, _ in firsts),
        "first_analysis_ms": statistics.median(first_ms),
        "first_analysis_ms_each": first_ms,
        "second_s": second_s,
        "summary_s": summary_s,
        "summary_kib": summary_size / 1024,
        "hta_used": first.get("hta", []),
        "notes": first.get("notes", []),
        "mode": first["mode"]["label"],
        "steps": len(first["steps"]),
        "lanes": len(first["lanes"]),
        "windows": windows,
        "child": child,
    }


def main() -> None:
    if sys.argv[1:2] == ["--hta-child"]:
        return hta_child_main(sys.argv[2], sys.argv[3])
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000", help="trace events per trace")
    parser.add_argument("--shapes", default="cpu,gpu")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "gpudojo-bench-traces",
        help="where generated traces are kept between runs",
    )
    parser.add_argument("--repeats", type=int, default=20, help="window and summary queries per measurement")
    parser.add_argument(
        "--firsts", type=int, default=3, help="never-seen copies analysed per trace (the first call's median)"
    )
    parser.add_argument("--zooms", type=int, default=5, help="wheel zooms per gpudojo browser measurement")
    parser.add_argument("--hta-timeout", type=float, default=900, help="seconds before an HTA child is stopped")
    parser.add_argument("--no-hta", action="store_true")
    parser.add_argument("--browser-timeout", type=float, default=300, help="seconds for one view to paint")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--viewers", default="gpudojo,json_floor,chrome_tracing", help="browser measurements to run")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = [s for s in args.shapes.split(",") if s in SHAPES]
    started = time.time()
    load_before = os.getloadavg()
    traces = make_traces(args.cache_dir, sizes, shapes)

    server_rows, hta_rows, browser_rows = [], [], []
    with jupyter_server(
        extra=["--LabApp.expose_app_in_browser=True", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    ) as (proc, port):
        root = Path(next(a for a in proc.args if a.startswith("--ServerApp.root_dir=")).split("=", 1)[1])
        # A user opens a profile after the server has started its analysis worker: warm it.
        shutil.copyfile(args.cache_dir / "gpu-1step.json", root / "warm.json")
        api(port, "profile/analyze", {"path": "warm.json"})
        for n in sizes:
            for shape in shapes:
                row = measure_server(port, root, (shape, n), traces[(shape, n)], args, proc.pid)
                server_rows.append(row)
                if "first_s" in row:
                    print(f"server {shape} {size_label(n)}: {row['first_s']:.2f} s first analysis", file=sys.stderr)
                if not args.no_hta:
                    hta = hta_anchor(traces[(shape, n)], args.hta_timeout)
                    hta_rows.append({"shape": shape, "label": size_label(n), **hta})
                    print(f"hta {shape} {size_label(n)}: {hta['seconds']:.1f} s, code {hta['code']}", file=sys.stderr)

        if not args.no_browser:
            viewers = args.viewers.split(",")
            floor, fport = file_server(root)
            jobs = []
            if "chrome_tracing" in viewers:
                jobs.append({"viewer": "chrome_tracing", "label": "-", "shape": "-"})
            for n in sizes:
                for shape in shapes:
                    name = f"profile-{shape}-{size_label(n)}.json"
                    if "gpudojo" in viewers:
                        jobs.append(
                            {
                                "viewer": "gpudojo",
                                "label": size_label(n),
                                "shape": shape,
                                "lab": f"http://127.0.0.1:{port}",
                                "token": TOKEN,
                                "trace": f"file:{name}",
                            }
                        )
                    if "json_floor" in viewers:
                        jobs.append(
                            {
                                "viewer": "json_floor",
                                "label": size_label(n),
                                "shape": shape,
                                "page": f"http://127.0.0.1:{fport}/index.html",
                                "file": f"/trace/{name}",
                            }
                        )
            browser_rows = browser(jobs, args.zooms, args.browser_timeout)
            floor.shutdown()
    report(server_rows, hta_rows, browser_rows, args, started, load_before)


# --- the report ------------------------------------------------------------------------------


def hta_cell(h: dict) -> str:
    if h["timed_out"]:
        done = ", ".join(f"{k} {v:.1f} s" for k, v in h["phases"].items())
        return f"stopped after {h['limit_s']:.0f} s ({done or 'nothing finished'})"
    if h["errors"]:
        first = next(iter(h["errors"].items()))
        return f"failed in {first[0]}: {first[1][:160]}"
    total = sum(v for k, v in h["phases"].items() if k != "import")
    return f"{total:.1f} s"


def report(
    server_rows: list[dict],
    hta_rows: list[dict],
    browser_rows: list[dict],
    args: argparse.Namespace,
    started: float,
    load_before: tuple[float, float, float],
) -> None:
    print(f"Machine: {machine()}")
    print(
        f"Load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; "
        f"run took {time.time() - started:.0f} s"
    )
    print(
        "\n| trace | events (complete) | JSON | POST analyze, first call | analysis_ms | second call (cached) | "
        "GET summary (cached) | analysis child peak RSS (time) | GET window, whole | GET window, 1% zoom |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    refused = [r for r in server_rows if "refused" in r]
    server_rows = [r for r in server_rows if "refused" not in r]
    for r in server_rows:
        w = r["windows"]
        print(
            f"| {r['shape']} {r['label']} | {r['trace_events']:,} ({r['complete_events']:,}) | {r['mb']:.0f} MB | "
            f"{r['first_s'] * 1000:,.0f} ms | {r['first_analysis_ms']:,.0f} ms | {r['second_s'] * 1000:.1f} ms | "
            f"{r['summary_s'] * 1000:.1f} ms ({r['summary_kib']:.0f} KiB) | "
            f"{r['child']['rss'] / MIB:,.0f} MiB ({r['child']['seconds']:.1f} s) | "
            f"{w['full']['s'] * 1000:.1f} ms ({w['full']['bytes'] / 1024:.0f} KiB, {w['full']['spans']} spans) | "
            f"{w['zoom']['s'] * 1000:.1f} ms ({w['zoom']['bytes'] / 1024:.0f} KiB, {w['zoom']['spans']} spans) |"
        )
    real = [r for r in server_rows if "floors" in r]
    if real:
        print(
            "\n| real CPU trace | events (complete) | JSON | load avg | first analysis (analysis_ms) | warm worker "
            "peak RSS | one-shot CLI (peak RSS) | json.load (peak RSS) | orjson.loads (peak RSS) | "
            "json.load / analysis | orjson / analysis |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in real:
            analysis_s = r["first_analysis_ms"] / 1000
            peak = f"{r['worker_peak'] / MIB:,.0f} MiB" if r["worker_peak"] else "-"
            floors = ["not run (file past FLOOR_MAX_BYTES)"] * 2 + ["-"] * 2
            if r["floors"]:
                j, o = r["floors"]["json.load"], r["floors"]["orjson"]
                floors = [
                    f"{j['seconds']:.2f} s ({j['rss'] / MIB:,.0f} MiB)",
                    f"{o['seconds']:.2f} s ({o['rss'] / MIB:,.0f} MiB)",
                    f"{j['seconds'] / analysis_s:.1f}x",
                    f"{o['seconds'] / analysis_s:.1f}x",
                ]
            each = ", ".join(f"{ms / 1000:.2f}" for ms in r["first_analysis_ms_each"])
            print(
                f"| {r['label']} | {r['trace_events']:,} ({r['complete_events']:,}) | {r['mb']:.0f} MB | "
                f"{r['load']:.2f} | {analysis_s:.2f} s (of {each}) | {peak} | {r['cli']['seconds']:.2f} s "
                f"({r['cli']['rss'] / MIB:,.0f} MiB) | {' | '.join(floors)} |"
            )
    for r in refused:
        cli = r.get("cli")
        cli_cell = ""
        if cli:
            cli_cell = f"; one-shot CLI exit {cli['code']} in {cli['seconds']:.2f} s ({cli['rss'] / MIB:,.0f} MiB)"
        print(
            f"- {r['shape']} {r['label']} ({r['trace_events']:,} events, {r['mb']:.0f} MB, load {r['load']:.2f}): "
            f"POST profile/analyze refused ({r['refused']}); the one-shot analysis child "
            f"{r['child']['seconds']:.1f} s, {r['child']['rss'] / MIB:,.0f} MiB peak RSS{cli_cell}"
        )
    for r in server_rows:
        used = ", ".join(r["hta_used"]) or "none"
        print(f"- {r['shape']} {r['label']}: {r['mode']}; {r['steps']} steps, {r['lanes']} lanes; HTA used: {used}")
        for note in r["notes"]:
            print(f"  - note: {note}")
    if hta_rows:
        print("\n| trace | HTA load + analyses | load | temporal | kernel breakdown | launch stats | peak RSS |")
        print("|---|---|---|---|---|---|---|")
        for h in hta_rows:
            p = h["phases"]
            phases = ("load", "get_temporal_breakdown", "get_gpu_kernel_breakdown", "get_cuda_kernel_launch_stats")
            cell = [f"{p[k]:.1f} s" if k in p else "-" for k in phases]
            print(f"| {h['shape']} {h['label']} | {hta_cell(h)} | {' | '.join(cell)} | {h['rss'] / MIB:,.0f} MiB |")
        for h in hta_rows:
            for phase, err in h["errors"].items():
                print(f"- HTA {h['shape']} {h['label']}, {phase}: {err}")
            if h.get("rows"):
                print(f"- HTA {h['shape']} {h['label']}, rows returned: {h['rows']}")
    if browser_rows:
        print(
            "\n| trace | viewer | command to painted view | wheel zoom to repainted window (median, max) | "
            "renderer JS heap after GC (added) | renderer RSS (added) |"
        )
        print("|---|---|---|---|---|---|")
        for r in browser_rows:
            if r["viewer"] == "chrome_tracing":
                continue
            where = f"{r['shape']} {r['label']}"
            if "error" in r:
                print(f"| {where} | {r['viewer']} | failed: {r['error']} | | | |")
                continue
            a, b = r["after"], r["before"]
            zoom = r.get("zoom")
            zcell = f"{zoom['median_ms']:.0f} ms, {zoom['max_ms']:.0f} ms (n={zoom['n']})" if zoom else "-"
            print(
                f"| {where} | {r['viewer']} | {r['paint_ms']:,.0f} ms | {zcell} | "
                f"{a['js_heap_used'] / MIB:.0f} MiB ({(a['js_heap_used'] - b['js_heap_used']) / MIB:+.0f}) | "
                f"{a['renderer_rss'] / MIB:.0f} MiB ({(a['renderer_rss'] - b['renderer_rss']) / MIB:+.0f}) |"
            )
        for r in browser_rows:
            if r["viewer"] == "chrome_tracing":
                print(f"- chrome://tracing: {r.get('result') or r.get('error')}")
    ratios(server_rows, hta_rows, browser_rows)
    print(json.dumps({"server": server_rows + refused, "hta": hta_rows, "browser": browser_rows}), file=sys.stderr)


def ratios(server_rows: list[dict], hta_rows: list[dict], browser_rows: list[dict]) -> None:
    print()
    hta = {(h["shape"], h["label"]): h for h in hta_rows}
    paints = {(r["viewer"], r["shape"], r["label"]): r for r in browser_rows if "paint_ms" in r}
    for r in server_rows:
        key = (r["shape"], r["label"])
        parts = []
        h = hta.get(key)
        if h and not h["errors"] and not h["timed_out"]:
            total = sum(v for k, v in h["phases"].items() if k != "import")
            parts.append(
                f"HTA / gpudojo analysis {total / r['first_s']:.1f}x ({total:.1f} s against {r['first_s']:.2f} s), "
                f"peak RSS {h['rss'] / r['child']['rss']:.1f}x"
            )
        elif h:
            parts.append("HTA / gpudojo analysis: no ratio (HTA " + hta_cell(h) + ")")
        ours, floor = paints.get(("gpudojo", *key)), paints.get(("json_floor", *key))
        if ours and floor:
            parts.append(
                f"JSON-parse floor / gpudojo first paint {floor['paint_ms'] / ours['paint_ms']:.1f}x "
                f"({floor['paint_ms']:,.0f} ms against {ours['paint_ms']:,.0f} ms)"
            )
        if parts:
            print(f"- {r['shape']} {r['label']}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
