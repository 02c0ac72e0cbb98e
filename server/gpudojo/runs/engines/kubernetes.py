"""Kubernetes: a run as a Kubeflow TrainJob, a PyTorchJob or a plain indexed Job.

generate() writes the manifests (k8s_manifests.py, each field that matters commented) and a note
on submitting them by hand; command() is the follower, ``python -m gpudojo.worker.follow_k8s``,
which creates the objects with the kubernetes client, streams the pods' logs back as ranks,
keeps engine.json and deletes the job when the run is cancelled. validate_manifests() checks
manifests offline against the vendored schemas (k8s_validate.py).

Nothing here imports the kubernetes client at import time: the server only looks for it and for a
kubeconfig (cleanup, after a crash, is the one call it makes).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from ..models import KubernetesWhere, Run
from .base import EngineContext, GeneratedFile
from .k8s_manifests import (
    KUBERNETES_NOTE,
    RUN_LABEL,
    TRAINER_ACCEPTS,
    TRAINER_RELEASE,
    TRAINING_OPERATOR_RELEASE,
    Manifest,
    Names,
    Shape,
    code_files,
    manifests,
)
from .k8s_validate import KUBERNETES_VERSION, validate_manifests

__all__ = ["KubernetesEngine", "validate_manifests"]

YAML_MEDIA = "application/yaml"
IN_CLUSTER_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
FILE_NAMES = {"ConfigMap": "01-configmap.yaml", "Service": "02-service.yaml"}
JOB_FILE = "03-{flavor}.yaml"


class KubernetesEngine:
    name = "kubernetes"
    title = "Kubernetes"

    def availability(self) -> tuple[bool, str]:
        """The kubernetes client importable and a kubeconfig (or a pod's service account) found.
        Reads files only: no call to a cluster."""
        if importlib.util.find_spec("kubernetes") is None:
            return False, "the kubernetes Python client is not installed (pip install kubernetes)"
        config = kubeconfig_found()
        if config is None:
            return False, (
                "no kubeconfig: set KUBECONFIG or write ~/.kube/config (manifests can still be generated, "
                "e.g. gpudojo lab manifest LAB --engine kubernetes)"
            )
        return True, config

    def cleanup(self, run: Run) -> str:
        """Delete the job (its pods go with it), the Service and the ConfigMap a run made, when
        the follower died with the server (recovery at the next start)."""
        from ...worker.follow_k8s import KubeApi

        names = Names.of(run.id)
        kind = {"trainjob": "TrainJob", "pytorchjob": "PyTorchJob"}.get(str(run.where.get("flavor")), "Job")
        api = KubeApi(str(run.where.get("namespace", "default")))
        done = []
        for what, name in ((kind, names.job), ("Service", names.service), ("ConfigMap", names.configmap)):
            try:
                api.delete(what, name)
                done.append(f"deleted {what} {name}")
            except Exception as err:  # 404: never made, or gone already
                if getattr(err, "status", None) != 404:
                    done.append(f"could not delete {what} {name}: {err}")
        return "; ".join(done) or "nothing left to delete"

    def generate(self, ctx: EngineContext, where: KubernetesWhere) -> list[GeneratedFile]:
        objects = objects_for(ctx, where)
        files = [
            GeneratedFile(
                name=file_name(m.kind, where.flavor),
                title=f"{m.kind} {m.name}",
                content=header(m, where) + m.yaml(),
                media_type=YAML_MEDIA,
            )
            for m in objects
        ]
        files.append(GeneratedFile("kubectl.txt", "Submit by hand with kubectl", by_hand(objects, where, ctx.run_id)))
        return files

    def command(
        self, ctx: EngineContext, where: KubernetesWhere, artifacts_dir: Path
    ) -> tuple[list[str], dict[str, str]]:
        objects = objects_for(ctx, where)
        job = objects[-1]
        argv = [
            sys.executable,
            "-m",
            "gpudojo.worker.follow_k8s",
            "--run-dir",
            str(ctx.folder.path),
            "--run-id",
            ctx.run_id,
            "--namespace",
            where.namespace,
            "--job",
            f"{job.kind}/{job.name}",
            "--nproc",
            str(nproc_per_node(ctx, where)),
            *[str(artifacts_dir / file_name(m.kind, where.flavor)) for m in objects],
        ]
        return argv, dict(ctx.env)


def nproc_per_node(ctx: EngineContext, where: KubernetesWhere) -> int:
    """One process per GPU when the pods have GPUs; the run's nproc on CPUs."""
    return where.gpus_per_node or ctx.nproc


def shape_of(ctx: EngineContext, where: KubernetesWhere) -> Shape:
    return Shape(
        run_id=ctx.run_id,
        namespace=where.namespace,
        nodes=where.nodes,
        nproc=nproc_per_node(ctx, where),
        gpus=where.gpus_per_node,
        cpu=where.cpu,
        memory_gi=where.memory_gi,
        shm_gi=where.shm_gi,
        image=where.image,
        max_restarts=where.max_restarts,
        backend="nccl" if where.gpus_per_node else "gloo",
        entry=Path(ctx.entry).name,
        args=list(ctx.args),
    )


def objects_for(ctx: EngineContext, where: KubernetesWhere) -> list[Manifest]:
    return manifests(where.flavor, shape_of(ctx, where), code_files(Path(ctx.entry), ctx.lab_folder))


def file_name(kind: str, flavor: str) -> str:
    return FILE_NAMES.get(kind) or JOB_FILE.format(flavor=flavor)


def header(m: Manifest, where: KubernetesWhere) -> str:
    needs = {
        "trainjob": (
            f"Needs Kubeflow Trainer (the TrainJob CRD and its torch-distributed runtime), written for "
            f"{TRAINER_RELEASE}.\nAccepted by Kubeflow Trainer {TRAINER_ACCEPTS}."
        ),
        "pytorchjob": (
            f"Needs the legacy Kubeflow training-operator {TRAINING_OPERATOR_RELEASE} (the PyTorchJob CRD,\n"
            "kubeflow.org/v1), which Kubeflow Trainer v2 replaces: for clusters that still run it."
        ),
        "job": "Needs nothing beyond Kubernetes itself.",
    }[where.flavor]
    lines = [f"{m.kind} {m.name}, generated by gpudojo.", KUBERNETES_NOTE.format(version=KUBERNETES_VERSION)]
    if m.kind not in FILE_NAMES:
        lines += needs.split("\n")
    return "".join(f"# {line}\n" for line in lines)


def by_hand(objects: list[Manifest], where: KubernetesWhere, run_id: str) -> str:
    files = " ".join(f"-f {file_name(m.kind, where.flavor)}" for m in objects)
    job = objects[-1]
    resource = {"TrainJob": "trainjob", "PyTorchJob": "pytorchjob", "Job": "job"}[job.kind]
    return (
        f"# In this folder, with kubectl pointed at the cluster (namespace {where.namespace}):\n"
        f"kubectl apply --dry-run=server {files}   # the API server checks them, creates nothing\n"
        f"kubectl apply {files}\n"
        f"kubectl get pods -n {where.namespace} -l {RUN_LABEL}={run_id} -w\n"
        f"kubectl logs -n {where.namespace} -l {RUN_LABEL}={run_id} -f --prefix --max-log-requests={where.nodes + 1}\n"
        f"kubectl delete -n {where.namespace} {resource}/{job.name} configmap/{Names.of(run_id).configmap}"
        + (f" service/{Names.of(run_id).service}" if where.flavor == "job" else "")
        + "\n"
    )


def load_documents(paths: list[Path]) -> list[dict[str, Any]]:
    """Every YAML document of these files, in order (empty documents skipped)."""
    docs: list[dict[str, Any]] = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")) if d)
    return docs


def kubeconfig_found() -> str | None:
    """What would configure the client, in the client's own order: $KUBECONFIG's files,
    ~/.kube/config, then a pod's service account; None when nothing is there."""
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p.strip()]
    for path in listed or [str(Path.home() / ".kube" / "config")]:
        p = Path(path).expanduser()
        if p.is_file():
            context = current_context(p)
            return f"kubeconfig {p}" + (f", context {context}" if context else "")
    if os.environ.get("KUBERNETES_SERVICE_HOST") and IN_CLUSTER_TOKEN.is_file():
        return "in-cluster service account"
    return None


def current_context(path: Path) -> str | None:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    value = doc.get("current-context") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value else None
