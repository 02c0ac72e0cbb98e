"""Fault injection on the memory routes through a real Jupyter server: a truncated pickle, a
pickle of the wrong shape, a 1 GB file and one over the size cap. Each is a clear 4xx, the
analysis worker survives it (same process), the cap is decided without reading the file,
and the server answers throughout."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path

import psutil
import pytest
from tornado.httpclient import HTTPClientError

from memory_data import dump, make_snapshot

pytestmark = pytest.mark.timeout(120)

GB = 10**9


async def analyse(jp_fetch, path: str) -> tuple[int, dict]:
    """POST memory/analyze for a workspace file: (status, the error or the analysis)."""
    try:
        r = await jp_fetch("gpudojo", "api", "memory", "analyze", method="POST", body=json.dumps({"path": path}))
    except HTTPClientError as err:
        return err.code, json.loads(err.response.body)["error"]
    return r.code, json.loads(r.body)


async def assert_server_answers(jp_fetch) -> None:
    r = await jp_fetch("gpudojo", "api", "gpu", "devices")
    assert r.code == 200 and "available" in json.loads(r.body)


def sparse_file(path: Path, head: bytes, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk: ``head``, then a hole of zeros."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path


def worker_of(jp_serverapp) -> psutil.Process:
    proc = jp_serverapp.web_app.settings["gpudojo"].memory._worker.proc
    assert proc is not None and proc.poll() is None, "the analysis worker is not running"
    return psutil.Process(proc.pid)


async def test_truncated_and_wrong_shape_pickles_are_4xx_and_the_worker_survives(jp_fetch, jp_root_dir, jp_serverapp):
    good = dump(make_snapshot(2000, seed=3))
    (jp_root_dir / "good.pickle").write_bytes(good)
    status, first = await analyse(jp_fetch, "good.pickle")
    assert status == 200 and first["allocations"] > 100
    worker = worker_of(jp_serverapp)

    (jp_root_dir / "truncated.pickle").write_bytes(good[: len(good) // 2])
    shapes = {
        # A valid pickle, but not a snapshot at all (e.g. torch.cuda.memory_stats()).
        "stats.pickle": {"allocated_bytes.all.current": 0, "num_ooms": 0},
        # device_traces there, but its entries are numbers, not trace dicts.
        "numbers.pickle": {"segments": [], "device_traces": [[1, 2, 3]]},
        # Segments whose blocks are not dicts (this one ended the worker before).
        "blocks.pickle": {"segments": [{"device": 0, "blocks": [7]}], "device_traces": [[]]},
        # device_traces of the wrong type.
        "traces.pickle": {"device_traces": {"0": []}},
    }
    for name, doc in shapes.items():
        (jp_root_dir / name).write_bytes(pickle.dumps(doc))

    status, error = await analyse(jp_fetch, "truncated.pickle")
    assert status == 400 and error["code"] == "refused_pickle" and "truncated" in error["message"]
    await assert_server_answers(jp_fetch)
    for name in shapes:
        status, error = await analyse(jp_fetch, name)
        assert status == 400, (name, error)
        assert error["code"] in ("refused_pickle", "not_a_capture") and "not a CUDA memory snapshot" in error["message"]
        assert "Traceback" not in error["message"]
        await assert_server_answers(jp_fetch)
    # Not one of them took the warm worker down, and good files still open.
    assert worker_of(jp_serverapp).pid == worker.pid
    status, again = await analyse(jp_fetch, "good.pickle")
    assert status == 200 and again["peak"] == first["peak"]


async def test_a_1gb_file_is_refused_without_being_read(jp_fetch, jp_root_dir, jp_serverapp):
    (jp_root_dir / "warm.pickle").write_bytes(dump(make_snapshot(200, seed=1)))
    assert (await analyse(jp_fetch, "warm.pickle"))[0] == 200
    worker = worker_of(jp_serverapp)
    server = psutil.Process()
    header = pickle.dumps({"device_traces": []})[:2]  # a pickle's PROTO opcode, then a GB of zeros
    cases = {
        "gigabyte.pickle": sparse_file(jp_root_dir / "gigabyte.pickle", header, GB),
        "gigabyte.cpu.json": sparse_file(jp_root_dir / "gigabyte.cpu.json", b"{", GB),
    }
    for name in cases:
        read_before = worker.io_counters().read_chars
        rss_before = server.memory_info().rss
        started = time.monotonic()
        status, error = await analyse(jp_fetch, name)
        took = time.monotonic() - started
        assert status in (400, 413), (name, error)
        assert error["code"] in ("refused_pickle", "not_a_capture", "capture_too_large"), error
        # Read as far as it takes to see what it is, not the gigabyte.
        assert worker.io_counters().read_chars - read_before < 64 * 2**20, name
        assert took < 5.0, f"{name} took {took:.1f} s"
        assert server.memory_info().rss - rss_before < 64 * 2**20
        await assert_server_answers(jp_fetch)
    assert worker_of(jp_serverapp).pid == worker.pid

    # Over the server's cap (GPUDojo.analysis_max_file_bytes, 8 GiB): refused from its size, before
    # the worker hears of it (a sparse file: no disk).
    sparse_file(jp_root_dir / "huge.pickle", header, 9 * 2**30)
    read_before = worker.io_counters().read_chars
    status, error = await analyse(jp_fetch, "huge.pickle")
    assert status == 413 and error["code"] == "capture_too_large", error
    assert f"{9 * 2**30:,} bytes" in error["message"] and "analysis_max_file_bytes" in error["message"]
    assert worker.io_counters().read_chars == read_before
    query = {"capture": "file:huge.pickle"}
    r = await jp_fetch("gpudojo", "api", "memory", "analysis", params=query, raise_error=False)
    assert r.code == 413
    await assert_server_answers(jp_fetch)
