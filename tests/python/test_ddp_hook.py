"""distributed-gpu-training's ddp_hook.py and torchrun's error files.

When the elastic-restart check kills one rank, the other fails in its next collective and the
learner's @record writes the exception to torchrun's error file, while torchrun's agent
SIGTERMs that survivor and (recent PyTorch, 2.13 here) json-loads its error file once it has died.
torch writes that file with open(path, "w") then json.dump: a survivor ended in between leaves
an empty file, and torchrun itself crashed with "JSONDecodeError: Expecting value" instead of
restarting the workers (a flaky elastic-restart failure). The hook writes the file whole or not
at all. These tests hold the survivor inside that write until the agent ends it, so the race
happens every time.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gpudojo.paths import material_root

HOOK = material_root("content") / "exercises" / "distributed-gpu-training" / "checks" / "ddp_hook.py"

pytestmark = pytest.mark.timeout(180)

# Rank 1 fails as a rank does when its partner dies and stops inside torch's write of the error
# file (the file is open and still empty); only then does rank 0 die by SIGKILL, as the check's
# victim does. The agent SIGTERMs rank 1 there and reads its error file. In the restarted
# attempt both ranks succeed.
SURVIVOR_ENDED_MID_WRITE = r"""
import json, os, signal, sys, time
from pathlib import Path
from torch.distributed.elastic.multiprocessing.errors import record

WRITING = Path(sys.argv[1])
_dump = json.dump


def held_dump(obj, fp, **kwargs):
    WRITING.touch()
    time.sleep(60)  # the agent ends this process here
    _dump(obj, fp, **kwargs)


json.dump = held_dump


@record
def main():
    if int(os.environ["TORCHELASTIC_RESTART_COUNT"]) > 0:
        print("restarted and done", flush=True)
        return
    if int(os.environ["RANK"]) == 1:
        raise RuntimeError("Connection closed by peer")
    deadline = time.monotonic() + 60
    while not WRITING.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGKILL)


main()
"""

# Rank 1 raises and nobody interrupts it: the agent must still get the whole error.
RANK_1_RAISES = r"""
import os, time
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    if int(os.environ["RANK"]) == 1:
        raise ValueError("the learner's own error, 8d1f")
    time.sleep(60)  # ended by the agent after rank 1 fails


main()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(tmp_path: Path, script: str, *args: str, restarts: int) -> subprocess.CompletedProcess:
    path = tmp_path / "script.py"
    path.write_text(script)
    records = tmp_path / "records"
    records.mkdir()
    logs = tmp_path / "logs"
    argv = [
        sys.executable, "-m", "torch.distributed.run",
        "--nproc-per-node", "2",
        "--max-restarts", str(restarts),
        "--monitor-interval", "0.1",
        "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"127.0.0.1:{free_port()}",
        "--log-dir", str(logs),
        str(HOOK), str(path), *args,
    ]  # fmt: skip
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "GPUDOJO_DDP_CHECK_DIR": str(records),
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
    }
    env.pop("TORCHELASTIC_ERROR_FILE", None)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=150, cwd=tmp_path)


def test_a_survivor_ended_while_writing_its_error_file_does_not_crash_torchrun(tmp_path):
    res = torchrun(tmp_path, SURVIVOR_ENDED_MID_WRITE, str(tmp_path / "writing"), restarts=1)
    out = res.stdout + res.stderr
    assert (tmp_path / "writing").exists(), out[-3000:]  # the survivor was inside the write
    assert "JSONDecodeError" not in out, out[-3000:]
    assert res.returncode == 0, out[-3000:]
    assert "restarted and done" in res.stdout, out[-3000:]
    # No error file was left half written: the survivor's is absent (it never finished it).
    assert not list((tmp_path / "logs").rglob("attempt_0/1/error.json")), out[-3000:]


def test_the_error_file_still_carries_the_learners_exception(tmp_path):
    res = torchrun(tmp_path, RANK_1_RAISES, restarts=0)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert "JSONDecodeError" not in out, out[-3000:]
    # torchrun's summary shows the traceback it read from the error file.
    assert 'raise ValueError("the learner\'s own error, 8d1f")' in out, out[-3000:]
    files = list((tmp_path / "logs").rglob("error.json"))
    assert [p.parent.name for p in files] == ["1"], files
    assert not list((tmp_path / "logs").rglob("*.tmp")), "the temporary file was renamed into place"
