"""The host side of a torchrun-nodes run: node 0's torchrun agent, and the relay the other
nodes' agents report through.

Started by the run service (its stdout and stderr are the run's log) as::

    python -m gpudojo.worker.nodes_host --run-dir DIR --artifacts DIR -- <node 0's torchrun argv>

It listens on the job's relay address for ``gpudojo node join`` (gpudojo.runs.node_join).
The relay protocol is JSON lines over TCP:

- node -> host: ``{"hello": 1, "token", "node", "version"}``; host -> node: ``{"job": {...}}``
  (the job without the token) or ``{"error": "..."}`` and the connection closes;
- node -> host: ``{"hello": 1, "token", "store": true, "version"}`` opens a tunnel to the
  rendezvous store (host -> node ``{"store": "ok"}``, then raw bytes both ways): a joined
  node's torchrun agent reaches the store only this way, since it listens in node 0's
  private network namespace (gpudojo.worker.private_net);
- node -> host: ``{"o": "out" | "err", "t": line}`` for every line its agent prints (rank lines
  carry ``[default<global rank>]:``; metric lines go to the host's log like any rank line);
  ``{"exit": code}`` when its agent ends;
- host -> node: ``{"cancel": true}`` when the run is cancelled or over; a node whose host
  goes away stops its agent too.

Every message is checked (types, sizes, and a node's rank lines against the ranks it can
have: never node 0's, never another node's, one block of ``nproc``, and only once node 0's
own ranks show that the rendezvous completed); a line that fails is shown as the node's
output, never as a rank's. A connection that errs or dies ends that node alone.

engine.json tells the run service who joined, who is missing, which ranks each node runs,
the rendezvous state, and, when another node failed first or was lost, the root cause.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from gpudojo import __version__
from gpudojo.runfolder import RANK_LINE, RunFolder, whole_line
from gpudojo.runs.engines.base import write_engine_state
from gpudojo.runs.engines.nodes import JOB_FILE
from gpudojo.runs.rootcause import PEER_LOST, TRACEBACK
from gpudojo.worker.private_net import LocalGate, PrivateNet, PrivateNetUnavailable, splice
from gpudojo.worker.torch_agent import RDZV_LISTEN_FD_ENV

MAX_LINE = 1 << 20  # a relay line longer than this closes the relay (nothing legitimate is)
MAX_NAME = 100
# Rank lines a node sends before node 0's own ranks show the rendezvous complete: held back
# (up to this many) so that they can be checked against the ranks left for it.
MAX_HELD = 400
# Connections that ended in an error are noted in the run's log at most this many times.
MAX_ERROR_NOTES = 5
HELLO_TIMEOUT_S = 10.0
# How long the host waits, once node 0 ended, for the other nodes to report how they ended.
NODES_GRACE_S = 30.0
# How long a cancelled host waits for the other nodes to confirm that they stopped.
NODES_STOP_S = 2.0


class Node:
    """One node as the host sees it."""

    def __init__(self, index: int, name: str, detail: str = "") -> None:
        self.index = index
        self.name = name
        self.detail = detail
        self.state = "joined"
        self.ranks: set[int] = set()
        self.exit_code: int | None = None
        self.conn: socket.socket | None = None
        self.ended_at: float | None = None
        # Each rank's recent stderr lines, for its traceback if it fails.
        self.rank_lines: dict[int, deque[str]] = {}
        self.first_traceback_at: dict[int, float] = {}
        self.held: list[tuple[str, str]] = []


class Host:
    """The job's state, shared by node 0's pumps and the relay threads."""

    def __init__(self, folder: RunFolder, job: dict[str, Any]) -> None:
        self.folder = folder
        self.job = job
        self.lock = threading.RLock()
        self.out_lock = threading.Lock()
        self.nodes: list[Node] = [Node(0, f"{socket.gethostname()} (node 0, this machine)", job["relay"])]
        self.nodes[0].state = "running"
        self.rendezvous_state = "waiting"
        self.root_cause: dict[str, Any] | None = None
        self.cancelled = threading.Event()
        self.node0_ended_at: float | None = None
        self.error_notes = 0

    # --- output ---------------------------------------------------------------------------

    def emit(self, node: Node, stream: str, text: str) -> None:
        """Print one line of a node's agent as the run's log, and learn from it."""
        text = whole_line(text)
        m = RANK_LINE.match(text)
        changed = False
        with self.lock:
            if m and node.index > 0:
                verdict = self._check_remote_rank(node, int(m[1]))
                if verdict == "hold":
                    node.held.append((stream, text))
                    return
                if verdict == "refuse":
                    m = None
                    text = f"[{node.name}, not a rank it runs] {text}"
            if m:
                rank = int(m[1])
                if rank not in node.ranks:
                    node.ranks.add(rank)
                    changed = True
                if self.rendezvous_state == "waiting" and node.index == 0:
                    # Node 0's own rank printing means the rendezvous completed and workers
                    # started (a joined node's word for it is not taken).
                    self.rendezvous_state = "complete"
                    changed = True
                body = text[m.end() :]
                lines = node.rank_lines.setdefault(rank, deque(maxlen=400))
                lines.append(body)
                if body.startswith(TRACEBACK) and rank not in node.first_traceback_at:
                    node.first_traceback_at[rank] = time.time()
            elif "RendezvousTimeoutError" in text and self.rendezvous_state == "waiting" and node.index == 0:
                self.rendezvous_state = "timed_out"
                changed = True
        self._write(stream, text)
        if changed:
            self.publish()
        if node.index == 0 and changed:
            self.release_held()

    def _write(self, stream: str, text: str) -> None:
        with self.out_lock:
            out = sys.stdout if stream == "out" else sys.stderr
            out.write(text + "\n")
            out.flush()

    def _check_remote_rank(self, node: Node, rank: int) -> str:
        """ "ok", "hold" (not yet decidable) or "refuse", for a joined node's rank line. Global
        ranks come in one block of ``nproc`` per node (torchrun gives every node the same
        number); node 0's block is known from its own output."""
        if self.rendezvous_state != "complete" or not self.nodes[0].ranks:
            return "hold" if len(node.held) < MAX_HELD and self.node0_ended_at is None else "refuse"
        nproc = int(self.job["nproc"])
        if not 0 <= rank < nproc * int(self.job["max_nodes"]):
            return "refuse"
        block = rank // nproc
        if any(r // nproc == block for r in self.nodes[0].ranks):
            return "refuse"
        if any(other is not node and rank in other.ranks for other in self.nodes):
            return "refuse"
        if node.ranks and next(iter(node.ranks)) // nproc != block:
            return "refuse"
        return "ok"

    def release_held(self) -> None:
        """Node 0's ranks are known: the lines the other nodes sent before are checked now."""
        with self.lock:
            pending = [(n, held) for n in self.nodes[1:] if (held := n.held)]
            for n, _ in pending:
                n.held = []
        for n, held in pending:
            for stream, text in held:
                self.emit(n, stream, text)

    def note_error(self, text: str) -> None:
        """One line in the run's log for a connection that went wrong (no traceback, and only
        the first few: a stranger must not be able to fill the log)."""
        with self.lock:
            self.error_notes += 1
            if self.error_notes > MAX_ERROR_NOTES:
                return
        self._write("err", f"gpudojo relay: {text}")

    # --- engine.json ----------------------------------------------------------------------

    def publish(self) -> None:
        with self.lock:
            joined = [n.name for n in self.nodes]
            nodes = [
                {"name": n.name, "state": n.state, "ranks": sorted(n.ranks), "detail": n.detail} for n in self.nodes
            ]
            waiting_word = "missing" if self.rendezvous_state in ("timed_out", "closed") else "waiting"
            for k in range(len(self.nodes), self.job["max_nodes"]):
                detail = "has not joined: run the join command on it" if waiting_word == "waiting" else "never joined"
                nodes.append({"name": f"node {k}", "state": waiting_word, "ranks": [], "detail": detail})
            state: dict[str, Any] = {
                "job_id": self.job["relay"] + "/" + self.job["run_id"],
                "job_state": self.rendezvous_state.upper() if self.node0_ended_at is None else "ENDED",
                "nodes": nodes,
                "rendezvous": {
                    "endpoint": self.job["relay"],
                    "id": self.job["run_id"],
                    "min_nodes": self.job["min_nodes"],
                    "max_nodes": self.job["max_nodes"],
                    "joined": joined,
                    "timeout_s": self.job["join_timeout_s"],
                    "state": self.rendezvous_state,
                },
            }
            if self.root_cause:
                state["root_cause"] = self.root_cause
        write_engine_state(self.folder, state)

    # --- the other nodes ------------------------------------------------------------------

    def admit(self, name: str, address: str, conn: socket.socket) -> Node | str:
        """A new node, or why it is refused."""
        with self.lock:
            if self.node0_ended_at is not None or self.cancelled.is_set():
                return "the run is over"
            if len(self.nodes) >= self.job["max_nodes"]:
                return f"the job has its {self.job['max_nodes']} nodes already"
            node = Node(len(self.nodes), f"{name} (node {len(self.nodes)})", address)
            node.conn = conn
            self.nodes.append(node)
        self.publish()
        return node

    def node_ended(self, node: Node, code: int | None) -> None:
        with self.lock:
            held, node.held = node.held, []
        for stream, text in held:  # never confirmed as its ranks' lines: shown as the node's own
            self._write(stream, f"[{node.name}, not a rank it runs] {text}")
        with self.lock:
            if code is None and self.rendezvous_state == "waiting" and not node.ranks and node is self.nodes[-1]:
                # Gone before the rendezvous completed: its slot is free for another node.
                self.nodes.pop()
                node.ended_at = time.time()
                self.publish()
                return
            node.ended_at = time.time()
            node.exit_code = code
            if code is None:
                node.state = "lost" if not self.cancelled.is_set() else "failed"
            else:
                node.state = "succeeded" if code == 0 else "failed"
            if node.state in ("lost", "failed") and not self.cancelled.is_set() and self.root_cause is None:
                self.root_cause = self._remote_cause(node)
        self.publish()

    def _remote_cause(self, node: Node) -> dict[str, Any] | None:
        """The root cause when ``node`` failed first (a primary error in one of its ranks) or
        was lost; None when its ranks only failed because another rank died (node 0's torchrun
        error files then name the real one)."""
        if node.state == "lost":
            rank = min(node.ranks) if node.ranks else None
            return {
                "rank": rank,
                "exit_code": None,
                "exception": f"{node.name} at {node.detail} was lost: its agent stopped without reporting how it "
                "ended (killed, or the machine or network went down); the other nodes' errors followed from it",
                "traceback": "",
                "timestamp": node.ended_at,
            }
        for rank, at in sorted(node.first_traceback_at.items(), key=lambda kv: kv[1]):
            lines = list(node.rank_lines.get(rank, ()))
            start = max(i for i, line in enumerate(lines) if line.startswith(TRACEBACK))
            block = lines[start:]
            exception = next((line.strip() for line in block[1:] if line and not line.startswith(" ")), block[-1])
            if PEER_LOST.search(exception):  # another rank died first
                continue
            return {
                "rank": rank,
                "exit_code": node.exit_code,
                "exception": exception,
                "traceback": "\n".join(block),
                "timestamp": at,
            }
        return None

    def cancel_nodes(self) -> None:
        with self.lock:
            conns = [n.conn for n in self.nodes if n.conn is not None and n.ended_at is None]
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.sendall(b'{"cancel": true}\n')

    def end_unconfirmed_nodes(self) -> None:
        """The nodes told to stop that have not said how they ended, as failed (cancelled)."""
        with self.lock:
            for node in self.nodes[1:]:
                if node.ended_at is None:
                    node.ended_at = time.time()
                    node.state = "failed"
                    node.detail = f"{node.detail}; told to stop, it had not said how it ended when the run did"

    def wait_for_remote_ends(self, seconds: float, *, unless_cancelled: bool = False) -> None:
        """Wait up to ``seconds`` for every other node to say how it ended (less if the run is
        cancelled meanwhile, with ``unless_cancelled``)."""
        deadline = time.monotonic() + seconds
        while self.remote_running() and time.monotonic() < deadline:
            if unless_cancelled and self.cancelled.is_set():
                return
            time.sleep(0.05)

    def remote_running(self) -> bool:
        with self.lock:
            return any(n.index > 0 and n.ended_at is None for n in self.nodes)

    def remote_failure(self) -> bool:
        with self.lock:
            return any(n.index > 0 and n.state in ("failed", "lost") for n in self.nodes)


class BadMessage(ValueError):
    """A relay message that no gpudojo node sends."""


def parse_message(raw: bytes) -> tuple[str, Any]:
    """("line", (stream, text)) or ("exit", code) from one relay line of a joined node."""
    if not raw.endswith(b"\n"):
        raise BadMessage("a line longer than 1 MiB")
    try:
        msg = json.loads(raw)
    except ValueError:
        raise BadMessage("a line that is not JSON") from None
    if not isinstance(msg, dict):
        raise BadMessage("a message that is not an object")
    if "exit" in msg:
        code = msg["exit"]
        if type(code) is not int or not -255 <= code <= 255:
            raise BadMessage(f"an exit status that is not a number from -255 to 255: {str(code)[:40]!r}")
        return "exit", code
    text, stream = msg.get("t"), msg.get("o")
    if not isinstance(text, str) or stream not in ("out", "err"):
        raise BadMessage("a message that is neither an output line nor an exit status")
    return "line", (stream, text)


def make_relay(host: Host, store: Any) -> type[socketserver.StreamRequestHandler]:
    """The relay's handler; ``store()`` gives a socket connected to the rendezvous store."""
    token = host.job["token"].encode()
    public_job = {k: v for k, v in host.job.items() if k != "token"}

    class Relay(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.request.settimeout(HELLO_TIMEOUT_S)
            try:
                hello = json.loads(self.rfile.readline(MAX_LINE))
            except (ValueError, OSError):
                return
            offered = hello.get("token") if isinstance(hello, dict) else None
            # Compared as bytes: compare_digest refuses str with non-ASCII characters.
            if not isinstance(offered, str) or not hmac.compare_digest(offered.encode(), token):
                self._send({"error": "wrong token: copy the join command from this run again"})
                return
            if hello.get("version") != __version__:
                theirs = str(hello.get("version"))[:40]
                self._send({"error": f"gpudojo {theirs} on the node, {__version__} here: install the same"})
                return
            if hello.get("store") is True:
                self._tunnel()
                return
            name = hello.get("node")
            name = name[:MAX_NAME] if isinstance(name, str) and name.isprintable() else "?"
            node = host.admit(name, self.client_address[0], self.request)
            if isinstance(node, str):
                self._send({"error": node})
                return
            code: int | None = None
            try:
                self._send({"job": public_job, "node_index": node.index})
                self.request.settimeout(None)
                for raw in iter(lambda: self.rfile.readline(MAX_LINE), b""):
                    kind, value = parse_message(raw)
                    if kind == "exit":
                        code = value
                        break
                    host.emit(node, *value)
            except BadMessage as err:
                host.note_error(f"{node.name} sent {err}; its connection was closed")
            except OSError:
                pass  # the node went away: it is lost, below
            finally:
                host.node_ended(node, code)

        def _tunnel(self) -> None:
            """A joined node's agent to the rendezvous store: raw bytes both ways."""
            try:
                inner = store()
            except OSError as err:
                self._send({"error": f"the rendezvous store cannot be reached: {err}"})
                return
            self._send({"store": "ok"})
            self.request.settimeout(None)
            splice(self.request, inner)

        def _send(self, doc: dict[str, Any]) -> None:
            with contextlib.suppress(OSError):
                self.wfile.write(json.dumps(doc).encode() + b"\n")

    return Relay


class RelayServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    host: Host

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver prints a traceback with the peer's address to stderr, the run's log.
        err = sys.exc_info()[1]
        self.host.note_error(f"a connection from {client_address[0]} failed: {type(err).__name__}")


def pump(host: Host, pipe: Any, stream: str) -> None:
    for raw in iter(pipe.readline, b""):
        host.emit(host.nodes[0], stream, raw.decode(errors="replace").rstrip("\n"))
    pipe.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpudojo.worker.nodes_host")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("node0", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    node0 = args.node0[1:] if args.node0[:1] == ["--"] else args.node0
    job = json.loads((Path(args.artifacts) / JOB_FILE).read_text(encoding="utf-8"))
    host = Host(RunFolder(args.run_dir), job)
    store_listener, store, net = rendezvous_store(host, int(job["rdzv_port"]))
    relay_host, relay_port = job["relay"].rsplit(":", 1)
    server = RelayServer((relay_host, int(relay_port)), make_relay(host, store))
    server.host = host
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"gpudojo: relay for the other nodes listening on {job['relay']}", flush=True)
    host.publish()

    env = {**os.environ, RDZV_LISTEN_FD_ENV: str(store_listener.fileno())}
    proc = subprocess.Popen(
        node0,
        env=env,
        pass_fds=(store_listener.fileno(),),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    store_listener.close()  # node 0's agent serves on it now

    def on_term(signum: int, _frame: Any) -> None:
        host.cancelled.set()
        host.cancel_nodes()
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    pumps = [
        threading.Thread(target=pump, args=(host, proc.stdout, "out"), daemon=True),
        threading.Thread(target=pump, args=(host, proc.stderr, "err"), daemon=True),
    ]
    for t in pumps:
        t.start()
    code = proc.wait()
    for t in pumps:
        t.join(timeout=10)
    with host.lock:
        host.node0_ended_at = time.time()
        host.nodes[0].state = "succeeded" if code == 0 else "failed"
        host.nodes[0].exit_code = code
    # The other nodes end on their own (the job finished, or a rank died and they noticed);
    # give them time to say how, then stop whatever is left.
    host.wait_for_remote_ends(NODES_GRACE_S, unless_cancelled=True)
    host.cancel_nodes()
    if host.cancelled.is_set():
        # Told to stop: give the other nodes a moment to say how they ended (a follower sent
        # SIGTERM by a cancel has the run's cancel grace in all), then show any that did not
        # as ended, never as still joined in a run that has ended.
        host.wait_for_remote_ends(NODES_STOP_S)
        host.end_unconfirmed_nodes()
    with host.lock:
        if host.rendezvous_state in ("waiting", "complete"):
            host.rendezvous_state = "closed" if host.rendezvous_state == "complete" else "timed_out"
        if host.rendezvous_state == "timed_out" and host.root_cause is None:
            host.root_cause = timeout_cause(host)
    elastic = job["min_nodes"] < job["max_nodes"]
    if code == 0 and elastic:
        forgive_lost_nodes(host)
    elif code == 0 and host.remote_failure():
        code = 1
    host.publish()
    server.shutdown()
    if net is not None:
        net.close()
    return code


def rendezvous_store(host: Host, port: int) -> tuple[socket.socket, Any, PrivateNet | None]:
    """The socket node 0's agent serves the rendezvous store on, how to connect to it, and
    the private network namespace it lives in (None where none can be made: the store then
    listens on this machine's loopback, where its other users can reach it; the log says so)."""
    try:
        net = PrivateNet()
    except PrivateNetUnavailable as why:
        host.note_error(
            f"no private network namespace ({why}): the rendezvous store listens on 127.0.0.1:{port}, "
            "where other users of this machine can reach it"
        )
        listener = socket.create_server(("127.0.0.1", port), backlog=512)
        return listener, lambda: socket.create_connection(("127.0.0.1", port), timeout=10), None
    listener = net.listen(port)
    # Node 0's agent and workers reach the store on 127.0.0.1:port, through a gate that lets in
    # this user's processes only.
    LocalGate(port, lambda: net.connect(port), lambda what: host.note_error(f"refused {what}"))
    return listener, lambda: net.connect(port), net


def forgive_lost_nodes(host: Host) -> None:
    """An elastic job that node 0 finished after losing nodes succeeded: torchrun restarted
    the workers with the nodes that were left, as elastic training means to."""
    with host.lock:
        for node in host.nodes[1:]:
            if node.state in ("lost", "failed"):
                node.detail = f"{node.detail}; {node.state} mid-run, the job restarted without it (elastic)"
        host.root_cause = None


def timeout_cause(host: Host) -> dict[str, Any]:
    joined = len(host.nodes)
    missing = host.job["min_nodes"] - joined
    return {
        "rank": None,
        "exit_code": None,
        "exception": f"The rendezvous timed out after {host.job['join_timeout_s']} s: {joined} of "
        f"{host.job['max_nodes']} node(s) joined, {max(missing, 0)} more needed. Run the join command on the "
        "other machines, and check that they reach this one at " + host.job["relay"],
        "traceback": "",
        "timestamp": time.time(),
    }


if __name__ == "__main__":
    sys.exit(main())
