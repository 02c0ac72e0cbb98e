"""``gpudojo node join HOST:PORT --token T``: run one node of a torchrun-nodes job.

The host (the machine whose gpudojo started the run) gives the job: the lab to run (found in
this machine's own gpudojo installation) or the script's text, its arguments, processes per
node and the rendezvous. This node starts its torchrun agent with them and streams every line
the agent prints back to the host, where the run view shows it under this node. When the
host says cancel, or goes away, the agent and its workers are stopped.

The rendezvous store is not reachable from the network: this node's agent reaches it on a
loopback port of this machine that admits only this user's processes, each connection
tunnelled to the host's relay with the token (gpudojo.worker.private_net).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from .. import __version__
from ..paths import material_root
from ..runfolder import METRIC_LINE_PREFIX
from ..worker.private_net import LocalGate
from .engines.nodes import node_env, torchrun_argv
from .manifest import load_labs
from .models import NodesWhere

# As long as a run waits for its nodes by default.
WAIT_FOR_HOST_S = float(NodesWhere.model_fields["join_timeout_s"].default)
RETRY_EVERY_S = 0.5


class JoinError(RuntimeError):
    """The host refused this node, or the job cannot run here; the message says why."""


def _entry(job: dict[str, Any], scratch: Path) -> Path:
    if job.get("lab"):
        labs, problems = load_labs(material_root("labs"))
        lab = labs.get(job["lab"])
        if lab is None:
            why = next((p.message for p in problems if p.lab == job["lab"]), "not in this installation")
            raise JoinError(f"lab {job['lab']} cannot run on this node: {why}")
        return lab.entry
    name = Path(str(job.get("entry", "script.py"))).name
    path = scratch / name
    path.write_text(str(job["script"]), encoding="utf-8")
    return path


def _reach(address: str, host: str, port: int, timeout: float, wait_s: float) -> socket.socket:
    """A connection to the relay. A host that refuses or does not answer is tried again for
    ``wait_s`` seconds: the join command is shown as the run starts, and node 0's relay may
    not be listening yet (its private network comes first) when a learner pastes it."""
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            return socket.create_connection((host, port), timeout=timeout)
        except (ConnectionRefusedError, TimeoutError) as err:
            why = err.strerror or "no answer"
            left = deadline - time.monotonic()
            if left <= 0:
                tried = f" (tried for {wait_s:g} s)" if wait_s > 0 else ""
                raise JoinError(
                    f"cannot reach the host at {address}: {why}{tried}. Is the run still waiting for its "
                    "nodes, and does this machine reach that address and port?"
                ) from err
            if not said:
                print(
                    f"gpudojo: the host at {address} is not listening yet ({why}); trying again for up to {wait_s:g} s",
                    flush=True,
                )
                said = True
            time.sleep(min(RETRY_EVERY_S, max(left, 0.0)))
        except OSError as err:
            raise JoinError(f"cannot reach the host at {address}: {err.strerror or err}") from err


def _hello(
    address: str, doc: dict[str, Any], timeout: float, wait_s: float = 0.0
) -> tuple[socket.socket, Any, dict[str, Any]]:
    """Say ``doc`` to the host's relay; the connection, its reader, and the answer."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise JoinError(f"{address!r} is not HOST:PORT (copy the join command from the run)")
    sock = _reach(address, host, int(port), timeout, wait_s)
    try:
        sock.sendall(json.dumps({"hello": 1, "version": __version__, **doc}).encode() + b"\n")
        reader = sock.makefile("rb")
        answer = json.loads(reader.readline(1 << 20))
    except (OSError, ValueError) as err:
        sock.close()
        raise JoinError(f"the host at {address} did not answer as a gpudojo relay") from err
    if not isinstance(answer, dict):
        sock.close()
        raise JoinError(f"the host at {address} did not answer as a gpudojo relay")
    if "error" in answer:
        sock.close()
        raise JoinError(f"the host refused this node: {answer['error']}")
    sock.settimeout(None)
    return sock, reader, answer


def connect(
    address: str, token: str, timeout: float = 10.0, wait_s: float = 0.0
) -> tuple[socket.socket, Any, dict[str, Any]]:
    """Join the host's relay as a node; the connection, its reader, and the job. A host not
    listening yet is tried again for ``wait_s`` seconds."""
    sock, reader, answer = _hello(address, {"token": token, "node": socket.gethostname()}, timeout, wait_s)
    return sock, reader, answer["job"]


def store_tunnel(address: str, token: str, timeout: float = 10.0) -> socket.socket:
    """A connection to the run's rendezvous store, through the host's relay."""
    sock, _reader, _answer = _hello(address, {"token": token, "store": True}, timeout)
    # Nothing was sent past the hello's answer, so the reader's buffer holds nothing of the store's.
    return sock


def _tunnel_or_oserror(address: str, token: str) -> socket.socket:
    try:
        return store_tunnel(address, token)
    except JoinError as err:
        raise OSError(str(err)) from err


def _kill_tree(proc: subprocess.Popen) -> None:
    """The agent and every worker it started (they may sit in sessions of their own)."""
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for p in family:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(family, timeout=5)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()


def join(
    address: str,
    token: str,
    *,
    local_addr: str | None = None,
    python: str = sys.executable,
    wait_s: float = WAIT_FOR_HOST_S,
) -> int:
    """Run this node's part of the job to its end; torchrun's exit code."""
    sock, reader, job = connect(address, token, wait_s=wait_s)
    local = local_addr or sock.getsockname()[0]
    tunnel = LocalGate(0, lambda: _tunnel_or_oserror(address, token), lambda what: print(f"gpudojo: refused {what}"))
    send_lock = threading.Lock()

    def send(doc: dict[str, Any]) -> None:
        with send_lock, contextlib.suppress(OSError):
            sock.sendall(json.dumps(doc).encode() + b"\n")

    with tempfile.TemporaryDirectory(prefix=f"gpudojo-node-{job['run_id']}-") as tmp:
        scratch = Path(tmp)
        try:
            entry = _entry(job, scratch)
        except JoinError as err:
            send({"o": "err", "t": f"gpudojo node join: {err}"})
            send({"exit": 2})
            raise
        argv = torchrun_argv(
            python, job, local_addr=local, rdzv_port=tunnel.port, log_dir=scratch / "torchrun", entry=entry
        )
        env = node_env({k: v for k, v in os.environ.items() if k != "GPUDOJO_RUN_DIR"}, job, local)
        print(f"gpudojo: joined run {job['run_id']} as a node; rendezvous through {address}", flush=True)
        proc = subprocess.Popen(
            argv,
            cwd=entry.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

        def relay(pipe: Any, stream: str) -> None:
            for raw in iter(pipe.readline, b""):
                text = raw.decode(errors="replace").rstrip("\n")
                if METRIC_LINE_PREFIX not in text:  # the host files metric lines; this terminal needs none
                    print(text, file=sys.stdout if stream == "out" else sys.stderr, flush=True)
                send({"o": stream, "t": text})
            pipe.close()

        stopped = threading.Event()

        def listen() -> None:
            # A cancel from the host, or the host gone: this node's job is over.
            with contextlib.suppress(OSError, ValueError):
                for raw in iter(lambda: reader.readline(1 << 16), b""):
                    if json.loads(raw).get("cancel"):
                        break
            if proc.poll() is None:
                stopped.set()
                _kill_tree(proc)

        pumps = [
            threading.Thread(target=relay, args=(p, s), daemon=True)
            for p, s in ((proc.stdout, "out"), (proc.stderr, "err"))
        ]
        for t in [*pumps, threading.Thread(target=listen, daemon=True)]:
            t.start()
        previous = signal.signal(signal.SIGTERM, lambda *_: _kill_tree(proc))
        try:
            code = proc.wait()
        finally:
            signal.signal(signal.SIGTERM, previous)
        for t in pumps:
            t.join(timeout=10)
        if stopped.is_set():
            code = 143  # however the agent took its SIGTERM, this node did not finish its part
        send({"exit": code})
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        tunnel.close()
    if stopped.is_set():
        print("gpudojo: the host stopped the run (cancelled, or it ended elsewhere); this node stopped too", flush=True)
    return code
