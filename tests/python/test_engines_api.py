"""Engines over REST and the CLI: which engines this machine has and why not the others, a
run's `where` validated per engine, its generated files, and `gpudojo lab manifest`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

import slurm_cluster as one_host

LABS = Path(__file__).resolve().parents[2] / "labs"
GPUDOJO = str(Path(sys.executable).with_name("gpudojo"))
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def jp_server_config(jp_server_config, monkeypatch):
    jp_server_config.GPUDojo.labs_dir = str(LABS)
    # No Slurm configured for this server, whatever the machine has installed.
    monkeypatch.setenv("SLURM_CONF", "/nonexistent/slurm.conf")
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    return jp_server_config


async def post_json(jp_fetch, *path, body):
    return await jp_fetch("gpudojo", "api", *path, method="POST", body=json.dumps(body))


async def test_engines_lists_all_four_with_the_reason_for_those_that_cannot_run(jp_fetch):
    doc = json.loads((await jp_fetch("gpudojo", "api", "runs", "engines")).body)
    engines = {e["name"]: e for e in doc["engines"]}
    assert list(engines) == ["local", "torchrun-nodes", "slurm", "kubernetes"]
    assert engines["local"]["available"] and engines["torchrun-nodes"]["available"]
    assert not engines["slurm"]["available"] and engines["slurm"]["reason"]
    assert not engines["kubernetes"]["available"] and engines["kubernetes"]["reason"]
    assert all(e["can_generate"] for e in engines.values())


async def test_a_nodes_run_gives_its_generated_files_and_cancels(jp_fetch):
    body = {
        "kind": "lab",
        "lab": "lab-03-ddp",
        "params": {"nproc": 1},
        "where": {"engine": "torchrun-nodes", "nnodes": 3, "join_timeout_s": 30, "same_machine": True},
    }
    (run,) = json.loads((await post_json(jp_fetch, "runs", body=body)).body)["runs"]
    assert run["engine"] == "torchrun-nodes" and run["nnodes"] == 3 and run["where"]["nnodes"] == 3
    listed = json.loads((await jp_fetch("gpudojo", "api", "runs", run["id"], "artifacts")).body)["artifacts"]
    assert [a["name"] for a in listed] == ["join-command.txt", "node0-torchrun.txt", "job.json"]
    assert all(a.get("content") is None for a in listed)
    join = json.loads((await jp_fetch("gpudojo", "api", "runs", run["id"], "artifacts", "join-command.txt")).body)
    assert "each of the other 2 machines" in join["content"] and "gpudojo node join 127.0.0.1:" in join["content"]
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "runs", run["id"], "artifacts", "nothing.txt")
    assert info.value.code == 404 and "join-command.txt" in json.loads(info.value.response.body)["error"]["message"]
    done = json.loads((await post_json(jp_fetch, "runs", run["id"], "cancel", body={})).body)
    assert done["status"] == "cancelled"


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ({"engine": "torchrun-nodes", "nnodes": 0}, "nnodes"),
        ({"engine": "slurm", "flavor": "job"}, "flavor"),
        ({"engine": "kubernetes", "namespace": "Not_A_Name"}, "namespace"),
        ({"engine": "mainframe"}, "engine"),
        ({"engine": "torchrun-nodes", "host": "a b"}, "host"),
    ],
)
async def test_bad_where_is_a_400_naming_the_field(jp_fetch, where, why):
    body = {"kind": "lab", "lab": "lab-03-ddp", "where": where}
    with pytest.raises(HTTPClientError) as info:
        await post_json(jp_fetch, "runs", body=body)
    assert info.value.code == 400
    assert why in info.value.response.body.decode()


@pytest.mark.parametrize("host", [None, "127.0.0.1", "127.0.1.1", "localhost"])
async def test_a_nodes_run_on_loopback_is_refused_unless_every_node_is_on_this_machine(jp_fetch, host):
    where = {"engine": "torchrun-nodes", "nnodes": 2, "join_timeout_s": 10}
    if host is not None:  # None: the default host, loopback
        where["host"] = host
    body = {"kind": "lab", "lab": "lab-03-ddp", "params": {"nproc": 1}, "where": where}
    with pytest.raises(HTTPClientError) as info:
        await post_json(jp_fetch, "runs", body=body)
    assert info.value.code == 400
    (detail,) = json.loads(info.value.response.body)["error"]["detail"]
    assert detail["loc"][-1] == "host"
    assert "loopback: a node on another machine cannot reach it" in detail["msg"]
    assert '"every node on this machine (practice)"' in detail["msg"]
    # Ticked, the same request starts (the practice setup: every node joins over loopback).
    body["where"] = {**where, "same_machine": True}
    (run,) = json.loads((await post_json(jp_fetch, "runs", body=body)).body)["runs"]
    assert run["where"]["same_machine"] is True
    await post_json(jp_fetch, "runs", run["id"], "cancel", body={})


async def test_an_engine_that_cannot_run_here_is_refused_with_its_reason(jp_fetch):
    body = {"kind": "lab", "lab": "lab-03-ddp", "where": {"engine": "slurm", "nodes": 1}}
    with pytest.raises(HTTPClientError) as info:
        await post_json(jp_fetch, "runs", body=body)
    assert info.value.code == 503
    assert "slurm cannot run jobs from this machine" in json.loads(info.value.response.body)["error"]["message"]


async def test_a_script_path_with_a_control_character_is_a_400_naming_the_field(jp_fetch, jp_root_dir):
    # Finding (issue 22, 2): a folder "my dir\ntouch X\n" put shell lines into job.sbatch.
    folder = jp_root_dir / "my dir\ntouch X\n"
    folder.mkdir()
    (folder / "train.py").write_text("print('hi')\n")
    (jp_root_dir / "plain").symlink_to(folder)
    for path in ["my dir\ntouch X\n/train.py", "tab\there/train.py", "del\x7f.py"]:
        body = {"kind": "script", "path": path, "where": {"engine": "slurm"}}
        with pytest.raises(HTTPClientError) as info:
            await post_json(jp_fetch, "runs", body=body)
        error = json.loads(info.value.response.body)["error"]
        assert info.value.code == 400, error
        assert [d["loc"] for d in error["detail"]] == [["script", "path"]]
        assert "control characters" in error["detail"][0]["msg"]
    # A path without any that leads, through a link, to a folder whose name has one.
    with pytest.raises(HTTPClientError) as info:
        await post_json(
            jp_fetch, "runs", body={"kind": "script", "path": "plain/train.py", "where": {"engine": "slurm"}}
        )
    error = json.loads(info.value.response.body)["error"]
    assert info.value.code == 400 and error["detail"][0]["loc"] == ["path"] and "a newline" in error["message"]
    assert not (jp_root_dir / "X").exists()


@pytest.fixture
def no_slurm_configuration(tmp_path, monkeypatch):
    """Slurm's tools on PATH (recording stand-ins) and no configuration anywhere they look."""
    from gpudojo.runs.engines import slurm

    tools, called = one_host.recording_tools(tmp_path)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.delenv("SLURM_CONF_SERVER", raising=False)
    monkeypatch.setattr(
        slurm, "DEFAULT_CONF_FILES", (tmp_path / "etc-slurm.conf", tmp_path / "run-slurm.conf"), raising=False
    )
    return called


async def engines_of(jp_fetch) -> dict[str, dict]:
    doc = json.loads((await jp_fetch("gpudojo", "api", "runs", "engines")).body)
    return {e["name"]: e for e in doc["engines"]}


async def test_engines_list_starts_no_slurm_tool_where_no_configuration_says_where_slurm_is(
    jp_fetch, no_slurm_configuration
):
    # Finding (issue 22, 6): every GET runs/engines ran scontrol ping, which with no
    # configuration asked the resolver for DNS SRV records; its multi-line error was the reason.
    called = no_slurm_configuration
    slurm = (await engines_of(jp_fetch))["slurm"]
    assert not slurm["available"] and not called.exists()
    reason = slurm["reason"]
    assert reason == "No Slurm configuration on this machine: set SLURM_CONF to the cluster's slurm.conf."
    assert "SLURM_CONF_SERVER" in slurm["detail"] and "DNS" in slurm["detail"]


async def test_engines_list_keeps_the_slurm_controllers_answer_for_a_while(
    jp_fetch, no_slurm_configuration, tmp_path, monkeypatch
):
    called = no_slurm_configuration
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    first = (await engines_of(jp_fetch))["slurm"]
    assert first["available"] and first["reason"] == "scontrol ping: Slurmctld(primary) at fake-head is UP"
    second = (await engines_of(jp_fetch))["slurm"]
    assert second == first
    assert called.read_text() == "scontrol ping\n"


def gpudojo(*args: str, env_extra: dict[str, str] | None = None, tmp: Path) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "SLURM_CONF": "/nonexistent/slurm.conf", **(env_extra or {})}
    return subprocess.run(
        [GPUDOJO, *args, "--data-dir", str(tmp / "data")], capture_output=True, text=True, env=env, timeout=60
    )


def test_lab_manifest_prints_a_slurm_batch_script_without_a_cluster(tmp_path):
    done = gpudojo(
        "lab",
        "manifest",
        "lab-03-ddp",
        "--engine",
        "slurm",
        "--nodes",
        "4",
        "--gpus-per-node",
        "8",
        "--set",
        "nproc=8",
        tmp=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "#SBATCH --nodes=4" in done.stdout and "#SBATCH --gpus-per-node=8" in done.stdout
    assert "--nproc-per-node 8" in done.stdout or "--nproc-per-node=8" in done.stdout


def test_lab_manifest_writes_the_nodes_commands_into_a_folder(tmp_path):
    out = tmp_path / "out"
    done = gpudojo(
        "lab",
        "manifest",
        "lab-03-ddp",
        "--engine",
        "torchrun-nodes",
        "--nodes",
        "2",
        "--same-machine",
        "--output-dir",
        str(out),
        tmp=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["job.json", "join-command.txt", "node0-torchrun.txt"]
    assert "gpudojo node join" in (out / "join-command.txt").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["lab", "manifest", "lab-03-ddp"], "Choose an engine"),
        (["lab", "manifest", "lab-03-ddp", "--engine", "slurm", "--flavor", "job"], "--flavor does not apply"),
        (["lab", "manifest", "lab-01-cuda-hello", "--engine", "slurm"], "one plain Python process"),
        (["lab", "run", "lab-03-ddp", "--engine", "slurm"], "slurm cannot run jobs from this machine"),
        (["lab", "run", "lab-03-ddp", "--engine", "torchrun-nodes", "--nodes", "0"], "nnodes"),
        (
            ["lab", "manifest", "lab-03-ddp", "--engine", "torchrun-nodes", "--host", "127.0.0.1"],
            "host: 127.0.0.1 is this machine's loopback",
        ),
    ],
)
def test_cli_refusals_exit_2_with_the_reason(tmp_path, args, message):
    done = gpudojo(*args, tmp=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_cli_refuses_a_parameter_that_is_not_a_finite_number(tmp_path, value):
    # Finding (issue 22, 5): `--set lr=nan` passed lr's bounds (NaN compares false with both).
    for command in (["manifest"], ["run"]):
        done = gpudojo("lab", *command, "lab-03-ddp", "--engine", "slurm", "--set", f"lr={value}", tmp=tmp_path)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert "lr: expected a finite number" in done.stderr


def test_node_join_with_no_host_listening_says_so(tmp_path):
    # --wait 0: at once (by default a node keeps trying for a while: test_nodes_engine tests the wait)
    done = subprocess.run(
        [GPUDOJO, "node", "join", "127.0.0.1:9", "--token", "x", "--wait", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "cannot reach the host at 127.0.0.1:9: Connection refused." in done.stderr
    assert "not listening yet" not in done.stdout and "tried for" not in done.stderr


async def test_an_artifact_swapped_for_a_link_or_grown_huge_is_refused(jp_fetch, jp_serverapp, tmp_path):
    body = {
        "kind": "lab",
        "lab": "lab-03-ddp",
        "params": {"nproc": 1},
        "where": {"engine": "torchrun-nodes", "same_machine": True},
    }
    (run,) = json.loads((await post_json(jp_fetch, "runs", body=body)).body)["runs"]
    await post_json(jp_fetch, "runs", run["id"], "cancel", body={})
    services = jp_serverapp.web_app.settings["gpudojo"]
    artifacts = services.runs.folder(run["id"]).artifacts_dir
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the API")
    (artifacts / "join-command.txt").unlink()
    (artifacts / "join-command.txt").symlink_to(secret)
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "runs", run["id"], "artifacts", "join-command.txt")
    assert info.value.code == 403 and b"not for the API" not in info.value.response.body
    with open(artifacts / "job.json", "wb") as f:
        f.truncate(5 * 2**20)
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "runs", run["id"], "artifacts", "job.json")
    assert info.value.code == 413


@pytest.mark.parametrize("swapped", ["artifacts folder", "run folder"])
async def test_an_artifacts_or_run_folder_swapped_for_a_link_is_refused(jp_fetch, jp_serverapp, tmp_path, swapped):
    # Finding (issue 22, 5): O_NOFOLLOW guarded the file name only; a folder on the way that was
    # replaced by a link had the files where it pointed served as the run's artifacts.
    body = {
        "kind": "lab",
        "lab": "lab-03-ddp",
        "params": {"nproc": 1},
        "where": {"engine": "torchrun-nodes", "same_machine": True},
    }
    (run,) = json.loads((await post_json(jp_fetch, "runs", body=body)).body)["runs"]
    await post_json(jp_fetch, "runs", run["id"], "cancel", body={})
    folder = jp_serverapp.web_app.settings["gpudojo"].runs.folder(run["id"])
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "artifacts").mkdir(parents=True)
    (elsewhere / "artifacts" / "join-command.txt").write_text("not for the API")
    if swapped == "run folder":
        folder.path.rename(tmp_path / "moved")
        folder.path.symlink_to(elsewhere)
    else:
        folder.artifacts_dir.rename(tmp_path / "moved")
        folder.artifacts_dir.symlink_to(elsewhere / "artifacts")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "runs", run["id"], "artifacts", "join-command.txt")
    error = json.loads(info.value.response.body)["error"]
    assert info.value.code == 403 and error["code"] == "outside_run", error
    assert "not for the API" not in info.value.response.body.decode()


async def test_an_artifact_swapped_for_a_fifo_is_a_404_at_once(jp_fetch, jp_serverapp):
    # Opening a FIFO for reading waits for a writer: the request's thread would hang for good.
    body = {
        "kind": "lab",
        "lab": "lab-03-ddp",
        "params": {"nproc": 1},
        "where": {"engine": "torchrun-nodes", "same_machine": True},
    }
    (run,) = json.loads((await post_json(jp_fetch, "runs", body=body)).body)["runs"]
    await post_json(jp_fetch, "runs", run["id"], "cancel", body={})
    artifacts = jp_serverapp.web_app.settings["gpudojo"].runs.folder(run["id"]).artifacts_dir
    (artifacts / "join-command.txt").unlink()
    os.mkfifo(artifacts / "join-command.txt")
    with pytest.raises(HTTPClientError) as info:
        await asyncio.wait_for(jp_fetch("gpudojo", "api", "runs", run["id"], "artifacts", "join-command.txt"), 10)
    assert info.value.code == 404
