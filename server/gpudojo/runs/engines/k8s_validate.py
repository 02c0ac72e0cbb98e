"""Check Kubernetes manifests offline, as an API server would before it stores them.

Core kinds (ConfigMap, Service, Job) are checked against the Kubernetes v1.34 schemas and the
custom resources (TrainJob, PyTorchJob) against their CRDs' openAPIV3Schema, all vendored in
schemas/ (README.md there names versions, sources and licences). The schemas are strict: a field
the API does not have is an error, as with ``kubectl apply --validate=strict``, kubectl's default.

On top of the schemas come the few rules an API server or an operator's webhook enforces in code
and a schema cannot say: name formats, label values, ConfigMap keys and size, volume mounts that
name a volume, GPU requests equal to limits, an indexed Job's completions, the PyTorchJob webhook's
replica rules and the TrainJob's CEL rules on its name. Each problem names the object and the path
of the bad field, e.g. ``Job gpudojo-x: spec.template.spec.containers[0].resource: unknown field``.

Needs jsonschema, referencing and PyYAML (runtime dependencies of gpudojo); never torch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parent / "schemas"
KUBERNETES_VERSION = "1.34"
CORE_FILE = SCHEMAS / f"k8s-v{KUBERNETES_VERSION}-strict.json"
DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
CORE_KINDS = {("v1", "ConfigMap"), ("v1", "Service"), ("batch/v1", "Job")}

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
CONFIGMAP_MAX_BYTES = 1024 * 1024  # the API server refuses a ConfigMap whose data is larger


@dataclass(frozen=True)
class CustomKind:
    """One CRD's schema, ready for jsonschema."""

    api_version: str
    kind: str
    plural: str
    schema: dict[str, Any]


def validate_manifests(docs: Iterable[dict[str, Any]]) -> list[str]:
    """Every problem of every document, as "<Kind> <name>: <field path>: <message>"; [] when all
    are valid. Documents of a kind gpudojo has no schema for are a problem too."""
    problems: list[str] = []
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict):
            problems.append(f"document {index}: not a mapping but {type(doc).__name__}")
            continue
        label = f"{doc.get('kind', '?')} {(doc.get('metadata') or {}).get('name', f'#{index}')}"
        problems.extend(f"{label}: {p}" for p in problems_of(doc))
    return problems


def problems_of(doc: dict[str, Any]) -> list[str]:
    """One document's problems: the schema's, then the API server's and operators' own rules."""
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key in CORE_KINDS:
        validator = core_validator(key[1])
    elif key in custom_kinds():
        validator = custom_validator(*key)
    else:
        known = sorted(f"{a} {k}" for a, k in CORE_KINDS | set(custom_kinds()))
        return [f"apiVersion/kind: no schema for {key[0]} {key[1]} (known: {', '.join(known)})"]
    found = [schema_problem(e) for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))]
    return found + list(rule_problems(doc))


# --- schemas -----------------------------------------------------------------------------


@cache
def core_document() -> dict[str, Any]:
    return json.loads(CORE_FILE.read_text(encoding="utf-8"))


@cache
def registry():
    """The Kubernetes definitions, where every schema's ``/api/_definitions.json#/$defs/...`` lands."""
    from referencing import Registry, Resource

    definitions = {
        "$id": DEFINITIONS_ID,
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": core_document()["definitions"],
    }
    return Registry().with_resource(DEFINITIONS_ID, Resource.from_contents(definitions))


@cache
def core_validator(kind: str):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(core_document()["kinds"][kind], registry=registry())


@cache
def custom_kinds() -> dict[tuple[str, str], CustomKind]:
    """The CRDs in schemas/ (*.crd.yaml), by (apiVersion, kind), one entry per served version."""
    import yaml

    found: dict[tuple[str, str], CustomKind] = {}
    for path in sorted(SCHEMAS.glob("*.crd.yaml")):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = crd["spec"]
        for version in spec["versions"]:
            api_version = f"{spec['group']}/{version['name']}"
            schema = structural_to_json_schema(version["schema"]["openAPIV3Schema"])
            schema["$id"] = f"https://kubernetes.io/crd/{spec['group']}/{version['name']}/{spec['names']['kind']}"
            schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
            # The API server checks every object's metadata as ObjectMeta, whatever its CRD says.
            schema["properties"]["metadata"] = {
                "$ref": "/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
            }
            found[(api_version, spec["names"]["kind"])] = CustomKind(
                api_version, spec["names"]["kind"], spec["names"]["plural"], schema
            )
    return found


@cache
def custom_validator(api_version: str, kind: str):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(custom_kinds()[(api_version, kind)].schema, registry=registry())


def structural_to_json_schema(node: Any) -> Any:
    """A CRD's OpenAPI v3 (structural) schema as JSON Schema 2020-12, strict as the API server is
    with field validation on: an object that lists its properties accepts no others, unless the
    CRD says x-kubernetes-preserve-unknown-fields."""
    if isinstance(node, list):
        return [structural_to_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: structural_to_json_schema(v) for k, v in node.items() if k != "description"}
    if out.pop("nullable", False) and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def schema_problem(error) -> str:
    """One jsonschema error as "<path>: <message>"; an unexpected field gets its own path."""
    path = field_path(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            return "; ".join(f"{join(path, name)}: unknown field" for name in extra)
    if error.validator in ("oneOf", "anyOf") and error.context:
        # Quantities and int-or-string fields: say what the alternatives wanted.
        best = min(error.context, key=lambda e: len(list(e.absolute_path)))
        return f"{path or '(document)'}: {best.message}"
    return f"{path or '(document)'}: {error.message}"


def field_path(parts: Iterable[Any]) -> str:
    """["spec", "containers", 0, "image"] -> "spec.containers[0].image"."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# --- rules the API server and the operators check in code ---------------------------------


def rule_problems(doc: dict[str, Any]) -> Iterator[str]:
    kind = doc.get("kind")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    yield from name_problems(kind, meta.get("name"))
    yield from label_problems("metadata.labels", meta.get("labels"))
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    if kind == "ConfigMap":
        yield from configmap_problems(doc)
    elif kind == "Job":
        yield from job_problems(spec)
        yield from pod_template_problems("spec.template", spec.get("template"))
    elif kind == "PyTorchJob":
        yield from pytorchjob_problems(spec)
    elif kind == "TrainJob":
        yield from trainjob_problems(spec)


def name_problems(kind: Any, name: Any) -> Iterator[str]:
    if not isinstance(name, str) or not name:
        yield "metadata.name: required"
        return
    # Services, TrainJobs and PyTorchJobs want an RFC 1035 label (a letter first); the others a
    # DNS subdomain. A Job's pods are named after it, so it must leave room for their suffix.
    if kind in ("Service", "TrainJob", "PyTorchJob"):
        if len(name) > 63 or not DNS1035_LABEL.match(name):
            yield f"metadata.name: {name!r} must be an RFC 1035 label (a-z, 0-9, '-', a letter first, at most 63)"
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        yield f"metadata.name: {name!r} must be a DNS subdomain (a-z, 0-9, '-', '.', at most 253)"
    if kind == "Job" and len(name) > 63:
        yield f"metadata.name: {name!r} is longer than 63 characters: its pods' hostnames would be too"


def label_problems(path: str, labels: Any) -> Iterator[str]:
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        name = str(key).rsplit("/", 1)[-1]
        if not name or len(name) > 63 or not LABEL_VALUE.match(name):
            yield f"{path}.{key}: not a valid label name"
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            yield f"{path}.{key}: {value!r} is not a valid label value (at most 63 of A-Z a-z 0-9 - _ .)"


def configmap_problems(doc: dict[str, Any]) -> Iterator[str]:
    data = doc.get("data") if isinstance(doc.get("data"), dict) else {}
    size = 0
    for key, value in data.items():
        if not CONFIGMAP_KEY.match(str(key)) or len(str(key)) > 253:
            yield f"data.{key}: a key must be at most 253 of a-z A-Z 0-9 - _ ."
        size += len(str(key).encode()) + len(str(value or "").encode())
    if size > CONFIGMAP_MAX_BYTES:
        yield f"data: {size} bytes, over the {CONFIGMAP_MAX_BYTES} bytes a ConfigMap may hold"


def job_problems(spec: dict[str, Any]) -> Iterator[str]:
    if spec.get("completionMode") == "Indexed" and not isinstance(spec.get("completions"), int):
        yield "spec.completions: required when completionMode is Indexed"
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if isinstance(completions, int) and isinstance(parallelism, int) and parallelism > completions:
        yield "spec.parallelism: more than spec.completions: the extra pods would never be started"
    policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if policy not in ("Never", "OnFailure"):
        yield f"spec.template.spec.restartPolicy: {policy!r}: a Job's pods need Never or OnFailure"


def pod_template_problems(path: str, template: Any) -> Iterator[str]:
    if not isinstance(template, dict):
        return
    yield from label_problems(f"{path}.metadata.labels", (template.get("metadata") or {}).get("labels"))
    pod = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    volumes = {v.get("name") for v in pod.get("volumes") or [] if isinstance(v, dict)}
    for i, container in enumerate(pod.get("containers") or []):
        if isinstance(container, dict):
            yield from container_problems(f"{path}.spec.containers[{i}]", container, volumes)


def container_problems(path: str, container: dict[str, Any], volumes: set[Any]) -> Iterator[str]:
    name = container.get("name")
    if not isinstance(name, str) or not DNS1123_LABEL.match(name) or len(name) > 63:
        yield f"{path}.name: {name!r} must be an RFC 1123 label"
    for j, mount in enumerate(container.get("volumeMounts") or []):
        if isinstance(mount, dict) and mount.get("name") not in volumes:
            yield f"{path}.volumeMounts[{j}].name: no volume {mount.get('name')!r} in the pod"
    yield from extended_resource_problems(f"{path}.resources", container.get("resources"))


def extended_resource_problems(path: str, resources: Any) -> Iterator[str]:
    """GPUs (any resource name with a domain, such as nvidia.com/gpu) cannot be overcommitted:
    the API server wants a limit, and a request, when given, equal to it."""
    if not isinstance(resources, dict):
        return
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    for name in sorted(set(requests) | set(limits)):
        if "/" not in name or name.startswith("kubernetes.io/"):
            continue
        if name not in limits:
            yield f"{path}.limits.{name}: required: an extended resource must have a limit"
        elif name in requests and str(requests[name]) != str(limits[name]):
            yield f"{path}.requests.{name}: must equal limits.{name} for an extended resource"


def pytorchjob_problems(spec: dict[str, Any]) -> Iterator[str]:
    """The training operator's admission webhook (pytorch_validation.go)."""
    replicas = spec.get("pytorchReplicaSpecs") if isinstance(spec.get("pytorchReplicaSpecs"), dict) else {}
    for rtype, replica in replicas.items():
        path = f"spec.pytorchReplicaSpecs.{rtype}"
        if rtype not in ("Master", "Worker"):
            yield f"{path}: replica type must be Master or Worker"
        if not isinstance(replica, dict):
            continue
        if rtype == "Master" and replica.get("replicas", 1) != 1:
            yield f"{path}.replicas: there must be exactly 1 Master"
        template = replica.get("template") or {}
        containers = (template.get("spec") or {}).get("containers") or []
        if not any(isinstance(c, dict) and c.get("name") == "pytorch" for c in containers):
            yield f"{path}.template.spec.containers: needs a container named 'pytorch' (the operator's)"
        for i, c in enumerate(containers):
            if isinstance(c, dict) and not c.get("image"):
                yield f"{path}.template.spec.containers[{i}].image: required"
        yield from pod_template_problems(f"{path}.template", template)
    elastic = spec.get("elasticPolicy") or {}
    if spec.get("nprocPerNode") is not None and isinstance(elastic, dict) and "nProcPerNode" in elastic:
        yield "spec.elasticPolicy.nProcPerNode: deprecated; set only spec.nprocPerNode"


def trainjob_problems(spec: dict[str, Any]) -> Iterator[str]:
    """What the Trainer's webhook refuses: torchrun's own variables (PET_*) set by hand; in a
    runtime patch, env on the node container (it comes from spec.trainer) and a volume mount that
    names no volume of the patched pod."""
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else {}
    reserved = {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}
    for i, env in enumerate(trainer.get("env") or []):
        if isinstance(env, dict) and env.get("name") in reserved:
            yield f"spec.trainer.env[{i}].name: {env['name']} is set by the torch runtime; remove it"
    yield from extended_resource_problems("spec.trainer.resourcesPerNode", trainer.get("resourcesPerNode"))
    for i, patch in enumerate(spec.get("runtimePatches") or []):
        if not isinstance(patch, dict):
            continue
        template = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for j, job in enumerate(template.get("replicatedJobs") or []):
            if not isinstance(job, dict):
                continue
            jobs = f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}]"
            path = f"{jobs}.template.spec.template"
            pod_template = ((job.get("template") or {}).get("spec") or {}).get("template") or {}
            yield from label_problems(f"{path}.metadata.labels", (pod_template.get("metadata") or {}).get("labels"))
            pod = pod_template.get("spec") or {}
            volumes = {v.get("name") for v in pod.get("volumes") or [] if isinstance(v, dict)}
            for k, container in enumerate(pod.get("containers") or []):
                container = container if isinstance(container, dict) else {}
                if container.get("name") == "node" and container.get("env"):
                    yield f"{path}.spec.containers[{k}].env: the node container takes its env from spec.trainer.env"
                for m, mount in enumerate(container.get("volumeMounts") or []):
                    if isinstance(mount, dict) and mount.get("name") not in volumes:
                        yield f"{path}.spec.containers[{k}].volumeMounts[{m}].name: no volume {mount.get('name')!r}"
