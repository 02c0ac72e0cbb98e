"""`gpudojo kernel ...`, the argument text form, and the %%cuda magic in a real IPython shell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpudojo.kernels.models import ArrayArg, ScalarArg
from gpudojo.kernels.spec import SpecError, parse_args, parse_expected

DATA = Path(__file__).resolve().parents[1] / "data" / "kernels"


@pytest.fixture
def isolated_data(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    return tmp_path


def gpudojo(*args: str, env_dir: Path) -> subprocess.CompletedProcess:
    env = {"JUPYTER_DATA_DIR": str(env_dir / "jupyter-data"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "gpudojo.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_parse_args_text_form():
    args = parse_args("a:float32=2 x:float32[4,64]=random y:float64[256]=full(1.5):out n:int32=256")
    assert args[0] == ScalarArg(name="a", dtype="float32", value=2.0)
    assert args[1] == ArrayArg(name="x", dtype="float32", shape=[4, 64], init="random")
    assert args[2].output and args[2].init == "full" and args[2].value == 1.5
    assert parse_args('[{"kind": "scalar", "name": "k", "value": 3}]')[0].value == 3
    assert parse_expected("y = a*x + y; out=values.sum()") == {"y": "a*x + y", "out": "values.sum()"}


@pytest.mark.parametrize(
    "text",
    [
        "x",
        "x:float32[4]",
        "x:complex64[4]=zeros",
        "n:int32=1:out",
        "x:float32[0]=ones",
        "x:float32[4]=sometimes",
        "[{bad json",
    ],
)
def test_parse_args_rejects_bad_items_saying_which(text):
    with pytest.raises(SpecError) as info:
        parse_args(text)
    assert text.split()[0][:8] in str(info.value) or "JSON" in str(info.value)


def test_cli_compile_text_and_json(tmp_path):
    text = gpudojo("kernel", "compile", str(DATA / "saxpy_reduce.cu"), "--arch", "sm_80", "--sass", env_dir=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "NVRTC 13." in text.stdout and "kernel block_sum" in text.stdout and "BAR.SYNC" in text.stdout
    assert "registers" in text.stdout and "limited by" in text.stdout
    as_json = gpudojo("kernel", "compile", str(DATA / "saxpy_reduce.cu"), "--json", env_dir=tmp_path)
    doc = json.loads(as_json.stdout)
    assert doc["cached"] is True and doc["arch"] == "sm_80" and len(doc["kernels"]) == 2
    broken = gpudojo("kernel", "compile", str(DATA / "broken.cu"), env_dir=tmp_path)
    assert broken.returncode == 1 and "line 3:14" in broken.stdout


def test_cli_run_in_the_simulator_and_bad_specs(tmp_path):
    ok = gpudojo(
        "kernel",
        "run",
        str(DATA / "block_sum_numba.py"),
        "--kernel",
        "block_sum",
        "--grid",
        "2",
        "--block",
        "64",
        "--args",
        "values:float32[128]=arange out:float32[2]=zeros:out",
        "--expect",
        "out=values.reshape(2, 64).sum(axis=1)",
        env_dir=tmp_path,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("PASSED - numba CUDA simulator")
    oob = gpudojo(
        "kernel",
        "run",
        str(DATA / "block_sum_numba.py"),
        "--kernel",
        "fill_past_end",
        "--grid",
        "1",
        "--block",
        "32",
        "--args",
        "x:float32[20]=zeros:out",
        env_dir=tmp_path,
    )
    assert oob.returncode == 1 and "out_of_bounds" in oob.stdout and "threadIdx=(" in oob.stdout
    bad = gpudojo(
        "kernel",
        "run",
        str(DATA / "block_sum_numba.py"),
        "--kernel",
        "block_sum",
        "--grid",
        "1",
        "--block",
        "64",
        "--args",
        "values:float32",
        env_dir=tmp_path,
    )
    assert bad.returncode == 2 and "values:float32" in bad.stderr
    emulated = gpudojo(
        "kernel",
        "run",
        str(DATA / "saxpy_reduce.cu"),
        "--kernel",
        "saxpy",
        "--grid",
        "1",
        "--block",
        "32",
        "--args",
        "a:float32=1 x:float32[32]=ones y:float32[32]=ones:out n:int32=32",
        "--expect",
        "y=a*x+y",
        env_dir=tmp_path,
    )
    assert emulated.returncode == 0 and "PASSED - CPU emulation" in emulated.stdout
    assert "times are not a GPU's" in emulated.stdout and "emulator: g++" in emulated.stdout


def test_cuda_magic_in_ipython(isolated_data):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "gpudojo")
        report = shell.run_cell_magic("cuda", "--arch sm_90 --block-size 128", (DATA / "saxpy_reduce.cu").read_text())
        assert report.result.ok and report.result.arch == "sm_90"
        html = report._repr_html_()
        assert "block_sum" in html and "<table" in html and "SASS of saxpy" in html
        assert "registers" in repr(report)
        run = shell.run_cell_magic(
            "cuda",
            '--numba --run block_sum --grid 1 --block 64 --args "values:float32[64]=ones out:float32[1]=zeros:out" '
            '--expect "out=values.sum(keepdims=True)"',
            (DATA / "block_sum_numba.py").read_text(),
        )
        assert run.result.status == "passed" and run.result.mode == "simulator"
        assert "numba CUDA simulator" in run._repr_html_()
    finally:
        from gpudojo.kernels import notebook

        notebook.service().close()
        notebook.service.cache_clear()
        InteractiveShell.clear_instance()
