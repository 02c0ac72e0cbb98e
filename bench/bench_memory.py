"""Memory timelines: server analysis and windowed queries, and the browser against
pytorch.org/memory_viz's own viewer (MemoryViz.js), on snapshots of 100k and 1M trace entries.

Server side (gpudojo only; memory_viz has no server): POST memory/analyze, first call (the
child-process analysis) and second call (cached); the analysis child's peak RSS (the same
``python -m gpudojo.worker.memory_analyze SRC OUT`` the server runs, waited for with wait4);
GET memory/window with px=1200 top=500, median of 20, for the whole capture and a 1% zoom.

Browser side (Debian Chromium through the repo's playwright-core, headless, one fresh browser
per measurement): time from the command to the painted timeline, hover-to-tooltip latency and
the renderer's memory, for gpudojo (JupyterLab, ``gpudojo:open-memory`` on the capture whose
analysis is cached) and for MemoryViz.js (a local page that imports it and loads the same
.pickle with its ``add_remote_files``, i.e. fetch, unpickle, process, draw the SVG).

MemoryViz.js is PyTorch's torch/utils/viz/MemoryViz.js, not part of this repository (nor of the
torch wheel): pass its path, with the files it imports beside it (the newest form imports
./process_alloc_data.js), and --memory-viz-commit to say which commit it is. The page serves
those files, and every CDN URL MemoryViz.js imports d3 from is mapped, through an import map,
to the same package and major version installed here, unbundled: the newest form's jsDelivr
URLs (d3@7, d3-axis@3, d3-scale@4, d3-zoom@3, d3-brush@3, ``/+esm``) to the repository's own
node_modules (d3@^7 is a devDependency); an older form's skypack URLs (d3@5, d3-axis@1, ...),
whose majors are not there, to an npm install of those versions into --d3-dir.

    cd bench && ../.venv/bin/python bench_memory.py --memory-viz /tmp/mvz/MemoryViz.js \
        --memory-viz-commit pytorch/pytorch@<sha>

Without --memory-viz only the server half and gpudojo's browser half run.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from server import REPO, TOKEN, api, free_port, jupyter_server, machine, run_browser, size_label

sys.path.insert(0, str(REPO / "tests" / "python"))
from memory_data import dump, make_snapshot, write_real_snapshot

HERE = Path(__file__).resolve().parent
# A CDN URL MemoryViz.js imports a package from: skypack's https://cdn.skypack.dev/d3@5 or
# jsDelivr's https://cdn.jsdelivr.net/npm/d3-axis@3/+esm; group 1 the package, group 2 its major.
CDN_URL = re.compile(r"^https://cdn\.(?:skypack\.dev|jsdelivr\.net/npm)/((?:@[\w.-]+/)?[\w.-]+)@(\d+)(?:/\+esm)?$")
IMPORT = re.compile(r"""\bfrom\s+["']([^"']+)["']""")


def viewer_imports(memory_viz: Path) -> tuple[dict[str, tuple[str, int]], list[Path]]:
    """What MemoryViz.js imports: each CDN URL with its package and major version, and the
    files it imports by relative path (which must sit beside it)."""
    cdn: dict[str, tuple[str, int]] = {}
    local: list[Path] = []
    for spec in IMPORT.findall(memory_viz.read_text(encoding="utf-8")):
        if spec.startswith("./"):
            local.append(memory_viz.parent / spec[2:])
            continue
        m = CDN_URL.match(spec)
        if not m:
            raise SystemExit(f"{memory_viz.name} imports {spec}, which this bench cannot map to an npm package")
        cdn[spec] = (m[1], int(m[2]))
    missing = [f.name for f in local if not f.is_file()]
    if missing:
        raise SystemExit(f"{memory_viz.name} imports {', '.join(missing)}: put it beside {memory_viz}")
    return cdn, local


def installed_major(modules: Path, name: str) -> int | None:
    meta = modules / name / "package.json"
    if not meta.is_file():
        return None
    return int(json.loads(meta.read_text())["version"].split(".")[0])


def d3_modules(cdn: dict[str, tuple[str, int]], d3_dir: Path) -> Path:
    """The node_modules holding every package MemoryViz.js imports at its major version: the
    repository's own where they all are (d3 7), else an npm install of them into ``d3_dir``."""
    if all(installed_major(REPO / "node_modules", n) == v for n, v in cdn.values()):
        return REPO / "node_modules"
    wanted = sorted({f"{n}@{v}" for n, v in cdn.values()})
    folder = d3_dir / "-".join(w.replace("/", "_") for w in wanted)
    modules = folder / "node_modules"
    if not all(installed_major(modules, n) == v for n, v in cdn.values()):
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "package.json").is_file():
            (folder / "package.json").write_text('{"name": "memory-viz-d3", "private": true}\n')
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", *wanted], cwd=folder, check=True)
    return modules


# Started from a small launcher, not forked from this process: a forked child's peak RSS
# (ru_maxrss) counts the parent's pages it held until exec, and this process holds snapshots.
LAUNCH = (
    "import os, sys; "
    "pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, "
    "file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]); "
    "_, status, usage = os.wait4(pid, 0); "
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)"
)


def child_peak_rss(src: Path, out: Path) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of the analysis child, run as the server runs it."""
    t0 = time.perf_counter()
    argv = [sys.executable, "-m", "gpudojo.worker.memory_analyze", str(src), str(out)]
    done = subprocess.run([sys.executable, "-c", LAUNCH, *argv], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - t0
    code, maxrss_kib = (int(x) for x in done.stdout.split())
    assert code == 0, (code, done.stderr)
    return seconds, maxrss_kib * 1024


# --- the anchor's page ----------------------------------------------------------------------


def _entry(pkg: Path) -> str:
    meta = json.loads((pkg / "package.json").read_text())
    entry = meta.get("module") or meta.get("jsnext:main") or meta.get("main") or "index.js"
    if not (pkg / entry).is_file() and (pkg / f"{entry}.js").is_file():
        entry += ".js"
    return entry


def _package_dir(modules: Path, importer: Path, name: str) -> Path | None:
    """Where Node would find package ``name`` imported from package folder ``importer``."""
    folder = importer
    while True:
        candidate = folder / "node_modules" / name
        if (candidate / "package.json").is_file():
            return candidate
        if folder == modules.parent or folder == folder.parent:
            return None
        folder = folder.parent


def import_map(modules: Path, cdn: dict[str, tuple[str, int]]) -> tuple[dict, list[str]]:
    """The import map for MemoryViz.js's CDN URLs and everything those packages import: each
    package's ES module under /node_modules/ (scopes for nested copies), walked from the
    imported packages through their dependencies; and the packages with their versions."""
    imports: dict[str, str] = {}
    scopes: dict[str, dict[str, str]] = {}
    served: dict[Path, str] = {}
    todo = [(modules.parent, name) for name, _ in cdn.values()]
    while todo:
        importer, name = todo.pop()
        pkg = _package_dir(modules, importer, name)
        if pkg is None:
            continue  # an optional or build-time dependency that is not installed
        rel = pkg.relative_to(modules).as_posix()
        url = f"/node_modules/{rel}/{_entry(pkg)}"
        holder = pkg.parents[len(Path(name).parts) - 1]  # the node_modules folder it is in
        if holder == modules:
            imports[name] = url
        else:
            scope = "/node_modules/" + holder.parent.relative_to(modules).as_posix() + "/"
            scopes.setdefault(scope, {})[name] = url
        if pkg in served:
            continue
        meta = json.loads((pkg / "package.json").read_text())
        served[pkg] = f"{meta['name']}@{meta['version']}"
        todo += [(pkg, dep) for dep in meta.get("dependencies", {})]
    for url, (name, _) in cdn.items():
        imports[url] = imports[name]
    roots = {name for name, _ in cdn.values()}
    versions = sorted(v for p, v in served.items() if p.relative_to(modules).as_posix() in roots)
    return {"imports": imports, "scopes": scopes}, versions


def provenance(memory_viz: Path, local: list[Path], commit: str, d3: list[str]) -> str:
    """Which MemoryViz.js was measured: the commit given, each file's sha256, the d3 served."""
    files = ", ".join(
        f"{f.name} sha256 {hashlib.sha256(f.read_bytes()).hexdigest()[:12]}" for f in [memory_viz, *local]
    )
    return f"{commit or 'commit not given'} ({files}); served with {', '.join(d3)}"


def anchor_server(
    memory_viz: Path, local: list[Path], modules: Path, imports: dict, snapshots: Path
) -> tuple[http.server.HTTPServer, int]:
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>memory_viz (local)</title>"
        f"<script type='importmap'>{json.dumps(imports)}</script></head><body>"
        "<script type='module'>import * as mvz from '/MemoryViz.js'; window.__mvz = mvz;</script>"
        "</body></html>"
    ).encode()
    beside = {f"/{f.name}": f for f in local}

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
            path = self.path.split("?", 1)[0]
            if path in ("/", "/index.html"):
                return self._send(page, "text/html")
            if path == "/MemoryViz.js":
                return self._send(memory_viz.read_bytes(), "text/javascript")
            if path in beside:  # ./process_alloc_data.js and the like
                return self._send(beside[path].read_bytes(), "text/javascript")
            if path.startswith("/snap/"):
                file = snapshots / Path(path).name
                if file.is_file():
                    return self._send(file.read_bytes(), "application/octet-stream")
            if path.startswith("/node_modules/") and ".." not in path:
                base = modules / path.removeprefix("/node_modules/")
                # d3 5's sources import "./src/band", without the extension skypack's bundler adds.
                for file in (base, Path(f"{base}.js"), base / "index.js"):
                    if file.is_file():
                        return self._send(file.read_bytes(), "text/javascript")
            self.send_error(404)

    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, port


def browser(jobs: list[dict], hovers: int, timeout_s: float) -> list[dict]:
    return run_browser("memory_browser.mjs", {"hovers": hovers, "timeoutMs": timeout_s * 1000, "jobs": jobs})


# --- the run ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--memory-viz", type=Path, help="PyTorch's torch/utils/viz/MemoryViz.js, the files it imports beside it"
    )
    parser.add_argument("--memory-viz-commit", default="", help="which commit of it (printed with the results)")
    parser.add_argument(
        "--d3-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "mvz-d3",
        help="npm folder for d3 majors the repository does not have (an older MemoryViz.js's d3 5)",
    )
    parser.add_argument("--sizes", default="100000,1000000", help="trace entries per snapshot")
    parser.add_argument(
        "--shape",
        choices=["real", "simple"],
        default="real",
        help="real: depth-20 shared stacks like a training job's snapshot (about 126 MB at 1M); simple: 2 frames",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "gpudojo-bench-snapshots",
        help="where generated snapshots are kept between runs",
    )
    parser.add_argument("--server-only-sizes", default="", help="sizes only analysed (e.g. 10000000), not drawn")
    parser.add_argument("--repeats", type=int, default=20, help="window queries per range")
    parser.add_argument("--hovers", type=int, default=15)
    parser.add_argument("--browser-timeout", type=float, default=300, help="seconds for one timeline to draw")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--viewers", default="gpudojo,memory_viz", help="browser measurements to run")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    anchor_setup = None
    if args.memory_viz and not args.no_browser:
        # Checked before any snapshot is made: a viewer missing a file fails in seconds.
        mvz = args.memory_viz.resolve()
        cdn, local = viewer_imports(mvz)
        modules = d3_modules(cdn, args.d3_dir)
        imports, d3 = import_map(modules, cdn)
        args.anchor = provenance(mvz, local, args.memory_viz_commit, d3)
        anchor_setup = (mvz, local, modules, imports)

    server_rows, browser_rows = [], []
    with jupyter_server(
        extra=["--LabApp.expose_app_in_browser=True", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    ) as (proc, port):
        root = Path(next(a for a in proc.args if a.startswith("--ServerApp.root_dir=")).split("=", 1)[1])
        files, cold_files = {}, {}
        every = sizes + [int(x) for x in args.server_only_sizes.split(",") if x]
        for n in every:
            t0 = time.perf_counter()
            files[n] = root / f"snapshot-{size_label(n)}.pickle"
            # Made once per shape and size (10M entries take minutes to write), then copied.
            made = args.cache_dir / f"{args.shape}-{size_label(n)}-seed1.pickle"
            if not made.is_file():
                args.cache_dir.mkdir(parents=True, exist_ok=True)
                if args.shape == "real":
                    write_real_snapshot(made.with_suffix(".tmp"), n, seed=1)
                else:
                    made.with_suffix(".tmp").write_bytes(dump(make_snapshot(n, seed=1)))
                made.with_suffix(".tmp").replace(made)
            shutil.copyfile(made, files[n])
            size = files[n].stat().st_size
            # The same bytes under another name: a file the server has never analysed, for
            # the cold "command to painted timeline" in the browser.
            cold_files[n] = root / f"snapshot-{size_label(n)}-cold.pickle"
            shutil.copyfile(files[n], cold_files[n])
            print(
                f"{size_label(n)}: {size / 1e6:.1f} MB pickle, made in {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
        # The server starts its analysis worker with it; a user opens a snapshot after that.
        warm = root / "warm.pickle"
        warm.write_bytes(dump(make_snapshot(1000, seed=2)))
        api(port, "memory/analyze", {"path": warm.name})

        for n in every:
            name = files[n].name
            cold_s, cold, _ = api(port, "memory/analyze", {"path": name})
            warm_s, warm, _ = api(port, "memory/analyze", {"path": name})
            assert not cold["cached"] and warm["cached"], (cold["cached"], warm["cached"])
            with tempfile.TemporaryDirectory() as out:
                child_s, child_rss = child_peak_rss(files[n], Path(out) / "analysis")
            t0, t1 = cold["t_start_us"], cold["t_end_us"]
            mid, span = (t0 + t1) / 2, (t1 - t0) / 100
            ranges = {"full": "", "zoom": f"&t0={mid - span / 2}&t1={mid + span / 2}"}
            windows = {}
            for key, extra in ranges.items():
                query = f"memory/window?capture=file:{name}&px=1200&top=500{extra}"
                api(port, query)  # warm
                times = []
                for _ in range(args.repeats):
                    s, doc, size = api(port, query)
                    times.append(s)
                windows[key] = (statistics.median(times), size, len(doc["bands"]))
            server_rows.append(
                {
                    "entries": cold["entries"],
                    "allocations": cold["allocations"],
                    "pickle_mb": files[n].stat().st_size / 1e6,
                    "cold_s": cold_s,
                    "cold_analysis_ms": cold["analysis_ms"],
                    "warm_s": warm_s,
                    "child_s": child_s,
                    "child_rss": child_rss,
                    "windows": windows,
                    "label": size_label(n),
                }
            )

        if not args.no_browser:
            jobs = []
            anchor = None
            if anchor_setup:
                anchor, aport = anchor_server(*anchor_setup, root)
            viewers = args.viewers.split(",")
            for n in sizes:
                if "gpudojo" in viewers:
                    for kind, path in (("cached", files[n]), ("cold", cold_files[n])):
                        jobs.append(
                            {
                                "viewer": "gpudojo",
                                "label": size_label(n),
                                "analysis": kind,
                                "lab": f"http://127.0.0.1:{port}",
                                "token": TOKEN,
                                "capture": f"file:{path.name}",
                            }
                        )
                if anchor and "memory_viz" in viewers:
                    jobs.append(
                        {
                            "viewer": "memory_viz",
                            "label": size_label(n),
                            "page": f"http://127.0.0.1:{aport}/index.html",
                            "file": f"/snap/{files[n].name}",
                        }
                    )
            browser_rows = browser(jobs, args.hovers, args.browser_timeout)
            if anchor:
                anchor.shutdown()
    report(server_rows, browser_rows, args)


def heap_added(r: dict) -> float:
    return r["after"]["js_heap_used"] - r["before"]["js_heap_used"]


def report(server_rows: list[dict], browser_rows: list[dict], args: argparse.Namespace) -> None:
    mb = 1024**2
    print(f"Machine: {machine()}")
    if getattr(args, "anchor", None):
        print(f"Anchor: MemoryViz.js {args.anchor}")
    print(
        "\n| entries | allocations | pickle | analyze, first call (warm worker) | analysis_ms (after reading) | "
        "analyze, second call (cached) | child peak RSS | window, whole capture | window, 1% zoom |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in server_rows:
        w = r["windows"]
        print(
            f"| {r['entries']:,} | {r['allocations']:,} | {r['pickle_mb']:.0f} MB | {r['cold_s'] * 1000:.0f} ms | "
            f"{r['cold_analysis_ms']:.0f} ms | {r['warm_s'] * 1000:.1f} ms | {r['child_rss'] / mb:.0f} MiB | "
            f"{w['full'][0] * 1000:.1f} ms ({w['full'][1] / 1024:.0f} KiB, {w['full'][2]} bands) | "
            f"{w['zoom'][0] * 1000:.1f} ms ({w['zoom'][1] / 1024:.0f} KiB, {w['zoom'][2]} bands) |"
        )
    print(
        f"(window: px=1200 top=500, median of {args.repeats}; child peak RSS and time from the one-shot "
        "`python -m gpudojo.worker.memory_analyze SRC OUT`, imports included: "
        + ", ".join(f"{r['label']} {r['child_s']:.2f} s" for r in server_rows)
        + ")"
    )
    if not browser_rows:
        return
    print(
        "\n| entries | viewer | command to painted timeline | hover to tooltip (median, max) | "
        "renderer JS heap (after GC; added) | renderer RSS (added) | DOM nodes |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in browser_rows:
        if "error" in r:
            print(f"| {r['label']} | {r['viewer']} | failed: {r['error']} | | | | |")
            continue
        h, a, b = r["hover"], r["after"], r["before"]
        hover = f"{h['median_ms']:.1f} ms, {h['max_ms']:.1f} ms (n={h['n']})" if h["median_ms"] is not None else "n/a"
        print(
            f"| {r['label']} | {r['viewer']} | {r['paint_ms']:.0f} ms | {hover} | "
            f"{a['js_heap_used'] / mb:.0f} MiB ({(a['js_heap_used'] - b['js_heap_used']) / mb:+.0f}) | "
            f"{a['renderer_rss'] / mb:.0f} MiB ({(a['renderer_rss'] - b['renderer_rss']) / mb:+.0f}) | "
            f"{a['dom_nodes']:.0f} ({a['dom_nodes'] - b['dom_nodes']:+.0f}) |"
        )
    by = {(r["viewer"], r["label"]): r for r in browser_rows if "error" not in r}
    for lab in [r["label"] for r in server_rows]:
        cached, cold = by.get(("gpudojo (cached analysis)", lab)), by.get(("gpudojo (cold analysis)", lab))
        theirs = by.get(("memory_viz", lab))
        if not (cached and cold and theirs):
            continue
        parts = [
            f"paint, never-opened file {theirs['paint_ms'] / cold['paint_ms']:.1f}x",
            f"paint, analysis cached {theirs['paint_ms'] / cached['paint_ms']:.1f}x",
        ]
        if cached["hover"]["median_ms"] and theirs["hover"]["median_ms"]:
            parts.append(f"hover {theirs['hover']['median_ms'] / cached['hover']['median_ms']:.1f}x")
        if heap_added(cached) > 0:
            parts.append(f"JS heap added {heap_added(theirs) / heap_added(cached):.1f}x")
        print(f"memory_viz / gpudojo, {lab}: " + ", ".join(parts))
    print(json.dumps({"server": server_rows, "browser": browser_rows}), file=sys.stderr)


if __name__ == "__main__":
    main()
