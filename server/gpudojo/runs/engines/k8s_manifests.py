"""The Kubernetes objects of one run, in three shapes, with the comments a reader needs.

- ``trainjob``: a Kubeflow Trainer v2 TrainJob (trainer.kubeflow.org/v1alpha1, written for release
  v2.3.0, accepted from v2.2.0 on) that uses the ``torch-distributed`` ClusterTrainingRuntime: the
  runtime's JobSet starts one pod per node and hands torchrun its rendezvous through PET_* variables;
  the volumes and the run label go in through ``runtimePatches`` (v2.2.0 replaced
  ``podTemplateOverrides`` with it).
- ``pytorchjob``: the legacy training-operator's v1 PyTorchJob (kubeflow.org/v1, release v1.9, the
  last before the operator became Kubeflow Trainer v2): one Master
  and N-1 Worker pods; the operator sets the same PET_* variables; elasticPolicy when restarts
  are allowed.
- ``job``: a plain indexed Job and a headless Service, for clusters without an operator: pod i
  runs torchrun with --node-rank i and finds pod 0 by its DNS name.

Every shape mounts the same ConfigMap: the lab's code (its .py files, or the learner's script)
and gpudojo's labkit, which the scripts import and no container image has. Every pod prints
torchrun's worker lines with the global rank prefix and labkit's metric lines on stdout (no
GPUDOJO_RUN_DIR), so that following the pods' logs gives the run service what a local torchrun
gives it. Data in, data out: nothing here talks to a cluster.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...runfolder import BACKEND_ENV, RUN_ID_ENV
from .base import GLOBAL_RANK_PREFIX, RANK_PREFIX_TEMPLATE_ENV
from .k8s_yaml import Path as FieldPath
from .k8s_yaml import dump

TRAINER_RELEASE = "v2.3.0"  # the release the TrainJob is written for and checked against
# Which Trainer releases take the TrainJob as written: runtimePatches exist from v2.2.0 on; v2.1.x and
# older have podTemplateOverrides instead (and with strict validation refuse runtimePatches).
TRAINER_ACCEPTS = "v2.2.0 and later (written for v2.3.0); not v2.1.x or older, which have no runtimePatches"
TRAINER_PATCH_MANAGER = "gpudojo.dev/run"  # who owns the runtime patch (RuntimePatch.manager)
TRAINING_OPERATOR_RELEASE = "v1.9"
TORCH_RUNTIME = "torch-distributed"
RUN_LABEL = "gpudojo.run"
CODE_MOUNT = "/opt/gpudojo/code"
CODE_VOLUME, SHM_VOLUME = "code", "dshm"
JOB_RDZV_PORT = 29500  # torchrun's default master port; the plain Job's pod 0 listens on it
OPERATOR_PORT = 23456  # the training operator's default (container port "pytorchjob-port")
GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's resource name
KUBERNETES_NOTE = "Checked offline against the Kubernetes v{version} API schemas; kubectl.txt says how to apply it."
PACKAGE = Path(__file__).resolve().parents[2]  # server/gpudojo


def labkit_files() -> tuple[str, ...]:
    """What a pod needs of gpudojo to run a lab script: labkit and every gpudojo module it imports,
    followed through relative imports (paths relative to the package), so a module labkit gains
    is shipped without a list to keep."""
    # gpudojo/__init__.py is shipped but not followed: its imports of the server (the Jupyter
    # extension's hooks) run only when Jupyter loads it, never in a lab script.
    wanted, seen = ["labkit/__init__.py"], {"__init__.py"}
    while wanted:
        rel = wanted.pop()
        if rel in seen:
            continue
        seen.add(rel)
        path = PACKAGE / rel
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            if node.module:
                base = base.joinpath(*node.module.split("."))
            # "from .memory import x" names a module; "from . import runfolder" may name one.
            targets = [base] if node.module else [base / alias.name for alias in node.names]
            for target in targets:
                for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                    if candidate.is_file():
                        wanted.append(candidate.relative_to(PACKAGE).as_posix())
    return tuple(sorted(seen))


LABKIT_FILES = labkit_files()


@dataclass
class Shape:
    """What the pods look like: the run's choices and the engine's options, resolved."""

    run_id: str
    namespace: str
    nodes: int
    nproc: int  # processes per node: one per GPU, or the run's nproc on CPUs
    gpus: int  # per node
    cpu: int
    memory_gi: int
    shm_gi: int
    image: str
    max_restarts: int
    backend: str
    entry: str  # the script's file name inside the code folder
    args: list[str] = field(default_factory=list)


@dataclass
class Manifest:
    """One object and the comments on its fields."""

    doc: dict[str, Any]
    comments: dict[FieldPath, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.doc["kind"]

    @property
    def name(self) -> str:
        return self.doc["metadata"]["name"]

    def yaml(self) -> str:
        return dump(self.doc, self.comments)


@dataclass(frozen=True)
class Names:
    """Every object's name, derived from the run id (RFC 1035 labels: a letter first)."""

    job: str
    configmap: str
    service: str

    @classmethod
    def of(cls, run_id: str) -> Names:
        tail = re.sub(r"[^a-z0-9-]+", "-", run_id.lower()).strip("-")
        # 40 characters leave room for what the controllers append to pod names
        # ("-node-0-12-abcde", "-worker-63") within the 63 of a hostname.
        base = ("gpudojo-" + tail)[:40].rstrip("-")
        return cls(job=base, configmap=f"{base}-code", service=base)


def code_files(entry: Path, lab_folder: Path | None) -> dict[str, str]:
    """The files the pods need, by their path under the code folder: the lab's .py files (or the
    learner's one script) and gpudojo's labkit."""
    sources = sorted(lab_folder.glob("*.py")) if lab_folder is not None else [entry]
    files = {p.name: p.read_text(encoding="utf-8") for p in sources if p.is_file()}
    for rel in LABKIT_FILES:
        files[f"gpudojo/{rel}"] = (PACKAGE / rel).read_text(encoding="utf-8")
    return files


def configmap_key(path: str) -> str:
    """A ConfigMap key for a file path (keys cannot hold "/"): gpudojo/labkit/memory.py ->
    gpudojo.labkit.memory.py; the volume's items put it back at its path. A learner's script
    may have any name ("my script.py"); keys hold only letters, digits, "-", "_" and ".", so
    other characters become "_" and a hash of the name keeps two such names apart."""
    key = path.replace("/", ".")
    safe = re.sub(r"[^-._a-zA-Z0-9]", "_", key)
    if safe != key:
        safe = f"{safe[:200]}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"
    return safe


def labels(shape: Shape) -> dict[str, str]:
    return {RUN_LABEL: shape.run_id, "app.kubernetes.io/managed-by": "gpudojo"}


def metadata(name: str, shape: Shape) -> dict[str, Any]:
    return {"name": name, "namespace": shape.namespace, "labels": labels(shape)}


# --- pieces every pod has ---------------------------------------------------------------


def env(shape: Shape) -> list[dict[str, str]]:
    return [
        {"name": BACKEND_ENV, "value": shape.backend},
        {"name": RANK_PREFIX_TEMPLATE_ENV, "value": GLOBAL_RANK_PREFIX},
        {"name": RUN_ID_ENV, "value": shape.run_id},
        {"name": "PYTHONPATH", "value": CODE_MOUNT},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
    ]


ENV_COMMENT = (
    f"{BACKEND_ENV}: the torch.distributed backend labkit.backend() returns: nccl with GPUs, gloo without.\n"
    f"{RANK_PREFIX_TEMPLATE_ENV}: torchrun starts each worker line with [default<global rank>]:, so\n"
    "the logs of several pods never mix up their ranks. GPUDOJO_RUN_DIR is left unset on purpose:\n"
    "labkit then prints its metrics to stdout (gpudojo-metric {...}), and they travel with the log.\n"
    "PYTHONPATH: the code folder, where `from gpudojo import labkit` finds the copy shipped in the ConfigMap."
)


def resources(shape: Shape) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": str(shape.cpu), "memory": f"{shape.memory_gi}Gi"}
    limits: dict[str, Any] = {"memory": f"{shape.memory_gi}Gi"}
    if shape.gpus:
        requests[GPU_RESOURCE] = str(shape.gpus)
        limits[GPU_RESOURCE] = str(shape.gpus)
    return {"requests": requests, "limits": limits}


def resources_comment(shape: Shape) -> str:
    gpu = (
        f"{GPU_RESOURCE}: {shape.gpus} whole GPUs per pod, from the NVIDIA device plugin. GPUs cannot be\n"
        "shared or overcommitted: the request must equal the limit, and the scheduler places the pod\n"
        f"only on a node with {shape.gpus} free; torchrun starts one process per GPU (nproc {shape.nproc})."
        if shape.gpus
        else "No GPUs asked for: the ranks run on CPUs and talk through gloo. Add nvidia.com/gpu to run on GPUs."
    )
    return (
        "resources: what the scheduler reserves on a node for this pod.\n"
        "requests.cpu / requests.memory: the pod is placed only where this much is free.\n"
        "limits.memory = requests.memory: a pod that goes over is OOMKilled at once instead of\n"
        "starving its neighbours; no CPU limit, so the data loader's workers are not throttled.\n" + gpu
    )


def volumes(names: Names, files: dict[str, str], shape: Shape) -> list[dict[str, Any]]:
    code = {
        "name": CODE_VOLUME,
        "configMap": {
            "name": names.configmap,
            "items": [{"key": configmap_key(path), "path": path} for path in files],
        },
    }
    found = [code]
    if shape.shm_gi:
        found.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": f"{shape.shm_gi}Gi"}})
    return found


def volume_mounts(shape: Shape) -> list[dict[str, Any]]:
    mounts = [{"name": CODE_VOLUME, "mountPath": CODE_MOUNT, "readOnly": True}]
    if shape.shm_gi:
        mounts.append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    return mounts


def volumes_comment(shape: Shape) -> str:
    shm = (
        f"{SHM_VOLUME}: a memory-backed emptyDir at /dev/shm, {shape.shm_gi} GiB. DataLoader workers hand\n"
        "batches to the training process through shared memory, and a container's own /dev/shm is\n"
        "64 MiB: with several workers that ends in 'bus error' or 'No space left on device'. The\n"
        "size counts against the pod's memory limit."
        if shape.shm_gi
        else "No /dev/shm volume (shm_gi 0): the container keeps its 64 MiB, enough only without DataLoader workers."
    )
    return (
        f"{CODE_VOLUME}: the ConfigMap's files at {CODE_MOUNT} (read-only); items put each key back at its\n"
        "path, so gpudojo/labkit/ is a package again.\n" + shm
    )


def command(shape: Shape, rendezvous: list[str]) -> list[str]:
    """torchrun with the rendezvous options given, tee'd to stdout with rank prefixes, then the
    script and its arguments."""
    restarts = [f"--max-restarts={shape.max_restarts}"] if shape.max_restarts else []
    return ["torchrun", *rendezvous, *restarts, "--tee=3", f"{CODE_MOUNT}/{shape.entry}", *shape.args]


# --- the objects ------------------------------------------------------------------------


def configmap(names: Names, files: dict[str, str], shape: Shape) -> Manifest:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(names.configmap, shape),
        "data": {configmap_key(path): text for path, text in files.items()},
    }
    comments = {
        ("data",): (
            "The code every pod runs, as files: the lab's scripts and gpudojo's labkit (which they import).\n"
            "A ConfigMap holds at most 1 MiB; for more, build an image with the code and set image instead."
        ),
    }
    return Manifest(doc, comments)


def headless_service(names: Names, shape: Shape) -> Manifest:
    doc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(names.service, shape),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {RUN_LABEL: shape.run_id},
            "ports": [{"name": "rendezvous", "port": JOB_RDZV_PORT, "targetPort": JOB_RDZV_PORT}],
        },
    }
    comments = {
        ("spec", "clusterIP"): (
            "None makes the Service headless: no virtual IP and no load balancing, only DNS. With the\n"
            "Job's pods naming it as their subdomain, each pod gets its own record,\n"
            f"<job>-<index>.{names.service}.{shape.namespace}.svc, so pod 0 is reachable by a name known\n"
            "before it exists: torchrun's rendezvous address on every node."
        ),
        ("spec", "publishNotReadyAddresses"): (
            "Publish the pods' DNS records before they are Ready: the rendezvous happens at start-up,\n"
            "long before anything would call them ready."
        ),
    }
    return Manifest(doc, comments)


def indexed_job(names: Names, files: dict[str, str], shape: Shape) -> Manifest:
    master = f"{names.job}-0.{names.service}"
    rendezvous = [
        f"--nnodes={shape.nodes}",
        f"--nproc-per-node={shape.nproc}",
        "--node-rank=$(JOB_COMPLETION_INDEX)",
        f"--master-addr={master}",
        f"--master-port={JOB_RDZV_PORT}",
    ]
    container = {
        "name": "trainer",
        "image": shape.image,
        "command": command(shape, rendezvous)[:1],
        "args": command(shape, rendezvous)[1:],
        "ports": [{"name": "rendezvous", "containerPort": JOB_RDZV_PORT}],
        "env": env(shape),
        "resources": resources(shape),
        "volumeMounts": volume_mounts(shape),
    }
    doc = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(names.job, shape),
        "spec": {
            "completionMode": "Indexed",
            "completions": shape.nodes,
            "parallelism": shape.nodes,
            "backoffLimit": shape.max_restarts,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": labels(shape)},
                "spec": {
                    "subdomain": names.service,
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": volumes(names, files, shape),
                },
            },
        },
    }
    pod = ("spec", "template", "spec")
    comments = {
        ("spec", "completionMode"): (
            "Indexed: each pod gets an index 0..completions-1, in JOB_COMPLETION_INDEX and in its\n"
            "hostname <job>-<index>. The index is the node rank; pod 0 hosts the rendezvous."
        ),
        ("spec", "parallelism"): f"All {shape.nodes} pods at once: torchrun waits until every node has joined.",
        ("spec", "backoffLimit"): (
            "Restart policy, job level: a failed pod is replaced (same index) at most this many times,\n"
            "then the Job fails. 0: the first failure fails the job, which is what a training run\n"
            "without checkpoints wants: the other ranks cannot go on without it anyway."
        ),
        ("spec", "ttlSecondsAfterFinished"): "The finished Job and its pods (and logs) are deleted a day later.",
        (*pod, "subdomain"): "With the headless Service of that name, pod i answers at <job>-i.<service>.",
        (*pod, "restartPolicy"): (
            "Never: a failed container is not restarted in place; the Job's backoffLimit decides. (A torchrun\n"
            "worker that dies takes its node's agent down, and a fresh pod rejoins more cleanly.)"
        ),
        (*pod, "containers", 0, "args"): (
            f"Rendezvous: {shape.nodes} node(s) x {shape.nproc} process(es). Every pod points at pod 0\n"
            f"(--master-addr, port {JOB_RDZV_PORT}), where torchrun's TCP store listens; --node-rank comes from\n"
            "the pod's index (Kubernetes expands $(JOB_COMPLETION_INDEX) from the container's environment).\n"
            "--tee=3 prints the workers' stdout and stderr with the rank prefix set below."
        ),
        (*pod, "containers", 0, "env"): ENV_COMMENT,
        (*pod, "containers", 0, "resources"): resources_comment(shape),
        (*pod, "volumes"): volumes_comment(shape),
    }
    return Manifest(doc, comments)


def pytorchjob(names: Names, files: dict[str, str], shape: Shape) -> Manifest:
    elastic = shape.max_restarts > 0

    def replica(count: int) -> dict[str, Any]:
        return {
            "replicas": count,
            "restartPolicy": "OnFailure" if elastic else "Never",
            "template": {
                "metadata": {"labels": labels(shape)},
                "spec": {
                    "containers": [
                        {
                            "name": "pytorch",
                            "image": shape.image,
                            "command": command(shape, []),
                            "ports": [{"name": "pytorchjob-port", "containerPort": OPERATOR_PORT}],
                            "env": env(shape),
                            "resources": resources(shape),
                            "volumeMounts": volume_mounts(shape),
                        }
                    ],
                    "volumes": volumes(names, files, shape),
                },
            },
        }

    replicas = {"Master": replica(1)}
    if shape.nodes > 1:
        replicas["Worker"] = replica(shape.nodes - 1)
    spec: dict[str, Any] = {
        "nprocPerNode": str(shape.nproc),
        "runPolicy": {"backoffLimit": shape.max_restarts, "cleanPodPolicy": "None"},
        "pytorchReplicaSpecs": replicas,
    }
    if elastic:
        spec["elasticPolicy"] = {
            "rdzvBackend": "c10d",
            "rdzvHost": f"{names.job}-master-0",
            "rdzvPort": OPERATOR_PORT,
            "minReplicas": shape.nodes,
            "maxReplicas": shape.nodes,
            "maxRestarts": shape.max_restarts,
        }
    doc = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": metadata(names.job, shape), "spec": spec}
    master_pod = ("spec", "pytorchReplicaSpecs", "Master", "template", "spec")
    comments: dict[FieldPath, str] = {
        (
            "spec",
            "nprocPerNode",
        ): f"torchrun --nproc-per-node: {shape.nproc} process(es) in every pod (PET_NPROC_PER_NODE).",
        (
            "spec",
            "runPolicy",
            "backoffLimit",
        ): "Restart policy, job level: failed pods the operator replaces before the job fails.",
        ("spec", "runPolicy", "cleanPodPolicy"): "None: finished pods stay, so their logs can still be read.",
        ("spec", "pytorchReplicaSpecs"): (
            "Rendezvous: the operator gives each replica a headless Service of its own and sets torchrun's\n"
            f"PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR ({names.job}-master-0) and PET_MASTER_PORT\n"
            f"({OPERATOR_PORT}): the Master is node 0 and hosts the store; Workers are nodes 1..{shape.nodes - 1}.\n"
            "The container must be called pytorch: that is the one the operator configures."
        ),
        ("spec", "pytorchReplicaSpecs", "Master", "restartPolicy"): (
            "Restart policy, pod level: OnFailure restarts a failed container in place (elastic runs),\n"
            "Never leaves it to runPolicy.backoffLimit."
        ),
        (*master_pod, "containers", 0, "command"): (
            "torchrun reads its rendezvous from the PET_* variables the operator sets; --tee=3 prints the\n"
            "workers' output with the global rank prefix."
        ),
        (*master_pod, "containers", 0, "env"): ENV_COMMENT,
        (*master_pod, "containers", 0, "resources"): resources_comment(shape),
        (*master_pod, "volumes"): volumes_comment(shape),
    }
    if elastic:
        comments[("spec", "elasticPolicy")] = (
            "Elastic torchrun (c10d rendezvous on the Master's service): after a worker fails, the agents\n"
            f"re-rendezvous and restart every worker, at most maxRestarts ({shape.max_restarts}) times\n"
            "(PET_MAX_RESTARTS). min = max replicas: the job never runs smaller than asked."
        )
    return Manifest(doc, comments)


def trainjob(names: Names, files: dict[str, str], shape: Shape) -> Manifest:
    # torchrun is told --nproc-per-node itself: since v2.2.0 the torch runtime derives
    # PET_NPROC_PER_NODE from resourcesPerNode (GPUs, else CPU cores), which is not the run's nproc on
    # CPUs, and trainer.numProcPerNode is kept for MPI's slots. An option given on the command line
    # wins over the PET_ variable torchrun would otherwise read.
    trainer = {
        "image": shape.image,
        "command": command(shape, [f"--nproc-per-node={shape.nproc}"]),
        "env": env(shape),
        "numNodes": shape.nodes,
        "resourcesPerNode": resources(shape),
    }
    pod_patch = {
        "metadata": {"labels": labels(shape)},
        "spec": {
            "volumes": volumes(names, files, shape),
            "containers": [{"name": "node", "volumeMounts": volume_mounts(shape)}],
        },
    }
    patch = {
        "manager": TRAINER_PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod_patch}}}]}}
        },
    }
    doc = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": metadata(names.job, shape),
        "spec": {
            "runtimeRef": {"name": TORCH_RUNTIME, "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
            "trainer": trainer,
            "runtimePatches": [patch],
        },
    }
    comments: dict[FieldPath, str] = {
        ("spec", "runtimeRef"): (
            f"The {TORCH_RUNTIME} ClusterTrainingRuntime that Kubeflow Trainer installs (this TrainJob is written\n"
            f"for {TRAINER_RELEASE}; Trainer {TRAINER_ACCEPTS}): a JobSet with one replicated job, node,\n"
            "whose pods run torchrun. The runtime owns the restart policy (its JobSet failurePolicy); a\n"
            "TrainJob cannot change it."
        ),
        ("spec", "trainer", "command"): (
            "Rendezvous: the runtime's torch plugin sets PET_NNODES, PET_NODE_RANK (the pod's completion\n"
            f"index), PET_MASTER_ADDR ({names.job}-node-0-0.{names.job}, pod 0 through the JobSet's headless\n"
            "Service) and PET_MASTER_PORT (29400); torchrun takes them as its options.\n"
            f"--nproc-per-node={shape.nproc} is given here: since Trainer v2.2 the runtime derives\n"
            "PET_NPROC_PER_NODE from resourcesPerNode (GPUs, else CPU cores) and no longer takes\n"
            "numProcPerNode for torch; an option on the command line wins over the variable.\n"
            + (
                f"--max-restarts={shape.max_restarts}: torchrun restarts the workers after a failure.\n"
                if shape.max_restarts
                else ""
            )
            + "--tee=3 prints the workers' output with the global rank prefix."
        ),
        ("spec", "trainer", "env"): ENV_COMMENT + "\n(PET_* must not be set here: the torch runtime owns them.)",
        ("spec", "trainer", "numNodes"): f"{shape.nodes} pod(s), one per node of the job.",
        ("spec", "trainer", "resourcesPerNode"): resources_comment(shape),
        ("spec", "runtimePatches"): (
            "What the TrainJob adds to the runtime's JobSet template (runtimePatches, Trainer v2.2.0 and\n"
            "later; it replaced podTemplateOverrides): one patch, owned by manager gpudojo.dev/run, for the\n"
            "pods of the node job: the run label (so the pods can be found), and the volumes. v2.3.0 merges\n"
            "it strategically: volumes and containers by name.\n" + volumes_comment(shape)
        ),
    }
    return Manifest(doc, comments)


FLAVORS = {"trainjob": trainjob, "pytorchjob": pytorchjob, "job": indexed_job}


def manifests(flavor: str, shape: Shape, files: dict[str, str]) -> list[Manifest]:
    """The objects to create, in order: the ConfigMap, the Service (plain Job only), the job."""
    names = Names.of(shape.run_id)
    objects = [configmap(names, files, shape)]
    if flavor == "job":
        objects.append(headless_service(names, shape))
    objects.append(FLAVORS[flavor](names, files, shape))
    return objects
