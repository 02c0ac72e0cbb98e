"""Decompression and amplification bombs against the memory and profile analyses, through a
real Jupyter server (issue 22, finding 3): a gzipped trace that inflates without end, a
file that makes the analysis worker outgrow its memory cap, and captures and traces whose
names are megabytes long. Each is a clear 4xx, given once and not retried; the worker stays
under its caps, and the server process (this one) and its replies stay small.

The caps are lowered through the traitlets so that every bomb here is small and quick."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest
from tornado.httpclient import HTTPClientError

from memory_data import dump, make_long_frame_snapshot, make_snapshot
from profile_traces import write_gzip_of_zeros, write_trace_with_long_strings

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="measures peak RSS through Linux's /proc"),
]

MiB = 2**20
INFLATE_CAP = 16 * MiB
RSS_CAP = 512 * MiB
FILE_CAP = 1024 * MiB
# What the server may add for one analysis of a hostile file, and the most one reply may be.
SERVER_GROWTH = 16 * MiB
REPLY_BYTES = 1 * MiB
LONG = 5 * 10**6  # characters in a hostile name


@pytest.fixture
def jp_server_config(jp_server_config):
    jp_server_config.GPUDojo.analysis_max_inflated_bytes = INFLATE_CAP
    jp_server_config.GPUDojo.analysis_max_rss_bytes = RSS_CAP
    jp_server_config.GPUDojo.analysis_max_file_bytes = FILE_CAP
    return jp_server_config


def peak_rss(pid: int) -> int:
    """VmHWM (bytes): the process's peak resident memory since its start or the last reset."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def reset_peak_rss(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def sparse_file(path: Path, head: bytes, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk: ``head``, then a hole of zeros."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path


async def fetch(jp_fetch, service: str, route: str, **params) -> tuple[int, bytes]:
    """GET gpudojo/api/<service>/<route>: (status, body), whatever the status."""
    try:
        r = await jp_fetch("gpudojo", "api", service, route, params=params)
    except HTTPClientError as err:
        return err.code, err.response.body
    return r.code, r.body


async def summary(jp_fetch, name: str) -> tuple[int, dict]:
    """GET profile/summary of a workspace file: (status, the summary or the error)."""
    status, body = await fetch(jp_fetch, "profile", "summary", trace=f"file:{name}")
    doc = json.loads(body)
    return status, doc.get("error", doc) if status >= 400 else doc


def profile_files(jp_serverapp):
    return jp_serverapp.web_app.settings["gpudojo"].profile.files


async def test_a_gzip_bomb_is_refused_at_the_inflate_cap_with_the_worker_small(jp_fetch, jp_root_dir, jp_serverapp):
    write_gzip_of_zeros(jp_root_dir / "exact.json.gz", INFLATE_CAP)
    write_gzip_of_zeros(jp_root_dir / "over.json.gz", INFLATE_CAP + 1)
    write_gzip_of_zeros(jp_root_dir / "bomb.json.gz", 512 * MiB)
    assert (jp_root_dir / "bomb.json.gz").stat().st_size < MiB

    # Up to the cap it is inflated and read (zeros are no JSON); one byte more and it is refused.
    status, error = await summary(jp_fetch, "exact.json.gz")
    assert status == 400 and error["code"] == "not_a_trace", error
    files = profile_files(jp_serverapp)
    worker = psutil.Process(files._worker.proc.pid)
    status, error = await summary(jp_fetch, "over.json.gz")
    assert status == 413 and error["code"] == "trace_too_large", error
    assert "inflates past 16 MiB" in error["message"] and "analysis_max_inflated_bytes" in error["message"]

    server = psutil.Process()
    server_before = server.memory_info().rss
    worker_before = worker.memory_info().rss
    reset_peak_rss(worker.pid)
    status, error = await summary(jp_fetch, "bomb.json.gz")
    assert status == 413 and "inflates past 16 MiB" in error["message"], error
    # Inflated a piece at a time up to the cap, never to its 512 MiB; the same worker goes on.
    assert peak_rss(worker.pid) - worker_before < INFLATE_CAP + 32 * MiB
    assert peak_rss(worker.pid) < RSS_CAP
    assert server.memory_info().rss - server_before < SERVER_GROWTH
    assert files._worker.proc.pid == worker.pid and files.worker_starts == 1


async def test_a_file_past_the_size_setting_is_a_413_before_any_analysis(jp_fetch, jp_root_dir, jp_serverapp):
    # GPUDojo.analysis_max_file_bytes caps traces and snapshots alike; the file is never read.
    sparse_file(jp_root_dir / "big.json", b"[", FILE_CAP + 1)
    sparse_file(jp_root_dir / "big.pickle", b"\x80", FILE_CAP + 1)
    sparse_file(jp_root_dir / "fits.json", b"[", FILE_CAP)
    services = jp_serverapp.web_app.settings["gpudojo"]
    status, error = await summary(jp_fetch, "big.json")
    assert status == 413 and error["code"] == "trace_too_large", error
    assert f"{FILE_CAP:,}" in error["message"] and "analysis_max_file_bytes" in error["message"], error
    status, body = await fetch(jp_fetch, "memory", "analysis", capture="file:big.pickle")
    error = json.loads(body)["error"]
    assert status == 413 and error["code"] == "capture_too_large" and "analysis_max_file_bytes" in error["message"]
    assert services.profile.files.worker_starts == 0  # refused before any analysis
    # At the cap exactly it is analysed (zeros are no JSON: read whole, the memory cap stops it).
    status, error = await summary(jp_fetch, "fits.json")
    assert status >= 400 and "analysis_max_file_bytes" not in error["message"], error
    assert services.profile.files.worker_starts == 1


async def test_an_analysis_past_the_memory_cap_is_a_413_once_and_never_retried(jp_fetch, jp_root_dir, jp_serverapp):
    # Plain JSON as large as the file cap allows: reading it takes more than the worker may hold.
    sparse_file(jp_root_dir / "huge.json", b"[", RSS_CAP + 256 * MiB)
    write_trace_with_long_strings(jp_root_dir / "small.json", 10)
    files = profile_files(jp_serverapp)

    status, error = await summary(jp_fetch, "huge.json")
    assert status == 413 and error["code"] == "trace_too_large", error
    assert "512 MiB" in error["message"] and "analysis_max_rss_bytes" in error["message"]
    assert "Traceback" not in error["message"]
    # The memory-analysis worker has the same cap.
    assert jp_serverapp.web_app.settings["gpudojo"].memory._worker.max_rss_bytes == RSS_CAP
    # Stopped once: the worker was not started again to try the file a second time.
    assert files.worker_starts == 1 and not files._worker.alive

    # Asked again, the same answer, without another analysis.
    status, again = await summary(jp_fetch, "huge.json")
    assert status == 413 and again["message"] == error["message"]
    assert files.worker_starts == 1

    # The next file gets a fresh worker.
    status, good = await summary(jp_fetch, "small.json")
    assert status == 200 and good["events"] == 4
    assert files.worker_starts == 2


@pytest.mark.parametrize("module", ["gpudojo.worker.profile_analyze", "gpudojo.worker.memory_analyze"])
def test_a_worker_out_of_memory_answers_too_large_instead_of_dying(module, tmp_path, monkeypatch):
    """A MemoryError is the input's: answered as a refusal (never retried), where it used to end
    the worker, which the server took for a crash and tried again."""
    import importlib

    worker = importlib.import_module(module)

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(worker, "write_analysis", out_of_memory)
    if module.endswith("profile_analyze"):
        source = write_trace_with_long_strings(tmp_path / "t.json", 10)
        reply, code = worker.analyse([source], tmp_path / "out")
    else:
        source = tmp_path / "s.pickle"
        source.write_bytes(dump(make_snapshot(200)))
        reply, code = worker.analyse(source, tmp_path / "out")
    assert code == 3 and reply["error"]["kind"] == "too_large"
    assert "memory" in reply["error"]["message"]


async def test_a_snapshot_with_a_huge_frame_filename_is_clipped_and_cheap_to_serve(jp_fetch, jp_root_dir):
    (jp_root_dir / "warm.pickle").write_bytes(dump(make_snapshot(300, seed=2)))
    assert (await fetch(jp_fetch, "memory", "analysis", capture="file:warm.pickle"))[0] == 200
    (jp_root_dir / "long.pickle").write_bytes(dump(make_long_frame_snapshot(LONG, lines=4)))
    server = psutil.Process()
    before = server.memory_info().rss

    status, body = await fetch(jp_fetch, "memory", "analysis", capture="file:long.pickle")
    assert status == 200 and len(body) < REPLY_BYTES, len(body)
    analysis = json.loads(body)
    long_frames = [f for f in analysis["frames"] if f["filename"].startswith("/home/me/xxx")]
    assert len(long_frames) == 4
    for frame in long_frames:
        assert len(frame["filename"]) == 513 and frame["filename"].endswith("\u2026")
    status, body = await fetch(jp_fetch, "memory", "window", capture="file:long.pickle", px="100", top="50")
    assert status == 200 and len(body) < REPLY_BYTES
    assert all(len(f["filename"]) <= 513 for f in json.loads(body)["frames"].values())
    assert server.memory_info().rss - before < SERVER_GROWTH


async def test_a_trace_with_huge_names_and_args_is_clipped_and_cheap_to_serve(jp_fetch, jp_root_dir):
    write_trace_with_long_strings(jp_root_dir / "warm.json", 10)
    assert (await summary(jp_fetch, "warm.json"))[0] == 200
    write_trace_with_long_strings(jp_root_dir / "long.json", LONG)
    server = psutil.Process()
    before = server.memory_info().rss

    status, body = await fetch(jp_fetch, "profile", "summary", trace="file:long.json")
    assert status == 200 and len(body) < REPLY_BYTES, len(body)
    doc = json.loads(body)
    names = [op["name"] for op in doc["top_ops"]]
    assert any(n.startswith("op_nnn") and len(n) == 513 and n.endswith("\u2026") for n in names), names
    assert all(len(lane["label"]) <= 513 for lane in doc["lanes"])
    status, body = await fetch(jp_fetch, "profile", "window", trace="file:long.json", px="2000")
    assert status == 200 and len(body) < REPLY_BYTES
    refs = [s["ref"] for lane in json.loads(body)["lanes"] for s in lane["spans"] if s["name"].startswith("op_")]
    assert refs
    status, body = await fetch(jp_fetch, "profile", "event", trace="file:long.json", ref=str(refs[0]))
    assert status == 200 and len(body) < REPLY_BYTES
    assert "not kept" in json.loads(body)["args"]["args"]
    assert server.memory_info().rss - before < SERVER_GROWTH
