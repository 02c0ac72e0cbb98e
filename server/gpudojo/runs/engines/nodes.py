"""torchrun across nodes: a c10d rendezvous hosted on this machine, node 0 run here, every
other node joined with one command.

This machine runs the host follower (gpudojo.worker.nodes_host), which starts node 0's
torchrun agent and listens on ``where.host`` for the other nodes' relays. On each other
machine the learner pastes the join command (``gpudojo node join HOST:PORT --token ...``):
it asks the host for the job (the lab, its arguments, the rendezvous), starts a torchrun
agent there, and streams its ranks' output and metrics back, so that the run view shows
every node and every rank. The token, random per run, is what lets a relay in: the relay
port accepts nothing else.

The rendezvous store is torch's TCPStore, which trusts every client (and unpickles the
rendezvous state it is sent), so it listens where no other machine or user can connect: in a
private network namespace on node 0 (gpudojo.worker.private_net). Node 0's own agent reaches
it through a loopback gate that admits only this user's processes; every other node through
its join command, which tunnels its agent's store connections to the relay with the token.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import shlex
import shutil
import socket
from pathlib import Path
from typing import Any

import psutil

from ...runfolder import RECORD_MEMORY_ENV, RECORD_PROFILE_ENV
from ...worker.torch_agent import STORE_BIND_ENV
from ..launch import interface_of
from ..models import NodesWhere
from .base import GLOBAL_RANK_PREFIX, RANK_PREFIX_TEMPLATE_ENV, EngineContext, GeneratedFile

JOB_FILE = "job.json"
JOIN_FILE = "join-command.txt"
NODE0_FILE = "node0-torchrun.txt"
LAST_CALL_S = 5


def free_port(host: str) -> int:
    """A port free on ``host`` now (chosen when the run is made, so its commands can be shown
    while it waits in the queue)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def nnodes_spec(where: NodesWhere) -> str:
    """torchrun's --nnodes: N, or MIN:MAX when elastic."""
    if where.min_nodes is not None and where.min_nodes < where.nnodes:
        return f"{where.min_nodes}:{where.nnodes}"
    return str(where.nnodes)


def torchrun_argv(
    python: str,
    job: dict[str, Any],
    *,
    local_addr: str,
    rdzv_port: int,
    log_dir: Path,
    entry: Path,
    hosts_store: bool = False,
) -> list[str]:
    """One node's torchrun agent for ``job`` (the document the host gives every node), whose
    rendezvous store is reached on this machine's 127.0.0.1:``rdzv_port`` (node 0's gate, or a
    joined node's tunnel to the relay). ``hosts_store``: this agent serves the store (node 0);
    said outright, since torch's guess from host names would not match 127.0.0.1's meaning."""
    return [
        python,
        "-m",
        "gpudojo.worker.torch_agent",
        "--nnodes",
        job["nnodes"],
        "--nproc-per-node",
        str(job["nproc"]),
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        f"127.0.0.1:{rdzv_port}",
        "--rdzv-id",
        job["run_id"],
        "--rdzv-conf",
        # A node whose agent misses 3 heartbeats, 1 s apart, is dropped from the rendezvous, so
        # that an elastic restart's round (closed LAST_CALL_S after its minimum joined) never
        # counts a dead node in (torch's defaults, 5 s and 30 s, make a restart wait ~45 s).
        f"join_timeout={job['join_timeout_s']},last_call_timeout={LAST_CALL_S},"
        f"keep_alive_interval=1,keep_alive_max_attempt=3,is_host={'true' if hosts_store else 'false'}",
        "--max-restarts",
        str(job["max_restarts"]),
        "--local-addr",
        local_addr,
        "--log-dir",
        str(log_dir),
        "--tee",
        "3",
        str(entry),
        *job["args"],
    ]


def node_env(base: dict[str, str], job: dict[str, Any], local_addr: str) -> dict[str, str]:
    """A node's environment: global ranks in the log prefix, gloo on the interface that
    reaches the other nodes (a machine's host name may resolve to an address they cannot
    reach), the store torch shares with the workers bound to that address only, the run's
    backend and id."""
    env = dict(base)
    env[STORE_BIND_ENV] = local_addr
    env[RANK_PREFIX_TEMPLATE_ENV] = GLOBAL_RANK_PREFIX
    env["GPUDOJO_BACKEND"] = job["backend"]
    env["GPUDOJO_RUN_ID"] = job["run_id"]
    env["PYTHONUNBUFFERED"] = "1"
    iface = interface_of(local_addr)
    if iface:
        env["GLOO_SOCKET_IFNAME"] = iface
    return env


class NodesEngine:
    name = "torchrun-nodes"
    title = "torchrun across nodes"

    def availability(self) -> tuple[bool, str]:
        if shutil.which("bwrap") is None:
            return True, (
                "this machine hosts the rendezvous, but without bubblewrap its store is reachable by this "
                "machine's other users; the other nodes join with the command the run gives"
            )
        return True, "this machine hosts the rendezvous; the other nodes join with the command the run gives"

    def addresses(self) -> list[str]:
        """This machine's IPv4 addresses other machines may reach: not loopback, not link-local.

        Read from the interfaces (psutil), so no network traffic; a node on another machine
        cannot reach 127.0.0.1, so the run form proposes one of these instead."""
        found = []
        for addrs in psutil.net_if_addrs().values():
            for a in addrs:
                if a.family != socket.AF_INET:
                    continue
                ip = ipaddress.ip_address(a.address)
                if not (ip.is_loopback or ip.is_link_local or ip.is_unspecified) and a.address not in found:
                    found.append(a.address)
        return found

    def job(self, ctx: EngineContext, where: NodesWhere, rdzv_port: int) -> dict[str, Any]:
        """What every node is told: the lab (or the script's text), arguments, rendezvous."""
        job: dict[str, Any] = {
            "run_id": ctx.run_id,
            "title": ctx.title,
            "lab": ctx.lab_id,
            "entry": ctx.entry.name,
            "args": list(ctx.args),
            "nproc": ctx.nproc,
            "nnodes": nnodes_spec(where),
            "min_nodes": where.min_nodes or where.nnodes,
            "max_nodes": where.nnodes,
            # The store listens on node 0's loopback, in a namespace of its own; the other
            # nodes reach it only through the relay.
            "rdzv_port": rdzv_port,
            "max_restarts": where.max_restarts,
            "join_timeout_s": where.join_timeout_s,
            "backend": ctx.dist_backend,
        }
        if ctx.lab_id is None:
            # A learner's script exists only here: the nodes get its text.
            job["script"] = ctx.entry.read_text(encoding="utf-8")
        return job

    @staticmethod
    def node0_argv(ctx: EngineContext, job: dict[str, Any], where: NodesWhere) -> list[str]:
        """Node 0's torchrun agent: on this machine, hosting the rendezvous store."""
        return torchrun_argv(
            ctx.python,
            job,
            local_addr=where.host,
            rdzv_port=job["rdzv_port"],
            log_dir=ctx.folder.torchrun_dir,
            entry=ctx.entry,
            hosts_store=True,
        )

    def generate(self, ctx: EngineContext, where: NodesWhere) -> list[GeneratedFile]:
        relay_port = free_port(where.host)
        rdzv_port = free_port("127.0.0.1")
        while rdzv_port == relay_port:
            rdzv_port = free_port("127.0.0.1")
        token = secrets.token_hex(20)  # hex: never starts with "-", which argparse would take for an option
        job = self.job(ctx, where, rdzv_port)
        job["relay"] = f"{where.host}:{relay_port}"
        job["token"] = token  # the host keeps it; nodes prove they have it, and are never sent it
        node0 = self.node0_argv(ctx, job, where)
        others = where.nnodes - 1
        machines = "the other machine" if others == 1 else f"each of the other {others} machines"
        join = (
            f"# On {machines} (gpudojo installed, this machine reachable at {where.host}), run:\n"
            + shlex.join(["gpudojo", "node", "join", job["relay"], "--token", token])
            + "\n"
        )
        return [
            GeneratedFile(JOIN_FILE, "Join command for the other nodes", join, secret=True),
            GeneratedFile(NODE0_FILE, "torchrun on this machine (node 0)", shlex.join(node0) + "\n"),
            GeneratedFile(
                JOB_FILE,
                "The job every node is given",
                json.dumps(job, indent=2) + "\n",
                "application/json",
                secret=True,
            ),
        ]

    def command(self, ctx: EngineContext, where: NodesWhere, artifacts_dir: Path) -> tuple[list[str], dict[str, str]]:
        job = json.loads((artifacts_dir / JOB_FILE).read_text(encoding="utf-8"))
        node0 = self.node0_argv(ctx, job, where)
        argv = [
            ctx.python,
            "-m",
            "gpudojo.worker.nodes_host",
            "--run-dir",
            str(ctx.folder.path),
            "--artifacts",
            str(artifacts_dir),
            "--",
            *node0,
        ]
        env = node_env(ctx.env, job, where.host)
        # Recording stays with node 0: the other nodes have no run folder to record into.
        for name, asked in ((RECORD_MEMORY_ENV, ctx.record_memory), (RECORD_PROFILE_ENV, ctx.record_profile)):
            if asked:
                env[name] = "1"
        return argv, env
