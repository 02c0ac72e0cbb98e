"""The Kubernetes engine: every generated manifest against its schema, offline; the follower
(the kubernetes client path) against k8s_standin.StandIn, a STAND-IN API server, never a real
cluster: submit, pods, logs per rank, success, cancel, an OOM-killed pod, a pod that cannot be
scheduled or pulled; and lab-03 end to end through the run service on the stand-in."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudojo.paths import material_root
from gpudojo.runfolder import RunFolder
from gpudojo.runs.engines.base import EngineContext, read_engine_state
from gpudojo.runs.engines.k8s_manifests import Names, Shape, code_files, manifests
from gpudojo.runs.engines.k8s_validate import CORE_FILE, validate_manifests
from gpudojo.runs.engines.kubernetes import KubernetesEngine
from gpudojo.runs.models import KubernetesWhere
from k8s_standin import StandIn

LAB03 = material_root("labs") / "lab-03-ddp"
TINY = ["--epochs", "1", "--samples", "256", "--batch_size", "64", "--hidden", "16"]
FLAVORS = ("trainjob", "pytorchjob", "job")
pytestmark = pytest.mark.timeout(150)


def context(tmp_path: Path, args: list[str] = TINY, nproc: int = 1) -> EngineContext:
    run_id = "20260101-120000-" + uuid.uuid4().hex[:6]
    return EngineContext(
        run_id=run_id,
        folder=RunFolder(tmp_path / "runs" / run_id),
        entry=LAB03 / "train_ddp.py",
        args=list(args),
        launcher="torchrun",
        nproc=nproc,
        dist_backend="gloo",
        title="Multi-GPU training with DDP",
        lab_id="lab-03-ddp",
        lab_folder=LAB03,
    )


def where(flavor: str, **options) -> KubernetesWhere:
    return KubernetesWhere(engine="kubernetes", flavor=flavor, **options)


def documents(files) -> list[dict]:
    return [d for f in files if f.name.endswith(".yaml") for d in yaml.safe_load_all(f.content) if d]


# --- generation and validation, offline --------------------------------------------------


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize(("nodes", "gpus", "restarts"), [(1, 0, 0), (4, 0, 2), (1, 8, 0), (4, 8, 1)])
def test_every_generated_manifest_is_valid_against_its_schema(tmp_path, flavor, nodes, gpus, restarts):
    ctx = context(tmp_path, nproc=2)
    files = KubernetesEngine().generate(ctx, where(flavor, nodes=nodes, gpus_per_node=gpus, max_restarts=restarts))
    docs = documents(files)
    assert validate_manifests(docs) == []
    kinds = [d["kind"] for d in docs]
    job_kind = {"trainjob": "TrainJob", "pytorchjob": "PyTorchJob", "job": "Job"}[flavor]
    assert kinds == ["ConfigMap", *(["Service"] if flavor == "job" else []), job_kind]
    names = Names.of(ctx.run_id)
    text = "\n".join(f.content for f in files)
    for doc in docs:
        assert doc["metadata"]["labels"]["gpudojo.run"] == ctx.run_id and doc["metadata"]["name"].startswith("gpudojo-")
    # The lab's script and labkit travel in the ConfigMap; the pods print metrics to stdout.
    assert {"train_ddp.py", "gpudojo.labkit.__init__.py"} <= set(docs[0]["data"])
    job_json = json.dumps(docs[-1])
    assert "GPUDOJO_RUN_DIR" not in job_json and "[default${rank}]:" in job_json
    gpu_lines = [line for line in text.splitlines() if line.strip().startswith("nvidia.com/gpu:")]
    assert bool(gpu_lines) == bool(gpus) and (not gpus or all(f'"{gpus}"' in line for line in gpu_lines))
    assert json.dumps({"name": "GPUDOJO_BACKEND", "value": "nccl" if gpus else "gloo"}) in job_json
    # The fields that matter carry their explanation, as YAML comments.
    for words in (
        "# resources:",
        "/dev/shm",
        "Rendezvous",
        "Restart policy" if flavor != "trainjob" else "restart policy",
    ):
        assert words in text, words
    if flavor == "job":
        assert "headless" in text and f"--master-addr={names.job}-0.{names.service}" in text
        assert "--node-rank=$(JOB_COMPLETION_INDEX)" in text
    nproc = gpus or 2
    assert str(nproc) in json.dumps(docs[-1]["spec"])


def test_yaml_reads_back_as_the_documents_it_was_written_from(tmp_path):
    ctx = context(tmp_path)
    shape = Shape(ctx.run_id, "team-a", 3, 2, 0, 4, 16, 2, "img:1", 1, "gloo", "train_ddp.py", ["--lr", "0.1", "--x"])
    for flavor in FLAVORS:
        for m in manifests(flavor, shape, code_files(ctx.entry, LAB03)):
            assert yaml.safe_load(m.yaml()) == m.doc, (flavor, m.kind)


# Script arguments that YAML reads as something else unless they are written with care: "="
# alone (YAML 1.1's value key, which safe_load cannot construct), a mapping, a list item, a
# comment, an astral character (JSON's surrogate pair reads back as two lone surrogates), and
# words that read as null, numbers and booleans.
TRICKY_ARGS = ["a=b", "=", "key: value", "- x", "#c", "\U0001f600", "", "null", "1e3", "true", "a\nb", "\x7f\x85\u2028"]


def lists_ending_with(doc, tail: list[str]) -> list[list]:
    """Every list in ``doc`` (at any depth) whose last items are ``tail``."""
    found, stack = [], [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            if node[-len(tail) :] == tail:
                found.append(node)
            stack.extend(node)
    return found


@pytest.mark.parametrize("flavor", FLAVORS)
def test_script_arguments_read_back_from_the_manifest_file_as_given(tmp_path, flavor):
    # Finding (issue 22, 5): "=" made YAML that yaml.safe_load could not read, and U+1F600 came
    # back as two lone surrogates.
    ctx = context(tmp_path, args=["--note", *TRICKY_ARGS])
    files = KubernetesEngine().generate(ctx, where(flavor, nodes=2))
    out = tmp_path / "out"
    out.mkdir()
    for f in files:
        (out / f.name).write_text(f.content, encoding="utf-8")
    docs = [d for f in files if f.name.endswith(".yaml") for d in yaml.safe_load_all((out / f.name).read_bytes()) if d]
    assert validate_manifests(docs) == []
    assert lists_ending_with(docs[-1], ["--note", *TRICKY_ARGS]), json.dumps(docs[-1])[:2000]


def test_a_script_whose_name_no_configmap_key_can_hold_is_mounted_under_its_own_name(tmp_path):
    folder = tmp_path / "my dir"
    folder.mkdir()
    entry = folder / "my script (1).py"
    entry.write_text("print('hi')\n")
    ctx = context(tmp_path)
    ctx.entry, ctx.lab_folder, ctx.lab_id = entry, None, None
    docs = documents(KubernetesEngine().generate(ctx, where("job")))
    assert validate_manifests(docs) == []
    configmap, job = docs[0], docs[-1]
    (item,) = [
        i
        for v in job["spec"]["template"]["spec"]["volumes"]
        if "configMap" in v
        for i in v["configMap"]["items"]
        if i["path"] == entry.name
    ]
    assert configmap["data"][item["key"]] == "print('hi')\n"
    assert any(word.endswith(f"/{entry.name}") for word in json.dumps(job).split('"'))


# Any text at all (lone surrogates included), and short text made of what YAML reads specially.
ANY_TEXT = st.text(st.characters(exclude_categories=())) | st.text(
    alphabet=" -?:,[]{}#&*!|>'\"%@`=~<\n\r\t\\.0123456789eExo+_yYnNtTrufalsL\x85\u2028\ufeff", max_size=8
)


@settings(max_examples=2000, deadline=None)
@given(ANY_TEXT, ANY_TEXT)
def test_any_text_reads_back_as_itself(key, value):
    from gpudojo.runs.engines.k8s_yaml import dump

    doc = {"k": value, "l": [value, {"m": value}], key or "z": [key]}
    text = dump(doc, {("k",): "a comment"})
    assert yaml.safe_load(text.encode("utf-8")) == doc


def test_a_broken_manifest_is_caught_with_the_path_of_its_bad_field(tmp_path):
    docs = documents(KubernetesEngine().generate(context(tmp_path), where("job", nodes=2)))
    job = docs[-1]
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["resource"] = container.pop("resources")
    job["spec"]["completions"] = "two"
    problems = validate_manifests(docs)
    assert any("spec.template.spec.containers[0].resource: unknown field" in p for p in problems), problems
    assert any("spec.completions" in p and "integer" in p for p in problems), problems
    assert all(p.startswith(f"Job {job['metadata']['name']}: ") for p in problems)

    trainjob = documents(KubernetesEngine().generate(context(tmp_path), where("trainjob")))[-1]
    trainjob["spec"]["trainer"]["numNodes"] = "four"
    trainjob["spec"]["trainer"]["env"].append({"name": "PET_NNODES", "value": "4"})
    problems = validate_manifests([trainjob])
    assert any(": spec.trainer.numNodes: " in p for p in problems), problems
    assert any("spec.trainer.env[" in p and "PET_NNODES" in p for p in problems), problems

    pytorchjob = documents(KubernetesEngine().generate(context(tmp_path), where("pytorchjob", nodes=2)))[-1]
    specs = pytorchjob["spec"]["pytorchReplicaSpecs"]
    specs["Chief"] = specs.pop("Worker")
    specs["Master"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2"
    specs["Master"]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    problems = validate_manifests([pytorchjob])
    assert any("spec.pytorchReplicaSpecs.Chief: replica type must be Master or Worker" in p for p in problems)
    assert any("containers[0].resources.requests.nvidia.com/gpu: must equal" in p for p in problems), problems
    assert validate_manifests([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}])[0].startswith("Pod x:")


def test_trainjob_is_written_for_trainer_v2_3_and_says_which_releases_take_it(tmp_path):
    """Trainer v2.2.0 replaced podTemplateOverrides with runtimePatches and stopped taking the torch
    process count from numProcPerNode: the TrainJob patches the runtime, tells torchrun its nproc
    itself, and its header names the releases that accept it; a v2.1-style override is refused."""
    ctx = context(tmp_path, nproc=2)
    files = KubernetesEngine().generate(ctx, where("trainjob", nodes=2))
    trainjob = documents(files)[-1]
    spec = trainjob["spec"]
    assert "podTemplateOverrides" not in spec and "numProcPerNode" not in spec["trainer"]
    assert "--nproc-per-node=2" in spec["trainer"]["command"]
    (patch,) = spec["runtimePatches"]
    assert patch["manager"] == "gpudojo.dev/run"
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]
    assert node["name"] == "node" and pod["metadata"]["labels"]["gpudojo.run"] == ctx.run_id
    assert {v["name"] for v in pod["spec"]["volumes"]} == {"code", "dshm"}
    text = next(f.content for f in files if f.content.lstrip().startswith("# TrainJob"))
    assert "written for v2.3.0" in text and "Kubeflow Trainer v2.2.0 and later" in text and "not v2.1.x" in text
    pytorchjob = next(
        f.content for f in KubernetesEngine().generate(ctx, where("pytorchjob")) if "PyTorchJob" in f.content
    )
    assert "legacy Kubeflow training-operator v1.9" in pytorchjob

    old_style = json.loads(json.dumps(trainjob))
    old_style["spec"]["podTemplateOverrides"] = [{"targetJobs": [{"name": "node"}]}]
    old_style["spec"]["trainer"]["numProcPerNode"] = "auto"  # v2.1's int-or-string, an int32 since v2.2
    problems = validate_manifests([old_style])
    assert any("spec.podTemplateOverrides: unknown field" in p for p in problems), problems
    assert any("spec.trainer.numProcPerNode" in p for p in problems), problems
    bad_mount = json.loads(json.dumps(trainjob))
    node_pod = bad_mount["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    node_pod["template"]["spec"]["template"]["spec"]["volumes"].pop(0)
    assert any("volumeMounts[0].name: no volume 'code'" in p for p in validate_manifests([bad_mount]))


def test_the_vendored_trainjob_crd_names_its_release_and_source():
    crds = sorted((CORE_FILE.parent).glob("trainer.kubeflow.org_trainjobs.*.crd.yaml"))
    assert [p.name for p in crds] == ["trainer.kubeflow.org_trainjobs.v2.3.0.crd.yaml"]
    head = crds[0].read_text(encoding="utf-8")[:1500]
    assert "Kubeflow Trainer v2.3.0" in head and "https://github.com/kubeflow/trainer" in head


def test_vendored_core_schemas_are_kubernetes_validates_own(tmp_path):
    kv = pytest.importorskip("kubernetes_validate")
    assert kv
    sys.path.insert(0, str(CORE_FILE.parent))
    try:
        import make_core_schemas
    finally:
        sys.path.pop(0)
    built = make_core_schemas.build(make_core_schemas.package_folder())
    assert built == json.loads(CORE_FILE.read_text(encoding="utf-8"))


def test_availability_needs_a_kubeconfig_but_generation_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    ok, reason = KubernetesEngine().availability()
    assert not ok and "kubeconfig" in reason
    config = tmp_path / "kc"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: lab\n")
    monkeypatch.setenv("KUBECONFIG", str(config))
    assert KubernetesEngine().availability() == (True, f"kubeconfig {config}, context lab")


# --- the client path, against the stand-in ----------------------------------------------


@pytest.fixture
def standin(tmp_path):
    with StandIn(tmp_path / "standin", bad_images={"registry.example/missing:1"}) as api:
        yield api
        assert api.live_processes() == [] or wait_no_processes(api)


def wait_no_processes(api: StandIn, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while api.live_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    return api.live_processes() == []


def start_follower(tmp_path, standin, flavor, args=TINY, **options):
    """Generate a run's manifests and start the follower as the run service would."""
    ctx = context(tmp_path, args)
    w = where(flavor, **options)
    engine = KubernetesEngine()
    ctx.folder.artifacts_dir.mkdir(parents=True)
    for f in engine.generate(ctx, w):
        (ctx.folder.artifacts_dir / f.name).write_text(f.content, encoding="utf-8")
    argv, env = engine.command(ctx, w, ctx.folder.artifacts_dir)
    env = {**os.environ, "KUBECONFIG": str(standin.kubeconfig)}
    env.pop("GPUDOJO_RUN_DIR", None)
    out = open(tmp_path / "follower.out", "w+")  # noqa: SIM115 (closed by the caller's read)
    proc = subprocess.Popen(
        [*argv, "--poll-s", "0.3", "--give-up-s", "2"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return ctx, proc, tmp_path / "follower.out"


def finish(proc: subprocess.Popen, timeout: float = 120) -> int:
    try:
        return proc.wait(timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_follower_runs_lab03_on_two_pods_and_streams_every_rank(tmp_path, standin, flavor):
    ctx, proc, out = start_follower(tmp_path, standin, flavor, nodes=2)
    code = finish(proc)
    text = out.read_text()
    assert code == 0, text[-3000:]
    state = read_engine_state(ctx.folder)
    name = Names.of(ctx.run_id).job
    assert state["job_id"] == name and state["job_state"] in ("Complete", "Succeeded")
    nodes = state["nodes"]
    assert [n["ranks"] for n in nodes] == [[0], [1]] and {n["state"] for n in nodes} == {"succeeded"}
    lines = text.splitlines()
    for rank in (0, 1):  # the ranks' own lines and their metric lines, with the global rank prefix
        assert any(line.startswith(f"[default{rank}]:rank {rank} epoch 0") for line in lines), text[-3000:]
        assert any(line.startswith(f"[default{rank}]:gpudojo-metric ") for line in lines)
    assert any(line.startswith("[default0]:2 rank(s), backend gloo") for line in lines)
    assert f"created {nodes and 'ConfigMap'}" in text
    # Launcher lines name their pod; the finished job stays for its logs, its ConfigMap goes.
    assert standin.get({"job": "Job", "trainjob": "TrainJob", "pytorchjob": "PyTorchJob"}[flavor], name) is not None
    assert standin.get("ConfigMap", Names.of(ctx.run_id).configmap) is None
    assert ("POST", "/api/v1/namespaces/default/configmaps") in standin.requests


def test_sigterm_deletes_the_job_its_configmap_and_service(tmp_path, standin):
    slow = ["--epochs", "50", "--samples", "65536", "--batch_size", "8", "--hidden", "16"]
    ctx, proc, out = start_follower(tmp_path, standin, "job", args=slow, nodes=2)
    standin.wait_running(2)
    deadline = time.monotonic() + 60
    while "[default1]:" not in out.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert finish(proc, 30) == 128 + signal.SIGTERM
    names = Names.of(ctx.run_id)
    assert standin.get("Job", names.job) is None and standin.get("ConfigMap", names.configmap) is None
    assert standin.get("Service", names.service) is None and standin.pod_names() == []
    assert wait_no_processes(standin)
    assert read_engine_state(ctx.folder)["job_state"] == "Deleted"
    assert ("DELETE", f"/apis/batch/v1/namespaces/default/jobs/{names.job}") in standin.requests


def test_an_oom_killed_pod_is_the_runs_root_cause(tmp_path, standin):
    slow = ["--epochs", "50", "--samples", "65536", "--batch_size", "8", "--hidden", "16"]
    ctx, proc, out = start_follower(tmp_path, standin, "job", args=slow, nodes=2)
    pods = standin.wait_running(2)
    time.sleep(1.0)
    standin.kill_pod(pods[1], "OOMKilled")
    code = finish(proc)
    assert code != 0, out.read_text()[-2000:]
    state = read_engine_state(ctx.folder)
    assert state["job_state"] == "Failed"
    assert state["root_cause"]["exception"].startswith(f"OOMKilled: pod {pods[1]}"), state["root_cause"]
    assert state["root_cause"]["exit_code"] == 137
    assert wait_no_processes(standin)


def test_pods_asking_for_gpus_wait_unschedulable_until_cancelled(tmp_path, standin):
    ctx, proc, _ = start_follower(tmp_path, standin, "trainjob", nodes=2, gpus_per_node=1)
    deadline = time.monotonic() + 30
    state = None
    while time.monotonic() < deadline:
        state = read_engine_state(ctx.folder)
        if (
            state
            and len(state["nodes"]) == 2
            and all("Insufficient nvidia.com/gpu" in n["detail"] for n in state["nodes"])
        ):
            break
        time.sleep(0.2)
    assert state and {n["state"] for n in state["nodes"]} == {"waiting"}, state
    proc.send_signal(signal.SIGTERM)
    assert finish(proc, 30) == 128 + signal.SIGTERM
    assert standin.get("TrainJob", Names.of(ctx.run_id).job) is None


def test_an_image_that_cannot_be_pulled_ends_the_run_with_its_reason(tmp_path, standin):
    ctx, proc, out = start_follower(tmp_path, standin, "pytorchjob", nodes=1, image="registry.example/missing:1")
    assert finish(proc, 60) == 1, out.read_text()
    state = read_engine_state(ctx.folder)
    assert state["root_cause"]["exception"].startswith("ImagePullBackOff: pod"), state
    assert standin.get("PyTorchJob", Names.of(ctx.run_id).job) is None  # given up: deleted


def test_no_operator_installed_is_said_plainly(tmp_path, standin, monkeypatch):
    # The stand-in serves trainjobs; ask for a runtime it does not have instead.
    ctx = context(tmp_path)
    docs = documents(KubernetesEngine().generate(ctx, where("trainjob")))
    docs[-1]["spec"]["runtimeRef"]["name"] = "no-such-runtime"
    folder = ctx.folder
    folder.path.mkdir(parents=True)
    paths = []
    for i, doc in enumerate(docs):
        paths.append(folder.path / f"{i}.yaml")
        paths[-1].write_text(yaml.safe_dump(doc))
    env = {**os.environ, "KUBECONFIG": str(standin.kubeconfig)}
    argv = [sys.executable, "-m", "gpudojo.worker.follow_k8s", "--run-dir", str(folder.path), "--run-id", ctx.run_id]
    argv += ["--job", f"TrainJob/{docs[-1]['metadata']['name']}", *map(str, paths)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Invalid" in done.stdout and "torch-distributed" in done.stdout
    assert read_engine_state(folder)["job_state"] == "NotCreated"
    assert standin.get("ConfigMap", Names.of(ctx.run_id).configmap) is None  # what was created is removed


# --- end to end: the run service, the engine, the follower, the stand-in -----------------


def test_lab03_runs_through_the_run_service_on_the_standin(tmp_path, standin, monkeypatch):
    from gpudojo.runs.models import LabRunRequest
    from gpudojo.runs.service import RunService

    monkeypatch.setenv("KUBECONFIG", str(standin.kubeconfig))
    service = RunService(material_root("labs"), tmp_path / "data", tmp_path / "root", cancel_grace_s=3.0)
    try:
        params = {"nproc": 1, "epochs": 2, "samples": 256, "batch_size": 32, "hidden": 16}
        request = LabRunRequest(lab="lab-03-ddp", params=params, where=where("job", nodes=2))
        (run,) = service.submit(request)
        assert run.engine == "kubernetes" and run.nnodes == 2
        assert {a.name for a in run.artifacts} >= {"01-configmap.yaml", "02-service.yaml", "03-job.yaml"}
        done = service.wait(run.id, 120)
        assert done.status == "succeeded", (done.root_cause, done.job_state)
        assert done.job_id == Names.of(run.id).job and done.job_state == "Complete"
        assert [n.ranks for n in done.nodes] == [[0], [1]]
        checks = {c.id: c.ok for c in done.checks}
        assert checks.get("loss-decreases") is True and checks.get("ranks-in-sync") is True, done.checks
    finally:
        service.close()


# --- lab-04 --------------------------------------------------------------------------------

LAB04 = material_root("labs") / "lab-04-k8s"


def run_lab04(tmp_path: Path, args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, dict]:
    run_dir = tmp_path / "lab04-run"
    full_env = {**env, "GPUDOJO_RUN_DIR": str(run_dir), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-u", str(LAB04 / "k8s_lab.py"), *args],
        cwd=LAB04,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    records = [json.loads(line) for line in (run_dir / "metrics" / "rank0.jsonl").read_text().splitlines()]
    return done, {r["check"]: r for r in records if "check" in r}


def test_lab04_on_cpu_generates_validates_and_explains_the_dry_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config either
    done, checks = run_lab04(tmp_path, ["--nodes", "2", "--gpus_per_node", "4", "--flavor", "job"], env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert checks["manifests-valid"]["ok"] is True
    assert checks["pods-ran"]["ok"] is None and checks["loss-fell"]["ok"] is None
    assert "[PASS] manifests-valid" in done.stdout and "Dry run, explained" in done.stdout
    assert "spec.template.spec.containers[0].resource: unknown field" in done.stdout
    assert "# resources:" in done.stdout and "headless" in done.stdout and "/dev/shm" in done.stdout
    written = sorted(p.name for p in (tmp_path / "lab04-run" / "manifests").iterdir())
    assert written == ["01-configmap.yaml", "02-service.yaml", "03-job.yaml", "kubectl.txt"]


def test_lab04_submits_to_the_standin_and_sees_pods_run_and_the_loss_fall(tmp_path, standin):
    env = {**os.environ, "KUBECONFIG": str(standin.kubeconfig)}
    args = ["--nodes", "2", "--gpus_per_node", "0", "--flavor", "pytorchjob", "--submit"]
    done, checks = run_lab04(tmp_path, args, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Server-side dry run" in done.stdout and ": accepted" in done.stdout
    assert checks["manifests-valid"]["ok"] is True
    assert checks["pods-ran"]["ok"] is True and checks["loss-fell"]["ok"] is True, checks
    assert "  [default1]:rank 1 epoch 2" in done.stdout  # the pods' lines, indented


def test_a_job_left_by_a_dead_follower_is_deleted_when_the_run_service_recovers(tmp_path, standin, monkeypatch):
    """The follower dies with its server (SIGKILL: no chance to clean up); the job would run on
    in the cluster. At the next start, recovery marks the run lost and deletes what it made."""
    from gpudojo.runs.models import LabRunRequest
    from gpudojo.runs.service import RunService

    monkeypatch.setenv("KUBECONFIG", str(standin.kubeconfig))
    service = RunService(material_root("labs"), tmp_path / "data", tmp_path / "root", cancel_grace_s=3.0)
    try:
        params = {"nproc": 1, "epochs": 50, "samples": 65536, "batch_size": 8, "hidden": 16}
        (run,) = service.submit(LabRunRequest(lab="lab-03-ddp", params=params, where=where("job", nodes=2)))
        standin.wait_running(2)
        names = Names.of(run.id)
        active = service._active[run.id]
        active.proc.kill()  # the follower, as a SIGKILLed server's child would be left: gone
        service.wait(run.id, 30)
        assert standin.get("Job", names.job) is not None  # nobody cleaned up
        # A run the dead server owned: recovery at the next start finds it unfinished.
        stored = service.get(run.id).model_copy(update={"status": "running", "ended_at": None})
        service.store.save(stored, owner=(2**22 + 4321, 1.0))
        assert service.start() == [run.id]
        lost = service.get(run.id)
        assert lost.status == "lost" and f"deleted Job {names.job}" in lost.root_cause.exception
        assert standin.get("Job", names.job) is None and standin.get("ConfigMap", names.configmap) is None
        assert wait_no_processes(standin)
    finally:
        service.close()


def test_the_shipped_files_alone_run_labkit_in_a_pod(tmp_path):
    # A module labkit imports but the ConfigMap leaves out fails every lab in its pods: the files
    # shipped, and nothing else of gpudojo, must import labkit and run its MFU and report path.
    script = tmp_path / "train.py"
    script.write_text("", encoding="utf-8")
    for rel, text in code_files(script, None).items():
        (tmp_path / "code" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "code" / rel).write_text(text, encoding="utf-8")
    probe = (
        "import sys; sys.path.insert(0, '.'); import gpudojo.labkit as labkit; "
        "import os; assert labkit.__file__.startswith(os.getcwd()), labkit.__file__; "
        "labkit.declare_flops(per_sample=10.0); labkit.report(1, samples_per_s=5.0); "
        "assert {m for m in sys.modules if m.startswith('gpudojo.')} <= "
        "{'gpudojo.labkit', 'gpudojo.runfolder'} | {f'gpudojo.labkit.{n}' for n in ('memory', 'mfu', 'profile')}"
    )
    done = subprocess.run(
        [sys.executable, "-E", "-s", "-c", probe], cwd=tmp_path / "code", capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert '"mfu"' in done.stdout, done.stdout


def test_a_rank_line_torchrun_copied_unfinished_leaves_the_log_and_root_cause_as_printed(tmp_path, capsys):
    # print() writes the text and the newline apart; torchrun's tailer can copy the line between
    # the two, and the pod's log then holds "[default0]:ValueError: ...[default0]:".
    from gpudojo.worker.follow_k8s import Follower, PodView, log_exception

    follower = Follower(None, RunFolder(tmp_path), "run", ("PyTorchJob", "job"), [])
    pod = PodView("job-worker-0", (0, "job-worker-0"), phase="Failed", exit_code=1)
    for line in (
        "[default0]:Traceback (most recent call last):",
        '[default0]:  File "train.py", line 3, in <module>',
        "[default0]:ValueError: asked to fail[default0]:",
    ):
        follower.relay(pod, line)
    cause = log_exception(pod)
    assert (cause["rank"], cause["exception"]) == (0, "ValueError: asked to fail")
    assert capsys.readouterr().out.splitlines()[-1] == "[default0]:ValueError: asked to fail"
