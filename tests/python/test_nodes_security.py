"""What a torchrun-nodes run and a local lab run leave open, and what a stranger can do with it.

Issue 22's first finding: torch's c10d rendezvous store listened on every interface, and a
client with no token that set ``torch.rendezvous.<run id>`` to a pickle ran a shell in node
0's torchrun agent. These tests attack a waiting run as another user of this machine, and
from another network namespace, and check that only what the run needs listens, where.
The relay's own checks (finding 4) are tested with raw relay messages.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pickle
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpudojo.runs.models import LabRunRequest
from gpudojo.runs.service import RunService
from gpudojo.worker.private_net import PrivateNet, PrivateNetUnavailable
from test_nodes_engine import LONG, nodes_run, run_processes, run_service, two_hosts, wait_until

pytestmark = pytest.mark.timeout(240)
NOBODY = 65534


@pytest.fixture(scope="module")
def hosts():
    with two_hosts() as made:
        yield made


@pytest.fixture
def service(tmp_path):
    with run_service(tmp_path) as svc:
        yield svc


def private_net_available() -> bool:
    try:
        PrivateNet().close()
    except PrivateNetUnavailable:
        return False
    return True


def listening(run_id: str) -> set[tuple[str, int]]:
    """Every TCP address a process of the run listens on, as this network namespace sees it."""
    found = set()
    for p in run_processes(run_id):
        with contextlib.suppress(psutil.Error):
            for c in p.net_connections(kind="tcp"):
                if c.status == psutil.CONN_LISTEN:
                    found.add((c.laddr.ip, c.laddr.port))
    return found


def is_loopback(ip: str) -> bool:
    return ip.startswith("127.") or ip in ("::1", "::ffff:127.0.0.1")


class Payload:
    """What the attacker stores as the rendezvous state: unpickling it runs a command."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


ATTACK = """
import base64, sys, datetime
from torch.distributed import TCPStore
host, port, key, value = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    store = TCPStore(host, port, is_master=False, timeout=datetime.timedelta(seconds=3))
    store.set(key, value.encode())
    print("stored", flush=True)
except Exception as err:
    print("refused:", type(err).__name__, flush=True)
"""


def bomb(run_id: str, marker: Path) -> tuple[str, str]:
    """The key of the run's rendezvous state and a state whose unpickling runs a command."""
    return f"torch.rendezvous.{run_id}", base64.b64encode(pickle.dumps(Payload(str(marker)))).decode()


def attack_from(prefix: list[str], address: tuple[str, int], run_id: str, marker: Path) -> str:
    """A TCPStore client with no token, started under ``prefix`` (another network namespace)."""
    key, state = bomb(run_id, marker)
    argv = [*prefix, sys.executable, "-c", ATTACK, address[0], str(address[1]), key, state]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return proc.stdout + proc.stderr[-500:]


def attack_as(uid: int, address: tuple[str, int], run_id: str, marker: Path) -> str:
    """The same client as another user of this machine: a child that gives up root before it
    connects (forked, since that user may not be able to read this interpreter's files)."""
    import datetime

    from torch.distributed import TCPStore

    key, state = bomb(run_id, marker)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        answer = "refused"
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            store = TCPStore(address[0], address[1], is_master=False, timeout=datetime.timedelta(seconds=3))
            store.set(key, state.encode())
            answer = "stored"
        except BaseException as err:
            answer = f"refused: {type(err).__name__}"
        finally:
            os.write(write, answer.encode())
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as f:
        return f.read().decode()


@pytest.mark.skipif(os.geteuid() != 0, reason="attacking as another user needs root to become one")
def test_a_tokenless_store_client_cannot_make_node_0_run_anything(service, hosts, tmp_path):
    """Another user of this machine, and a machine on the run's network (node 1's namespace),
    try every port the waiting run listens on as torch's store clients; none gets a pickle to
    node 0's agent, and the run goes on waiting, its rendezvous untouched."""
    trap = tmp_path / "trap"
    trap.mkdir()
    trap.chmod(0o777)
    run_id = nodes_run(service, hosts, LONG)
    wait_until(lambda: service.get(run_id).nodes and len(listening(run_id)) >= 2, 30)
    time.sleep(2)  # node 0's agent has made its store and waits for node 1
    ports = listening(run_id)
    assert ports, "the run listens nowhere"
    answers = {}
    for ip, port in sorted(ports):
        host = "127.0.0.1" if ip in ("0.0.0.0", "::") else ip
        answers[(host, port, "local user")] = attack_as(NOBODY, (host, port), run_id, trap / f"local-{port}")
        if hosts.prefix and not is_loopback(host):
            answers[(host, port, "other machine")] = attack_from(hosts.prefix, (host, port), run_id, trap / "remote")
    time.sleep(3)  # an unpickled state would have run by now (it took under a second)
    assert not list(trap.iterdir()), answers
    assert not any(a.startswith("stored") for a in answers.values()), answers
    run = service.get(run_id)
    assert run.status == "running" and run.rendezvous.state == "waiting"
    service.cancel(run_id)


@pytest.mark.skipif(not private_net_available(), reason="bubblewrap cannot make a network namespace here")
def test_a_waiting_nodes_run_listens_only_on_its_relay_and_a_loopback_gate(service, hosts):
    """Before any node joins: the relay on the address the learner gave, the store's gate on
    loopback; the store itself listens in node 0's private namespace, not here."""
    run_id = nodes_run(service, hosts, LONG)
    job = json.loads(service.artifact(run_id, "job.json").content)
    wait_until(lambda: len(listening(run_id)) >= 2, 30)
    time.sleep(2)
    ports = listening(run_id)
    relay_host, relay_port = job["relay"].rsplit(":", 1)
    assert ports == {(relay_host, int(relay_port)), ("127.0.0.1", job["rdzv_port"])}, ports
    # The files that hold the relay's token are this user's alone.
    for name in ("job.json", "join-command.txt"):
        assert (service.folder(run_id).artifacts_dir / name).stat().st_mode & 0o077 == 0, name
    service.cancel(run_id)


def test_a_running_nodes_run_listens_on_no_address_beyond_its_host(service, hosts):
    """Mid-run (both nodes joined): what node 0 listens on is its relay and the stores and gloo
    sockets of the ranks, all on the address the learner gave or on loopback, never on every
    interface."""
    run_id = nodes_run(service, hosts, LONG)
    node = hosts.join(service, run_id)
    wait_until(lambda: len(list(service.folder(run_id).metrics_dir.glob("rank*.jsonl"))) == 4, 90)
    ports = listening(run_id)
    service.cancel(run_id)
    node.wait(30)
    assert ports and all(ip == hosts.host or is_loopback(ip) for ip, _ in ports), ports


def test_a_local_lab_run_listens_on_loopback_only(tmp_path):
    """lab-03 under torchrun on this machine: its store, and its ranks' gloo sockets, listen
    on 127.0.0.1 only (torch binds stores to every interface, and gloo to the address the
    host name resolves to)."""
    with run_service(tmp_path) as svc:
        (run,) = svc.submit(LabRunRequest(lab="lab-03-ddp", params=LONG))
        wait_until(lambda: len(list(svc.folder(run.id).metrics_dir.glob("rank*.jsonl"))) == 2, 90)
        ports = listening(run.id)
        svc.cancel(run.id)
    assert ports, "lab-03 listened nowhere: nothing was checked"
    assert all(is_loopback(ip) for ip, _ in ports), ports


# --- the relay and bad peers (finding 4) ------------------------------------------------------


def relay_of(svc: RunService, run_id: str) -> tuple[tuple[str, int], str]:
    line = svc.artifact(run_id, "join-command.txt").content.strip().splitlines()[-1].split()
    host, port = line[3].rsplit(":", 1)
    return (host, int(port)), line[5]


def say(address: tuple[str, int], *docs: dict | bytes) -> tuple[socket.socket, list[dict]]:
    """Open the relay, send each message as a line, and read what it answered to the hello."""
    sock = socket.create_connection(address, timeout=10)
    reader = sock.makefile("rb")
    answers = []
    for i, doc in enumerate(docs):
        sock.sendall(doc if isinstance(doc, bytes) else json.dumps(doc).encode() + b"\n")
        if i == 0:
            line = reader.readline()
            answers.append(json.loads(line) if line else {})
    return sock, answers


def logs(svc: RunService, run_id: str) -> list[dict]:
    past, _ = svc.subscribe(run_id, -1, lambda e: None)[:2]
    return [e for e in past if e["type"] == "log"]


def test_a_non_ascii_token_is_refused_without_a_traceback_in_the_log(service, hosts):
    run_id = nodes_run(service, hosts, LONG)
    address, _ = relay_of(service, run_id)
    wait_until(lambda: service.get(run_id).nodes, 20)
    for token in ("\u00fcber-geheim", "\u2603" * 50, 42, None, ["x"]):
        sock, answers = say(address, {"hello": 1, "token": token, "node": "x", "version": "0"})
        sock.close()
        assert "wrong token" in answers[0].get("error", ""), (token, answers)
    with contextlib.suppress(OSError):
        say(address, b"\xff\xfe not json\n")[0].close()
    time.sleep(1)
    text = "\n".join(e["text"] for e in logs(service, run_id))
    assert "Traceback" not in text and "TypeError" not in text
    assert service.get(run_id).status == "running"
    service.cancel(run_id)


def test_a_bad_message_ends_that_node_and_frees_its_slot(service, hosts):
    """With the right token, {"exit": "x"} crashed the handler and the node stayed joined
    forever; now that node is gone and a real node can take its place."""
    from gpudojo import __version__

    run_id = nodes_run(service, hosts, {**LONG, "epochs": 2})
    address, token = relay_of(service, run_id)
    wait_until(lambda: service.get(run_id).nodes, 20)
    sock, answers = say(address, {"hello": 1, "token": token, "node": "mallory", "version": __version__})
    assert "job" in answers[0]
    wait_until(lambda: len(service.get(run_id).rendezvous.joined) == 2, 10)
    sock.sendall(b'{"exit": "x"}\n')
    wait_until(lambda: len(service.get(run_id).rendezvous.joined) == 1, 10)
    sock.close()
    node = hosts.join(service, run_id)
    done = service.wait(run_id, 180)
    out = node.communicate(timeout=30)[0]
    assert done.status == "succeeded", (done.root_cause, out[-2000:])
    assert "mallory" not in " ".join(n.name for n in done.nodes)
    assert any("sent an exit status that is not a number" in e["text"] for e in logs(service, run_id))


def test_a_forged_rank_line_is_not_shown_as_a_rank_nor_completes_the_rendezvous(service, hosts):
    from gpudojo import __version__

    run_id = nodes_run(service, hosts, LONG)
    address, token = relay_of(service, run_id)
    wait_until(lambda: service.get(run_id).nodes, 20)
    sock, answers = say(
        address,
        {"hello": 1, "token": token, "node": "mallory", "version": __version__},
        {"o": "out", "t": "[default0]:Traceback (most recent call last):"},
        {"o": "out", "t": "[default0]:RuntimeError: forged"},
    )
    assert "job" in answers[0]
    time.sleep(2)
    run = service.get(run_id)
    assert run.rendezvous.state == "waiting" and run.job_state != "COMPLETE"
    assert not any(e["rank"] == 0 for e in logs(service, run_id))
    sock.close()
    service.cancel(run_id)


@pytest.mark.parametrize("host", ["0.0.0.0", "0", "0.0"])
def test_every_interface_is_refused_as_the_relay_host(host):
    from pydantic import ValidationError

    from gpudojo.runs.models import NodesWhere

    with pytest.raises(ValidationError, match=r"not 0\.0\.0\.0") as err:
        NodesWhere(engine="torchrun-nodes", host=host)
    assert err.value.errors()[0]["loc"] == ("host",)
