"""A network namespace of the run's own, holding the sockets nobody else may reach.

torch's c10d rendezvous store accepts any client and unpickles the rendezvous state it is
sent, so whoever reaches it runs code in the torchrun agent that hosts it. The store has no
authentication and cannot be given one, so its listening socket is made where no one can
connect: in a private network namespace (bubblewrap ``--unshare-net``, which brings up its
own loopback), from which only this process can fetch connected sockets. Every client of the
store then comes in through a gate that checks who it is: a process of this user on this
machine (:func:`peer_uid`), or a node with the run's token through the relay.

The helper (``python -m gpudojo.worker.private_net --fd N``, run by bubblewrap inside the
namespace) serves two requests over a Unix socket, answering each with a file descriptor:
``L<port>`` (a socket listening on the namespace's 127.0.0.1:port) and ``C<port>`` (a socket
connected to it). A socket keeps the namespace it was made in wherever its descriptor goes,
which is what lets torch's agent, outside, serve on a socket that only the gate can reach.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable

LOOPBACK = "127.0.0.1"
BACKLOG = 512


class PrivateNetUnavailable(RuntimeError):
    """No private network namespace can be made here; the message says why."""


class PrivateNet:
    """The helper inside a private network namespace, and the sockets it hands out."""

    def __init__(self, python: str = sys.executable, timeout_s: float = 10.0) -> None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise PrivateNetUnavailable("bubblewrap (bwrap) is not installed")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock = ours
        self._lock = threading.Lock()
        argv = [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--"]
        argv += [python, "-m", "gpudojo.worker.private_net", "--fd", str(theirs.fileno())]
        self._proc = subprocess.Popen(
            argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        theirs.close()
        ours.settimeout(timeout_s)
        try:
            ready = ours.recv(16)
        except OSError:
            ready = b""
        if ready != b"ready":
            err = b""
            with contextlib.suppress(Exception):
                self._proc.kill()
                err = self._proc.communicate(timeout=5)[1] or b""
            ours.close()
            why = err.decode(errors="replace").strip().splitlines()
            raise PrivateNetUnavailable(
                "bubblewrap could not make a network namespace" + (f" ({why[-1]})" if why else "")
            )
        ours.settimeout(None)

    def _ask(self, op: str, port: int) -> socket.socket:
        with self._lock:
            self._sock.sendall(f"{op}{port}\n".encode())
            msg, fds, _flags, _addr = socket.recv_fds(self._sock, 1024, 1)
        if not fds:
            raise OSError(msg.decode(errors="replace") or "the private network helper has gone")
        return socket.socket(fileno=fds[0])

    def listen(self, port: int) -> socket.socket:
        """A socket listening on 127.0.0.1:``port`` inside the namespace."""
        return self._ask("L", port)

    def connect(self, port: int) -> socket.socket:
        """A socket connected to 127.0.0.1:``port`` inside the namespace."""
        return self._ask("C", port)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        with contextlib.suppress(Exception):
            self._proc.kill()
            self._proc.wait(timeout=5)


def peer_uid(conn: socket.socket) -> int | None:
    """The user owning the other end of a TCP connection made on this machine, from the
    kernel's socket table (TCP has no SO_PEERCRED); None when the peer is not local."""
    peer, own = conn.getpeername()[:2], conn.getsockname()[:2]
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        v6 = table.endswith("6")
        want = (_proc_address(*peer, v6), _proc_address(*own, v6))
        with contextlib.suppress(OSError), open(table, encoding="ascii") as f:
            next(f, None)
            for line in f:
                cols = line.split()
                if len(cols) > 7 and (cols[1], cols[2]) == want:
                    return int(cols[7])
    return None


def _proc_address(ip: str, port: int, v6: bool) -> str:
    """An address and port as /proc/net/tcp{,6} writes them: 32-bit words in host order (an
    IPv4 peer on an IPv6 socket, as torch's clients are, shows as ::ffff:a.b.c.d)."""
    if not v6:
        return f"{int.from_bytes(socket.inet_aton(ip), 'little'):08X}:{port:04X}"
    packed = socket.inet_pton(socket.AF_INET6, ip if ":" in ip else f"::ffff:{ip}")
    words = "".join(f"{int.from_bytes(packed[i : i + 4], 'little'):08X}" for i in range(0, 16, 4))
    return f"{words}:{port:04X}"


def splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides are done, then close both."""

    def pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(1 << 16):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    back = threading.Thread(target=pump, args=(b, a), daemon=True)
    back.start()
    pump(a, b)
    back.join()
    a.close()
    b.close()


class LocalGate:
    """Listens on 127.0.0.1:``port`` and lets in only this user's processes, each connection
    carried to ``target()`` (a socket into the private namespace)."""

    def __init__(self, port: int, target: Callable[[], socket.socket], on_refused: Callable[[str], None]) -> None:
        self.server = socket.create_server((LOOPBACK, port), backlog=BACKLOG)
        self.port = self.server.getsockname()[1]
        self._target = target
        self._on_refused = on_refused
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        uid = os.getuid()
        while True:
            try:
                conn, addr = self.server.accept()
            except OSError:
                return
            owner = peer_uid(conn)
            if owner != uid:
                self._on_refused(f"a connection from {addr[0]}:{addr[1]} (user {owner}) to the rendezvous store")
                conn.close()
                continue
            try:
                inner = self._target()
            except OSError:
                conn.close()
                continue
            threading.Thread(target=splice, args=(conn, inner), daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.server.close()


def _serve_requests(fd: int) -> None:
    """The helper's loop, inside the namespace: a descriptor for each request."""
    sock = socket.socket(fileno=fd)
    sock.sendall(b"ready")
    reader = sock.makefile("rb")
    for line in reader:
        op, port = line[:1], int(line[1:].strip() or 0)
        try:
            if op == b"L":
                s = socket.create_server((LOOPBACK, port), backlog=BACKLOG)
            else:
                s = socket.create_connection((LOOPBACK, port), timeout=10)
                s.settimeout(None)
        except OSError as err:
            sock.sendall(f"{err.strerror or err}".encode())
            continue
        socket.send_fds(sock, [b"ok"], [s.fileno()])
        s.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpudojo.worker.private_net")
    parser.add_argument("--fd", type=int, required=True)
    _serve_requests(parser.parse_args(argv).fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
