"""torchrun's agent with its stores bound where the run says, never on every interface.

``python -m gpudojo.worker.torch_agent <torchrun arguments>`` is ``python -m
torch.distributed.run`` with one change: a TCPStore this agent hosts does not listen on all
interfaces (torch binds ``::``/``0.0.0.0`` whatever host it is given), but on

- the socket passed in ``GPUDOJO_RDZV_LISTEN_FD``, for the c10d rendezvous store (node 0 of a
  torchrun-nodes run: a socket inside the run's private network namespace, see
  gpudojo.worker.private_net), and
- ``GPUDOJO_STORE_BIND`` (an address of this machine) for every other store: the static
  rendezvous of a local run (127.0.0.1) and the store torch shares with the workers.

torch takes an already-listening socket for exactly this (``TCPStore(master_listen_fd=)``).
"""

from __future__ import annotations

import os
import socket
import sys
from datetime import timedelta

RDZV_LISTEN_FD_ENV = "GPUDOJO_RDZV_LISTEN_FD"
DEFAULT_TIMEOUT = timedelta(seconds=300)  # TCPStore's own default
STORE_BIND_ENV = "GPUDOJO_STORE_BIND"


def _install() -> None:
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend, static_tcp_rendezvous

    base = dist.TCPStore
    bind = os.environ.get(STORE_BIND_ENV)
    rdzv_fd = os.environ.pop(RDZV_LISTEN_FD_ENV, None)
    kept: list[socket.socket] = []  # a listening socket must outlive the store that serves on it

    def listening(port: int) -> socket.socket | None:
        if not bind:
            return None
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        sock = socket.create_server((bind, port), family=family, backlog=512)
        kept.append(sock)
        return sock

    # TCPStore's own signature, so that callers passing is_master by position (the static
    # rendezvous does) are understood.
    class BoundTCPStore(base):  # type: ignore[misc, valid-type]
        def __init__(
            self,
            host_name,
            port,
            world_size=None,
            is_master=False,
            timeout=DEFAULT_TIMEOUT,
            wait_for_workers=True,
            multi_tenant=False,
            master_listen_fd=None,
            use_libuv=True,
        ):
            if is_master and master_listen_fd is None:
                master_listen_fd = self._listen_fd(int(port))
            if master_listen_fd is not None:
                with socket.socket(fileno=os.dup(master_listen_fd)) as bound:
                    port = bound.getsockname()[1]
            super().__init__(
                host_name,
                port,
                world_size=world_size,
                is_master=is_master,
                timeout=timeout,
                wait_for_workers=wait_for_workers,
                multi_tenant=multi_tenant,
                master_listen_fd=master_listen_fd,
                use_libuv=use_libuv,
            )

        @staticmethod
        def _listen_fd(port: int) -> int | None:
            sock = listening(port)
            return None if sock is None else sock.fileno()

    class RendezvousTCPStore(BoundTCPStore):
        @staticmethod
        def _listen_fd(port: int) -> int | None:
            nonlocal rdzv_fd
            if rdzv_fd is not None:
                fd, rdzv_fd = int(rdzv_fd), None
                return fd
            return BoundTCPStore._listen_fd(port)

    dist.TCPStore = BoundTCPStore
    static_tcp_rendezvous.TCPStore = BoundTCPStore
    c10d_rendezvous_backend.TCPStore = RendezvousTCPStore


def main() -> None:
    _install()
    from torch.distributed.run import main as torchrun

    sys.argv[0] = "torchrun"
    torchrun()


if __name__ == "__main__":
    main()
