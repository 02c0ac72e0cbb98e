"""GET runs/engines proposes where other nodes reach this machine: its own addresses, never loopback."""

from __future__ import annotations

import socket
from types import SimpleNamespace

from gpudojo.runs.engines import nodes, probe


def _addr(family, address):
    return SimpleNamespace(family=family, address=address)


def test_nodes_engine_lists_reachable_addresses_not_loopback_or_link_local(monkeypatch):
    monkeypatch.setattr(
        nodes.psutil,
        "net_if_addrs",
        lambda: {
            "lo": [_addr(socket.AF_INET, "127.0.0.1"), _addr(socket.AF_INET6, "::1")],
            "eth0": [_addr(socket.AF_INET, "10.1.2.3"), _addr(socket.AF_INET6, "fe80::1")],
            "docker0": [_addr(socket.AF_INET, "169.254.10.1")],
            "wlan0": [_addr(socket.AF_INET, "192.168.1.7"), _addr(socket.AF_INET, "10.1.2.3")],
        },
    )
    assert nodes.NodesEngine().addresses() == ["10.1.2.3", "192.168.1.7"]
    info = probe("torchrun-nodes")
    assert info.addresses == ["10.1.2.3", "192.168.1.7"]
    assert probe("local").addresses == []
