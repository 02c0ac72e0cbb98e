"""The profile analysis on real GPU traces: Holistic Trace Analysis's own test data, read from
the shared folder beside the project (never copied into it), checked against a computation
written here over the plain JSON and against HTA's answers in that folder's README."""

from __future__ import annotations

import bisect
import gzip
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from gpudojo.profile.analysis import write_analysis

TRACES = Path(__file__).resolve().parents[3] / "shared" / "real-gpu-traces"
CONTROL = TRACES / "hta-trace-diff-control.json.gz"
ROCM = TRACES / "hta-amd-mi250-minitoy.json.gz"
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
# Shares in percentage points: HTA computes them over the whole trace, gpudojo over the
# ProfilerSteps, and HTA's overlap is of kernels merged differently at their edges.
IDLE_TOL = 0.5
OVERLAP_TOL = 1.5
BREAKDOWN_TOL = 2.0

pytestmark = pytest.mark.skipif(
    not TRACES.is_dir(), reason=f"the real GPU traces (HTA's test data) are not at {TRACES}; they are not shipped"
)


def device_time_by_correlation(path: Path) -> tuple[Counter, Counter]:
    """Per op name, device time (us) of the activities launched inside the ProfilerSteps: each
    kernel/copy/memset joined to the runtime call with its correlation id, that call to the
    cpu_ops on its (pid, tid) whose [ts, ts + dur] holds its start; self to the innermost, total
    to each enclosing name once."""
    with gzip.open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    lo, hi = min(e["ts"] for e in steps), max(e["ts"] + e["dur"] for e in steps)
    ops, calls, device = defaultdict(list), {}, defaultdict(float)
    for e in events:
        args = e.get("args") or {}
        if e.get("cat") == "cpu_op" and not e["name"].startswith("ProfilerStep#"):
            ops[(e["pid"], e["tid"])].append(e)
        elif e.get("cat") == "cuda_runtime" and "correlation" in args:
            calls[args["correlation"]] = e
        elif e.get("cat") in DEVICE_CATS and "correlation" in args:
            device[args["correlation"]] += e["dur"]
    for lane in ops.values():
        lane.sort(key=lambda o: (o["ts"], -o["dur"]))
    starts = {key: [o["ts"] for o in lane] for key, lane in ops.items()}
    dev_self, dev_total = Counter(), Counter()
    for corr, dur in device.items():
        call = calls.get(corr)
        if call is None or not lo <= call["ts"] <= hi:
            continue
        key, t = (call["pid"], call["tid"]), call["ts"]
        before = ops.get(key, [])[: bisect.bisect_right(starts.get(key, []), t)]
        around = [o for o in before if t <= o["ts"] + o["dur"]]
        if around:
            dev_self[around[-1]["name"]] += dur
            for name in {o["name"] for o in around}:
                dev_total[name] += dur
    return dev_self, dev_total


def hta_answers() -> dict[str, float]:
    """HTA's figures for the control trace, as its README states them (percent)."""
    text = (TRACES / "README.md").read_text(encoding="utf-8")
    found = {
        "idle": re.search(r"idle ([\d.]+)% of the rank's time", text),
        "overlap": re.search(r"overlap\s+([\d.]+)%", text),
        "computation": re.search(r"COMPUTATION ([\d.]+)%", text),
        "communication": re.search(r"COMMUNICATION ([\d.]+)%", text),
        "comp_comm": re.search(r"COMPUTATION overlapping\s+COMMUNICATION ([\d.]+)%", text),
        "comp_memory": re.search(r"COMPUTATION overlapping MEMORY ([\d.]+)%", text),
        "memory": re.search(r"MEMORY ([\d.]+)%\.", text),
    }
    missing = [k for k, m in found.items() if m is None]
    assert not missing, f"the README no longer states HTA's {missing}"
    return {k: float(m.group(1)) for k, m in found.items()}  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return write_analysis([CONTROL], tmp_path_factory.mktemp("control"))


@pytest.fixture(scope="module")
def rocm(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return write_analysis([ROCM], tmp_path_factory.mktemp("rocm"))


def _shares(summary: dict) -> dict[str, float]:
    bd = {b["category"]: b["us"] for b in summary["breakdown"]}
    return {k: 100 * v / sum(bd.values()) for k, v in bd.items()}


@pytest.mark.parametrize("trace", ["control", "rocm"])
def test_device_time_goes_to_the_operator_that_launched_it(trace: str, request: pytest.FixtureRequest) -> None:
    summary = request.getfixturevalue(trace)
    want_self, want_total = device_time_by_correlation(CONTROL if trace == "control" else ROCM)
    assert summary["top_ops"]
    for op in summary["top_ops"]:
        assert op["device_self_us"] == pytest.approx(want_self[op["name"]], abs=0.01), op["name"]
        assert op["device_total_us"] == pytest.approx(want_total[op["name"]], abs=0.01), op["name"]


def test_matmuls_carry_their_kernels_and_allocations_none_on_the_control_trace(control: dict) -> None:
    ops = {o["name"]: o for o in control["top_ops"]}
    assert ops["aten::mm"]["device_self_us"] == pytest.approx(42_140, rel=0.01)
    assert ops["aten::addmm"]["device_self_us"] == pytest.approx(24_310, rel=0.01)
    assert ops["aten::empty"]["device_total_us"] == 0
    assert ops["AddmmBackward0"]["device_self_us"] == 0
    assert ops["AddmmBackward0"]["device_total_us"] >= ops["AddmmBackward0"]["device_self_us"]


def test_idle_share_and_overlap_agree_with_hta(control: dict) -> None:
    hta = hta_answers()
    assert _shares(control)["idle"] == pytest.approx(hta["idle"], abs=IDLE_TOL)
    (overlap,) = control["overlap"]
    assert 100 * overlap["share"] == pytest.approx(hta["overlap"], abs=OVERLAP_TOL)


def test_kernel_breakdown_agrees_with_hta(control: dict) -> None:
    """gpudojo gives an instant to communication, then copies, then compute; HTA names the
    overlaps: compute alone is its COMPUTATION, copies are its MEMORY with COMPUTATION over it."""
    hta = hta_answers()
    shares = _shares(control)
    busy = shares["compute"] + shares["communication"] + shares["memcpy"]
    assert 100 * shares["compute"] / busy == pytest.approx(hta["computation"], abs=BREAKDOWN_TOL)
    assert 100 * shares["memcpy"] / busy == pytest.approx(hta["memory"] + hta["comp_memory"], abs=BREAKDOWN_TOL)
    named_comm = hta["communication"] + hta["comp_comm"]
    unnamed = 100 - sum(hta[k] for k in ("computation", "communication", "comp_comm", "comp_memory", "memory"))
    assert named_comm - BREAKDOWN_TOL <= 100 * shares["communication"] / busy <= named_comm + unnamed + BREAKDOWN_TOL


def test_rocm_trace_says_rocm_not_cuda(rocm: dict, control: dict) -> None:
    assert "GPU kernels (ROCm)" in rocm["mode"]["label"]
    assert "CUDA" not in json.dumps(rocm["mode"])
    assert "CUDA kernels" in control["mode"]["label"]


def test_a_summary_is_served_the_same_cached_or_not_and_made_once_per_opened_analysis(tmp_path):
    """GET profile/summary serves the analysis's own fields as written once per opened analysis
    (validated then): the same fields, first call or cached, and nothing kept past the analysis."""
    import gc
    import shutil

    from gpudojo.profile.models import ProfileSummary
    from gpudojo.profile.service import PER_CALL, ProfileService

    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(CONTROL, root / CONTROL.name)
    shutil.copy(ROCM, root / ROCM.name)
    service = ProfileService(tmp_path / "data", root, keep_open_bytes=1)  # one analysis open at a time
    first = ProfileSummary.model_validate_json(service.summary_json("file:" + CONTROL.name))
    again = ProfileSummary.model_validate_json(service.summary_json("file:" + CONTROL.name))
    assert (first.cached, again.cached) == (False, True)
    assert again.analysis_ms < first.analysis_ms
    assert first.model_dump(exclude=set(PER_CALL)) == again.model_dump(exclude=set(PER_CALL))
    assert first.trace == again.trace and first.trace.id == "file:" + CONTROL.name
    assert len(first.steps) == 6  # the control trace's six profiler steps
    assert len(service._bodies) == 1
    other = service.summary("file:" + ROCM.name)  # opening it closes the first analysis
    gc.collect()
    assert other.mode != first.mode or other.kernels != first.kernels
    assert len(service._bodies) == 1, "the closed analysis's served summary is still held"


def test_the_clis_summary_alone_is_the_served_summary_without_opening_the_analysis(tmp_path):
    """`gpudojo profile summary` reads the analysis's summary from its folder: the same fields
    as the server serves, with no events loaded and no timeline index built in its process."""
    import shutil

    from gpudojo.profile.service import PER_CALL, ProfileService

    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(CONTROL, root / CONTROL.name)
    trace_id = "file:" + CONTROL.name
    service = ProfileService(tmp_path / "data", root)
    alone = service.summary_alone(trace_id)
    assert not alone.cached and service.files.kept() == (0, 0)
    again = service.summary_alone(trace_id)
    assert again.cached and service.files.kept() == (0, 0)
    served = service.summary(trace_id)  # the server's path opens it
    assert served.cached and service.files.kept()[0] == 1
    assert alone.model_dump(exclude=set(PER_CALL)) == served.model_dump(exclude=set(PER_CALL))
    assert alone.trace == served.trace
