"""The sandbox a learner's programs run in during an exercise check: bubblewrap.

A check runs code the learner wrote, and the learner is the one who gains from a forged
result. So each program a check starts (``learner.run`` / ``learner.drive``) runs under
bubblewrap with:

- its own PID namespace: nothing of the check process or the server is visible in /proc,
  and when the program exits or is killed its namespace ends, daemons included;
- its own user namespace with every capability dropped, so that root outside is no one
  special inside (as plain root, bubblewrap keeps capabilities and a program could
  unmount what hides the checks);
- a read-only view of the machine in which the check's scratch folder (the learner's copy,
  HOME, TMPDIR, pytest's tmp_path) and a private /tmp are the only writable places, and the
  course content, the data dir (progress database, every other check's scratch) and
  Jupyter's runtime dir (tokens) are empty, read-only folders;
- its own network namespace: a loopback of its own (gloo and torchrun rendezvous work on
  127.0.0.1) and nothing else, so nothing outside can be reached and no port it opens can
  be reached from outside.

Where bubblewrap cannot run (not Linux, not installed, user namespaces turned off) checks
still run, unsandboxed, and the attempt says so with :func:`support`'s reason.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# The namespaces and privileges of every sandbox; the probe runs with the same ones.
NAMESPACES = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
)
BASE_MOUNTS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
PROBE_TIMEOUT_S = 10.0
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt install bubblewrap) to run checks in a sandbox"


@dataclass(frozen=True)
class SandboxSupport:
    """Whether learner programs can be sandboxed here: the bwrap to use, else why not."""

    bwrap: str | None
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.bwrap is not None


def support() -> SandboxSupport:
    """Can bubblewrap make a sandbox here? Probed once per bwrap binary (a trivial sandbox
    that runs ``true``), then cached."""
    if not sys.platform.startswith("linux"):
        return SandboxSupport(None, f"bubblewrap needs Linux; this is {sys.platform}")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxSupport(None, f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")
    return _probe(bwrap)


@functools.lru_cache(maxsize=4)
def _probe(bwrap: str) -> SandboxSupport:
    true = shutil.which("true") or "/bin/true"
    try:
        proc = subprocess.run(
            [bwrap, *NAMESPACES, *BASE_MOUNTS, "--", true],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return SandboxSupport(None, f"bubblewrap could not be started ({err})")
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = f": {said[-1]}" if said else ""
        return SandboxSupport(
            None,
            f"bubblewrap cannot make a sandbox here{why} (are unprivileged user namespaces turned off? "
            "sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces)",
        )
    return SandboxSupport(bwrap)


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def hidden_folders(paths: Iterable[Path], *, keep: Sequence[Path]) -> list[Path]:
    """The folders to hide, resolved, shallowest first: those that exist, none inside
    another, and none that holds a path of ``keep`` (the Python that runs the program)."""
    resolved = sorted({Path(p).resolve() for p in paths if Path(p).is_dir()}, key=lambda p: (len(p.parts), p))
    keep = [Path(k).resolve() for k in keep]
    out: list[Path] = []
    for p in resolved:
        if p == Path(p.anchor) or any(_under(p, h) for h in out) or any(_under(k, p) for k in keep):
            continue
        out.append(p)
    return out


def wrap(
    bwrap: str,
    argv: Sequence[str],
    *,
    cwd: Path,
    writable: Sequence[Path],
    hidden: Sequence[Path],
    readable: Sequence[Path] = (),
    gpu: bool = False,
) -> tuple[list[str], int]:
    """``argv`` run by bubblewrap: the machine read-only, ``writable`` folders writable,
    ``hidden`` folders empty and read-only, ``readable`` files and folders (inside hidden
    ones, or under /tmp) back in place read-only, the GPU device nodes reachable with
    ``gpu``. Returns the command and a file descriptor holding bubblewrap's options: the
    caller passes it to the child (``pass_fds``) and closes it after the start."""
    options = [*NAMESPACES, *BASE_MOUNTS]
    if gpu:  # --dev gives a minimal /dev; the driver's nodes are added where they exist
        for node in sorted(glob.glob("/dev/nvidia*")):
            options += ["--dev-bind-try", node, node]
    for h in hidden:
        options += ["--tmpfs", str(h)]
    for w in writable:
        options += ["--bind", str(w), str(w)]
    for r in readable:
        options += ["--ro-bind", str(r), str(r)]
    # Last, so that the mount points made above exist: the masks themselves read-only.
    for h in hidden:
        options += ["--remount-ro", str(h)]
    options += ["--chdir", str(cwd)]
    # The options go through a file, not the command line, which every process in the
    # sandbox could read (/proc/1/cmdline): they name the folders it must not know of.
    fd = os.memfd_create("gpudojo-sandbox-options")
    os.write(fd, b"".join(o.encode() + b"\0" for o in options))
    os.lseek(fd, 0, os.SEEK_SET)
    return [bwrap, "--args", str(fd), "--", *argv], fd


def host_pid(root_pid: int, inner_pid: int) -> int | None:
    """The pid, as seen outside, of the process that is ``inner_pid`` inside the PID
    namespace of the sandbox started as ``root_pid`` (from /proc/<pid>/status's NSpid)."""
    import psutil

    try:
        procs = psutil.Process(root_pid).children(recursive=True)
    except psutil.Error:
        return None
    for proc in procs:
        try:
            with open(f"/proc/{proc.pid}/status", encoding="ascii", errors="replace") as f:
                for line in f:
                    if line.startswith("NSpid:"):
                        ids = line.split()[1:]
                        if len(ids) > 1 and int(ids[-1]) == inner_pid:
                            return proc.pid
                        break
        except (OSError, ValueError):
            continue
    return None
