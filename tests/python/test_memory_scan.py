"""The snapshot scanner reads a pickle without unpickling it, and must read exactly what the
restricted unpickler reads: every shape torch has written, with the slow path as the oracle.
Whatever it does not know it leaves to the unpickler, which refuses what is not plain data."""

from __future__ import annotations

import json
import os
import pickle
import signal
from pathlib import Path

import numpy as np
import pytest

from gpudojo.memory.analysis import analyse
from gpudojo.memory.service import MemoryService
from gpudojo.memory.snapshot import RefusedPickle, read_capture
from gpudojo.worker.snapshot_scan import ScanStopped, scan
from memory_data import dump, make_real_snapshot, make_snapshot


def intervals(parsed) -> list[tuple]:
    iv = parsed.intervals
    frames = parsed.frames
    named = [json.dumps(frames[f], sort_keys=True) if f >= 0 else None for f in np.asarray(iv.frame)]
    rows = zip(iv.start, iv.end, iv.size, iv.category, named, iv.addr, strict=True)
    return sorted((float(a), float(b), int(c), int(d), e or "", int(f)) for a, b, c, d, e, f in rows)


def same_reading(path: Path) -> None:
    fast, slow = read_capture(path), read_capture(path, fast=False)
    assert intervals(fast) == intervals(slow)
    for field in ("axis", "t_start", "t_end", "entries", "categories", "category_source", "ooms", "notes", "context"):
        assert getattr(fast, field) == getattr(slow, field), field
    summary_fast, summary_slow = analyse(fast)[1], analyse(slow)[1]
    assert summary_fast["peak"]["total_bytes"] == summary_slow["peak"]["total_bytes"]
    assert summary_fast["peak"]["by_category"] == summary_slow["peak"]["by_category"]


CASES = {
    "torch-2.1 (no time_us, free, blocks without addresses)": dict(style="2.1", before=2),
    "torch-2.4 (free_requested/free_completed, time_us)": dict(style="2.4", before=2),
    "with an OOM at the end": dict(style="2.4", oom=True),
    "2.1 with an OOM": dict(style="2.1", oom=True),
    "no allocations before the trace": dict(before=0),
    "no stacks": dict(frames=False),
}


@pytest.mark.parametrize("shape", CASES, ids=list(CASES))
def test_the_scan_reads_what_the_unpickler_reads(shape, tmp_path):
    path = tmp_path / "snap.pickle"
    path.write_bytes(dump(make_snapshot(3000, seed=7, **CASES[shape])))
    same_reading(path)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_pickle_protocol_torch_may_write(protocol, tmp_path):
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(make_real_snapshot(2000, seed=protocol), protocol=protocol))
    scan(path)  # read by the scanner itself, not by the fallback
    same_reading(path)


def test_a_real_shaped_snapshot_with_phases_reads_the_same(tmp_path):
    """Deep shared stacks (innermost first, library frames skipped) and labkit's phase marks."""
    snapshot = make_real_snapshot(20_000, seed=3)
    path = tmp_path / "rank0.pickle"
    path.write_bytes(pickle.dumps(snapshot))
    trace = snapshot["device_traces"][0]
    t0, t1 = trace[0]["time_us"], trace[-1]["time_us"]
    phases = {"phases": [[t0 + (t1 - t0) * k / 4, name] for k, name in enumerate(["forward", "backward", "optimizer"])]}
    path.with_suffix(".phases.json").write_text(json.dumps(phases))
    same_reading(path)
    parsed = read_capture(path)
    assert parsed.category_source == "phases" and parsed.categories[1:] == ["forward", "backward", "optimizer"]
    assert {f["filename"] for f in parsed.frames} <= {f"/home/me/project/model_{i}.py" for i in range(5)}


def test_values_wider_than_64_bits_and_sets_are_left_to_the_unpickler(tmp_path):
    snapshot = make_snapshot(500, seed=1)
    snapshot["allocator_settings"] = {"huge": 1 << 80}
    path = tmp_path / "wide.pickle"
    path.write_bytes(dump(snapshot))
    with pytest.raises(ScanStopped, match="wider than 64 bits"):
        scan(path)
    same_reading(path)  # the fallback reads it all the same
    snapshot["allocator_settings"] = {"streams": {1, 2}}
    path.write_bytes(dump(snapshot))
    with pytest.raises(ScanStopped, match="opcode"):
        scan(path)
    same_reading(path)


def test_a_crafted_pickle_is_refused_by_name_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({"device_traces": [[{"action": "alloc", "addr": Exploit()}]]}))
    with pytest.raises(RefusedPickle, match=r"refused (posix|os)\.system"):
        read_capture(path)
    assert not marker.exists()


@pytest.mark.parametrize("cut", [1, 100, 5000])
def test_a_truncated_snapshot_is_refused_not_crashed(cut, tmp_path):
    data = dump(make_snapshot(2000, seed=2))
    path = tmp_path / "cut.pickle"
    path.write_bytes(data[:-cut])
    with pytest.raises(RefusedPickle):
        read_capture(path)


def test_a_pickle_that_is_not_a_snapshot_says_so(tmp_path):
    path = tmp_path / "other.pickle"
    path.write_bytes(pickle.dumps({"weights": [1.0, 2.0]}))
    with pytest.raises(RefusedPickle, match="not a CUDA memory snapshot"):
        read_capture(path)


def test_the_worker_reports_progress_and_a_killed_worker_is_replaced(tmp_path):
    """Reading progress every 16 MiB of file; a worker killed between analyses is started
    again for the next one, and the server-side service never notices more than a delay."""
    path = tmp_path / "root" / "big.pickle"
    path.parent.mkdir()
    path.write_bytes(pickle.dumps(make_real_snapshot(300_000, seed=5)))
    assert path.stat().st_size > 32 << 20
    service = MemoryService(tmp_path / "data", tmp_path / "root")
    try:
        service.warm_up()
        seen: list[dict] = []
        folder = service.cache_dir / "probe"
        reply = service._worker.call({"source": str(path), "folder": str(folder)}, 300, seen.append)
        assert reply["ok"] and reply["allocations"] > 0
        reading = [p["fraction"] for p in seen if p["phase"] == "reading"]
        assert len(reading) >= 2 and reading == sorted(reading) and 0 < reading[0] < 1
        assert [p["phase"] for p in seen][-2:] == ["pairing", "indexing"]
        os.kill(service._worker.proc.pid, signal.SIGKILL)
        analysis = service.analyze_path("big.pickle")
        assert analysis.allocations == reply["allocations"] and not analysis.cached
        assert service.progress("file:big.pickle").phase == "done"
    finally:
        service.close()


def test_the_server_side_never_loads_numba_or_torch(tmp_path):
    """The service analyses through its worker: the process that serves (here a fresh one) has
    imported neither numba nor torch after a snapshot is opened and windowed."""
    import subprocess
    import sys

    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "snap.pickle").write_bytes(dump(make_snapshot(2000, seed=9)))
    code = (
        "import sys; from pathlib import Path; from gpudojo.memory.service import MemoryService; "
        f"s = MemoryService(Path({str(tmp_path / 'data')!r}), Path({str(tmp_path / 'root')!r})); "
        "a = s.analyze_path('snap.pickle'); s.window(a.capture.id, None, None, 100, 10); s.close(); "
        "bad = [m for m in ('numba', 'torch', 'cupy') if m in sys.modules]; assert not bad, bad; print('clean')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "clean" in done.stdout, done.stderr[-2000:]
