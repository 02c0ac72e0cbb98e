"""Checks for the gpu-cluster-management exercise.

Every check crafts a fleet the learner has never seen (fleet_gen: NVML recordings in the
format of `gpudojo probe --record`, with hot GPUs, NVLinks down, narrowed PCIe links, MIG
layouts, idle GPUs and nodes without GPUs), runs the learner's fleet.py on it in a child
process, and compares what it printed with what fleet_ref computes from the same files.
Manifests are validated against the Kubernetes v1.33 JSON schemas in data/ (a subset of the
schemas the PyPI package kubernetes-validate bundles; data/make_k8s_schemas.py rebuilds it).
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import fleet_ref as ref
from fleet_gen import MIG_LAYOUTS, MODELS, NodeSpec, node_name, write_node

from gpudojo.worker.checkkit import fail, requirement

DATA = Path(__file__).resolve().parent / "data"
UTIL_TOL = 0.05  # percentage points
BIG = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")
SMALL = ("NVIDIA GeForce RTX 4090", "NVIDIA L4", "NVIDIA A10", "Tesla T4")


# --- helpers --------------------------------------------------------------------------------


def make_fleet(folder: Path, rng: random.Random, specs: list[NodeSpec]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [write_node(spec, folder, rng) for spec in specs]


def run_fleet(learner, argv: list[str]):
    learner.require("fleet.py")
    res = learner.run(["python", "fleet.py", *argv], timeout_s=60)
    if res.returncode not in (0, 1):
        fail(f"fleet.py {argv[0]} exited with code {res.returncode} on a fleet of {_count(argv)} nodes: {res.tail()}")
    return res


def _count(argv: list[str]) -> int:
    return sum(a.endswith(".jsonl") for a in argv)


def report_of(learner, paths: list[Path]):
    res = run_fleet(learner, ["report", *map(str, paths), "--json"])
    got = res.json()
    if not isinstance(got, dict) or not isinstance(got.get("nodes"), list):
        fail('fleet.py report --json printed JSON without a "nodes" list.')
    return res, got


def nodes_by_name(got: dict, want: dict) -> dict[str, dict]:
    """The learner's nodes by name; fails when one of the fleet's nodes is missing."""
    by_name = {n.get("node"): n for n in got["nodes"] if isinstance(n, dict)}
    for node in want["nodes"]:
        if node["node"] not in by_name:
            fail(
                f"the report has no node named {node['node']!r} (one per recording, named after the file "
                f"without .jsonl); it has {sorted(k for k in by_name if k)}."
            )
    return by_name


def gpu_of(node: dict, index: int, name: str) -> dict:
    for g in node.get("gpus") or []:
        if isinstance(g, dict) and g.get("index") == index:
            return g
    fail(f"node {name}: the report has no GPU with index {index}.")


def close(a, b, tol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return isinstance(a, (int, float)) and math.isfinite(a) and abs(a - b) <= tol


def total(got: dict, key: str):
    return (got.get("totals") or {}).get(key)


def k8s_of(learner, paths: list[Path], namespace: str, quota: int, pod: int, mig: str | None = None):
    argv = ["k8s", *map(str, paths), "--namespace", namespace, "--quota-gpus", str(quota), "--pod-gpus", str(pod)]
    if mig:
        argv += ["--mig-profile", mig]
    res = run_fleet(learner, [*argv, "--json"])
    got = res.json()
    if not isinstance(got, dict):
        fail("fleet.py k8s --json printed JSON that is not an object.")
    return res, got


def k8s_nodes(got: dict, paths: list[Path]) -> dict[str, dict]:
    by_name = {n.get("node"): n for n in got.get("nodes") or [] if isinstance(n, dict)}
    for p in paths:
        if p.stem not in by_name:
            fail(f'fleet.py k8s --json: "nodes" has no entry for node {p.stem!r} (one per recording).')
    return by_name


# --- inventory ------------------------------------------------------------------------------


@requirement("inventory")
def test_report_lists_every_node_and_gpu(learner, figures, tmp_path):
    rng = random.Random()
    used: set[str] = set()
    specs = [
        NodeSpec(node_name(rng, used), rng.choice(BIG), gpus=rng.choice([2, 4, 8])),
        NodeSpec(node_name(rng, used), rng.choice(SMALL), gpus=rng.choice([1, 2, 4])),
        NodeSpec(node_name(rng, used), rng.choice(SMALL), gpus=rng.choice([1, 2])),
        NodeSpec(node_name(rng, used), None),  # NVML did not start: no GPU
    ]
    rng.shuffle(specs)
    paths = make_fleet(tmp_path / "fleet", rng, specs)
    want = ref.report(paths)
    _, got = report_of(learner, paths)
    figures.add("nodes", want["totals"]["nodes"], note="one without GPUs")
    figures.add("GPUs", want["totals"]["gpus"])
    by_name = nodes_by_name(got, want)
    for node in want["nodes"]:
        mine = by_name[node["node"]]
        if len(mine.get("gpus") or []) != len(node["gpus"]):
            what = "a node whose NVML did not start" if not node["gpus"] else f"{len(node['gpus'])} GPUs"
            fail(f"node {node['node']} ({what}): the report lists {len(mine.get('gpus') or [])} GPUs.")
        for g in node["gpus"]:
            m = gpu_of(mine, g["index"], node["node"])
            for key in ("name", "memory_total_bytes", "compute_capability"):
                if m.get(key) != g[key]:
                    fail(
                        f"node {node['node']} GPU{g['index']}: {key} is {m.get(key)!r}; the recording says {g[key]!r}."
                    )
    for key in ("nodes", "gpus"):
        if total(got, key) != want["totals"][key]:
            fail(f"totals.{key} is {total(got, key)!r}; the fleet has {want['totals'][key]}.")


# --- health ---------------------------------------------------------------------------------


def health_of(mine: dict, where: str) -> str:
    health = mine.get("health")
    if health not in ("healthy", "degraded"):
        fail(f'{where}: "health" is {health!r}; it must be "healthy" or "degraded".')
    return health


@requirement("health")
def test_degraded_gpus_are_found_and_exit_1(learner, figures, tmp_path):
    rng = random.Random()
    used: set[str] = set()
    big = NodeSpec(node_name(rng, used), rng.choice(BIG), gpus=rng.choice([4, 8]))
    other = NodeSpec(node_name(rng, used), "NVIDIA A100-SXM4-80GB", gpus=rng.choice([2, 4]))
    small = NodeSpec(node_name(rng, used), rng.choice(SMALL), gpus=rng.choice([1, 2, 4]))
    # One fault of each kind, each on a GPU of its own, sometimes two on one GPU. The idle
    # GPUs' PCIe generation drops (power saving), which is not a fault.
    hot = rng.randrange(big.gpus)
    big.hot.add(hot)
    links = MODELS[big.model]["nvlinks"]
    big.nvlink_down[(hot + 1) % big.gpus] = sorted(rng.sample(range(links), rng.randint(1, 3)))
    narrow = rng.randrange(small.gpus)
    small.pcie_narrow.add(narrow)
    if rng.random() < 0.5:
        small.hot.add(narrow)
    other.mig_pending.add(rng.randrange(other.gpus))
    other.util = dict.fromkeys(range(other.gpus), "idle")
    specs = [big, other, small, NodeSpec(node_name(rng, used), None)]
    rng.shuffle(specs)
    paths = make_fleet(tmp_path / "fleet", rng, specs)
    want = ref.report(paths)
    res, got = report_of(learner, paths)
    figures.add("GPUs", want["totals"]["gpus"])
    figures.add("degraded GPUs", want["totals"]["degraded"], note="hot, NVLink down, PCIe x8, MIG change pending")
    by_name = nodes_by_name(got, want)
    for node in want["nodes"]:
        for g in node["gpus"]:
            where = f"node {node['node']} GPU{g['index']}"
            mine = gpu_of(by_name[node["node"]], g["index"], node["node"])
            if health_of(mine, where) != g["health"]:
                why = ", ".join(g["problems"]) or "it breaks none of the README's rules"
                fail(
                    f"{where} is reported {mine['health']}; it is {g['health']} "
                    f"({why}; max temperature {g['max_temperature_c']} C)."
                )
            problems = mine.get("problems")
            if not isinstance(problems, list) or sorted(map(str, problems)) != sorted(g["problems"]):
                fail(f"{where}: problems {problems!r}; expected {sorted(g['problems'])}.")
    for key in ("healthy", "degraded"):
        if total(got, key) != want["totals"][key]:
            fail(f"totals.{key} is {total(got, key)!r}; the fleet has {want['totals'][key]}.")
    figures.add("exit code", res.returncode, note="1 expected: some GPUs are degraded")
    if res.returncode != 1:
        fail(
            f"fleet.py report exited with code {res.returncode} with {want['totals']['degraded']} degraded GPUs; "
            "expected 1."
        )


@requirement("health")
def test_a_healthy_fleet_exits_0(learner, figures, tmp_path):
    rng = random.Random()
    used: set[str] = set()
    specs = [
        NodeSpec(node_name(rng, used), rng.choice(BIG), gpus=rng.choice([2, 8]), mig={0: rng.choice(MIG_LAYOUTS)}),
        NodeSpec(node_name(rng, used), rng.choice(SMALL), gpus=rng.choice([1, 4])),
        NodeSpec(node_name(rng, used), None),
    ]
    paths = make_fleet(tmp_path / "fleet", rng, specs)
    want = ref.report(paths)
    assert want["totals"]["degraded"] == 0
    res, got = report_of(learner, paths)
    by_name = nodes_by_name(got, want)
    flagged = []
    for node in want["nodes"]:
        for g in node["gpus"]:
            where = f"node {node['node']} GPU{g['index']}"
            mine = gpu_of(by_name[node["node"]], g["index"], node["node"])
            if health_of(mine, where) != "healthy":
                flagged.append(f"{where} ({', '.join(map(str, mine.get('problems') or [])) or 'no problem named'})")
    figures.add("GPUs", want["totals"]["gpus"], note="all healthy; idle links run at PCIe gen 1")
    figures.add("exit code", res.returncode)
    if flagged:
        fail(
            "every GPU of this fleet is healthy (peaks at or below 82 C, links up, PCIe x16), "
            f"but the report flags {'; '.join(flagged)}."
        )
    if res.returncode != 0:
        fail(f"fleet.py report exited with code {res.returncode} on a fleet whose GPUs are all healthy; expected 0.")


# --- MIG ------------------------------------------------------------------------------------


@requirement("mig-layout")
def test_mig_instances_and_profiles(learner, figures, tmp_path):
    rng = random.Random()
    used: set[str] = set()
    a100 = NodeSpec(node_name(rng, used), "NVIDIA A100-SXM4-80GB", gpus=rng.choice([4, 8]))
    for i in rng.sample(range(a100.gpus), rng.randint(1, 3)):
        a100.mig[i] = rng.choice(MIG_LAYOUTS)
    h100 = NodeSpec(node_name(rng, used), "NVIDIA H100 80GB HBM3", gpus=2)
    if rng.random() < 0.5:
        h100.mig[rng.randrange(2)] = rng.choice(MIG_LAYOUTS)
    specs = [
        a100,
        h100,
        NodeSpec(node_name(rng, used), rng.choice(SMALL), gpus=1),
        NodeSpec(node_name(rng, used), None),
    ]
    rng.shuffle(specs)
    paths = make_fleet(tmp_path / "fleet", rng, specs)
    want = ref.report(paths)
    _, got = report_of(learner, paths)
    figures.add("MIG instances", want["totals"]["mig_instances"])
    figures.add("GPUs in MIG mode", sum(g["mig"]["mode"] == "enabled" for n in want["nodes"] for g in n["gpus"]))
    by_name = nodes_by_name(got, want)
    for node in want["nodes"]:
        for g in node["gpus"]:
            mine = gpu_of(by_name[node["node"]], g["index"], node["node"])
            where = f"node {node['node']} GPU{g['index']}"
            mig = mine.get("mig")
            if not isinstance(mig, dict):
                fail(f'{where}: the report has no "mig" object (mode and instances).')
            if mig.get("mode") != g["mig"]["mode"]:
                fail(f"{where}: MIG mode {mig.get('mode')!r}; the recording says {g['mig']['mode']!r}.")
            expected = sorted((i["profile"], i["memory_total_bytes"]) for i in g["mig"]["instances"])
            instances = mig.get("instances") or []
            if not isinstance(instances, list) or not all(isinstance(i, dict) for i in instances):
                fail(f"{where}: mig.instances must be a list of objects with profile and memory_total_bytes.")
            found = sorted(((i.get("profile"), i.get("memory_total_bytes")) for i in instances), key=str)
            if found != expected:
                fail(
                    f"{where}: MIG instances {found}; the recording has {expected} "
                    "(profile = the instance name after 'MIG ', and its memory_total_bytes)."
                )
    if total(got, "mig_instances") != want["totals"]["mig_instances"]:
        fail(
            f"totals.mig_instances is {total(got, 'mig_instances')!r}; the fleet has {want['totals']['mig_instances']}."
        )


# --- utilisation ----------------------------------------------------------------------------


@requirement("utilisation")
def test_utilisation_mean_p95_and_idle(learner, figures, tmp_path):
    rng = random.Random()
    used: set[str] = set()
    n1 = NodeSpec(node_name(rng, used), rng.choice(BIG), gpus=8, samples=rng.randint(40, 90))
    n1.util = dict(enumerate(["idle", "idle", "busy", "bursty", "light", "ramp", "busy", "idle"]))
    n1.util_gaps = {2, 4}  # some readings missing (null) on two GPUs
    n2 = NodeSpec(node_name(rng, used), "NVIDIA A100-SXM4-80GB", gpus=2, mig={1: rng.choice(MIG_LAYOUTS)})
    n2.util = {0: rng.choice(["idle", "light"])}
    n3 = NodeSpec(node_name(rng, used), rng.choice(SMALL), gpus=rng.choice([1, 2]), samples=rng.randint(20, 60))
    specs = [n1, n2, n3, NodeSpec(node_name(rng, used), None, samples=5)]
    rng.shuffle(specs)
    paths = make_fleet(tmp_path / "fleet", rng, specs)
    want = ref.report(paths)
    _, got = report_of(learner, paths)
    figures.add("idle GPUs", want["totals"]["idle"], note="mean utilisation below 5 %")
    by_name = nodes_by_name(got, want)
    for node in want["nodes"]:
        for g in node["gpus"]:
            mine = gpu_of(by_name[node["node"]], g["index"], node["node"])
            where = f"node {node['node']} GPU{g['index']}"
            util, expected = mine.get("utilization_gpu_pct"), g["utilization_gpu_pct"]
            if not isinstance(util, dict):
                fail(f'{where}: the report has no "utilization_gpu_pct" object (mean and p95).')
            for key in ("mean", "p95"):
                if not close(util.get(key), expected[key], UTIL_TOL):
                    mig = " (in MIG mode NVML gives no utilisation: null)" if expected[key] is None else ""
                    fail(
                        f"{where}: utilisation {key} {util.get(key)!r} %; the recording gives {expected[key]!r}{mig} "
                        f"(tolerance {UTIL_TOL} points; null readings skipped)."
                    )
            if mine.get("idle") is not g["idle"]:
                fail(
                    f"{where}: idle is {mine.get('idle')!r}; its mean utilisation is {expected['mean']} %, "
                    f"so it should be {g['idle']}."
                )
    for node in want["nodes"]:
        mine = by_name[node["node"]]
        if mine.get("samples") != node["samples"]:
            fail(f"node {node['node']}: samples is {mine.get('samples')!r}; the recording has {node['samples']}.")
        if not close(mine.get("window_s"), node["window_s"], 0.01):
            span = f"{node['window_s']:.3f} s"
            fail(f"node {node['node']}: window_s is {mine.get('window_s')!r}; the recording spans {span}.")
    busiest = max(g["utilization_gpu_pct"]["p95"] or 0 for n in want["nodes"] for g in n["gpus"])
    figures.add("p95 of the busiest GPU", busiest, "%")
    if total(got, "idle") != want["totals"]["idle"]:
        fail(f"totals.idle is {total(got, 'idle')!r}; the fleet has {want['totals']['idle']} idle GPUs.")


# --- Kubernetes: labels ---------------------------------------------------------------------

# Label syntax: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MIG_COUNT = re.compile(r"^nvidia\.com/mig-.*\.count$")


def label_error(key, value) -> str | None:
    if not isinstance(key, str) or not isinstance(value, str):
        return f"{key!r}: {value!r}: label keys and values are strings (write {str(value)!r}, not {value!r})"
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return f"{key!r}: the prefix {prefix!r} is not a DNS subdomain"
    if len(name) > 63 or not LABEL_NAME.match(name):
        return f"{key!r}: the name part must be at most 63 characters of letters, digits, '-', '_' and '.'"
    if len(value) > 63 or (value and not LABEL_NAME.match(value)):
        return f"{key}={value!r}: a value is at most 63 characters of letters, digits, '-', '_' and '.' (no spaces)"
    return None


def labelled_fleet(tmp_path: Path, rng: random.Random) -> list[Path]:
    used: set[str] = set()
    mig = NodeSpec(node_name(rng, used), "NVIDIA A100-SXM4-80GB", gpus=rng.choice([4, 8]))
    for i in rng.sample(range(mig.gpus), rng.randint(1, 2)):
        mig.mig[i] = rng.choice(MIG_LAYOUTS)
    specs = [
        mig,
        NodeSpec(node_name(rng, used), "NVIDIA H100 80GB HBM3", gpus=rng.choice([2, 8])),
        NodeSpec(node_name(rng, used), rng.choice(SMALL), gpus=rng.choice([1, 2, 4])),
        NodeSpec(node_name(rng, used), None),
    ]
    rng.shuffle(specs)
    return make_fleet(tmp_path / "fleet", rng, specs)


def check_labels(name: str, mine, want: dict[str, str]) -> int:
    """Compare one node's labels with the expected ones; returns how many were compared."""
    if not isinstance(mine, dict):
        fail(f'node {name}: "labels" must be an object of label keys to values.')
    for key, value in mine.items():
        err = label_error(key, value)
        if err:
            fail(f"node {name}: label {err}.")
    if not want:
        claims = {k: v for k, v in mine.items() if k.startswith("nvidia.com/") and v not in ("0", "false")}
        if claims:
            fail(f"node {name} has no GPU (its NVML did not start), but it is labelled {claims}.")
        return 0
    for key, value in want.items():
        if key not in mine:
            fail(f"node {name} has no label {key} (expected {value!r}).")
        if mine[key] != value:
            fail(f"node {name}: {key}={mine[key]!r}; from the recording it is {value!r}.")
    extra = sorted(k for k in mine if MIG_COUNT.match(k) and k not in want)
    if extra:
        fail(f"node {name}: {extra} count MIG devices the node does not have.")
    if mine.get("nvidia.com/mig.strategy", "mixed") != "mixed":
        fail(f"node {name}: nvidia.com/mig.strategy={mine['nvidia.com/mig.strategy']!r}; the fleet uses 'mixed'.")
    return len(want)


@requirement("node-labels")
def test_node_labels_match_the_fleet(learner, figures, tmp_path):
    rng = random.Random()
    paths = labelled_fleet(tmp_path, rng)
    _, got = k8s_of(learner, paths, "ml-" + "".join(rng.choices("abcxyz", k=4)), 8, 1)
    nodes = k8s_nodes(got, paths)
    checked = sum(check_labels(p.stem, nodes[p.stem].get("labels"), ref.labels(p)) for p in paths)
    figures.add("labels compared", checked, note=f"{len(paths)} nodes, one with MIG, one without GPUs")


# --- Kubernetes: manifests ------------------------------------------------------------------

_VALIDATORS: dict[str, object] = {}


def validator(kind: str):
    """A jsonschema validator of the vendored Kubernetes v1.33 schema of `kind`."""
    if not _VALIDATORS:
        import jsonschema
        from referencing import Registry, Resource

        data = json.loads((DATA / "k8s-schemas-v1.33.json").read_text())
        registry = Resource.from_contents(data["definitions"]) @ Registry()
        for name, schema in data["kinds"].items():
            resource = Resource.from_contents(schema)
            _VALIDATORS[name] = jsonschema.Draft202012Validator(schema, registry=resource @ registry)
    return _VALIDATORS.get(kind)


def schema_errors(obj: dict) -> list[str]:
    errors = sorted(validator(obj.get("kind")).iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}" for e in errors]


def quantity(value) -> int | None:
    """A whole-number quantity ('2' or 2); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d+", value.strip()):
        return int(value)
    return None


def manifests_of(got: dict) -> tuple[dict, dict]:
    """The ResourceQuota and the Pod, each validated against the Kubernetes schemas."""
    objs = got.get("manifests")
    if not isinstance(objs, list):
        fail('fleet.py k8s --json printed no "manifests" list.')
    kinds = [o.get("kind") if isinstance(o, dict) else None for o in objs]
    for obj, kind in zip(objs, kinds, strict=True):
        if kind not in ("Namespace", "ResourceQuota", "Pod"):
            fail(f"manifests holds a {kind!r}; only Namespace, ResourceQuota and Pod objects are expected here.")
        errors = schema_errors(obj)
        if errors:
            name = (obj.get("metadata") or {}).get("name")
            fail(f"the {kind} {name!r} is not valid against the Kubernetes v1.33 schema: " + "; ".join(errors[:3]))
    for kind in ("ResourceQuota", "Pod"):
        if kinds.count(kind) != 1:
            fail(f"manifests must hold exactly one {kind}; it holds {kinds.count(kind)}.")
    return objs[kinds.index("ResourceQuota")], objs[kinds.index("Pod")]


def pod_requests(pod: dict) -> dict[str, int]:
    """Devices the pod asks for, summed over its containers; fails on an inconsistent spec."""
    out: dict[str, int] = {}
    for c in pod["spec"].get("containers") or []:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        for key in set(limits) | set(requests):
            if not key.startswith("nvidia.com/"):
                continue
            where = f"container {c.get('name')!r}"
            if key not in limits:
                fail(f"{where} requests {key} without a limit: extended resources are set in limits.")
            n = quantity(limits[key])
            if n is None:
                fail(f"{where}: the {key} limit {limits[key]!r} is not a whole number of devices.")
            if key in requests and quantity(requests[key]) != n:
                fail(
                    f"{where}: {key} request {requests[key]!r} differs from its limit {limits[key]!r}; make them equal."
                )
            out[key] = out.get(key, 0) + n
    return out


def check_quota(rq: dict, what: str, quota: int, profiles: list[str]) -> None:
    hard = (rq.get("spec") or {}).get("hard") or {}
    bad = sorted(k for k in hard if k.startswith(("limits.nvidia.com/", "nvidia.com/")))
    if bad:
        fail(f"{what}: the ResourceQuota limits {bad}; for extended resources only requests.<name> is allowed.")
    for key in ["requests.nvidia.com/gpu", *(f"requests.nvidia.com/mig-{p}" for p in profiles)]:
        if quantity(hard.get(key)) != quota:
            why = " (a quota on nvidia.com/gpu does not cover MIG devices: each needs its own)" if "mig-" in key else ""
            fail(f"{what}: the ResourceQuota's {key} is {hard.get(key)!r}; expected {quota}{why}.")


@requirement("manifests-valid")
def test_quota_and_pod_are_valid_kubernetes(learner, figures, tmp_path):
    rng = random.Random()
    paths = labelled_fleet(tmp_path, rng)
    profiles = sorted(ref.mig_profiles(paths))
    namespace = f"team-{rng.choice(['vision', 'nlp', 'rec'])}-{rng.randint(1, 99)}"
    quota = rng.randint(3, 8)
    for resource, count, mig in [("nvidia.com/gpu", 1, None), (f"nvidia.com/mig-{profiles[0]}", 1, profiles[0])]:
        _, got = k8s_of(learner, paths, namespace, quota, count, mig)
        rq, pod = manifests_of(got)
        what = f"--namespace {namespace} --quota-gpus {quota} --pod-gpus {count}" + (
            f" --mig-profile {mig}" if mig else ""
        )
        for obj in (rq, pod):
            ns = (obj.get("metadata") or {}).get("namespace")
            if ns != namespace:
                fail(f"{what}: the {obj['kind']} is in namespace {ns!r}, not {namespace!r}.")
        check_quota(rq, what, quota, profiles)
        asked = pod_requests(pod)
        if asked != {resource: count}:
            fail(f"{what}: the Pod asks for {asked or 'no device'}; expected {{{resource!r}: {count}}} in its limits.")
        selector = pod["spec"].get("nodeSelector")
        if not isinstance(selector, dict) or not selector:
            fail(f"{what}: the Pod has no nodeSelector.")
        figures.add(f"Pod asks for {resource}", count, note=f"nodeSelector {selector}")
    figures.add("schema", "Kubernetes v1.33 (strict)", note="Namespace, ResourceQuota, Pod")


# --- Kubernetes: does it fit? ---------------------------------------------------------------


def matching(selector: dict, nodes: dict[str, dict]) -> list[str]:
    """Nodes whose labels (as fleet.py gave them, plus kubernetes.io/hostname) match."""
    out = []
    for name, view in nodes.items():
        labels = {**(view.get("labels") or {}), "kubernetes.io/hostname": name}
        if all(labels.get(k) == v for k, v in selector.items()):
            out.append(name)
    return out


def schedulable_fleet(tmp_path: Path, rng: random.Random) -> tuple[list[Path], str, str]:
    """The biggest node has 8 GPUs, one degraded: 7 can be allocated, and no other node has
    more than 4 full GPUs. A MIG node offers MIG devices and two full GPUs."""
    used: set[str] = set()
    big = NodeSpec(node_name(rng, used), rng.choice(BIG), gpus=8)
    fault, bad = rng.choice(["hot", "nvlink", "pcie"]), rng.randrange(8)
    if fault == "hot":
        big.hot.add(bad)
    elif fault == "nvlink":
        big.nvlink_down[bad] = [rng.randrange(MODELS[big.model]["nvlinks"])]
    else:
        big.pcie_narrow.add(bad)
    mig = NodeSpec(node_name(rng, used), "NVIDIA A100-SXM4-80GB", gpus=4)
    for i in rng.sample(range(4), 2):
        mig.mig[i] = rng.choice(MIG_LAYOUTS)
    small = NodeSpec(node_name(rng, used), rng.choice(SMALL), gpus=rng.choice([2, 4]))
    specs = [big, mig, small, NodeSpec(node_name(rng, used), None)]
    rng.shuffle(specs)
    return make_fleet(tmp_path / "fleet", rng, specs), big.name, fault


@requirement("schedulable")
def test_pod_and_quota_fit_the_fleet(learner, figures, tmp_path):
    rng = random.Random()
    paths, big, fault = schedulable_fleet(tmp_path, rng)
    alloc = {p.stem: ref.allocatable(p) for p in paths}
    profiles = sorted(ref.mig_profiles(paths))
    namespace = f"ml-{rng.randint(100, 999)}"

    # 1. What each node can allocate.
    _, got = k8s_of(learner, paths, namespace, 8, 1)
    nodes = k8s_nodes(got, paths)
    for name, want in alloc.items():
        mine = nodes[name].get("allocatable")
        if not isinstance(mine, dict):
            fail(f'node {name}: "allocatable" must be an object of resource names to counts.')
        mine = {k: v for k, v in mine.items() if v not in (0, "0")}
        if mine != want:
            fail(
                f"node {name}: allocatable {mine}; the device plugin (mixed MIG strategy) would offer "
                f"{want or 'nothing'} (full GPUs as nvidia.com/gpu, MIG devices as nvidia.com/mig-<profile>, "
                "degraded GPUs left out)."
            )
    figures.add("allocatable on the 8-GPU node", alloc[big].get("nvidia.com/gpu", 0), "GPUs", note=f"one is {fault}")

    # 2. Requests that fit: 7 full GPUs (only the node with a degraded GPU can hold them) and one MIG device.
    profile = rng.choice(profiles)
    for resource, count, mig, quota in [("nvidia.com/gpu", 7, None, 8), (f"nvidia.com/mig-{profile}", 1, profile, 4)]:
        res, got = k8s_of(learner, paths, namespace, quota, count, mig)
        what = f"--pod-gpus {count}" + (f" --mig-profile {mig}" if mig else "") + f" --quota-gpus {quota}"
        able = [n for n in alloc if alloc[n].get(resource, 0) >= count]
        if got.get("problems"):
            fail(f"{what}: the request fits (on {able}), but fleet.py reports problems: {got['problems']}.")
        if res.returncode != 0:
            fail(f"{what}: the request fits the fleet, but fleet.py k8s exited with code {res.returncode}; expected 0.")
        _, pod = manifests_of(got)
        selector = pod["spec"].get("nodeSelector") or {}
        chosen = matching(selector, k8s_nodes(got, paths))
        figures.add(f"nodes the nodeSelector picks ({resource} x{count})", len(chosen), note=", ".join(chosen))
        if not selector or not set(chosen) & set(able):
            fail(
                f"{what}: the Pod's nodeSelector {selector} matches {chosen or 'no node'}, and none of them can "
                f"allocate {count} {resource} (the nodes that can: {able})."
            )

    # 3. Requests that do not fit must be flagged, with exit code 1.
    missing = next(p for p in ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"] if p not in profiles)
    refused = [
        ("--pod-gpus 8", 8, 8, None, "8 GPUs: the only 8-GPU node has a degraded GPU, so 7 at most"),
        ("--pod-gpus 3 --quota-gpus 2", 2, 3, None, "3 GPUs in a namespace whose quota is 2"),
        (f"--mig-profile {missing}", 4, 1, missing, f"a {missing} MIG device, a profile no node has"),
    ]
    for what, quota, count, mig, why in refused:
        res, got = k8s_of(learner, paths, namespace, quota, count, mig)
        if not got.get("problems"):
            fail(f'{what}: the pod asks for {why}; fleet.py must say so in "problems" (it reports none).')
        if res.returncode != 1:
            fail(f"{what}: the pod asks for {why}; fleet.py k8s exited with code {res.returncode}, expected 1.")
    figures.add("requests refused", len(refused), note="over the healthy GPUs, over the quota, missing MIG profile")
