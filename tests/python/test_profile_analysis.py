"""The profile analysis over real torch.profiler traces recorded here on the CPU (a slow
single-process DataLoader, .item() syncs, their fast version, 2-rank gloo DDP), over a
synthetic stand-in for a GPU trace, and the analysis worker's two ways of being called."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

import profile_traces
from gpudojo.profile import analysis as analysis_module
from gpudojo.profile import trace as trace_module
from gpudojo.profile.analysis import Loaded, NotATrace, diff, user_frame, write_analysis
from gpudojo.profile.models import EventDetail, ProfileDiff, ProfileSummary, ProfileWindow, Trace
from gpudojo.profile.report import render_diff_text, render_html, render_text
from gpudojo.profile.trace import read_trace
from gpudojo.worker.pipe import WarmWorker

SERVER = Path(__file__).resolve().parents[2] / "server"


# ---------------------------------------------------------------- traces, made once per session


@pytest.fixture(scope="session")
def traces(tmp_path_factory) -> dict[str, list[Path]]:
    """The four real CPU traces (DDP in a process of its own: it spawns its ranks)."""
    folder = tmp_path_factory.mktemp("traces")
    made = {
        "loader": [profile_traces.make_loader_trace(folder / "loader.json")],
        "item": [profile_traces.make_item_trace(folder / "item.json")],
        "fast": [profile_traces.make_fast_trace(folder / "fast.json")],
    }
    done = subprocess.run(
        [sys.executable, profile_traces.__file__, "ddp", str(folder / "ddp")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    made["ddp"] = sorted((folder / "ddp").glob("ddp_rank*.json"))
    gpu = folder / "gpu-standin"
    made["gpu-standin"] = [
        profile_traces.make_gpu_standin(gpu / f"rank{r}.json", rank=r, world=2, steps=4) for r in range(2)
    ]
    return made


@pytest.fixture(scope="session")
def analysed(traces, tmp_path_factory) -> dict[str, Loaded]:
    out = tmp_path_factory.mktemp("analyses")
    loaded = {}
    for name, paths in traces.items():
        write_analysis(paths, out / name)
        loaded[name] = Loaded(out / name)
    return loaded


def finding(summary: dict, fid: str) -> dict:
    found = [f for f in summary["findings"] if f["id"] == fid]
    assert found, f"no {fid!r} finding in {[f['id'] for f in summary['findings']]}"
    return found[0]


# ---------------------------------------------------------------- what the real traces say


def test_a_slow_single_process_dataloader_is_the_data_loading_finding(analysed):
    s = analysed["loader"].summary
    assert s["mode"]["kind"] == "cpu" and s["step_source"] == "profiler-steps" and len(s["steps"]) == 3
    assert any("GPU kernels" in c for c in s["mode"]["cannot_show"])
    f = finding(s, "data-loading")
    mean = {c["category"]: c["us"] for c in s["breakdown"]}
    share = mean["data_loading"] / s["mean_step_us"]
    assert share >= 0.5  # 16 samples x 1 ms of sleep against a tiny model
    assert f["severity"] == "high" and f"{share * 100:.0f}%" in f["title"]
    assert "num_workers=0" in f["evidence"] and "num_workers" in f["suggestion"]
    assert f["evidence"].startswith(f"data loading is {share * 100:.0f}% of the step (")


def test_item_twice_per_step_is_two_host_syncs_at_the_calling_function(analysed):
    s = analysed["item"].summary
    location = f"profile_traces.py:{profile_traces.line_of(profile_traces.ITEM_MARKER)}"
    assert s["syncs"] == [
        {"op": "aten::item", "location": location, "per_step": 2.0, "total_us": s["syncs"][0]["total_us"]}
    ]
    f = finding(s, "host-syncs")
    assert f"2 host syncs per step at {location} (aten::item)" in f["evidence"]
    assert "on a GPU" in f["evidence"]  # a CPU trace says what the sync would cost there
    assert "data-loading" not in [x["id"] for x in s["findings"]]


def test_the_optimizers_own_scalar_reads_are_not_host_syncs(tmp_path):
    """AdamW reads its step count with .item() inside torch/optim: a CPU scalar that never waits
    for a GPU, so neither the syncs table nor a finding names the learner's step for it."""
    import torch

    model = torch.nn.Linear(32, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(8, 32)

    def step(_: int) -> None:
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    path = profile_traces._profile(tmp_path / "adamw.json", 6, step)
    raw = path.read_text()
    assert '"aten::item"' in raw, "AdamW's step count read is in the trace"
    s = write_analysis([path], tmp_path / "analysis")
    assert s["syncs"] == [] and "host-syncs" not in [f["id"] for f in s["findings"]]


@pytest.mark.parametrize("name", ["loader", "item", "fast", "ddp", "gpu-standin"])
def test_each_steps_breakdown_adds_up_to_the_step(analysed, name):
    s = analysed[name].summary
    assert s["steps"]
    for step in s["steps"]:
        assert [c["category"] for c in step["breakdown"]] == [
            "compute",
            "communication",
            "data_loading",
            "memcpy",
            "sync",
            "idle",
        ]
        assert all(c["us"] >= 0 for c in step["breakdown"])
        assert sum(c["us"] for c in step["breakdown"]) == pytest.approx(step["dur_us"], abs=1.0)
    assert sum(c["us"] for c in s["breakdown"]) == pytest.approx(s["mean_step_us"], abs=1.0)


def test_top_ops_have_self_total_calls_and_shapes(analysed):
    ops = {o["name"]: o for o in analysed["fast"].summary["top_ops"]}
    addmm = ops["aten::addmm"]
    assert addmm["calls"] == 2 * 3  # two Linear layers, three analysed steps
    assert 0 < addmm["self_us"] <= addmm["total_us"]
    assert "[[256], [16, 64], [64, 256], [], []]" in addmm["input_shapes"]
    selfs = [o["self_us"] for o in analysed["fast"].summary["top_ops"]]
    assert selfs == sorted(selfs, reverse=True) and len(selfs) <= 50


def test_diff_of_the_slow_and_the_fast_step(analysed):
    d = diff(analysed["loader"], analysed["fast"])
    assert d["speedup"] > 1 and d["speedup"] == pytest.approx(d["step_a_us"] / d["step_b_us"])
    assert "data-loading" in d["findings_resolved"]
    rows = {r["key"]: r for r in d["breakdown"]}
    assert rows["data_loading"]["delta_us"] < 0 and rows["data_loading"]["b_us"] == 0
    deltas = [abs(o["delta_us"]) for o in d["ops"]]
    assert deltas == sorted(deltas, reverse=True) and len(d["ops"]) <= 30
    ProfileDiff(a="loader", b="fast", **d)
    assert "faster" in render_diff_text({**d, "a": "loader.json", "b": "fast.json"})


def test_two_rank_gloo_ddp_shows_communication_and_its_overlap(analysed):
    s = analysed["ddp"].summary
    assert s["ranks"] == [0, 1]
    mean = {c["category"]: c["us"] for c in s["breakdown"]}
    assert mean["communication"] > 0
    assert [o["rank"] for o in s["overlap"]] == [0, 1]
    for o in s["overlap"]:
        assert o["communication_us"] > 0 and 0 <= o["overlapped_us"] <= o["communication_us"]
        assert o["source"] == "gpudojo"
    labels = [lane["label"] for lane in s["lanes"]]
    for rank in (0, 1):
        assert any(label.startswith(f"rank {rank} · main thread") for label in labels)
        assert any(label.startswith(f"rank {rank} · gloo thread") for label in labels)
    assert any("own clock" in note for note in s["notes"])


def test_summaries_windows_events_fit_the_api_models(analysed):
    for name, loaded in analysed.items():
        s = loaded.summary
        ProfileSummary(trace=Trace(id=f"file:{name}", source=name, size_bytes=1, label=name), cached=False, **s)
        w = loaded.window(s["t_start_us"], s["t_end_us"], 300)
        ProfileWindow.model_validate(w)
        ref = next(span["ref"] for lane in w["lanes"] for span in lane["spans"] if span["ref"] >= 0)
        EventDetail.model_validate(loaded.event(ref))


# ---------------------------------------------------------------- windows and events


def test_the_full_view_merges_small_spans_and_loses_none(analysed):
    loaded = analysed["loader"]
    s = loaded.summary
    w = loaded.window(s["t_start_us"], s["t_end_us"], 50)
    for lane, lane_window in zip(s["lanes"], w["lanes"], strict=True):
        assert lane_window["lane"] == lane["id"]
        by_depth: dict[int, int] = {}
        for span in lane_window["spans"]:
            by_depth[span["depth"]] = by_depth.get(span["depth"], 0) + 1
            assert (span["count"] > 1) == (span["ref"] == -1)
        assert max(by_depth.values()) <= 2 * 50 + 2
        assert max(by_depth) == lane["max_depth"]
        # every event is in exactly one drawn span
        assert sum(span["count"] for span in lane_window["spans"]) == lane["events"]
    assert any(span["count"] > 1 for lane in w["lanes"] for span in lane["spans"])


def test_a_narrow_window_shows_single_spans_and_their_stack(analysed):
    loaded = analysed["item"]
    s = loaded.summary
    steps = s["steps"]
    w = loaded.window(steps[0]["start_us"], steps[0]["start_us"] + steps[0]["dur_us"], 20_000)
    items = [span for lane in w["lanes"] for span in lane["spans"] if span["name"] == "aten::item"]
    assert len(items) == 2 and all(span["count"] == 1 and span["ref"] >= 0 for span in items)
    narrow = loaded.window(items[0]["t_us"] - 1, items[0]["t_us"] + items[0]["dur_us"] + 1, 500)
    spans = [span for lane in narrow["lanes"] for span in lane["spans"]]
    assert all(span["count"] == 1 and span["ref"] >= 0 for span in spans)
    detail = loaded.event(items[0]["ref"])
    line = profile_traces.line_of(profile_traces.ITEM_MARKER)
    assert detail["name"] == "aten::item" and detail["cat"] == "cpu_op"
    assert detail["t_us"] == items[0]["t_us"] and detail["input_shapes"] == "[[]]"
    assert any(frame.endswith(f"profile_traces.py({line}): train_step") for frame in detail["stack"])
    assert all(frame for frame in detail["stack"]) and len(detail["stack"]) <= 30
    assert "External id" in detail["args"] and all(isinstance(v, str) for v in detail["args"].values())
    with pytest.raises(KeyError):
        loaded.event(10**9)


# ---------------------------------------------------------------- reading


def test_a_gzipped_trace_reads_the_same(traces, analysed, tmp_path):
    gz = tmp_path / "loader.json.gz"
    gz.write_bytes(gzip.compress(traces["loader"][0].read_bytes()))
    s = write_analysis([gz], tmp_path / "gz")
    plain = analysed["loader"].summary
    for key in ("events", "steps", "breakdown", "top_ops", "lanes", "syncs"):
        assert s[key] == plain[key], key
    assert [f["id"] for f in s["findings"]] == [f["id"] for f in plain["findings"]]


def test_reading_in_pieces_equals_one_parse(traces, tmp_path, monkeypatch):
    """The chunked, two-process reader against orjson on the whole file, on a 60k-event trace
    (the readers used where the compiled scanner is not: test_profile_scan.py tests that one)."""
    big = profile_traces.scale_trace(traces["loader"][0], tmp_path / "big.json", 60_000)
    monkeypatch.setattr(trace_module, "_scanned", lambda *_: None)
    monkeypatch.setattr(trace_module, "CHUNK_BYTES", 1 << 40)
    whole = read_trace(big)  # the file is under two pieces' size: one parse
    monkeypatch.setattr(trace_module, "CHUNK_BYTES", 256 << 10)
    seen: list[float] = []
    pieces = read_trace(big, lambda phase, fraction: seen.append(fraction))
    assert len(pieces) == len(whole) > 50_000
    for column in ("ts", "dur", "corr", "args_len"):
        assert (getattr(pieces, column) == getattr(whole, column)).all(), column
    for column, table in (("name", "names"), ("cat", "cats"), ("thread", "threads")):
        left = [getattr(pieces, table)[i] for i in getattr(pieces, column)]
        assert left == [getattr(whole, table)[i] for i in getattr(whole, column)], column
    assert pieces.meta == whole.meta and pieces.meta["schemaVersion"] == 1
    assert len([f for f in seen if f]) > 4 and seen[-1] == 1.0
    bad = tmp_path / "cut.json"
    bad.write_bytes(big.read_bytes()[: big.stat().st_size * 2 // 3])
    with pytest.raises(NotATrace, match="cut short"):
        read_trace(bad)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\x01garbage", "not valid JSON"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2', "cut short"),
        (b"[]", "no events at all"),
        (b'{"traceEvents": []}', "no events at all"),
        (b'{"schemaVersion": 1}', "without a traceEvents list"),
        (b'"a string"', "not a trace"),
        (b'[{"ph": "M", "name": "process_name"}, {"ph": "X", "name": "x", "ts": "soon"}]', "no complete spans"),
    ],
)
def test_what_is_not_a_trace_says_why(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(NotATrace, match=message):
        write_analysis([path], tmp_path / "out")
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_truncated_gzip_is_not_a_trace(traces, tmp_path):
    data = gzip.compress(traces["fast"][0].read_bytes())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(NotATrace, match="truncated or corrupt gzip"):
        read_trace(path)


def test_a_bare_list_with_begin_end_pairs_and_odd_events(tmp_path):
    """Chrome's other shapes: a bare list, B/E pairs (nested), int timestamps, and events that
    lack fields (skipped and counted)."""
    events = [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 100},
        {"ph": "X", "name": "inner", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 110, "dur": 20},
        {"ph": "B", "name": "second", "pid": 1, "tid": 1, "ts": 140},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 150},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 200},
        {"ph": "X", "name": "no duration", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "X", "name": "other thread", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": 120.5, "dur": 1.25},
        {"ph": "E", "pid": 1, "tid": 3, "ts": 1},
        "not an event",
    ]
    path = tmp_path / "rank3.json"
    path.write_text(json.dumps(events))
    s = write_analysis([path], tmp_path / "out")
    assert s["events"] == 4 and s["ranks"] == [3] and s["step_source"] == "whole-trace" and s["steps"] == []
    assert s["mean_step_us"] == 100.0  # 100 .. 200 on rank 3
    assert any("2 events" in n and "skipped" in n for n in s["notes"])
    assert any("1 B/E" in n for n in s["notes"])
    loaded = Loaded(tmp_path / "out")
    w = loaded.window(100, 200, 1000)
    main = {(span["name"], span["depth"]) for span in w["lanes"][0]["spans"]}
    assert main == {("outer", 0), ("inner", 1), ("second", 1)}
    assert s["lanes"][0]["max_depth"] == 1 and s["lanes"][0]["label"].startswith("rank 3 · main thread")


def test_two_files_claiming_one_rank_are_told_apart(traces, tmp_path):
    s = write_analysis([traces["item"][0], traces["fast"][0]], tmp_path / "out")
    assert s["ranks"] == [0, 1] and any("fast.json says rank 0" in n for n in s["notes"])
    # Each file's lanes (its main thread, and any other thread the profiler saw) under its rank.
    prefixes = [lane["label"].split(" · ")[0] for lane in s["lanes"]]
    assert sorted(set(prefixes)) == ["rank 0", "rank 1"] and prefixes == sorted(prefixes)
    assert [lane["rank"] for lane in s["lanes"]] == [int(p.split()[1]) for p in prefixes]
    assert len(s["steps"]) == 3 and s["syncs"][0]["per_step"] == 2.0  # rank 0's: the item trace


def test_python_frames_that_are_the_learners(tmp_path):
    assert user_frame("train.py(57): step") == "train.py:57"
    assert user_frame("/home/me/lab/train.py(12): main") == "train.py:12"
    for library in (
        "torch/nn/modules/module.py(1770): _call_impl",
        "typing.py(359): inner",
        "<built-in method item of Tensor object at 0x7f>",
        "/usr/lib/python3/dist-packages/foo.py(3): f",
        "_pytest/python.py(159): pytest_pyfunc_call",
    ):
        assert user_frame(library) is None, library


def test_scale_trace_repeats_steps_for_the_bench(traces, tmp_path):
    big = profile_traces.scale_trace(traces["fast"][0], tmp_path / "scaled.json.gz", 20_000)
    s = write_analysis([big], tmp_path / "out")
    original = write_analysis(traces["fast"], tmp_path / "original")
    assert 15_000 < s["events"] <= 20_000  # the rest are metadata and flow events
    assert len(s["steps"]) > 10 * len(original["steps"])
    numbers = [step["step"] for step in s["steps"]]
    assert numbers == sorted(set(numbers))


# ---------------------------------------------------------------- the GPU path (stand-in trace)


def test_gpu_standin_trace_goes_the_gpu_way(analysed):
    """On the SYNTHETIC STAND-IN (no GPU here): mode, kernels, launch statistics, the
    short-kernels and host-syncs findings, device time per op, HTA used or its failure noted."""
    s = analysed["gpu-standin"].summary
    assert s["mode"]["kind"] == "gpu" and s["mode"]["cannot_show"] == [] and "2 streams" in s["mode"]["label"]
    kernels = {k["name"]: k for k in s["kernels"]}
    assert kernels[profile_traces.GEMM]["calls"] == 6 * 4 and kernels[profile_traces.GEMM]["mean_us"] == 300
    assert kernels[profile_traces.ELEMENTWISE]["calls"] == 150 * 4
    assert sum(k["share"] for k in s["kernels"]) == pytest.approx(1.0, abs=0.01)
    assert s["launch"]["kernels_per_step"] >= 150 and s["launch"]["short_kernels_per_step"] == 150
    assert s["launch"]["median_launch_delay_us"] > 0
    assert finding(s, "short-kernels")["title"] == "150 kernels under 10 µs per step"
    where = "{}:{}".format(*profile_traces.SYNC_FRAME)
    assert {(x["op"], x["location"], x["per_step"]) for x in s["syncs"]} == {
        ("aten::item", where, 1.0),
        ("aten::to (cudaStreamSynchronize)", where, 1.0),
    }
    assert f"2 host syncs per step at {where} (aten::" in finding(s, "host-syncs")["evidence"]
    ops = {o["name"]: o for o in s["top_ops"]}
    assert ops["aten::mm"]["device_self_us"] == 6 * 4 * 300.0
    assert ops["nccl:all_reduce"]["device_self_us"] == 4 * 400.0
    assert [o["rank"] for o in s["overlap"]] == [0, 1]
    lanes = [lane["label"] for lane in s["lanes"]]
    assert "rank 0 · stream 7" in lanes and "rank 1 · stream 20" in lanes
    hta_failed = [n for n in s["notes"] if "HTA" in n and "failed" in n]
    assert s["hta"] or hta_failed
    if "get_cuda_kernel_launch_stats" in s["hta"]:
        assert s["launch"]["source"] == "hta"
    if "get_comm_comp_overlap" in s["hta"]:
        assert {o["source"] for o in s["overlap"]} == {"hta"}


def test_gpu_standin_without_hta_is_computed_by_gpudojo(traces, tmp_path, monkeypatch):
    """Over HTA's size limit (here: any size) the GPU figures are gpudojo's own, and the
    notes say why HTA was not run."""
    monkeypatch.setattr(analysis_module, "HTA_MAX_EVENTS", 0)
    s = write_analysis(traces["gpu-standin"], tmp_path / "out")
    assert s["hta"] == [] and any("was not run" in n for n in s["notes"])
    assert s["launch"]["source"] == "gpudojo" and s["launch"]["short_kernels_per_step"] == 150
    # the stand-in launches at +2 us and starts a kernel no sooner than 5 us after the call
    assert s["launch"]["median_launch_delay_us"] >= 5
    kernels = {k["name"]: k for k in s["kernels"]}
    assert kernels[profile_traces.GEMM]["calls"] == 24 and kernels[profile_traces.NCCL]["total_us"] == 1600
    assert {o["source"] for o in s["overlap"]} == {"gpudojo"}
    assert all(0 <= o["share"] <= 1 for o in s["overlap"])
    assert finding(s, "short-kernels")


# ---------------------------------------------------------------- reports


def test_text_and_html_reports(analysed):
    s = analysed["loader"].summary
    text = render_text(s)
    assert text.startswith("CPU-only trace · rank 0 · ")
    assert "data loading" in text and finding(s, "data-loading")["title"] in text and "aten::addmm" in text
    html = render_html(s)
    assert "<script" not in html and "<table" in html and "num_workers=0" in html
    gpu = render_text(analysed["gpu-standin"].summary)
    assert "GPU kernels (per step)" in gpu and "ampere_sgemm_128x64_tn" in gpu


def test_queries_load_neither_pandas_nor_torch_nor_hta(analysed):
    """What the server process calls (Loaded, window, event, diff, reports) needs NumPy only,
    even on a GPU trace whose analysis used HTA."""
    folder = analysed["gpu-standin"].folder
    code = (
        "import sys; from pathlib import Path; from gpudojo.profile.analysis import Loaded, diff; "
        "from gpudojo.profile.report import render_html, render_text; "
        f"a = Loaded(Path({str(folder)!r})); s = a.summary; a.window(s['t_start_us'], s['t_end_us'], 500); "
        "a.event(0); diff(a, a); render_text(s); render_html(s); "
        "bad = [m for m in ('pandas', 'torch', 'hta') if m in sys.modules]; assert not bad, bad; print('clean')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_worker_env(), timeout=120)
    assert done.returncode == 0 and "clean" in done.stdout, done.stderr[-2000:]


# ---------------------------------------------------------------- the worker


def _worker_env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SERVER), os.environ.get("PYTHONPATH", "")])}


def test_the_one_shot_worker_replies_in_one_line(traces, tmp_path):
    cmd = [sys.executable, "-m", "gpudojo.worker.profile_analyze"]
    ok = subprocess.run(
        [*cmd, str(tmp_path / "a"), *map(str, traces["ddp"])],
        capture_output=True,
        text=True,
        env=_worker_env(),
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    reply = json.loads(ok.stdout)
    assert reply["ok"] and reply["events"] > 1000 and reply["analysis_ms"] > 0
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["ranks"] == [0, 1]
    garbage = tmp_path / "garbage.json"
    garbage.write_text("this is not json")
    bad = subprocess.run(
        [*cmd, str(tmp_path / "b"), str(garbage)], capture_output=True, text=True, env=_worker_env(), timeout=120
    )
    assert bad.returncode == 3 and bad.stdout.count("\n") == 1
    assert json.loads(bad.stdout)["error"]["kind"] == "invalid"


def test_the_serving_worker_reports_progress_and_keeps_serving_after_garbage(traces, tmp_path):
    worker = WarmWorker(
        "gpudojo.worker.profile_analyze",
        tmp_path / "worker.log",
        args=("--serve",),
        env=_worker_env(),
        name="profile analysis",
    )
    try:
        ready = worker.start(60)
        assert ready["ready"] is True
        seen: list[dict] = []
        reply = worker.call({"sources": [str(traces["item"][0])], "folder": str(tmp_path / "one")}, 60, seen.append)
        assert reply["ok"] and reply["events"] > 500
        phases = [p["phase"] for p in seen]
        assert phases[0] == "reading" and phases[-2:] == ["analysing", "indexing"]
        garbage = tmp_path / "garbage.json"
        garbage.write_bytes(b'{"traceEvents": [')
        bad = worker.call({"sources": [str(garbage)], "folder": str(tmp_path / "two")}, 60)
        assert bad["error"]["kind"] == "invalid" and "cut short" in bad["error"]["message"]
        assert worker.call({"folder": 1}, 60)["error"]["kind"] == "invalid"
        again = worker.call({"sources": [str(traces["fast"][0])], "folder": str(tmp_path / "three")}, 60)
        assert again["ok"] and worker.alive
        assert (tmp_path / "three" / "summary.json").is_file() and not (tmp_path / "two" / "summary.json").exists()
    finally:
        worker.stop()


CUDA_TRACES = sorted((Path(__file__).resolve().parents[1] / "data" / "gpu").glob("trace-*-lab02-step.json.gz"))


@pytest.mark.skipif(
    not CUDA_TRACES,
    reason="no real CUDA trace yet: bench/gpu_check.py (step 7) makes one on a GPU machine and "
    "gpu_check_import.py stores it as tests/data/gpu/trace-<gpu>-lab02-step.json.gz",
)
@pytest.mark.parametrize("path", CUDA_TRACES, ids=lambda p: p.name)
def test_a_real_cuda_trace_from_the_gpu_check_reads_as_a_gpu_profile(tmp_path, path):
    s = write_analysis([path], tmp_path / "analysis")
    assert s["mode"]["kind"] == "gpu" and not s["mode"]["cannot_show"]
    assert s["kernels"] and s["launch"] is not None and s["launch"]["kernels_per_step"] > 0
    assert sum(k["share"] for k in s["kernels"]) <= 1.0 + 1e-6
    for step in s["steps"]:
        assert abs(sum(c["us"] for c in step["breakdown"]) - step["dur_us"]) <= 1.0
    assert any(o["device_total_us"] > 0 for o in s["top_ops"]), "kernel time is charged to the ops that launched it"


def test_spans_that_cross_instead_of_nesting_never_share_a_row():
    """A Python frame that began before a ProfilerStep annotation and ends inside the next
    one crosses it; each span still gets a row where nothing else overlaps it."""
    import numpy as np

    ts = np.array([0.0, 5.0, 12.0, 13.0])
    dur = np.array([10.0, 10.0, 2.0, 0.5])
    depth, _ = trace_module.nesting(ts, dur, np.zeros(4, dtype=np.int64))
    end = ts + dur
    for i in range(4):
        for j in range(i + 1, 4):
            if depth[i] == depth[j]:
                assert end[i] <= ts[j] or end[j] <= ts[i], (i, j, depth.tolist())
    nested, parent = trace_module.nesting(
        np.array([0.0, 1.0, 2.0]), np.array([10.0, 5.0, 1.0]), np.zeros(3, dtype=np.int64)
    )
    assert nested.tolist() == [0, 1, 2] and parent.tolist() == [-1, 0, 1]
    # A step annotation crossed by a frame that began before it: the step takes the top row.
    step_ts, step_dur = np.array([0.0, 2.0, 3.0, 6.0]), np.array([5.0, 8.0, 1.0, 1.0])
    top = np.array([False, True, False, False])
    rows, _ = trace_module.nesting(step_ts, step_dur, np.zeros(4, dtype=np.int64), top)
    assert rows.tolist() == [1, 0, 2, 1]
