"""Follow one Kubernetes job for the run service: create its objects, relay its pods' logs,
report its state, end with its outcome, delete it when told to stop.

    python -m gpudojo.worker.follow_k8s --run-dir RUN --run-id ID --namespace NS \\
        --job Job/NAME RUN/artifacts/01-configmap.yaml RUN/artifacts/02-service.yaml RUN/artifacts/03-job.yaml

The files are gpudojo.runs.engines.kubernetes's manifests; they are created in order with the
kubernetes client (a kubeconfig, or a pod's service account). The pods (label gpudojo.run=ID)
are watched; each pod's log is streamed as soon as its container runs. torchrun in the pods
prefixes every worker line with the global rank ("[default<rank>]:"), so those lines pass
through as they are and the run service files them under their rank, metric lines included;
any other line of a pod (torchrun's agent, a container that could not start) is printed as
"[<pod>] line", a launcher line. engine.json holds the job's name and state word (the latest
condition: Complete, Failed, Succeeded, Running...), one node per pod with the ranks seen in its
log, and a root cause when a pod failed for a reason of its own (OOMKilled, Evicted, an image
that cannot be pulled) or a rank raised. Exit status: 0 when the job succeeded, else the failed
container's exit code (1 when unknown). SIGTERM deletes the job, its ConfigMap and Service, and
exits 143.

No torch here; the kubernetes client is imported in this process only.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..runfolder import RANK_LINE, RunFolder, whole_line
from ..runs.engines.base import write_engine_state

RUN_LABEL = "gpudojo.run"
CUSTOM = {  # kind -> (group, version, plural)
    "TrainJob": ("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
    "PyTorchJob": ("kubeflow.org", "v1", "pytorchjobs"),
}
SUCCESS_CONDITIONS = {"Complete", "Succeeded"}
FAILURE_CONDITIONS = {"Failed"}
# Waiting reasons after which a container will not start without someone changing the job.
HOPELESS_WAITING = {
    "ImagePullBackOff": "the image cannot be pulled",
    "ErrImagePull": "the image cannot be pulled",
    "InvalidImageName": "the image name is not valid",
    "CreateContainerConfigError": "the container's configuration is wrong (a missing ConfigMap or Secret key?)",
    "CreateContainerError": "the container could not be created",
}
EXCEPTION_LINE = re.compile(
    r"^(?:\[default\d+\]:)?\s*((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b.*)$"
)
TAIL_LINES = 200  # lines of a pod's log kept for a root cause's traceback


@dataclass
class PodView:
    """What the follower knows of one pod."""

    name: str
    order: tuple[int, str]
    phase: str = "Pending"
    detail: str = ""
    ranks: set[int] = field(default_factory=set)
    deleted: bool = False
    exit_code: int | None = None
    reason: str = ""  # OOMKilled, Evicted, ImagePullBackOff...
    waiting_since: float | None = None
    restarts: int = 0
    streams: set[int] = field(default_factory=set)  # restart counts whose log is (being) read
    tail: list[str] = field(default_factory=list)

    def reason_only(self) -> bool:
        """A pod that failed before any container ran (evicted at once) has no log to read."""
        return self.phase == "Failed" and self.exit_code is None and bool(self.reason)


class KubeApi:
    """The few calls the follower makes, on plain dicts (camelCase, as the API writes them)."""

    def __init__(self, namespace: str) -> None:
        from kubernetes import client, config

        try:
            config.load_kube_config()
        except config.ConfigException:
            config.load_incluster_config()
        self.namespace = namespace
        self.client = client.ApiClient()
        self.core = client.CoreV1Api(self.client)
        self.batch = client.BatchV1Api(self.client)
        self.custom = client.CustomObjectsApi(self.client)

    def plain(self, obj: Any) -> dict[str, Any]:
        return obj if isinstance(obj, dict) else self.client.sanitize_for_serialization(obj)

    def create(self, doc: dict[str, Any], dry_run: bool = False) -> None:
        """Create one object; with dry_run the API server checks it (schemas, admission
        webhooks, quotas) and stores nothing."""
        kind, ns = doc["kind"], self.namespace
        extra = {"dry_run": "All"} if dry_run else {}
        if kind == "ConfigMap":
            self.core.create_namespaced_config_map(ns, doc, **extra)
        elif kind == "Service":
            self.core.create_namespaced_service(ns, doc, **extra)
        elif kind == "Job":
            self.batch.create_namespaced_job(ns, doc, **extra)
        elif kind in CUSTOM:
            group, version, plural = CUSTOM[kind]
            self.custom.create_namespaced_custom_object(group, version, ns, plural, doc, **extra)
        else:
            raise ValueError(f"cannot create a {kind}")

    def read(self, kind: str, name: str) -> dict[str, Any]:
        if kind == "Job":
            return self.plain(self.batch.read_namespaced_job(name, self.namespace))
        group, version, plural = CUSTOM[kind]
        return self.plain(self.custom.get_namespaced_custom_object(group, version, self.namespace, plural, name))

    def delete(self, kind: str, name: str) -> None:
        from kubernetes import client

        ns, body = self.namespace, client.V1DeleteOptions(propagation_policy="Background")
        if kind == "ConfigMap":
            self.core.delete_namespaced_config_map(name, ns)
        elif kind == "Service":
            self.core.delete_namespaced_service(name, ns)
        elif kind == "Job":
            self.batch.delete_namespaced_job(name, ns, body=body)
        else:
            group, version, plural = CUSTOM[kind]
            self.custom.delete_namespaced_custom_object(group, version, ns, plural, name, body=body)

    def pods(self, selector: str) -> tuple[list[dict[str, Any]], str]:
        listed = self.plain(self.core.list_namespaced_pod(self.namespace, label_selector=selector))
        return listed.get("items") or [], (listed.get("metadata") or {}).get("resourceVersion") or ""

    def watch_pods(self, selector: str, resource_version: str, timeout_s: int):
        """(event type, pod) until timeout_s of the server's or the watch breaks."""
        from kubernetes import watch

        stream = watch.Watch().stream(
            self.core.list_namespaced_pod,
            self.namespace,
            label_selector=selector,
            resource_version=resource_version,
            timeout_seconds=timeout_s,
        )
        for event in stream:
            yield event["type"], event["raw_object"]

    def log_lines(self, pod: str):
        """The pod's log, followed until its container ends, line by line."""
        resp = self.core.read_namespaced_pod_log(pod, self.namespace, follow=True, _preload_content=False)
        pending = b""
        try:
            for chunk in resp.stream(4096):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", errors="replace").rstrip("\r")
            if pending:
                yield pending.decode("utf-8", errors="replace")
        finally:
            resp.release_conn()


def api_error(err: Exception) -> str:
    """An ApiException as the API server's own message, not the client's wall of headers."""
    import json

    body = getattr(err, "body", None)
    try:
        doc = json.loads(body) if body else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("message"):
        return f"{doc.get('reason') or getattr(err, 'status', '')}: {doc['message']}"
    status, reason = getattr(err, "status", None), getattr(err, "reason", None)
    return f"{status} {reason}".strip() if status else str(err)


def pod_order(pod: dict[str, Any]) -> tuple[int, str]:
    """Node order: the completion index (Job, JobSet), else Master before Worker i."""
    meta = pod.get("metadata") or {}
    annotations, labels = meta.get("annotations") or {}, meta.get("labels") or {}
    index = annotations.get("batch.kubernetes.io/job-completion-index")
    if index is not None and str(index).isdigit():
        return int(index), meta.get("name", "")
    rtype = labels.get("training.kubeflow.org/replica-type", "")
    rindex = str(labels.get("training.kubeflow.org/replica-index", "0"))
    if rtype:
        return (0 if rtype.lower() == "master" else 1 + int(rindex if rindex.isdigit() else 0)), meta.get("name", "")
    return 1_000_000, meta.get("name", "")


class Follower:
    def __init__(
        self,
        api: KubeApi,
        folder: RunFolder,
        run_id: str,
        job: tuple[str, str],
        docs: list[dict[str, Any]],
        *,
        poll_s: float = 1.0,
        give_up_s: float = 120.0,
    ) -> None:
        self.api, self.folder, self.run_id = api, folder, run_id
        self.kind, self.name = job
        self.docs = docs
        self.poll_s, self.give_up_s = poll_s, give_up_s
        self.selector = f"{RUN_LABEL}={run_id}"
        self.lock = threading.Lock()
        self.out_lock = threading.Lock()
        self.stop = threading.Event()
        self.pods: dict[str, PodView] = {}
        self.readers: list[threading.Thread] = []
        self.job_state = "Submitting"
        self.root_cause: dict[str, Any] | None = None
        self.created: list[tuple[str, str]] = []
        self.failure_note = ""

    # --- output ---------------------------------------------------------------------------

    def say(self, text: str) -> None:
        with self.out_lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def publish(self) -> None:
        with self.lock:
            nodes = [
                {"name": p.name, "state": node_state(p), "ranks": sorted(p.ranks), "detail": p.detail}
                for p in sorted(self.pods.values(), key=lambda p: p.order)
            ]
        doc: dict[str, Any] = {"job_id": self.name, "job_state": self.job_state, "nodes": nodes}
        if self.root_cause:
            doc["root_cause"] = self.root_cause
        write_engine_state(self.folder, doc)

    # --- lifecycle ------------------------------------------------------------------------

    def submit(self) -> bool:
        for doc in self.docs:
            kind, name = doc["kind"], doc["metadata"]["name"]
            try:
                self.api.create(doc)
            except Exception as err:
                why = api_error(err)
                if getattr(err, "status", None) == 404 and kind in CUSTOM:
                    group, version, plural = CUSTOM[kind]
                    why = f"the cluster does not serve {group}/{version} {plural}: is its operator installed? ({why})"
                self.say(f"[kubernetes] could not create {kind} {name}: {why}")
                self.root_cause = {"exception": f"{kind} {name} was not created: {why}", "traceback": ""}
                self.job_state = "NotCreated"
                self.cleanup()
                return False
            self.created.append((kind, name))
            self.say(f"[kubernetes] created {kind} {name} in namespace {self.api.namespace}")
        self.job_state = "Created"
        return True

    def cleanup(self, *, keep_job: bool = False) -> None:
        """Delete what this follower created, the job first (its pods go with it)."""
        for kind, name in reversed(self.created):
            if keep_job and kind in ("Job", *CUSTOM):
                continue
            try:
                self.api.delete(kind, name)
                self.say(f"[kubernetes] deleted {kind} {name}")
            except Exception as err:
                if getattr(err, "status", None) != 404:
                    self.say(f"[kubernetes] could not delete {kind} {name}: {api_error(err)}")

    def follow(self) -> int:
        self.publish()
        if not self.submit():
            self.publish()
            return 1
        self.publish()
        watcher = threading.Thread(target=self.watch_pods, name="watch-pods", daemon=True)
        watcher.start()
        outcome: bool | None = None
        while not self.stop.is_set():
            outcome = self.observe_job()
            self.start_readers()
            self.publish()
            if outcome is not None or self.hopeless():
                break
            self.stop.wait(self.poll_s)
        if self.stop.is_set():
            return self.cancelled()
        return self.finish(outcome)

    def finish(self, succeeded: bool | None) -> int:
        """Drain the logs, settle the root cause, tidy up, publish; the exit code."""
        deadline = time.monotonic() + 15
        for thread in list(self.readers):
            thread.join(max(0.0, deadline - time.monotonic()))
        self.refresh_pods()
        if not succeeded:
            self.root_cause = self.root_cause or self.find_root_cause()
            if succeeded is None:  # given up: the job would never have ended by itself
                self.cleanup()
            else:
                self.cleanup(keep_job=True)
        else:
            self.cleanup(keep_job=True)
        self.publish()
        if succeeded:
            return 0
        codes = [p.exit_code for p in self.pods.values() if p.exit_code]
        return (self.root_cause or {}).get("exit_code") or (codes[0] if codes else 1)

    def cancelled(self) -> int:
        self.say(f"[kubernetes] cancelled: deleting {self.kind} {self.name}")
        self.cleanup()
        self.job_state = "Deleted"
        self.publish()
        return 128 + signal.SIGTERM

    # --- the job --------------------------------------------------------------------------

    def observe_job(self) -> bool | None:
        """Read the job's conditions: True when it succeeded, False when it failed, else None."""
        try:
            job = self.api.read(self.kind, self.name)
        except Exception as err:
            if getattr(err, "status", None) == 404:
                self.job_state = "Deleted"
                self.root_cause = {"exception": f"{self.kind} {self.name} was deleted by someone else", "traceback": ""}
                return False
            self.say(f"[kubernetes] could not read {self.kind} {self.name}: {api_error(err)}")
            return None
        conditions = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
        types = [c.get("type", "") for c in conditions]
        if any(t in SUCCESS_CONDITIONS for t in types):
            self.job_state = next(t for t in types if t in SUCCESS_CONDITIONS)
            return True
        if any(t in FAILURE_CONDITIONS for t in types):
            self.job_state = "Failed"
            failed = next(c for c in conditions if c.get("type") in FAILURE_CONDITIONS)
            self.failure_note = f"{failed.get('reason', '')}: {failed.get('message', '')}".strip(": ")
            return False
        with self.lock:
            running = any(p.phase == "Running" for p in self.pods.values())
        self.job_state = types[-1] if types else ("Running" if running else "Pending")
        if running and self.job_state in ("Created", "Pending"):
            self.job_state = "Running"
        return None

    def hopeless(self) -> bool:
        """A pod stuck (image pull, configuration) longer than give_up_s: end the run."""
        now = time.monotonic()
        with self.lock:
            stuck = [p for p in self.pods.values() if p.waiting_since and now - p.waiting_since > self.give_up_s]
        if not stuck:
            return False
        pod = stuck[0]
        self.say(f"[kubernetes] giving up: pod {pod.name} is stuck: {pod.detail}")
        self.job_state = "Failed"
        self.root_cause = {
            "exception": f"{pod.reason}: pod {pod.name}: {HOPELESS_WAITING.get(pod.reason, 'stuck')} ({pod.detail})",
            "traceback": "",
        }
        return True

    # --- pods -----------------------------------------------------------------------------

    def watch_pods(self) -> None:
        while not self.stop.is_set():
            try:
                items, version = self.api.pods(self.selector)
                with self.lock:
                    for pod in items:
                        self.update_pod(pod)
                for kind, pod in self.api.watch_pods(self.selector, version, timeout_s=30):
                    with self.lock:
                        self.update_pod(pod, deleted=kind == "DELETED")
                    if self.stop.is_set():
                        return
            except Exception as err:  # an expired resourceVersion, a dropped connection: list again
                if self.stop.is_set():
                    return
                self.say(f"[kubernetes] watching pods: {api_error(err)}; listing again")
                self.stop.wait(self.poll_s)

    def refresh_pods(self) -> None:
        try:
            items, _ = self.api.pods(self.selector)
        except Exception:
            return
        with self.lock:
            for pod in items:
                self.update_pod(pod)

    def update_pod(self, pod: dict[str, Any], deleted: bool = False) -> None:
        """Fold one pod's status into its view (called with self.lock held)."""
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        name = meta.get("name", "?")
        view = self.pods.get(name)
        if view is None:
            view = self.pods[name] = PodView(name, pod_order(pod))
        view.deleted = view.deleted or deleted or bool(meta.get("deletionTimestamp"))
        view.phase = status.get("phase") or view.phase
        view.detail = ""
        if status.get("reason"):  # Evicted, DeadlineExceeded...
            view.reason = status["reason"]
            view.detail = f"{status['reason']}: {status.get('message', '')}".strip(": ")
        for cs in status.get("containerStatuses") or []:
            view.restarts = int(cs.get("restartCount") or 0)
            state = cs.get("state") or {}
            if state.get("waiting"):
                reason = state["waiting"].get("reason", "")
                view.detail = f"{reason}: {state['waiting'].get('message', '')}".strip(": ")
                if reason in HOPELESS_WAITING:
                    view.reason = reason
                    view.waiting_since = view.waiting_since or time.monotonic()
            else:
                view.waiting_since = None
            terminated = state.get("terminated") or (cs.get("lastState") or {}).get("terminated")
            if terminated and state.get("terminated"):
                view.exit_code = terminated.get("exitCode")
                if terminated.get("reason") not in (None, "Completed", "Error"):
                    view.reason = terminated["reason"]
                if terminated.get("reason") != "Completed":
                    view.detail = f"{terminated.get('reason', 'ended')}, exit code {terminated.get('exitCode')}"
        if view.phase == "Pending" and not view.detail:
            for cond in status.get("conditions") or []:
                if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                    view.detail = f"{cond.get('reason', 'Unschedulable')}: {cond.get('message', '')}".strip(": ")

    def start_readers(self) -> None:
        with self.lock:
            due = [
                p
                for p in self.pods.values()
                if p.phase in ("Running", "Succeeded", "Failed") and p.restarts not in p.streams and not p.reason_only()
            ]
            for p in due:
                p.streams.add(p.restarts)
        for p in due:
            thread = threading.Thread(target=self.read_log, args=(p,), name=f"log-{p.name}", daemon=True)
            self.readers.append(thread)
            thread.start()

    def read_log(self, pod: PodView) -> None:
        try:
            for line in self.api.log_lines(pod.name):
                self.relay(pod, line)
        except Exception as err:
            if not self.stop.is_set():
                self.say(f"[{pod.name}] (log unavailable: {api_error(err)})")

    def relay(self, pod: PodView, line: str) -> None:
        line = whole_line(line)
        match = RANK_LINE.match(line)
        with self.lock:
            if match:
                pod.ranks.add(int(match.group(1)))
            pod.tail = [*pod.tail[-(TAIL_LINES - 1) :], line]
        self.say(line if match else f"[{pod.name}] {line}")

    # --- why it failed --------------------------------------------------------------------

    def find_root_cause(self) -> dict[str, Any]:
        with self.lock:
            pods = sorted(self.pods.values(), key=lambda p: p.order)
        for pod in pods:  # a reason of the pod's own first: it explains the ranks' errors
            if pod.reason and pod.reason not in ("Completed", "Error"):
                return pod_root_cause(pod)
        for pod in pods:
            if pod.phase == "Failed" or pod.exit_code:
                found = log_exception(pod)
                if found:
                    return found
        note = self.failure_note or "the job failed"
        return {"exception": f"{self.kind} {self.name}: {note}", "traceback": ""}


def pod_root_cause(pod: PodView) -> dict[str, Any]:
    why = {
        "OOMKilled": "the container went over its memory limit and the kernel killed it; "
        "ask for more memory (memory_gi) or use less (a smaller batch)",
        "Evicted": "the node ran short of a resource (memory, disk) and evicted the pod",
        "DeadlineExceeded": "the pod ran past its active deadline",
    }.get(pod.reason) or HOPELESS_WAITING.get(pod.reason, "")
    rank = min(pod.ranks) if pod.ranks else None
    return {
        "rank": rank,
        "exit_code": pod.exit_code,
        "exception": f"{pod.reason}: pod {pod.name}"
        + (f": {why}" if why else "")
        + (f" ({pod.detail})" if pod.detail else ""),
        "traceback": "\n".join(pod.tail[-TAIL_LINES:]),
    }


def log_exception(pod: PodView) -> dict[str, Any] | None:
    """The last exception a rank of this pod printed (any line of the pod when no rank did),
    with that rank's lines before it as the traceback."""
    found = [(i, m) for i, line in enumerate(pod.tail) if (m := EXCEPTION_LINE.match(line))]
    ranked = [(i, m) for i, m in found if RANK_LINE.match(pod.tail[i])]
    if not found:
        return None
    i, match = (ranked or found)[-1]
    rank_match = RANK_LINE.match(pod.tail[i])
    prefix = rank_match.group(0) if rank_match else ""
    lines = [line for line in pod.tail[: i + 1] if line.startswith(prefix)] if prefix else pod.tail[: i + 1]
    return {
        "rank": int(rank_match.group(1)) if rank_match else (min(pod.ranks) if pod.ranks else None),
        "exit_code": pod.exit_code,
        "exception": match.group(1).strip(),
        "traceback": "\n".join(lines[-TAIL_LINES:]),
    }


def node_state(pod: PodView) -> str:
    if pod.deleted and pod.phase not in ("Succeeded", "Failed"):
        return "lost"
    return {"Pending": "waiting", "Running": "running", "Succeeded": "succeeded", "Failed": "failed"}.get(
        pod.phase, "waiting"
    )


def load_documents(paths: list[Path], namespace: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        for doc in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")):
            if doc:
                doc.setdefault("metadata", {}).setdefault("namespace", namespace)
                docs.append(doc)
    return docs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--run-id", required=True)
    p.add_argument("--namespace", default="default")
    p.add_argument("--job", required=True, help="KIND/NAME of the job object among the files")
    p.add_argument("--nproc", type=int, default=1, help="processes per pod (for the record)")
    p.add_argument("--poll-s", type=float, default=1.0)
    p.add_argument("--give-up-s", type=float, default=120.0, help="how long a pod may stay stuck (image pull...)")
    p.add_argument("files", nargs="+", type=Path)
    args = p.parse_args(argv)
    kind, _, name = args.job.partition("/")
    folder = RunFolder(args.run_dir)
    docs = load_documents(args.files, args.namespace)
    try:
        api = KubeApi(args.namespace)
    except Exception as err:
        print(f"[kubernetes] no cluster configuration: {err}", flush=True)
        write_engine_state(
            folder,
            {"job_id": name, "job_state": "NotCreated", "nodes": [], "root_cause": {"exception": f"no cluster: {err}"}},
        )
        return 2
    follower = Follower(api, folder, args.run_id, (kind, name), docs, poll_s=args.poll_s, give_up_s=args.give_up_s)

    def stop(signum: int, frame: object) -> None:
        follower.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return follower.follow()


if __name__ == "__main__":
    sys.exit(main())
