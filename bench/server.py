"""Start a real `jupyter server` for a benchmark and wait until it answers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDINGS = REPO / "tests" / "data" / "gpu"
TOKEN = "gpudojo-bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> float:
    """Poll /api/status until it answers; returns seconds waited."""
    start = time.perf_counter()
    url = f"http://127.0.0.1:{port}/api/status?token={TOKEN}"
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return time.perf_counter() - start
        except OSError:
            time.sleep(0.01)
    raise TimeoutError("server did not start")


@contextmanager
def jupyter_server(
    *,
    replay: str | None = None,
    gpudojo: bool = True,
    extra: list[str] | None = None,
    python: str = sys.executable,
    other_extensions: dict[str, bool] | None = None,
):
    """Yield (proc, port) of a running server (of ``python``'s environment); stopped on exit."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config"
        cfg.mkdir()
        (cfg / "jupyter_server_config.json").write_text(
            json.dumps({"ServerApp": {"jpserver_extensions": {"gpudojo": gpudojo, **(other_extensions or {})}}})
        )
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(cfg), "JUPYTER_DATA_DIR": str(Path(tmp) / "data")}
        port = free_port()
        argv = [
            python,
            "-m",
            "jupyter_server",
            "--no-browser",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={tmp}",
            "--ServerApp.log_level=WARN",
            "--allow-root",
        ]
        if replay:
            argv.append(f"--GPUDojo.gpu_replay_file={RECORDINGS / replay}.jsonl")
        argv += extra or []
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            proc.started_in = wait_ready(port, proc)  # type: ignore[attr-defined]
            yield proc, port
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def machine() -> str:
    import platform

    import psutil

    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = psutil.virtual_memory().total / 1024**3
    return f"{cpu}, {psutil.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} {platform.release()}, no GPU"


def run_browser(script: str, config: dict) -> list[dict]:
    """Run a browser half of a benchmark (``node <script> CONFIG.json``, Debian's Chromium at
    1400x900) and return the JSON list it prints last; its log goes to this stderr."""
    here = Path(__file__).resolve().parent
    config = {"chromium": "/usr/bin/chromium", "viewport": {"width": 1400, "height": 900}, **config}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        done = subprocess.run(
            ["node", str(here / script), f.name], cwd=here, capture_output=True, text=True, check=False
        )
    finally:
        os.unlink(f.name)
    sys.stderr.write(done.stderr)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("[")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{script} failed ({done.returncode})")
    return json.loads(lines[-1])


def size_label(n: int) -> str:
    """100000 -> '100k', 1000000 -> '1M'."""
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


def api(port: int, path: str, body: dict | None = None, timeout_s: float = 1200) -> tuple[float, dict, int]:
    """Seconds, decoded answer and body size of one request to gpudojo's API (POST with a body)."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/gpudojo/api/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method="POST" if body is not None else "GET",
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
    )
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout_s) as r:
        raw = r.read()
    return time.perf_counter() - t0, json.loads(raw), len(raw)
