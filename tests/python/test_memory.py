"""Memory analysis without torch: snapshot parsing for every format torch has written since
2.1, the restricted unpickler, intervals, peak, OOMs, windows, diffs and the estimator."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from gpudojo.memory.analysis import Loaded, analyse, write_analysis
from gpudojo.memory.estimator import estimate, oom_fixes
from gpudojo.memory.models import EstimateRequest
from gpudojo.memory.snapshot import RefusedPickle, load_pickle, parse_cpu_capture, parse_cuda_snapshot, read_capture
from memory_data import dump, expected_live_at_end, make_snapshot

GIB = 1 << 30


@pytest.mark.parametrize("style", ["2.1", "2.4"])
@pytest.mark.parametrize("oom", [False, True])
def test_every_snapshot_format_parses_and_pairs_allocations(style, oom):
    snap = make_snapshot(3000, style=style, oom=oom, seed=7)
    parsed = parse_cuda_snapshot(load_pickle(dump(snap)))
    assert parsed.axis == ("event_index" if style == "2.1" else "time_us")
    iv = parsed.intervals
    assert all(s <= e for s, e in zip(iv.start, iv.end, strict=True))
    # What the trace leaves allocated at its end is what the intervals leave live there.
    at_end = sum(z for e, z in zip(iv.end, iv.size, strict=True) if e >= parsed.t_end)
    assert at_end == expected_live_at_end(snap)
    # The allocation made before the trace and freed in it starts at the trace's start.
    pre = snap["segments"][0]["blocks"]
    first_block_addr = 0x7F0000000000
    (freed_pre,) = [i for i, a in enumerate(iv.addr) if a == first_block_addr]
    assert iv.start[freed_pre] == parsed.t_start and iv.size[freed_pre] == pre[0]["size"]
    assert parsed.frames[0] == {"filename": "/home/me/train.py", "line": 42, "name": "forward"}
    assert len(parsed.ooms) == (1 if oom else 0)
    if oom:
        assert parsed.ooms[0]["requested_bytes"] == 8 * GIB and parsed.ooms[0]["device_free_bytes"] == GIB


def test_free_requested_alone_is_enough():
    snap = make_snapshot(500, style="2.4", seed=3)
    trace = snap["device_traces"][0]
    snap["device_traces"][0] = [e for e in trace if e["action"] != "free_completed"]
    parsed = parse_cuda_snapshot(snap)
    assert sum(parsed.intervals.size) > 0 and len(parsed.intervals.size) > 100


def test_one_million_entries(tmp_path):
    snap = make_snapshot(1_000_000, oom=True, seed=11)
    path = tmp_path / "big.pickle"
    path.write_bytes(dump(snap))
    del snap
    parsed = read_capture(path)
    assert parsed.entries == 1_000_000 and len(parsed.intervals.size) > 300_000
    summary = write_analysis(parsed, tmp_path / "analysis")
    loaded = Loaded(tmp_path / "analysis")
    window = loaded.window(summary["t_start_us"], summary["t_end_us"], 1000, 500)
    assert len(window["bands"]) == 500 and len(window["times_us"]) == 1000


class Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/gpudojo-pwned",))


def test_a_crafted_pickle_executes_nothing(tmp_path):
    marker = Path("/tmp/gpudojo-pwned")
    marker.unlink(missing_ok=True)
    data = pickle.dumps({"device_traces": [[Boom()]]})
    with pytest.raises(RefusedPickle) as info:
        load_pickle(data)
    assert "refused posix.system" in str(info.value) or "refused os.system" in str(info.value)
    assert not marker.exists()
    with pytest.raises(RefusedPickle):
        load_pickle(pickle.dumps(np.zeros(3)))
    with pytest.raises(RefusedPickle, match="not a readable pickle"):
        load_pickle(b"\x80\x04garbage")
    with pytest.raises(RefusedPickle, match="not a CUDA memory snapshot"):
        parse_cuda_snapshot({"segments": []})


def _loaded(tmp_path, **kwargs) -> tuple[Loaded, dict]:
    parsed = parse_cuda_snapshot(make_snapshot(**kwargs))
    summary = write_analysis(parsed, tmp_path / "a")
    return Loaded(tmp_path / "a"), summary


def test_windows_cap_their_elements_and_conserve_bytes(tmp_path):
    loaded, summary = _loaded(tmp_path, entries=20_000, seed=5)
    t0, t1 = summary["t_start_us"], summary["t_end_us"]
    for lo, hi, px, top in ((t0, t1, 300, 50), (t0 + (t1 - t0) * 0.4, t0 + (t1 - t0) * 0.45, 120, 10), (t0, t1, 64, 0)):
        w = loaded.window(lo, hi, px, top)
        assert len(w["times_us"]) == px and len(w["bands"]) <= top
        assert all(b["start_us"] < hi and b["end_us"] > lo for b in w["bands"])
        total = np.array(w["by_category"]).sum(axis=0)
        for i, t in enumerate(w["times_us"]):
            in_bands = sum(b["size_bytes"] for b in w["bands"] if b["start_us"] <= t < b["end_us"])
            assert w["other_bytes"][i] + in_bands == total[i]
            assert w["other_bytes"][i] >= 0
        assert set(w["frames"]) <= set(range(len(summary["frames"])))
    # The sampled totals match a brute-force count over the intervals.
    a = loaded.arrays
    t = w["times_us"][len(w["times_us"]) // 2]
    assert int(a.size[(a.start <= t) & (a.end > t)].sum()) == int(np.array(w["by_category"])[:, 32].sum())


def test_peak_is_the_maximum_and_breaks_down(tmp_path):
    loaded, summary = _loaded(tmp_path, entries=5000, seed=9)
    a = loaded.arrays
    times = np.unique(np.concatenate([a.start, a.end]))
    brute = max(int(a.size[(a.start <= t) & (a.end > t)].sum()) for t in times)
    peak = summary["peak"]
    assert peak["total_bytes"] == brute
    assert sum(c["bytes"] for c in peak["by_category"]) == brute
    assert sum(f["bytes"] for f in peak["by_frame"]) == brute
    assert {f["frame"] for f in peak["by_frame"]} <= {-1, 0, 1}


def test_phases_become_categories():
    snap = make_snapshot(2000, seed=1)
    trace = snap["device_traces"][0]
    mid = trace[len(trace) // 2]["time_us"]
    sidecar = {"phases": [[trace[0]["time_us"], "forward"], [mid, "backward"]], "context": {"parameters": 10}}
    parsed = parse_cuda_snapshot(snap, sidecar=sidecar)
    assert parsed.category_source == "phases"
    assert parsed.categories == ["before the first phase", "forward", "backward"]
    assert {1, 2} <= set(parsed.intervals.category)
    assert parsed.context == {"parameters": 10}


def test_cpu_capture_format():
    doc = {
        "format": "gpudojo-cpu-memory/1",
        "device": "cpu",
        "categories": ["parameter", "gradient", "activation"],
        "events": [
            [0, "alloc", [1, 0], 400, 0],
            [10, "alloc", [2, 0], 1000, 2],
            [20, "alloc", [3, 0], 400, 1],
            [30, "free", [2, 0], 1000, 2],
            [40, "free", [9, 0], 50, 2],
        ],
        "budget_bytes": 1200,
        "ooms": [{"t_us": 20, "requested_bytes": 400, "device_free_bytes": 200, "simulated": True}],
    }
    parsed = parse_cpu_capture(doc)
    _, summary = analyse(parsed)
    # The 50 bytes freed at t=40 without an alloc were allocated before the capture began.
    assert summary["peak"]["total_bytes"] == 1850
    assert {c["category"]: c["bytes"] for c in summary["peak"]["by_category"]} == {
        "activation": 1050,
        "parameter": 400,
        "gradient": 400,
    }
    assert any("simulated memory budget" in n for n in parsed.notes)
    assert summary["ooms"][0]["live"]["total_bytes"] == 1850
    from gpudojo.memory.models import Oom

    assert Oom.model_validate(summary["ooms"][0]).simulated is True


def test_diff_of_two_captures(tmp_path):
    from gpudojo.memory.analysis import diff

    a, _ = _loaded(tmp_path / "a", entries=4000, seed=1)
    b, _ = _loaded(tmp_path / "b", entries=4000, seed=2)
    d = diff(a, b)
    assert d["delta_bytes"] == d["peak_b_bytes"] - d["peak_a_bytes"]
    assert sum(r["delta_bytes"] for r in d["by_category"]) == d["delta_bytes"]
    assert all(r["delta_bytes"] == r["b_bytes"] - r["a_bytes"] for r in d["by_frame"])


# --- estimator ------------------------------------------------------------------------------


def _terms(req: EstimateRequest) -> dict[str, int]:
    return {t.component: t.bytes for t in estimate(req).terms}


def test_sixteen_bytes_per_parameter_for_adam_in_fp32_and_mixed_precision():
    p = 1_000_000
    fp32 = _terms(EstimateRequest(parameters=p, optimizer="adam", precision="fp32"))
    mixed = _terms(EstimateRequest(parameters=p, optimizer="adam", precision="mixed-fp16"))
    assert sum(fp32.values()) == 16 * p and sum(mixed.values()) == 16 * p
    assert fp32 == {"parameters": 4 * p, "gradients": 4 * p, "optimizer_states": 8 * p, "activations": 0}
    assert mixed["master_weights"] == 4 * p and mixed["parameters"] == 2 * p
    assert sum(_terms(EstimateRequest(parameters=p, optimizer="sgd")).values()) == 8 * p


@pytest.mark.parametrize(
    ("stage", "expected"),
    # Mixed precision with Adam over 8 ranks (ZeRO paper, section 5): 16, 4 + 12/8, 2 + 14/8, 16/8 bytes/param.
    [(0, 16 * 8), (1, 4 * 8 + 12), (2, 2 * 8 + 14), (3, 16)],
)
def test_zero_stages_split_what_the_paper_says(stage, expected):
    p = 8_000_000
    est = estimate(EstimateRequest(parameters=p, precision="mixed-bf16", zero_stage=stage, data_parallel=8))
    assert est.total_bytes * 8 == expected * p


def test_checkpointing_and_the_gap():
    base = EstimateRequest(parameters=10, optimizer="sgd", activation_bytes_per_sample=1000, micro_batch=16, layers=16)
    assert _terms(base)["activations"] == 16_000
    assert _terms(base.model_copy(update={"checkpointing": True}))["activations"] == 4000
    est = estimate(base.model_copy(update={"measured_peak_bytes": 20_000}))
    assert est.gap_bytes == 20_000 - est.total_bytes and "caching allocator" in est.gap_explained[0]


def test_oom_fixes_come_with_savings():
    context = {
        "parameters": 100_000_000,
        "optimizer": "adam",
        "precision": "fp32",
        "micro_batch": 32,
        "activation_bytes_per_sample": 50_000_000,
        "layers": 24,
    }
    fixes = oom_fixes(context, requested=GIB, shortfall=GIB // 2)
    actions = [f["action"] for f in fixes]
    assert actions[:2] == ["halve the micro-batch", "gradient checkpointing"]
    assert {"mixed precision (bf16 autocast)", "an optimizer with less state (SGD with momentum)"} <= set(actions)
    halve = fixes[0]
    assert halve["saving_bytes"] == 16 * 50_000_000 and "enough" in halve["detail"]
    assert oom_fixes({}, GIB, GIB) == []


def test_an_oom_at_the_end_sees_what_was_still_allocated():
    snap = make_snapshot(3000, oom=True, seed=12)
    parsed = parse_cuda_snapshot(snap)
    _, summary = analyse(parsed)
    (oom,) = summary["ooms"]
    assert oom["live"]["total_bytes"] == expected_live_at_end(snap) > 0
