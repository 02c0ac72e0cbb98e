"""lab-04-k8s: lab-03's DDP training as a Kubernetes job, generated, explained, validated,
dry-run and, where a cluster is configured, submitted and followed.

    python k8s_lab.py --nodes 2 --gpus_per_node 4 --flavor job
    python k8s_lab.py --nodes 2 --gpus_per_node 0 --flavor pytorchjob --submit   # needs a kubeconfig

The manifests are gpudojo's own (the Kubernetes engine the run form uses): a ConfigMap with
lab-03's code and labkit, then a plain indexed Job with a headless Service, a PyTorchJob or a
TrainJob. Each is printed with its comments, which explain the fields that matter; the files go
to manifests/ (in the run's folder under the run service). Checks: manifests-valid always;
pods-ran and loss-fell only after a submitted job ran (None, not applicable, otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import yaml

from gpudojo import labkit
from gpudojo.runfolder import METRIC_LINE_PREFIX, RUN_DIR_ENV, RUN_ID_ENV, RunFolder, rank_line
from gpudojo.runs.engines.base import EngineContext, read_engine_state
from gpudojo.runs.engines.k8s_manifests import CODE_MOUNT, Names
from gpudojo.runs.engines.k8s_validate import KUBERNETES_VERSION, validate_manifests
from gpudojo.runs.engines.kubernetes import KubernetesEngine
from gpudojo.runs.manifest import script_args
from gpudojo.runs.models import KubernetesWhere, LabManifest

HERE = Path(__file__).resolve().parent
LAB03 = HERE.parent / "lab-03-ddp"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=2, help="pods in the job, one per node")
    p.add_argument("--gpus_per_node", type=int, default=4, help="nvidia.com/gpu per pod; 0: CPU pods on gloo")
    p.add_argument("--flavor", choices=["job", "pytorchjob", "trainjob"], default="job")
    p.add_argument("--submit", action=argparse.BooleanOptionalAction, default=False, help="create and follow the job")
    p.add_argument("--namespace", default="default")
    p.add_argument("--out", type=Path, default=None, help="where the manifests are written")
    args = p.parse_args(argv)
    if args.nodes < 1 or args.gpus_per_node < 0:
        p.error("--nodes must be at least 1 and --gpus_per_node at least 0")
    return args


def lab03_context(run_id: str, folder: Path) -> EngineContext:
    """lab-03 with its manifest's defaults, as the run form would start it."""
    m = LabManifest.model_validate(tomllib.loads((LAB03 / "lab.toml").read_text(encoding="utf-8")))
    defaults = {p.name: p.default for p in m.parameters}
    return EngineContext(
        run_id=run_id,
        folder=RunFolder(folder),
        entry=LAB03 / m.entry,
        args=script_args(m, defaults),
        launcher=m.launcher,
        nproc=1,
        dist_backend="gloo",
        title=m.title,
        lab_id=m.id,
        lab_folder=LAB03,
    )


def banner(text: str) -> None:
    print(f"\n{'=' * 8} {text} {'=' * max(4, 80 - len(text))}", flush=True)


def show(name: str, content: str) -> None:
    """A manifest with its comments; a ConfigMap's file contents folded to their sizes."""
    doc = next(d for d in yaml.safe_load_all(content) if d)
    if doc["kind"] == "ConfigMap":
        head = content.split("\ndata:")[0]
        files = ", ".join(f"{k} ({len(v):,} chars)" for k, v in doc["data"].items())
        print(f"{head}\ndata:  # folded here; the file has them whole\n  # {files}")
    else:
        print(content.rstrip())
    print(f"# ({name})", flush=True)


# --- the explained dry run, offline --------------------------------------------------------


def pod_names(flavor: str, job: str, nodes: int) -> list[str]:
    if flavor == "job":
        return [f"{job}-{i}-<random>  (hostname {job}-{i})" for i in range(nodes)]
    if flavor == "pytorchjob":
        return [f"{job}-master-0"] + [f"{job}-worker-{i}" for i in range(nodes - 1)]
    return [f"{job}-node-0-{i}-<random>  (hostname {job}-node-0-{i})" for i in range(nodes)]


def rendezvous_of(flavor: str, names: Names, namespace: str) -> str:
    return {
        "job": f"{names.job}-0.{names.service}.{namespace}.svc:29500 (static: --master-addr, --node-rank = index)",
        "pytorchjob": f"{names.job}-master-0:23456 (the operator's Service for the Master; PET_* variables)",
        "trainjob": f"{names.job}-node-0-0.{names.job}:29400 (the JobSet's headless Service; PET_* variables)",
    }[flavor]


def explain_offline(where: KubernetesWhere, names: Names, nproc: int, docs: list[dict[str, Any]]) -> None:
    """What an API server and a cluster would do with these objects, step by step."""
    world = where.nodes * nproc
    banner("Dry run, explained (no cluster configured: nothing was sent anywhere)")
    steps = [
        f"1. The API server checks each object against its schema (done above, offline, Kubernetes "
        f"v{KUBERNETES_VERSION}) and stores it. "
        + {
            "job": "ConfigMap, Service and Job are built-in kinds: any cluster takes them.",
            "pytorchjob": "A PyTorchJob needs the training operator's CRD: without it the answer is 404 "
            "'the server could not find the requested resource'.",
            "trainjob": "A TrainJob needs Kubeflow Trainer (its CRD and the torch-distributed "
            "ClusterTrainingRuntime): without them, 404 or a refusal by its webhook.",
        }[where.flavor],
        f"2. The controller creates {where.nodes} pod(s):\n     "
        + "\n     ".join(pod_names(where.flavor, names.job, where.nodes)),
        f"3. The scheduler places each on a node with {where.cpu} CPU(s), {where.memory_gi} GiB of memory"
        + (f" and {where.gpus_per_node} free nvidia.com/gpu" if where.gpus_per_node else "")
        + f" ({where.nodes * where.cpu} CPUs, {where.nodes * where.memory_gi} GiB"
        + (f", {where.nodes * where.gpus_per_node} GPUs" if where.gpus_per_node else "")
        + " in all). Until one fits, a pod stays Pending: kubectl describe pod says e.g. "
        "'0/3 nodes are available: 3 Insufficient nvidia.com/gpu'.",
        f"4. The kubelet pulls {where.image}, mounts the ConfigMap at {CODE_MOUNT} and a "
        f"{where.shm_gi} GiB memory-backed /dev/shm, and starts torchrun.",
        f"5. Rendezvous: every pod's torchrun meets at {rendezvous_of(where.flavor, names, where.namespace)}. "
        f"Node i runs global ranks i*{nproc}..i*{nproc}+{nproc - 1}: world size {world}, backend "
        f"{'nccl' if where.gpus_per_node else 'gloo'}.",
        "6. Each rank's lines reach the pod's log prefixed [default<rank>]:, metrics as gpudojo-metric lines; "
        "gpudojo's follower streams every pod's log back into the run view.",
        "7. Restarts: "
        + (
            f"up to {where.max_restarts} before the job fails."
            if where.max_restarts
            else "none: the first failed pod fails the job, and its reason "
            "(OOMKilled, Evicted, an exception) is the run's root cause."
        ),
    ]
    print("\n".join(steps), flush=True)
    print(f"({len(docs)} objects; nothing was created)", flush=True)


# --- a cluster: server-side dry run, submit --------------------------------------------------


def server_dry_run(docs: list[dict[str, Any]], namespace: str) -> bool:
    from gpudojo.worker.follow_k8s import KubeApi, api_error

    banner("Server-side dry run (the API server checks, stores nothing)")
    api, ok = KubeApi(namespace), True
    for doc in docs:
        try:
            api.create(doc, dry_run=True)
            print(f"  {doc['kind']} {doc['metadata']['name']}: accepted", flush=True)
        except Exception as err:
            ok = False
            print(f"  {doc['kind']} {doc['metadata']['name']}: refused: {api_error(err)}", flush=True)
    return ok


def submit(files: list[Path], job: dict[str, Any], run_id: str, namespace: str) -> tuple[bool, list[float]]:
    """Run the job with gpudojo's follower; (every pod succeeded, rank 0's losses)."""
    banner("Submitted: following the pods (their lines indented)")
    work = Path(tempfile.mkdtemp(prefix="lab04-"))
    argv = [sys.executable, "-m", "gpudojo.worker.follow_k8s", "--run-dir", str(work), "--run-id", run_id]
    argv += ["--namespace", namespace, "--job", f"{job['kind']}/{job['metadata']['name']}", *map(str, files)]
    env = {k: v for k, v in os.environ.items() if k != RUN_DIR_ENV}
    losses: list[float] = []
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        for line in proc.stdout or []:
            line = line.rstrip("\n")
            # Indented, so that the run service files them as this script's lines, not lab-03's ranks.
            print(f"  {line}", flush=True)
            ranked = rank_line(line)
            if ranked and ranked[0] == 0 and ranked[1].startswith(METRIC_LINE_PREFIX + " "):
                record = json.loads(ranked[1][len(METRIC_LINE_PREFIX) + 1 :])
                if isinstance(record.get("loss"), int | float):
                    losses.append(record["loss"])
    state = read_engine_state(RunFolder(work)) or {}
    nodes = state.get("nodes") or []
    ran = proc.returncode == 0 and bool(nodes) and all(n["state"] == "succeeded" for n in nodes)
    print(f"job {state.get('job_id')}: {state.get('job_state')}; exit {proc.returncode}", flush=True)
    if state.get("root_cause"):
        print(f"root cause: {state['root_cause'].get('exception')}", flush=True)
    return ran, losses


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_id = os.environ.get(RUN_ID_ENV) or time.strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()
    run_dir = os.environ.get(RUN_DIR_ENV)
    out = args.out or (Path(run_dir) / "manifests" if run_dir else Path.cwd() / "k8s-manifests")
    out.mkdir(parents=True, exist_ok=True)
    where = KubernetesWhere(
        engine="kubernetes",
        flavor=args.flavor,
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        namespace=args.namespace,
    )
    engine = KubernetesEngine()
    ctx = lab03_context(run_id, out)
    nproc = args.gpus_per_node or ctx.nproc
    print(
        f"lab-03 ({' '.join(ctx.args)}) as a {args.flavor} of {args.nodes} pod(s) x {nproc} process(es), "
        f"{args.gpus_per_node} GPU(s) per pod; manifests in {out}",
        flush=True,
    )

    files = engine.generate(ctx, where)
    for f in files:
        (out / f.name).write_text(f.content, encoding="utf-8")
        banner(f.title)
        if f.name.endswith(".yaml"):
            show(f.name, f.content)
        else:
            print(f.content.rstrip(), flush=True)
    yaml_files = [out / f.name for f in files if f.name.endswith(".yaml")]
    docs = [d for path in yaml_files for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]

    banner(f"Validation (Kubernetes v{KUBERNETES_VERSION} schemas and the CRDs, offline)")
    problems = validate_manifests(docs)
    for problem in problems:
        print(f"  PROBLEM {problem}", flush=True)
    kinds = ", ".join(d["kind"] for d in docs)
    labkit.check("manifests-valid", not problems, f"{len(docs)} objects ({kinds}): {len(problems)} problem(s)")
    # What a mistake looks like: the same job with a misspelt field.
    broken = json.loads(json.dumps(docs[-1]))
    container = next(iter_containers(broken))
    container["resource"] = container.pop("resources")
    print("A misspelt field is caught with its path, e.g. resources written resource:", flush=True)
    for problem in validate_manifests([broken]):
        print(f"  {problem}", flush=True)

    available, reason = engine.availability()
    if not available:
        explain_offline(where, Names.of(run_id), nproc, docs)
        why = f"not submitted: {reason}"
        labkit.check("pods-ran", None, why)
        labkit.check("loss-fell", None, why)
        return 0
    print(f"\nCluster: {reason}", flush=True)
    accepted = server_dry_run(docs, args.namespace)
    if not args.submit or problems or not accepted:
        why = "not submitted (submit is off)" if args.submit is False else "not submitted: the dry run was refused"
        labkit.check("pods-ran", None, why)
        labkit.check("loss-fell", None, why)
        return 0 if accepted else 1
    ran, losses = submit(yaml_files, docs[-1], run_id, args.namespace)
    labkit.check("pods-ran", ran, f"{args.nodes} pod(s): {'all succeeded' if ran else 'not all succeeded'}")
    if len(losses) >= 2:
        labkit.check("loss-fell", losses[-1] < losses[0], f"rank 0: {losses[0]:.3f} -> {losses[-1]:.3f}")
    else:
        labkit.check("loss-fell", None if not ran else False, f"{len(losses)} loss value(s) from rank 0")
    return 0 if ran else 1


def iter_containers(doc: Any):
    """Every container spec in a document (dicts with a name and an image or volumeMounts)."""
    if isinstance(doc, dict):
        if "image" in doc and "name" in doc and "resources" in doc:
            yield doc
        elif "resourcesPerNode" in doc:
            doc["resources"] = doc.pop("resourcesPerNode")  # a TrainJob's trainer stands for its container
            yield doc
        for value in doc.values():
            yield from iter_containers(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from iter_containers(value)


if __name__ == "__main__":
    sys.exit(main())
