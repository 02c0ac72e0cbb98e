"""A profile diff names what differs between the two runs its traces came from (parameters,
lab, mode, machine) rather than their run ids: the pure comparison, then the route on runs
saved in the server's store with a trace each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from gpudojo.profile.models import ProfileDiff
from gpudojo.profile.run_changes import run_changes, run_id_of, with_runs
from gpudojo.runs.models import NodeStatus, Run
from profile_traces import make_gpu_standin

LAB = "lab-02-pytorch-gpu"


def lab_run(run_id: str, created_at: float, **changes) -> Run:
    base = dict(
        id=run_id,
        kind="lab",
        lab=LAB,
        title="PyTorch on the GPU",
        params={"max_batch": 4, "image_size": 32, "amp": False},
        launcher="python",
        nproc=1,
        status="succeeded",
        backend="none",
        device_mode="cpu",
        mode_note="",
        created_at=created_at,
        record_profile=True,
    )
    return Run(**(base | changes))


def words(changes) -> dict[str, tuple[str, str]]:
    return {c.label: (c.a, c.b) for c in changes}


def test_a_changed_parameter_is_named_with_both_values_and_equal_ones_are_not():
    a = lab_run("20261205-040000-aaaaaa", 100.0)
    b = lab_run("20261205-040500-bbbbbb", 400.0, params={"max_batch": 8, "image_size": 32, "amp": True})
    assert words(run_changes(a, b)) == {"max_batch": ("4", "8"), "amp": ("no", "yes")}


def test_lab_mode_machine_and_processes_are_named_when_they_differ():
    a = lab_run("20261205-040000-aaaaaa", 100.0)
    b = lab_run(
        "20261205-040500-bbbbbb",
        400.0,
        lab="lab-03-ddp",
        params={"max_batch": 4, "image_size": 32, "amp": False, "epochs": 2},
        device_mode="gpu",
        engine="slurm",
        nodes=[NodeStatus(name="gpu01", state="succeeded"), NodeStatus(name="gpu02", state="succeeded")],
        nproc=2,
    )
    got = words(run_changes(a, b))
    assert got["lab"] == (LAB, "lab-03-ddp")
    assert got["epochs"] == ("—", "2")
    assert got["mode"] == ("CPU fallback", "GPU")
    assert got["machine"] == ("this machine", "slurm on gpu01, gpu02")
    assert got["processes"] == ("1", "2")


def test_trace_ids_name_their_run_and_files_have_none():
    assert run_id_of("run:20261205-040000-aaaaaa:rank0.trace.json") == "20261205-040000-aaaaaa"
    assert run_id_of("run:20261205-040000-aaaaaa:*") == "20261205-040000-aaaaaa"
    assert run_id_of("file:slow.json") is None


def test_a_deleted_run_leaves_the_diff_without_run_facts():
    from gpudojo.errors import NotFound

    diff = ProfileDiff(
        a="run:gone:rank0.trace.json",
        b="file:fast.json",
        a_mode="cpu",
        b_mode="cpu",
        step_a_us=2.0,
        step_b_us=1.0,
        speedup=2.0,
        breakdown=[],
        ops=[],
        findings_resolved=[],
        findings_new=[],
    )

    def missing(run_id: str) -> Run:
        raise NotFound(f"No run {run_id!r}.")

    got = with_runs(diff, missing)
    assert got.a_run is None and got.b_run is None and got.changes == []


# --- the route ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def standins(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("diff-runs")
    return {
        "slow": make_gpu_standin(folder / "slow.json", short_kernels=300),
        "fast": make_gpu_standin(folder / "fast.json", short_kernels=50),
    }


def save_with_trace(services, run: Run, trace: Path) -> str:
    folder = Path(services.settings.data_dir) / "runs" / run.id / "profile"
    folder.mkdir(parents=True)
    shutil.copy(trace, folder / "rank0.trace.json")
    services.runs.store.save(run)
    return f"run:{run.id}:rank0.trace.json"


async def diff_of(jp_fetch, a: str, b: str, **kwargs):
    r = await jp_fetch("gpudojo", "api", "profile", "diff", params={"a": a, "b": b}, **kwargs)
    return json.loads(r.body)


async def test_the_diff_route_names_the_runs_and_what_differs(jp_fetch, jp_serverapp, standins):
    services = jp_serverapp.web_app.settings["gpudojo"]
    older = lab_run("20261205-040000-aaaaaa", 1_000.0)
    newer = lab_run("20261205-040500-bbbbbb", 2_000.0, params={"max_batch": 8, "image_size": 32, "amp": False})
    a = save_with_trace(services, older, standins["slow"])
    b = save_with_trace(services, newer, standins["fast"])
    diff = await diff_of(jp_fetch, a, b)
    assert diff["a_run"]["id"] == older.id and diff["b_run"]["created_at"] == 2_000.0
    assert diff["a_run"]["title"] == "PyTorch on the GPU" and diff["a_run"]["device_mode"] == "cpu"
    assert diff["changes"] == [{"key": "param:max_batch", "label": "max_batch", "a": "4", "b": "8"}]
    # A trace file has no run: the comparison still stands, with nothing said about runs.
    shutil.copy(standins["fast"], Path(jp_serverapp.root_dir) / "fast.json")
    mixed = await diff_of(jp_fetch, a, "file:fast.json")
    assert mixed["a_run"]["id"] == older.id and mixed["b_run"] is None and mixed["changes"] == []


async def test_the_diff_route_refuses_callers_without_credentials(jp_fetch, jp_serverapp, standins):
    services = jp_serverapp.web_app.settings["gpudojo"]
    a = save_with_trace(services, lab_run("20261205-040000-aaaaaa", 1.0), standins["slow"])
    b = save_with_trace(services, lab_run("20261205-040500-bbbbbb", 2.0), standins["fast"])
    with pytest.raises(HTTPClientError) as info:
        await diff_of(jp_fetch, a, b, headers={"Authorization": ""})
    assert info.value.code == 403
