"""A STAND-IN for a Kubernetes API server, for tests. It is not Kubernetes.

No cluster can run on the test machines, so gpudojo's Kubernetes follower is tested against this:
a threaded HTTP server on 127.0.0.1 that answers the calls the follower (and lab-04's dry run)
makes, with bodies shaped as the Kubernetes API reference documents them (kind, apiVersion,
metadata, spec, status; a Status object with reason and code for every error; watch events as
JSON lines; logs as chunked text):

- create / get / delete ConfigMaps, Services, Jobs (batch/v1), TrainJobs
  (trainer.kubeflow.org/v1alpha1) and PyTorchJobs (kubeflow.org/v1); ``?dryRun=All`` checks and
  stores nothing; objects are checked with gpudojo's offline validator (422 Invalid);
- list and watch pods by label selector; read a pod's log, followed or not.

What stands in for what: a job's controller (the Job controller, the training operator, Kubeflow
Trainer's torch runtime with its JobSet) is emulated: the stand-in creates the pods those would
create, with their names, labels, the completion index and the PET_* variables they set. A
kubelet is emulated too, for real: each pod's container command runs as a local subprocess
(this venv's python in place of the image's; ``torchrun`` is ``python -m torch.distributed.run``),
its environment taken from the pod spec, the ConfigMap's files written to a temporary folder in
place of the volume mount (paths in the command and environment rewritten to it), the pod
network being loopback: every pod and service DNS name of the job resolves to 127.0.0.1 and the
job's rendezvous port is moved to a free local port. Pod phases and container states follow the
processes. A pod that asks for nvidia.com/gpu stays Pending as Unschedulable (this machine has no
GPU); an image listed in ``bad_images`` never pulls (ImagePullBackOff); ``kill_pod`` ends a pod's
process as the kernel's OOM killer would. Not emulated: scheduling, resource limits, /dev/shm
sizes, authentication, field selectors, patch and update.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from gpudojo.runs.engines.k8s_validate import validate_manifests

RESOURCES = {  # (group, version, plural) -> kind
    ("", "v1", "configmaps"): "ConfigMap",
    ("", "v1", "services"): "Service",
    ("", "v1", "pods"): "Pod",
    ("batch", "v1", "jobs"): "Job",
    ("trainer.kubeflow.org", "v1alpha1", "trainjobs"): "TrainJob",
    ("kubeflow.org", "v1", "pytorchjobs"): "PyTorchJob",
}
JOB_KINDS = {"Job", "TrainJob", "PyTorchJob"}
CORE_PATH = re.compile(
    r"^/api/(?P<version>v1)/namespaces/(?P<ns>[^/]+)/(?P<plural>[a-z]+)(?:/(?P<name>[^/]+)(?P<sub>/log)?)?$"
)
GROUP_PATH = re.compile(
    r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<plural>[a-z]+)(?:/(?P<name>[^/]+))?$"
)
TRAINER_PORT, OPERATOR_PORT = 29400, 23456


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(code: int, reason: str, message: str, name: str = "", kind: str = "", causes=None) -> dict[str, Any]:
    """An API error as the API server writes it: a Status object."""
    details: dict[str, Any] = {"name": name, "kind": kind}
    if causes:
        details["causes"] = causes
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if code >= 400 else "Success",
        "message": message,
        "reason": reason,
        "details": details,
        "code": code,
    }


@dataclass
class PodRun:
    """One emulated pod: its API object, and the process standing in for its container."""

    obj: dict[str, Any]
    job_key: tuple[str, str, str]
    index: int
    log: Path
    folder: Path
    proc: subprocess.Popen | None = None
    killed_reason: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class JobRun:
    kind: str
    obj: dict[str, Any]
    port: int  # the free local port standing in for the job's rendezvous port
    failed: int = 0
    finished: bool = False


class StandIn:
    """Start with ``with StandIn(tmp) as api:``; ``api.kubeconfig`` is a file pointing at it."""

    def __init__(self, workdir: Path, *, python: str = sys.executable, bad_images: set[str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.python = python
        self.bad_images = bad_images or set()
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (kind, ns, name)
        self.pods: dict[tuple[str, str], PodRun] = {}
        self.jobs: dict[tuple[str, str, str], JobRun] = {}
        self.version = itertools.count(1)
        self.events: list[tuple[int, str, dict[str, Any]]] = []  # pod events: (rv, type, pod)
        self.requests: list[tuple[str, str]] = []  # (method, path): what the clients asked
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.kubeconfig = self.workdir / "kubeconfig"

    def __enter__(self) -> StandIn:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: standin\n  cluster:\n    server: {self.url}\n"
            "users:\n- name: standin\n  user:\n    token: standin-token\n"
            "contexts:\n- name: standin\n  context:\n    cluster: standin\n    user: standin\n    namespace: default\n"
            "current-context: standin\n",
            encoding="utf-8",
        )
        threading.Thread(target=self.server.serve_forever, name="k8s-standin", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self.lock:
            runs = list(self.pods.values())
        for run in runs:
            self._stop_process(run)
        self.server.shutdown()
        self.server.server_close()

    # --- what tests look at and do --------------------------------------------------------

    def get(self, kind: str, name: str, ns: str = "default") -> dict[str, Any] | None:
        with self.lock:
            return self.objects.get((kind, ns, name))

    def pod_names(self, ns: str = "default") -> list[str]:
        with self.lock:
            return sorted(n for (pns, n) in self.pods if pns == ns)

    def live_processes(self) -> list[int]:
        with self.lock:
            return [r.proc.pid for r in self.pods.values() if r.proc and r.proc.poll() is None]

    def wait_running(self, count: int, timeout: float = 60.0) -> list[str]:
        """Names of the first ``count`` pods whose process runs (their container started)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                running = [n for (_, n), r in self.pods.items() if r.obj["status"]["phase"] == "Running"]
            if len(running) >= count:
                return sorted(running)
            time.sleep(0.1)
        raise TimeoutError(f"fewer than {count} pods running after {timeout} s")

    def kill_pod(self, name: str, reason: str = "OOMKilled", ns: str = "default") -> None:
        """End a pod's process with SIGKILL, as the kernel's OOM killer does; its container then
        reports ``reason`` with exit code 137."""
        with self.lock:
            run = self.pods[(ns, name)]
            run.killed_reason = reason
        if run.proc and run.proc.poll() is None:
            kill_tree(run.proc.pid, signal.SIGKILL)

    # --- HTTP -----------------------------------------------------------------------------

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: pytest shows what matters
                pass

            def do_GET(self) -> None:
                standin._dispatch(self, "GET")

            def do_POST(self) -> None:
                standin._dispatch(self, "POST")

            def do_DELETE(self) -> None:
                standin._dispatch(self, "DELETE")

        return Handler

    def _dispatch(self, h: BaseHTTPRequestHandler, method: str) -> None:
        url = urlparse(h.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        self.requests.append((method, url.path))
        body = None
        if method in ("POST", "DELETE"):
            length = int(h.headers.get("Content-Length") or 0)
            raw = h.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
        m = CORE_PATH.match(url.path) or GROUP_PATH.match(url.path)
        key = (m.groupdict().get("group") or "", m["version"], m["plural"]) if m else None
        if not m or key not in RESOURCES:
            return self._send(h, 404, status(404, "NotFound", "the server could not find the requested resource"))
        kind, ns, name = RESOURCES[key], m["ns"], m["name"]
        try:
            if kind == "Pod" and method == "GET" and name and m.groupdict().get("sub"):
                return self._log(h, ns, name, query)
            if kind == "Pod" and method == "GET" and not name:
                if query.get("watch") in ("true", "1"):
                    return self._watch(h, ns, query)
                return self._send(h, 200, self._list_pods(ns, query.get("labelSelector", "")))
            if method == "POST" and not name:
                code, doc = self._create(kind, ns, body or {}, dry_run=query.get("dryRun") == "All")
                return self._send(h, code, doc)
            if method == "GET" and name:
                obj = self.get(kind, name, ns) if kind != "Pod" else self._pod_obj(ns, name)
                if obj is None:
                    return self._send(h, 404, status(404, "NotFound", f'{key[2]} "{name}" not found', name, key[2]))
                return self._send(h, 200, obj)
            if method == "DELETE" and name:
                return self._send(h, *self._delete(kind, ns, name, key[2]))
        except (BrokenPipeError, ConnectionResetError):
            return None
        return self._send(h, 405, status(405, "MethodNotAllowed", f"{method} {url.path} is not served by the stand-in"))

    def _send(self, h: BaseHTTPRequestHandler, code: int, doc: dict[str, Any]) -> None:
        data = json.dumps(doc).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _start_chunked(self, h: BaseHTTPRequestHandler, content_type: str) -> None:
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True

    @staticmethod
    def _chunk(h: BaseHTTPRequestHandler, data: bytes) -> None:
        if data:
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()

    @staticmethod
    def _end_chunks(h: BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()

    # --- objects --------------------------------------------------------------------------

    def _create(self, kind: str, ns: str, body: dict[str, Any], dry_run: bool) -> tuple[int, dict[str, Any]]:
        meta = body.setdefault("metadata", {})
        name = meta.get("name", "")
        if body.get("kind") != kind:
            return 400, status(400, "BadRequest", f"the body's kind {body.get('kind')!r} is not {kind}", name, kind)
        meta.setdefault("namespace", ns)
        problems = validate_manifests([body])
        if kind == "TrainJob" and ((body.get("spec") or {}).get("runtimeRef") or {}).get("name") != "torch-distributed":
            problems.append("spec.runtimeRef.name: the stand-in has only the ClusterTrainingRuntime torch-distributed")
        if problems:
            causes = [{"field": p.split(": ")[1] if p.count(": ") >= 2 else "", "message": p} for p in problems]
            return 422, status(422, "Invalid", f"{kind} {name!r} is invalid: {'; '.join(problems)}", name, kind, causes)
        with self.lock:
            if (kind, ns, name) in self.objects:
                return 409, status(409, "AlreadyExists", f'{kind.lower()}s "{name}" already exists', name, kind)
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=now(), resourceVersion=str(next(self.version)))
            if dry_run:
                return 201, body
            if kind in JOB_KINDS:
                body["status"] = {"conditions": []} if kind != "Job" else {"active": 0}
            self.objects[(kind, ns, name)] = body
        if kind in JOB_KINDS:
            self._start_job(kind, ns, name)
        return 201, body

    def _delete(self, kind: str, ns: str, name: str, plural: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            obj = self.objects.pop((kind, ns, name), None)
            job = self.jobs.pop((kind, ns, name), None)
            runs = [r for r in self.pods.values() if r.job_key == (kind, ns, name)]
        if obj is None:
            return 404, status(404, "NotFound", f'{plural} "{name}" not found', name, plural)
        if job is not None:
            job.finished = True
        for run in runs:  # the garbage collector removes the job's pods
            self._stop_process(run)
            with self.lock:
                self.pods.pop((ns, run.obj["metadata"]["name"]), None)
                run.obj["metadata"]["deletionTimestamp"] = now()
                self._event("DELETED", run.obj)
        return 200, {**status(200, "", "", name, plural), "status": "Success"}

    # --- pods: list, watch, logs ----------------------------------------------------------

    @staticmethod
    def _selects(selector: str, labels: dict[str, str]) -> bool:
        for term in filter(None, selector.split(",")):
            key, _, value = term.partition("=")
            if labels.get(key.strip()) != value.strip().lstrip("="):
                return False
        return True

    def _pod_obj(self, ns: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            run = self.pods.get((ns, name))
            return json.loads(json.dumps(run.obj)) if run else None

    def _list_pods(self, ns: str, selector: str) -> dict[str, Any]:
        with self.lock:
            items = [
                json.loads(json.dumps(r.obj))
                for (pns, _), r in sorted(self.pods.items())
                if pns == ns and self._selects(selector, r.obj["metadata"].get("labels") or {})
            ]
            version = str(next(self.version))
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": version}, "items": items}

    def _event(self, kind: str, pod: dict[str, Any]) -> None:
        """Record a pod change (lock held): a new resourceVersion, an event for watchers."""
        version = next(self.version)
        pod["metadata"]["resourceVersion"] = str(version)
        self.events.append((version, kind, json.loads(json.dumps(pod))))
        self.changed.notify_all()

    def _watch(self, h: BaseHTTPRequestHandler, ns: str, query: dict[str, str]) -> None:
        since = int(query.get("resourceVersion") or 0)
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
        selector = query.get("labelSelector", "")
        self._start_chunked(h, "application/json")
        while True:
            with self.lock:
                fresh = [e for e in self.events if e[0] > since]
                if not fresh:
                    self.changed.wait(max(0.0, min(0.5, deadline - time.monotonic())))
                    fresh = [e for e in self.events if e[0] > since]
            for version, kind, pod in fresh:
                since = version
                meta = pod["metadata"]
                if meta.get("namespace") == ns and self._selects(selector, meta.get("labels") or {}):
                    self._chunk(h, json.dumps({"type": kind, "object": pod}).encode() + b"\n")
            if time.monotonic() >= deadline:
                break
        self._end_chunks(h)

    def _log(self, h: BaseHTTPRequestHandler, ns: str, name: str, query: dict[str, str]) -> None:
        with self.lock:
            run = self.pods.get((ns, name))
        if run is None:
            return self._send(h, 404, status(404, "NotFound", f'pods "{name}" not found', name, "pods"))
        if run.proc is None:
            container = run.obj["spec"]["containers"][0]["name"]
            message = f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
            return self._send(h, 400, status(400, "BadRequest", message, name, "pods"))
        self._start_chunked(h, "text/plain")
        follow = query.get("follow") in ("true", "1")
        with open(run.log, "rb") as f:
            while True:
                data = f.read(65536)
                if data:
                    self._chunk(h, data)
                    continue
                if not follow or run.done.is_set():
                    rest = f.read()
                    self._chunk(h, rest)
                    break
                run.done.wait(0.1)
        self._end_chunks(h)

    # --- the controllers: which pods a job has ---------------------------------------------

    def _start_job(self, kind: str, ns: str, name: str) -> None:
        with self.lock:
            obj = self.objects[(kind, ns, name)]
            job = self.jobs[(kind, ns, name)] = JobRun(kind, obj, free_port())
            if kind == "PyTorchJob":
                obj["status"]["conditions"].append(self._condition("Created", "PyTorchJobCreated"))
        for index in range(self._pod_count(obj)):
            self._start_pod(job, ns, index)

    @staticmethod
    def _pod_count(obj: dict[str, Any]) -> int:
        spec = obj["spec"]
        if obj["kind"] == "Job":
            return int(spec["completions"])
        if obj["kind"] == "TrainJob":
            return int(spec["trainer"].get("numNodes", 1))
        return sum(int(r.get("replicas", 1)) for r in spec["pytorchReplicaSpecs"].values())

    @staticmethod
    def _condition(kind: str, reason: str = "", message: str = "") -> dict[str, str]:
        return {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": now(),
            "lastUpdateTime": now(),
        }

    def _pod_plan(self, job: JobRun, index: int) -> tuple[str, dict[str, Any], dict[str, Any], list[dict[str, str]]]:
        """(pod name, metadata, spec, env the controller adds) for pod ``index`` of the job."""
        obj, name, suffix = job.obj, job.obj["metadata"]["name"], uuid.uuid4().hex[:5]
        owner = [{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": name, "uid": obj["metadata"]["uid"]}]
        index_note = {"batch.kubernetes.io/job-completion-index": str(index)}
        if obj["kind"] == "Job":
            template = json.loads(json.dumps(obj["spec"]["template"]))
            spec = template["spec"]
            spec["hostname"] = f"{name}-{index}"
            labels = {**template.get("metadata", {}).get("labels", {}), "batch.kubernetes.io/job-name": name}
            labels["batch.kubernetes.io/job-completion-index"] = str(index)
            meta = {"name": f"{name}-{index}-{suffix}", "labels": labels, "annotations": index_note}
            extra = [{"name": "JOB_COMPLETION_INDEX", "value": str(index)}]
        elif obj["kind"] == "TrainJob":
            spec, meta, extra = self._trainjob_pod(obj, index, suffix)
            meta["annotations"] = index_note
        else:
            spec, meta, extra = self._pytorchjob_pod(obj, index)
        meta.update(ownerReferences=owner)
        return meta["name"], meta, spec, extra

    def _trainjob_pod(self, obj: dict[str, Any], index: int, suffix: str):
        """Kubeflow Trainer's torch-distributed runtime and its JobSet, as they shape node pod i."""
        name, trainer = obj["metadata"]["name"], obj["spec"].get("trainer") or {}
        container: dict[str, Any] = {
            "name": "node",
            "image": trainer.get("image") or "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime",
            "command": trainer.get("command") or ["torchrun"],
            "args": trainer.get("args") or [],
            "env": list(trainer.get("env") or []),
            "resources": trainer.get("resourcesPerNode") or {},
        }
        spec: dict[str, Any] = {"containers": [container], "restartPolicy": "OnFailure", "volumes": []}
        spec.update(hostname=f"{name}-node-0-{index}", subdomain=name)
        labels = {"jobset.sigs.k8s.io/jobset-name": name, "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
        # runtimePatches (Trainer v2.2.0 and later), merged as v2.3.0 does: by name.
        for patch in obj["spec"].get("runtimePatches") or []:
            template = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
            for job in template.get("replicatedJobs") or []:
                if job.get("name") != "node":
                    continue
                pod = ((job.get("template") or {}).get("spec") or {}).get("template") or {}
                labels.update((pod.get("metadata") or {}).get("labels") or {})
                pspec = pod.get("spec") or {}
                spec["volumes"] += pspec.get("volumes") or []
                for c in pspec.get("containers") or []:
                    if c.get("name") == "node":
                        container.setdefault("volumeMounts", []).extend(c.get("volumeMounts") or [])
        # The torch runtime's "auto" since v2.2.0: one process per GPU, else per CPU core of the limit
        # (or the request); trainer.numProcPerNode only where it is set.
        resources = trainer.get("resourcesPerNode") or {}
        amounts = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        gpus = [v for k, v in amounts.items() if "gpu" in k.lower()]
        cpu = str(amounts.get("cpu", "1"))
        cores = max(1, int(float(cpu[:-1]) / 1000) if cpu.endswith("m") else int(float(cpu)))
        nproc = str(trainer.get("numProcPerNode") or (gpus[0] if gpus else cores))
        extra = [
            {"name": "PET_NNODES", "value": str(trainer.get("numNodes", 1))},
            {"name": "PET_NPROC_PER_NODE", "value": nproc},
            {"name": "PET_NODE_RANK", "value": str(index)},
            {"name": "PET_MASTER_ADDR", "value": f"{name}-node-0-0.{name}"},
            {"name": "PET_MASTER_PORT", "value": str(TRAINER_PORT)},
        ]
        return spec, {"name": f"{name}-node-0-{index}-{suffix}", "labels": labels}, extra

    def _pytorchjob_pod(self, obj: dict[str, Any], index: int):
        """The training operator's Master-0, Worker-0.. pods and the variables it sets."""
        name, spec = obj["metadata"]["name"], obj["spec"]
        replicas = spec["pytorchReplicaSpecs"]
        rtype, rindex = (
            ("Master", 0) if "Master" in replicas and index == 0 else ("Worker", index - ("Master" in replicas))
        )
        replica = replicas[rtype]
        template = json.loads(json.dumps(replica["template"]))
        pod_spec = template["spec"]
        pod_spec["restartPolicy"] = replica.get("restartPolicy", "Never")
        labels = {
            **(template.get("metadata") or {}).get("labels", {}),
            "training.kubeflow.org/job-name": name,
            "training.kubeflow.org/replica-type": rtype.lower(),
            "training.kubeflow.org/replica-index": str(rindex),
        }
        nodes = self._pod_count(obj)
        master = f"{name}-master-0" if "Master" in replicas else f"{name}-worker-0"
        extra = [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "MASTER_ADDR", "value": master},
            {"name": "MASTER_PORT", "value": str(OPERATOR_PORT)},
            {"name": "PET_MASTER_ADDR", "value": master},
            {"name": "PET_MASTER_PORT", "value": str(OPERATOR_PORT)},
            {"name": "WORLD_SIZE", "value": str(nodes)},
            {"name": "RANK", "value": str(index)},
            {"name": "PET_NODE_RANK", "value": str(index)},
            {"name": "PET_NPROC_PER_NODE", "value": str(spec.get("nprocPerNode", "auto"))},
        ]
        elastic = spec.get("elasticPolicy")
        if elastic:
            host = elastic.get("rdzvHost") or f"{name}-worker-0"
            extra += [
                {"name": "PET_RDZV_BACKEND", "value": elastic.get("rdzvBackend", "c10d")},
                {"name": "PET_RDZV_ENDPOINT", "value": f"{host}:{elastic.get('rdzvPort', OPERATOR_PORT)}"},
                {
                    "name": "PET_NNODES",
                    "value": f"{elastic.get('minReplicas', nodes)}:{elastic.get('maxReplicas', nodes)}",
                },
            ]
            if "maxRestarts" in elastic:
                extra.append({"name": "PET_MAX_RESTARTS", "value": str(elastic["maxRestarts"])})
        else:
            extra.append({"name": "PET_NNODES", "value": str(nodes)})
        meta = {"name": f"{name}-{rtype.lower()}-{rindex}", "labels": labels}
        return pod_spec, meta, extra

    # --- the kubelet: pods as local processes ----------------------------------------------

    def _start_pod(self, job: JobRun, ns: str, index: int, restarts: int = 0) -> None:
        name, meta, spec, extra = self._pod_plan(job, index)
        container = spec["containers"][0]
        meta.update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=now())
        obj = {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": meta,
            "spec": {**spec, "nodeName": "standin-node"},
            "status": {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [self._container_status(container, {"waiting": {"reason": "ContainerCreating"}})],
            },
        }
        folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.workdir))
        job_key = (job.kind, ns, job.obj["metadata"]["name"])
        run = PodRun(obj, job_key, index, folder / "log.txt", folder)
        with self.lock:
            self.pods[(ns, name)] = run
            self._event("ADDED", obj)
        gpus = max(int(str(r.get("nvidia.com/gpu", 0))) for r in (container.get("resources") or {}).values() or [{}])
        if gpus:
            with self.lock:
                obj["status"]["conditions"] = [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
                    }
                ]
                obj["status"]["containerStatuses"] = []
                self._event("MODIFIED", obj)
            return
        if container.get("image") in self.bad_images:
            with self.lock:
                message = f'Back-off pulling image "{container["image"]}"'
                waiting = {"waiting": {"reason": "ImagePullBackOff", "message": message}}
                obj["status"]["containerStatuses"] = [self._container_status(container, waiting)]
                self._event("MODIFIED", obj)
            return
        argv, env, cwd = self._process(job, run, container, spec, extra)
        run.log.touch()
        with open(run.log, "wb") as log:
            run.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        with self.lock:
            obj["status"].update(phase="Running", startTime=now(), podIP="127.0.0.1")
            obj["status"]["conditions"] = [
                {"type": t, "status": "True"} for t in ("PodScheduled", "Initialized", "Ready")
            ]
            state = {"running": {"startedAt": now()}}
            obj["status"]["containerStatuses"] = [self._container_status(container, state, restarts, ready=True)]
            self._event("MODIFIED", obj)
        threading.Thread(target=self._reap, args=(job, ns, run, container), daemon=True).start()

    @staticmethod
    def _container_status(container, state, restarts: int = 0, ready: bool = False) -> dict[str, Any]:
        return {
            "name": container["name"],
            "image": container.get("image", ""),
            "imageID": "",
            "ready": ready,
            "restartCount": restarts,
            "state": state,
        }

    def _process(self, job: JobRun, run: PodRun, container, spec, extra) -> tuple[list[str], dict[str, str], str]:
        """The container as a local process: argv, environment, working folder."""
        mounts = self._materialize(run, container, spec)
        env_list = [*(container.get("env") or []), *extra]
        env: dict[str, str] = {}
        for item in env_list:
            value = item.get("value")
            if value is None and item.get("valueFrom"):
                value = self._field_ref(run.obj, item["valueFrom"].get("fieldRef", {}).get("fieldPath", ""))
            env[item["name"]] = self._expand(str(value or ""), env)
        hosts = self._hostnames(job)
        env = {k: self._local(v, mounts, hosts, job, port_var=k.endswith("PORT")) for k, v in env.items()}
        words = [self._expand(w, env) for w in [*(container.get("command") or []), *(container.get("args") or [])]]
        words = [self._local(w, mounts, hosts, job) for w in words]
        if words and words[0] == "torchrun":
            words = [self.python, "-m", "torch.distributed.run", *words[1:]]
        elif words and words[0] in ("python", "python3"):
            words = [self.python, *words[1:]]
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(run.folder), "TMPDIR": str(run.folder)}
        base["HOSTNAME"] = run.obj["spec"].get("hostname") or run.obj["metadata"]["name"]
        return words, {**base, **env}, str(run.folder)

    def _materialize(self, run: PodRun, container, spec) -> dict[str, str]:
        """Each volume mount as a local folder: a ConfigMap's files written out, an emptyDir empty."""
        mounts: dict[str, str] = {}
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        for mount in container.get("volumeMounts") or []:
            volume = volumes[mount["name"]]
            target = run.folder / "volumes" / mount["name"]
            target.mkdir(parents=True, exist_ok=True)
            if "configMap" in volume:
                ns = run.obj["metadata"]["namespace"]
                cm = self.get("ConfigMap", volume["configMap"]["name"], ns) or {"data": {}}
                items = volume["configMap"].get("items") or [{"key": k, "path": k} for k in cm.get("data") or {}]
                for item in items:
                    path = target / item["path"]
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text((cm.get("data") or {})[item["key"]], encoding="utf-8")
            mounts[mount["mountPath"]] = str(target)
        return mounts

    @staticmethod
    def _field_ref(pod: dict[str, Any], path: str) -> str:
        meta = pod["metadata"]
        found = re.match(r"^metadata\.(annotations|labels)\['(.+)'\]$", path)
        if found:
            return str((meta.get(found.group(1)) or {}).get(found.group(2), ""))
        return {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"]}.get(path, "")

    @staticmethod
    def _expand(text: str, env: dict[str, str]) -> str:
        """Kubernetes' $(VAR) expansion; $$ escapes a $."""
        return re.sub(
            r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
            lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
            text,
        )

    def _hostnames(self, job: JobRun) -> list[str]:
        """The DNS names a pod of this job could use for another (pods, services): all local here."""
        name = job.obj["metadata"]["name"]
        with self.lock:
            services = [n for (k, _, n) in self.objects if k == "Service"]
        names = [f"{name}-{i}" for i in range(64)] + [f"{name}-node-0-{i}" for i in range(64)]
        names += [f"{name}-master-0"] + [f"{name}-worker-{i}" for i in range(64)] + services + [name]
        full = [f"{n}.{s}" for n in names for s in [*services, name]]
        return sorted(set(full + names), key=len, reverse=True)

    @staticmethod
    def _local(text: str, mounts: dict[str, str], hosts: list[str], job: JobRun, port_var: bool = False) -> str:
        for path in sorted(mounts, key=len, reverse=True):
            text = text.replace(path, mounts[path])
        ports = {str(p) for p in (TRAINER_PORT, OPERATOR_PORT, 29500)}
        if port_var and text in ports:
            return str(job.port)
        for host in hosts:
            text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?:\.[a-z0-9.-]+)?(?![\w-])", "127.0.0.1", text)
        text = re.sub(
            r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{job.port}" if m.group(1) in ports else m.group(0), text
        )
        return re.sub(
            r"^(--master[-_]port=)(\d+)$",
            lambda m: m.group(1) + (str(job.port) if m.group(2) in ports else m.group(2)),
            text,
        )

    def _reap(self, job: JobRun, ns: str, run: PodRun, container) -> None:
        code = run.proc.wait() if run.proc else 1
        run.done.set()
        with self.lock:
            if (ns, run.obj["metadata"]["name"]) not in self.pods:
                return
            reason = run.killed_reason or ("Completed" if code == 0 else "Error")
            exit_code = 137 if run.killed_reason else (128 - code if code < 0 else code)
            terminated = {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": now()}}
            restarts = run.obj["status"]["containerStatuses"][0]["restartCount"]
            run.obj["status"]["phase"] = "Succeeded" if exit_code == 0 else "Failed"
            run.obj["status"]["containerStatuses"] = [self._container_status(container, terminated, restarts)]
            self._event("MODIFIED", run.obj)
            self._job_progress(job, ns)

    def _job_progress(self, job: JobRun, ns: str) -> None:
        """The job's controller after a pod ended (lock held): replace, fail or complete."""
        if job.finished:
            return
        runs = [r for r in self.pods.values() if r.job_key == (job.kind, ns, job.obj["metadata"]["name"])]
        phases = [r.obj["status"]["phase"] for r in runs]
        failed = [r for r in runs if r.obj["status"]["phase"] == "Failed"]
        status = job.obj["status"]
        if job.kind == "Job":
            status["succeeded"] = phases.count("Succeeded")
            status["failed"] = len(failed)
            status["active"] = phases.count("Running")
        if failed:
            job.failed += 1
            limit = self._restart_limit(job.obj)
            if job.failed <= limit:
                run = failed[-1]
                self.pods.pop((ns, run.obj["metadata"]["name"]), None)
                self._event("DELETED", run.obj)
                threading.Thread(target=self._start_pod, args=(job, ns, run.index, job.failed), daemon=True).start()
                return
            job.finished = True
            reason = {"Job": "BackoffLimitExceeded", "PyTorchJob": "PyTorchJobFailed"}.get(job.kind, "FailedJobs")
            message = f"pod {failed[0].obj['metadata']['name']} failed"
            if job.kind == "Job":
                status.setdefault("conditions", []).extend(
                    [self._condition("FailureTarget", reason, message), self._condition("Failed", reason, message)]
                )
            else:
                status["conditions"].append(self._condition("Failed", reason, message))
            for run in runs:  # the controller stops the pods still running
                if run.proc and run.proc.poll() is None:
                    threading.Thread(target=self._stop_process, args=(run,), daemon=True).start()
        elif phases and all(p == "Succeeded" for p in phases) and len(phases) == self._pod_count(job.obj):
            job.finished = True
            word = {"Job": "Complete", "PyTorchJob": "Succeeded", "TrainJob": "Complete"}[job.kind]
            if job.kind == "Job":
                status.setdefault("conditions", []).append(self._condition("SuccessCriteriaMet", "CompletionsReached"))
                status["completionTime"] = now()
            status.setdefault("conditions", []).append(
                self._condition(word, "JobSucceeded" if job.kind != "Job" else "")
            )
        job.obj["metadata"]["resourceVersion"] = str(next(self.version))

    @staticmethod
    def _restart_limit(obj: dict[str, Any]) -> int:
        if obj["kind"] == "Job":
            return int(obj["spec"].get("backoffLimit", 6))
        if obj["kind"] == "PyTorchJob":
            return int((obj["spec"].get("runPolicy") or {}).get("backoffLimit", 0))
        return 0  # the torch-distributed runtime's JobSet: no failure policy, no restart

    @staticmethod
    def _stop_process(run: PodRun) -> None:
        """What the kubelet does to a deleted pod: SIGTERM, a grace period, SIGKILL. torchrun
        puts its workers in sessions of their own, so the whole tree is gathered first."""
        proc = run.proc
        if proc is None or proc.poll() is not None:
            return
        tree = descendants(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        for p in [psutil_process(proc.pid), *tree]:
            if p is not None:
                with contextlib.suppress(Exception):
                    p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        shutil.rmtree(run.folder / "volumes", ignore_errors=True)


def psutil_process(pid: int):
    import psutil

    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def descendants(pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def kill_tree(pid: int, sig: int) -> None:
    """Send sig to pid and every process under it, children first gathered."""
    import psutil

    for p in [*descendants(pid), psutil_process(pid)]:
        if p is not None:
            with contextlib.suppress(psutil.Error):
                p.send_signal(sig)
