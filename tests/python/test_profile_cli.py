"""`gpudojo profile summary | diff`, the notebook call, and the rule that the serving process
never loads torch, pandas or Holistic Trace Analysis (the analysis worker does)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from profile_traces import make_fast_trace, make_loader_trace

GPUDOJO = [sys.executable, "-m", "gpudojo.cli"]


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cli-traces")
    return {"slow": make_loader_trace(folder / "slow.json"), "fast": make_fast_trace(folder / "fast.json")}


def gpudojo(*args: str, data: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*GPUDOJO, *args, "--data-dir", str(data)], capture_output=True, text=True, timeout=300, check=False
    )


def test_summary_prints_the_mode_steps_and_findings_and_json_is_the_apis_shape(tmp_path, traces):
    text = gpudojo("profile", "summary", str(traces["slow"]), data=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "CPU" in text.stdout and "data loading" in text.stdout.lower()
    doc = json.loads(gpudojo("profile", "summary", str(traces["slow"]), "--json", data=tmp_path).stdout)
    assert doc["cached"] is True and doc["mode"]["kind"] == "cpu" and len(doc["steps"]) == 3
    assert "data-loading" in [f["id"] for f in doc["findings"]]


def test_diff_prints_the_speedup_and_json_names_what_was_resolved(tmp_path, traces):
    text = gpudojo("profile", "diff", str(traces["slow"]), str(traces["fast"]), data=tmp_path)
    assert text.returncode == 0, text.stderr
    doc = json.loads(
        gpudojo("profile", "diff", str(traces["slow"]), str(traces["fast"]), "--json", data=tmp_path).stdout
    )
    assert doc["speedup"] > 1 and "data-loading" in doc["findings_resolved"]
    assert f"{doc['speedup']:.2f}" in text.stdout or f"{doc['speedup']:.1f}" in text.stdout


def test_a_missing_or_broken_trace_exits_2_with_one_line(tmp_path):
    (tmp_path / "broken.json").write_text('{"traceEvents": [')
    for name in ("missing.json", "broken.json"):
        done = gpudojo("profile", "summary", str(tmp_path / name), data=tmp_path / "data")
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.startswith("gpudojo profile summary:"), done.stderr


def test_the_notebook_call_renders_the_same_summary(tmp_path, traces):
    code = (
        "from gpudojo.profile.notebook import summary, diff; "
        f"s = summary({str(traces['slow'])!r}); h = s._repr_html_(); "
        "assert 'data loading' in h.lower() and '<table' in h, h[:500]; "
        "assert s.mode.kind == 'cpu' and 'CPU' in repr(s); "
        f"d = diff({str(traces['slow'])!r}, {str(traces['fast'])!r}); assert d.speedup > 1; print('ok')"
    )
    env = {"JUPYTER_DATA_DIR": str(tmp_path / "jdata"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


def test_the_serving_side_never_loads_torch_pandas_or_hta(tmp_path, traces):
    code = (
        "import sys; from pathlib import Path; from gpudojo.profile.service import ProfileService; "
        f"s = ProfileService(Path({str(tmp_path / 'data')!r}), Path({str(traces['slow'].parent)!r})); "
        "a = s.summary('file:slow.json'); s.window(a.trace.id, None, None, 200); s.close(); "
        "bad = [m for m in ('torch', 'pandas', 'hta', 'numba') if m in sys.modules]; "
        "assert not bad, bad; print('clean')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "clean" in done.stdout, done.stderr[-2000:]
