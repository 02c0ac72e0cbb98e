"""A real one-host Slurm cluster for the Slurm engine's tests: munged, slurmctld and slurmd
from Debian's slurm-wlm and munge (`make test` installs them), started in a temporary folder
with a configuration of their own, and stopped at the end of the session.

Nothing of the machine's own Slurm or munge is touched: the key, the munge socket, the
ports, the state and spool folders and the logs are all in the temporary folder, and the
clients (sbatch, squeue, scontrol, scancel, and the follower the run service starts) find
the cluster through SLURM_CONF, which the `slurm` fixture sets for one test at a time.

Use ``slurm`` (function scope: the cluster, SLURM_CONF set) in a test module:

    from slurm_cluster import slurm, slurm_cluster  # noqa: F401

Run as a script, it serves the same cluster to something else (the browser test's server):

    python tests/python/slurm_cluster.py serve DIR   # DIR/slurm.conf, DIR/ready once up; SIGTERM stops it
    python tests/python/slurm_cluster.py missing     # the binaries this machine lacks, one a line
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")
START_TIMEOUT_S = 30.0


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    node: str
    cpus: int
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, timeout: float = 15.0) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster."""
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout)

    def log(self, daemon: str) -> str:
        path = self.root / "log" / f"{daemon}.log"
        return path.read_text(errors="replace") if path.is_file() else ""

    def job_processes(self) -> list[psutil.Process]:
        """Processes Slurm started for this cluster's jobs (slurmstepd and its children carry
        our SLURM_CONF in their environment), found by that, never by name."""
        mine = []
        for proc in psutil.process_iter(["pid"]):
            if proc.pid == os.getpid() or proc.pid in {p.pid for p in self.procs.values()}:
                continue
            with contextlib.suppress(psutil.Error):
                if proc.environ().get("SLURM_CONF") == str(self.conf) and proc.status() != psutil.STATUS_ZOMBIE:
                    mine.append(proc)
        return mine


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def missing_binaries() -> list[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name) is None and not _sbin(name)]


def _sbin(name: str) -> str | None:
    """Debian puts the daemons in /usr/sbin, which a non-root PATH may lack."""
    for folder in ("/usr/sbin", "/sbin", "/usr/local/sbin"):
        if os.access(Path(folder) / name, os.X_OK):
            return str(Path(folder) / name)
    return None


def binary(name: str) -> str:
    return shutil.which(name) or _sbin(name) or name


def write_config(root: Path, node: str, cpus: int, memory_mb: int, munge_socket: Path) -> Path:
    """slurm.conf for one host: no cgroups (processes tracked through /proc), no accounting
    database (scontrol keeps finished jobs for MinJobAge), root runs everything."""
    ctld_port, node_port = free_ports(2)
    lines = {
        "ClusterName": "gpudojo-test",
        "SlurmctldHost": f"{node}(127.0.0.1)",
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "SlurmctldPort": ctld_port,
        "SlurmdPort": node_port,
        "AuthType": "auth/munge",
        "CredType": "cred/munge",
        "AuthInfo": f"socket={munge_socket}",
        "StateSaveLocation": root / "state",
        "SlurmdSpoolDir": root / "spool",
        "SlurmctldPidFile": root / "slurmctld.pid",
        "SlurmdPidFile": root / "slurmd.pid",
        "SlurmctldLogFile": root / "log" / "slurmctld.log",
        "SlurmdLogFile": root / "log" / "slurmd.log",
        # proctrack/linuxproc follows a job's processes through their parents in /proc, so
        # torchrun's workers (in sessions of their own) are found and killed with the job;
        # proctrack/pgid would miss them. task/none: no CPU binding, no cgroups needed.
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "JobCompType": "jobcomp/none",
        "MpiDefault": "none",
        "SwitchType": "switch/none",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU",
        # The node may declare more CPUs than a small test machine has (two ranks on one core).
        "SlurmdParameters": "config_overrides",
        "ReturnToService": 2,
        # scontrol still shows a finished job (state, exit code) for this long (s).
        "MinJobAge": 600,
        # SIGKILL this soon after scancel's SIGTERM (s): cancels end quickly.
        "KillWait": 5,
        "SlurmdTimeout": 60,
        "MailProg": "/bin/true",
    }
    text = "".join(f"{k}={v}\n" for k, v in lines.items())
    text += f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN\n"
    text += f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP\n"
    conf = root / "slurm.conf"
    conf.write_text(text)
    return conf


def start_munge(root: Path) -> tuple[subprocess.Popen, Path]:
    """munged with its own key, socket, pid and log files, in the foreground as our child."""
    keydir, rundir = root / "munge", root / "munge-run"
    keydir.mkdir(mode=0o700)
    rundir.mkdir(mode=0o755)
    key = keydir / "munge.key"
    if shutil.which("mungekey") or _sbin("mungekey"):
        subprocess.run([binary("mungekey"), "--create", f"--keyfile={key}"], check=True, capture_output=True)
    else:
        key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = rundir / "munge.socket"
    argv = [
        binary("munged"),
        "--foreground",
        "--force",  # we are root in the test container
        f"--socket={sock}",
        f"--key-file={key}",
        f"--pid-file={rundir / 'munged.pid'}",
        f"--log-file={root / 'log' / 'munged.log'}",
        f"--seed-file={keydir / 'munged.seed'}",
    ]
    proc = _spawn(argv, root / "log" / "munged.out", os.environ)
    _wait(lambda: sock.exists(), f"munged did not create {sock}", proc, root / "log" / "munged.log")
    return proc, sock


def _spawn(argv: list[str], out: Path, env: dict[str, str] | os._Environ[str]) -> subprocess.Popen:
    with open(out, "wb") as f:
        return subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=dict(env))


def _wait(ready, message: str, proc: subprocess.Popen | None = None, log: Path | None = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if ready():
            return
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-2000:] if log and log.is_file() else ""
    raise RuntimeError(f"{message}\n{tail}")


def stop(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def start_cluster(root: Path) -> SlurmCluster:
    (root / "log").mkdir(parents=True)
    (root / "state").mkdir()
    (root / "spool").mkdir()
    node = socket.gethostname().split(".")[0]
    cpus = max(os.cpu_count() or 1, 2)
    memory_mb = int(psutil.virtual_memory().total / 2**20 * 0.9)
    cluster = SlurmCluster(root=root, conf=root / "slurm.conf", node=node, cpus=cpus)
    try:
        cluster.procs["munged"], sock = start_munge(root)
        write_config(root, node, cpus, memory_mb, sock)
        env = cluster.env
        # -D: foreground, our children; -c: a fresh controller state; -N: the node's name.
        cluster.procs["slurmctld"] = _spawn([binary("slurmctld"), "-D", "-c"], root / "log" / "slurmctld.out", env)
        _wait(
            lambda: cluster.run("scontrol", "ping").stdout.count(" is UP") > 0,
            "slurmctld does not answer scontrol ping",
            cluster.procs["slurmctld"],
            root / "log" / "slurmctld.log",
        )
        cluster.procs["slurmd"] = _spawn([binary("slurmd"), "-D", "-N", node], root / "log" / "slurmd.out", env)
        _wait(
            lambda: cluster.run("sinfo", "-h", "-N", "-o", "%T").stdout.strip() == "idle",
            f"node {node} did not become idle",
            cluster.procs["slurmd"],
            root / "log" / "slurmd.log",
        )
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def stop_cluster(cluster: SlurmCluster) -> None:
    """Cancel every job, stop the daemons, and kill whatever process of a job is left."""
    if "slurmctld" in cluster.procs and cluster.procs["slurmctld"].poll() is None:
        with contextlib.suppress(Exception):
            cluster.run("scancel", "--user", "root", timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and cluster.job_processes():
            time.sleep(0.2)
    for name in ("slurmd", "slurmctld", "munged"):
        if name in cluster.procs:
            stop(cluster.procs[name])
    leftovers = cluster.job_processes()
    for proc in leftovers:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(leftovers, timeout=5)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """The one-host cluster, started once for the session (about 2 s) and stopped at its end."""
    missing = missing_binaries()
    if missing:
        pytest.skip(
            f"Slurm is not installed here ({', '.join(missing)} missing): `make test` installs Debian's "
            "slurm-wlm and munge"
        )
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    """The cluster, with SLURM_CONF pointing at it for the clients this test starts (the
    follower, sbatch, scontrol): only for this test, so no other test sees a Slurm."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    for name in ("slurmctld", "slurmd", "munged"):
        proc = slurm_cluster.procs[name]
        assert proc.poll() is None, f"{name} exited ({proc.returncode}): {slurm_cluster.log(name)[-2000:]}"
    return slurm_cluster


# --- as a script: the cluster for another process ------------------------------------------

READY_FILE = "ready"


def recording_tools(folder: Path) -> tuple[Path, Path]:
    """Stand-ins for sbatch, squeue, scontrol and scancel, for tests that must see whether a tool
    ran at all (no cluster behind them): each appends "<tool> <args>" to a file, and scontrol
    ping answers as an UP controller does. (the folder to put first on PATH, the record file)"""
    bin_dir = folder / "recording-bin"
    bin_dir.mkdir()
    record = folder / "tools-called"
    for tool in ("sbatch", "squeue", "scontrol", "scancel"):
        (bin_dir / tool).write_text(
            f'#!/bin/sh\necho "{tool} $*" >> "{record}"\necho "Slurmctld(primary) at fake-head is UP"\n'
        )
        (bin_dir / tool).chmod(0o755)
    return bin_dir, record


def serve(root: Path, poll_s: float = 0.2) -> int:
    """Start the cluster in ``root`` (new or empty), write ``root/ready`` (the path of its
    slurm.conf) once the node is idle, and keep it up until SIGTERM, SIGINT or SIGHUP, or
    until a daemon dies; then stop everything. Exit code 0 when stopped by a signal."""
    missing = missing_binaries()
    if missing:
        print(f"Slurm is not installed here: {', '.join(missing)} missing", file=sys.stderr)
        return 2
    stopping: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: stopping.append(signum))
    root.mkdir(parents=True, exist_ok=True)
    cluster = start_cluster(root)
    try:
        (root / READY_FILE).write_text(f"{cluster.conf}\n")
        print(f"SLURM_CONF={cluster.conf} node={cluster.node}", flush=True)
        while not stopping:
            dead = [name for name, proc in cluster.procs.items() if proc.poll() is not None]
            if dead:
                print(f"{', '.join(dead)} exited: stopping the cluster", file=sys.stderr)
                return 1
            time.sleep(poll_s)
        return 0
    finally:
        (root / READY_FILE).unlink(missing_ok=True)
        stop_cluster(cluster)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="A one-host Slurm cluster for gpudojo's tests")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="start it in DIR and keep it up until SIGTERM")
    p_serve.add_argument("dir", type=Path)
    sub.add_parser("missing", help="print the Slurm and munge binaries this machine lacks")
    args = parser.parse_args(argv)
    if args.command == "missing":
        for name in missing_binaries():
            print(name)
        return 0
    return serve(args.dir.resolve())


if __name__ == "__main__":
    sys.exit(main())
