"""Checks for the gpu-introspection exercise.

gpu_info.py runs as a child process against replayed NVML sessions: replay_pynvml.py is
copied as ``pynvml.py`` into a folder that goes first on the child's PYTHONPATH, and it
serves a recording of data/ (or a copy the check modified: an NVLink down, a MIG mode change
pending, a GPU's memory nearly full, no GPU at all). CUDA is hidden from those runs, so the
benchmarks must say they did not run. The facts, the health and the exit code each run
should give are worked out here from the recording itself. On a machine with a GPU, the last
check runs gpu_info.py on the real GPU and measures the copy bandwidth and the matmul rate
again in this process.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import statistics
from pathlib import Path

from gpudojo.worker.checkkit import fail, requirement

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RECORDINGS = {
    "1gpu": ("1gpu-rtx4090.jsonl", "the 1-GPU recording (RTX 4090)"),
    "2gpu": ("2gpu-h100-nvlink.jsonl", "the 2-GPU recording (2x H100 joined by NVLink)"),
    "8gpu": ("8gpu-a100-mig.jsonl", "the 8-GPU recording (8x A100 on NVSwitch, GPU 0 in MIG mode)"),
}
RUN_TIMEOUT_S = 60
MEMORY_FULL_SHARE = 0.95  # the README's rule

TOP_KEYS = {"status", "exit_code", "problems", "host", "driver_version", "gpus", "topology", "benchmarks", "error"}
HOST_KEYS = {"cpu_model", "cpu_count", "memory_total_bytes", "os", "python", "torch"}
GPU_KEYS = {
    "index",
    "name",
    "uuid",
    "pci_bus_id",
    "compute_capability",
    "memory_total_bytes",
    "memory_used_bytes",
    "mig",
    "nvlink",
}
BENCH_KEYS = {"ran", "reason", "results"}
STATUS = {0: "healthy", 1: "degraded", 2: "no-gpu"}

# --- recordings -----------------------------------------------------------------------------


def read_recording(name: str) -> tuple[dict, dict]:
    """(inventory, first sample) of a recording in data/."""
    inventory = sample = None
    with open(DATA / RECORDINGS[name][0], encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["type"] == "inventory" and inventory is None:
                inventory = record
            elif record["type"] == "sample" and sample is None:
                sample = record
    return inventory, sample


def first_sample_of(sample: dict, index: int) -> dict:
    return next(g for g in sample["gpus"] if g["index"] == index)


def expected_problems(inventory: dict, sample: dict) -> set[tuple[str, int]]:
    """The README's rules applied to a recording: {(check, gpu index)}."""
    found = set()
    for g in inventory["gpus"]:
        links = g.get("nvlinks") or []
        active = sum(1 for link in links if link["active"])
        if 0 < active < len(links):
            found.add(("nvlink", g["index"]))
        mig = g["mig"]
        if mig["current"] in ("enabled", "disabled") and mig["pending"] != mig["current"]:
            found.add(("mig", g["index"]))
        if mig["current"] == "enabled" and not mig["instances"]:
            found.add(("mig", g["index"]))
        used = first_sample_of(sample, g["index"])["memory_used_bytes"]
        if used / g["memory_total_bytes"] > MEMORY_FULL_SHARE:
            found.add(("memory", g["index"]))
    return found


# --- running gpu_info.py on a replay -----------------------------------------------------------

_RUNS: dict[tuple[str, bool], tuple] = {}


def replay_dir(learner) -> Path:
    folder = learner.scratch / "nvml-replay"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "replay_pynvml.py", folder / "pynvml.py")
    return folder


def write_recording(folder: Path, name: str, inventory: dict, sample: dict) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text(json.dumps(inventory) + "\n" + json.dumps(sample) + "\n", encoding="utf-8")
    return path


def craft(case: str) -> tuple[dict, dict, str]:
    """A modified copy of a recording: (inventory, sample, what was changed, in words)."""
    rng = random.Random()
    if case == "nvlink-down":
        inventory, sample = read_recording("2gpu")
        inventory = copy.deepcopy(inventory)
        link = rng.randrange(len(inventory["gpus"][0]["nvlinks"]))
        for g in inventory["gpus"]:  # a broken link is down at both ends
            g["nvlinks"][link]["active"] = False
        return inventory, sample, f"the 2-GPU recording with NVLink {link} down on both GPUs"
    if case == "mig-pending":
        inventory, sample = read_recording("8gpu")
        inventory = copy.deepcopy(inventory)
        gpu = rng.randrange(1, len(inventory["gpus"]))
        inventory["gpus"][gpu]["mig"]["pending"] = "enabled"
        return inventory, sample, f"the 8-GPU recording with MIG enabled but pending a reset on GPU {gpu}"
    if case == "memory-full":
        inventory, sample = read_recording("1gpu")
        sample = copy.deepcopy(sample)
        total = inventory["gpus"][0]["memory_total_bytes"]
        share = rng.uniform(0.965, 0.995)
        used = int(total * share)
        sample["gpus"][0].update(memory_used_bytes=used, memory_free_bytes=total - used)
        return inventory, sample, f"the 1-GPU recording with {share:.1%} of its memory in use"
    if case == "zero-gpus":
        inventory, sample = read_recording("1gpu")
        inventory = {**copy.deepcopy(inventory), "gpus": [], "topology": {"gpus": [], "matrix": []}}
        return inventory, {**sample, "gpus": []}, "a driver that reports zero GPUs"
    raise KeyError(case)


def run_case(learner, case: str, *, as_json: bool = True):
    """(result, inventory, sample, description) of gpu_info.py on one replayed machine; each
    case runs once per check session."""
    key = (case, as_json)
    if key in _RUNS:
        return _RUNS[key]
    learner.require("gpu_info.py")
    folder = replay_dir(learner)
    env = {"PYTHONPATH": f"{folder}{os.pathsep}{learner.dir}", "CUDA_VISIBLE_DEVICES": ""}
    inventory = sample = None
    if case in RECORDINGS:
        inventory, sample = read_recording(case)
        env["GPUDOJO_NVML_REPLAY"] = str(DATA / RECORDINGS[case][0])
        what = RECORDINGS[case][1]
    elif case.startswith("error:"):
        env["GPUDOJO_NVML_REPLAY_ERROR"] = case.split(":", 1)[1]
        what = f"a machine where nvmlInit raises NVMLError_{case.split(':', 1)[1]}"
    else:
        inventory, sample, what = craft(case)
        env["GPUDOJO_NVML_REPLAY"] = str(write_recording(folder, case, inventory, sample))
    argv = ["python", "gpu_info.py", *(["--json"] if as_json else [])]
    res = learner.run(argv, env=env, timeout_s=RUN_TIMEOUT_S)
    _RUNS[key] = (res, inventory, sample, what)
    return _RUNS[key]


def report_of(res, what: str) -> dict:
    """The JSON document gpu_info.py --json printed, or a failure that says what happened."""
    if res.returncode not in (0, 1, 2):
        fail(f"python gpu_info.py --json on {what} crashed (exit code {res.returncode}): {res.tail()}")
    try:
        doc = json.loads(res.stdout)
    except json.JSONDecodeError as err:
        if "Traceback" in res.stderr:
            fail(f"python gpu_info.py --json on {what} crashed (exit code {res.returncode}): {res.tail()}")
        fail(
            f"python gpu_info.py --json on {what} did not print one JSON document on stdout ({err}); "
            f"it began: {res.stdout.strip()[:200]!r}"
        )
    if not isinstance(doc, dict):
        fail(f"python gpu_info.py --json on {what} printed a {type(doc).__name__}, not a JSON object.")
    return doc


def gpus_of(doc: dict, what: str) -> list[dict]:
    gpus = doc.get("gpus")
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        fail(f"on {what}, the report's 'gpus' is not a list of objects: {str(gpus)[:200]}")
    return sorted(gpus, key=lambda g: g.get("index", 0) if isinstance(g.get("index"), int) else 0)


def problems_of(doc: dict, what: str) -> set[tuple[str, int | None]]:
    problems = doc.get("problems")
    if not isinstance(problems, list) or not all(isinstance(p, dict) for p in problems):
        fail(f"on {what}, the report's 'problems' is not a list of objects: {str(problems)[:200]}")
    return {(p.get("check"), p.get("gpu")) for p in problems}


# --- gpu-facts --------------------------------------------------------------------------------


@requirement("gpu-facts")
def test_facts_match_each_recording(learner, figures):
    for name in RECORDINGS:
        res, inventory, sample, what = run_case(learner, name)
        doc = report_of(res, what)
        gpus = gpus_of(doc, what)
        figures.add(f"GPUs reported, {name}", len(gpus), "", f"the recording has {len(inventory['gpus'])}")
        if len(gpus) != len(inventory["gpus"]):
            fail(f"on {what}, gpu_info.py reported {len(gpus)} GPUs; NVML lists {len(inventory['gpus'])}.")
        if doc.get("driver_version") != inventory["driver_version"]:
            fail(
                f"on {what}, driver_version is {doc.get('driver_version')!r}; "
                f"nvmlSystemGetDriverVersion() gives {inventory['driver_version']!r}."
            )
        for want, got in zip(inventory["gpus"], gpus, strict=True):
            used = first_sample_of(sample, want["index"])["memory_used_bytes"]
            expect = {
                "index": want["index"],
                "name": want["name"],
                "compute_capability": want["compute_capability"],
                "memory_total_bytes": want["memory_total_bytes"],
                "memory_used_bytes": used,
            }
            for key, value in expect.items():
                if got.get(key) != value:
                    fail(
                        f"on {what}, GPU {want['index']}'s {key} is {got.get(key)!r}; NVML says {value!r}"
                        + (" (as a 'major.minor' string)" if key == "compute_capability" else "")
                        + "."
                    )


# --- topology ---------------------------------------------------------------------------------


def pair_map(doc: dict, what: str) -> dict[tuple[int, int], dict]:
    pairs = doc.get("topology")
    if not isinstance(pairs, list):
        fail(f"on {what}, the report's 'topology' is not a list: {str(pairs)[:200]}")
    out = {}
    for p in pairs:
        try:
            i, j = sorted(int(x) for x in p["gpus"])
        except (KeyError, TypeError, ValueError):
            fail(f"on {what}, a topology entry has no 'gpus': [i, j]: {str(p)[:200]}")
        out[(i, j)] = p
    return out


def check_nvlink_summary(gpu: dict, links: int, down: list[int], what: str) -> None:
    want = {"links": links, "active": links - len(down), "down": down}
    got = gpu.get("nvlink")
    if not isinstance(got, dict) or any(got.get(k) != v for k, v in want.items()):
        fail(f"on {what}, GPU {gpu.get('index')}'s nvlink is {got}; NVML says {want}.")


@requirement("topology")
def test_nvlinks_and_pairs(learner, figures):
    # Two H100s joined by 18 NVLinks.
    res, inventory, _, what = run_case(learner, "2gpu")
    doc = report_of(res, what)
    for g in gpus_of(doc, what):
        check_nvlink_summary(g, 18, [], what)
    pairs = pair_map(doc, what)
    got = pairs.get((0, 1))
    figures.add("GPU 0 <-> GPU 1, 2-GPU recording", (got or {}).get("link"), "", "expected NV18")
    if got is None:
        fail(f"on {what}, the topology has no entry for GPUs [0, 1]; it has {sorted(pairs)}.")
    if got.get("link") != "NV18" or got.get("nvlinks") != 18:
        fail(f"on {what}, GPUs 0 and 1 are reported as {got}; they share 18 active NVLinks: link 'NV18', nvlinks 18.")

    # The same pair with one link down at both ends.
    res, inventory, _, what = run_case(learner, "nvlink-down")
    doc = report_of(res, what)
    down = [k for k, link in enumerate(inventory["gpus"][0]["nvlinks"]) if not link["active"]]
    for g in gpus_of(doc, what):
        check_nvlink_summary(g, 18, down, what)
    got = pair_map(doc, what).get((0, 1)) or {}
    figures.add("GPU 0 <-> GPU 1, one link down", got.get("link"), "", "expected NV17")
    if got.get("link") != "NV17" or got.get("nvlinks") != 17:
        fail(f"on {what}, GPUs 0 and 1 are reported as {got or 'nothing'}; 17 links are active: 'NV17', nvlinks 17.")

    # One GPU: no NVLink, no pairs.
    res, _, _, what = run_case(learner, "1gpu")
    doc = report_of(res, what)
    for g in gpus_of(doc, what):
        check_nvlink_summary(g, 0, [], what)
    if pair_map(doc, what):
        fail(f"on {what}, the topology lists pairs of GPUs, but there is only one GPU.")

    # Eight A100s whose links all end at NVSwitches.
    res, inventory, _, what = run_case(learner, "8gpu")
    doc = report_of(res, what)
    for g in gpus_of(doc, what):
        check_nvlink_summary(g, 12, [], what)
    pairs = pair_map(doc, what)
    n = len(inventory["gpus"])
    want = {(i, j) for i in range(n) for j in range(i + 1, n)}
    if set(pairs) != want:
        fail(f"on {what}, the topology has {len(pairs)} pairs; 8 GPUs make {len(want)} pairs (each i < j once).")
    wrong = {k: p.get("link") for k, p in pairs.items() if p.get("link") != "NV12"}
    figures.add("pairs reported NV12, 8-GPU recording", len(pairs) - len(wrong), "", "of 28")
    if wrong:
        (i, j), link = sorted(wrong.items())[0]
        fail(
            f"on {what}, GPUs {i} and {j} are reported as {link!r}; their 12 links each end at an NVSwitch, "
            f"and NVML's P2P status over NVLink says the switches join them: 'NV12' ({len(wrong)} pairs wrong)."
        )


# --- mig ----------------------------------------------------------------------------------------


def mig_of(gpu: dict, what: str) -> dict:
    mig = gpu.get("mig")
    if not isinstance(mig, dict):
        fail(f"on {what}, GPU {gpu.get('index')} has no 'mig' object: {str(mig)[:200]}")
    return mig


@requirement("mig")
def test_mig_state(learner, figures):
    res, inventory, _, what = run_case(learner, "8gpu")
    doc = report_of(res, what)
    gpus = gpus_of(doc, what)
    if len(gpus) != len(inventory["gpus"]):
        fail(f"on {what}, gpu_info.py reported {len(gpus)} GPUs; NVML lists {len(inventory['gpus'])}.")
    for want, got in zip(inventory["gpus"], gpus, strict=True):
        mig = mig_of(got, what)
        for key in ("current", "pending"):
            if mig.get(key) != want["mig"][key]:
                fail(
                    f"on {what}, GPU {want['index']}'s MIG {key} mode is {mig.get(key)!r}; "
                    f"NVML says {want['mig'][key]!r}."
                )
        fields = ("name", "gpu_instance_id", "compute_instance_id", "memory_total_bytes")
        want_instances = sorted(tuple(m[f] for f in fields) for m in want["mig"]["instances"])
        instances = mig.get("instances")
        if not isinstance(instances, list) or not all(isinstance(m, dict) for m in instances):
            fail(f"on {what}, GPU {want['index']}'s mig.instances is not a list of objects: {str(instances)[:200]}")
        got_instances = sorted((tuple(m.get(f) for f in fields) for m in instances), key=str)
        if want["index"] == 0:
            figures.add(
                "MIG devices on GPU 0, 8-GPU recording", len(instances), "", f"NVML lists {len(want_instances)}"
            )
        if got_instances != sorted(want_instances, key=str):
            fail(
                f"on {what}, GPU {want['index']} reports MIG devices {got_instances}; NVML lists {want_instances} "
                f"(as {', '.join(fields)})."
            )
    for name, word in (("1gpu", "unsupported"), ("2gpu", "disabled")):
        res, _, _, what = run_case(learner, name)
        for g in gpus_of(report_of(res, what), what):
            mig = mig_of(g, what)
            if mig.get("current") != word or mig.get("pending") != word or mig.get("instances") != []:
                fail(
                    f"on {what}, GPU {g.get('index')}'s mig is {mig}; expected current and pending {word!r} "
                    "and no instances."
                )


# --- health and exit codes ---------------------------------------------------------------------


@requirement("health-exit")
def test_exit_codes_follow_the_health_rules(learner, figures):
    for case in ("1gpu", "2gpu", "8gpu", "nvlink-down", "mig-pending", "memory-full"):
        res, inventory, sample, what = run_case(learner, case)
        want = expected_problems(inventory, sample)
        want_code = 1 if want else 0
        figures.add(f"exit code, {case}", res.returncode, "", f"expected {want_code}")
        if res.returncode != want_code:
            if want:
                rules = ", ".join(sorted({c for c, _ in want}))
                fail(
                    f"python gpu_info.py --json on {what} exited with exit code {res.returncode}; "
                    f"the README's {rules} rule makes that machine degraded: exit code 1."
                )
            fail(
                f"python gpu_info.py --json on {what} exited with exit code {res.returncode}; every GPU there passes "
                f"the README's rules, so it is healthy: exit code 0. {res.tail(300)}"
            )
        doc = report_of(res, what)
        got = problems_of(doc, what)
        if want and not want <= got:
            fail(
                f"on {what}, the report's problems are {sorted(got, key=str)}; "
                f"they must include {sorted(want)} (check, gpu)."
            )
        if not want and got:
            fail(f"on {what}, the report lists problems {sorted(got, key=str)} but no README rule is broken there.")
        extra = {p for p in got if p not in want}
        if extra:
            fail(
                f"on {what}, the report lists {sorted(extra, key=str)} besides {sorted(want)}; "
                "nothing else is wrong there."
            )
        if doc.get("exit_code") != res.returncode or doc.get("status") != STATUS[res.returncode]:
            fail(
                f"on {what}, the report says status {doc.get('status')!r} and exit_code {doc.get('exit_code')!r} "
                f"but the process exited with {res.returncode} ({STATUS[res.returncode]!r})."
            )


# --- no GPU -------------------------------------------------------------------------------------


def check_host(host, what: str, figures) -> None:
    import platform

    try:
        import psutil

        memory = psutil.virtual_memory().total
    except ImportError:  # pragma: no cover - psutil is a gpudojo dependency
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = None
    if not isinstance(host, dict):
        fail(f"on {what}, the report has no 'host' object: {str(host)[:200]}")
    missing = HOST_KEYS - set(host)
    if missing:
        fail(f"on {what}, the host facts lack {sorted(missing)}.")
    figures.add("host CPUs reported", host.get("cpu_count"), "", f"this machine has {os.cpu_count()}")
    if host["cpu_count"] != os.cpu_count():
        fail(f"on {what}, host.cpu_count is {host['cpu_count']!r}; this machine has {os.cpu_count()} logical CPUs.")
    if not isinstance(host["memory_total_bytes"], int) or abs(host["memory_total_bytes"] - memory) > 0.02 * memory:
        fail(f"on {what}, host.memory_total_bytes is {host['memory_total_bytes']!r}; this machine has {memory} bytes.")
    if not isinstance(host["cpu_model"], str) or not host["cpu_model"].strip():
        fail(f"on {what}, host.cpu_model is {host['cpu_model']!r}: name the CPU model.")
    if not isinstance(host["os"], str) or platform.system().lower() not in host["os"].lower():
        fail(f"on {what}, host.os is {host['os']!r}; it should name the operating system ({platform.system()}).")
    if torch_version and not (
        isinstance(host["torch"], str)
        and (host["torch"].startswith(torch_version) or torch_version.startswith(host["torch"]))
    ):
        fail(f"on {what}, host.torch is {host['torch']!r}; the installed torch is {torch_version}.")


@requirement("no-gpu")
def test_no_gpu_exits_2_and_reports_the_host(learner, figures):
    error = random.choice(["LibraryNotFound", "DriverNotLoaded"])
    cases = [f"error:{error}", "zero-gpus"]
    for case in cases:
        res, _, _, what = run_case(learner, case)
        figures.add(f"exit code, {case}", res.returncode, "", "expected 2")
        if res.returncode != 2:
            fail(
                f"python gpu_info.py --json on {what} exited with exit code {res.returncode}; "
                "with no GPU it must exit 2."
            )
        if "gpu" not in res.stderr.lower():
            fail(
                f"on {what}, gpu_info.py exited 2 but its stderr does not say that no GPU was found "
                f"(stderr: {res.stderr.strip()[:200]!r})."
            )
        doc = report_of(res, what)
        if doc.get("status") != "no-gpu" or doc.get("exit_code") != 2 or doc.get("gpus") != []:
            fail(
                f"on {what}, the report says status {doc.get('status')!r}, exit_code {doc.get('exit_code')!r}, "
                f"gpus {str(doc.get('gpus'))[:100]}; expected 'no-gpu', 2 and []."
            )
        if not isinstance(doc.get("error"), str) or not doc["error"].strip():
            fail(f"on {what}, the report's 'error' is {doc.get('error')!r}: say why there is no GPU.")
        bench = doc.get("benchmarks")
        if not isinstance(bench, dict) or bench.get("ran") is not False:
            fail(f"on {what}, benchmarks is {str(bench)[:200]}; with no GPU, 'ran' must be false.")
        check_host(doc.get("host"), what, figures)

    # The text report (no --json) still shows the host.
    res, _, _, what = run_case(learner, f"error:{error}", as_json=False)
    if res.returncode != 2:
        fail(f"python gpu_info.py (text output) on {what} exited with exit code {res.returncode}; expected 2.")
    host = report_of(run_case(learner, f"error:{error}")[0], what)["host"]
    for key in ("cpu_model", "torch"):
        if str(host[key]) not in res.stdout:
            fail(
                f"python gpu_info.py (text output) on {what} does not show the host's {key} ({host[key]!r}) on stdout."
            )


# --- the JSON report ----------------------------------------------------------------------------


@requirement("json-report")
def test_json_report_is_complete(learner, figures):
    res, _, _, what = run_case(learner, "2gpu")
    doc = report_of(res, what)
    missing = TOP_KEYS - set(doc)
    if missing:
        fail(f"on {what}, the JSON report lacks the keys {sorted(missing)}.")
    if not isinstance(doc["host"], dict) or HOST_KEYS - set(doc["host"]):
        fail(f"on {what}, the JSON report's host lacks {sorted(HOST_KEYS - set(doc['host'] or {}))}.")
    bench = doc["benchmarks"]
    if not isinstance(bench, dict) or BENCH_KEYS - set(bench):
        fail(f"on {what}, benchmarks must be an object with {sorted(BENCH_KEYS)}; it is {str(bench)[:200]}.")
    figures.add("benchmarks.reason with CUDA hidden", str(bench.get("reason")))
    if bench["ran"] is not False or "no cuda device" not in str(bench.get("reason")).lower():
        fail(
            f"on {what} there is no CUDA device (the replay hides it), so benchmarks.ran must be false and "
            f"benchmarks.reason must say 'no CUDA device'; it is ran={bench['ran']!r}, reason={bench.get('reason')!r}."
        )
    for g in gpus_of(doc, what):
        lacking = GPU_KEYS - set(g)
        if lacking:
            fail(f"on {what}, GPU {g.get('index')} in the JSON report lacks {sorted(lacking)}.")
        for key in ("mig", "nvlink"):
            if not isinstance(g[key], dict):
                fail(f"on {what}, GPU {g.get('index')}'s {key} must be an object; it is {g[key]!r}.")
        if {"current", "pending", "instances"} - set(g["mig"]) or {"links", "active", "down"} - set(g["nvlink"]):
            fail(f"on {what}, GPU {g.get('index')}'s mig or nvlink object lacks fields the README lists.")
    if not isinstance(doc["topology"], list) or not isinstance(doc["problems"], list):
        fail(f"on {what}, topology and problems must be lists.")
    if doc["exit_code"] != res.returncode or doc["status"] != STATUS.get(res.returncode):
        fail(
            f"on {what}, the report says status {doc['status']!r}, exit_code {doc['exit_code']!r}; "
            f"the process exited with {res.returncode}."
        )


# --- the benchmarks on a real GPU ---------------------------------------------------------------

# The check's own datasheet figures (dense BF16 TFLOP/s, DRAM GB/s), keyed like the starter's.
PEAKS = {
    "H200 NVL": (835.5, 4800),
    "H200": (989.5, 4800),
    "H100 80GB HBM3": (989.5, 3350),
    "H100 PCIe": (756.5, 2000),
    "A100-SXM4-80GB": (312, 2039),
    "A100-SXM4-40GB": (312, 1555),
    "RTX 4090": (165.2, 1008),
}
MATMUL_SHARE = (0.20, 1.10)
COPY_RATIO = (0.70, 1.30)  # the tool's copy GB/s against this check's own measurement
MATMUL_RATIO = (0.75, 1.25)  # the tool's matmul TFLOP/s against this check's own, at the tool's size


def reference_peak(name: str):
    if "MIG" in name:
        return None
    keys = [k for k in PEAKS if k in name]
    return PEAKS[max(keys, key=len)] if keys else None


def measure_here(matmul_n: int = 8192) -> dict:
    """Device-to-device copy GB/s and bf16 matmul TFLOP/s (matmul_n x matmul_n) on cuda:0, measured
    in this process."""
    import torch

    def median_ms(fn, inner=10, warmup=5, repeats=9):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(inner):
                fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / inner)
        return statistics.median(times)

    def copy_gbps(nbytes):
        src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        return 2 * nbytes / (median_ms(lambda: dst.copy_(src)) * 1e-3) / 1e9

    def matmul_tflops(n):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty_like(a)
        return 2 * n**3 / (median_ms(lambda: torch.mm(a, b, out=c)) * 1e-3) / 1e12

    with torch.cuda.device(0):
        free, _ = torch.cuda.mem_get_info()
        gbps = copy_gbps(min(2**30, free // 8) // 4096 * 4096)
        torch.cuda.empty_cache()
        tflops = matmul_tflops(matmul_n if free > 6 * 2 * matmul_n**2 else 4096)
        torch.cuda.empty_cache()
    return {"name": torch.cuda.get_device_name(0), "copy_gbps": gbps, "matmul_tflops": tflops}


def number(r: dict, key: str, what: str) -> float:
    value = r.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        fail(f"{what}: {key} is {value!r}; it must be a positive number.")
    return float(value)


@requirement("benchmarks")
def test_benchmarks_on_the_gpu(learner, figures):
    learner.require("gpu_info.py")
    res = learner.run(["python", "gpu_info.py", "--json"], timeout_s=300)
    what = "this machine's GPU"
    doc = report_of(res, what)
    bench = doc.get("benchmarks") or {}
    if bench.get("ran") is not True or not bench.get("results"):
        fail(f"on {what}, the benchmarks did not run: benchmarks is {str(bench)[:300]}.")
    r = min(bench["results"], key=lambda x: x.get("cuda_device", 0))
    where = f"the benchmark of cuda:{r.get('cuda_device', 0)} ({r.get('name')})"
    tflops = number(r, "matmul_tflops", where)
    copy_gbps = number(r, "copy_gbps", where)
    n = r.get("matmul_n")
    n = n if isinstance(n, int) and not isinstance(n, bool) and 1024 <= n <= 16384 else 8192
    here = measure_here(n)
    figures.add("matmul, gpu_info.py", tflops, "TFLOP/s", f"bf16, as your tool reported it, n={r.get('matmul_n')}")
    figures.add("matmul, measured by the check", here["matmul_tflops"], "TFLOP/s", f"bf16, {n} x {n}")
    figures.add("copy, gpu_info.py", copy_gbps, "GB/s", "read + write")
    figures.add("copy, measured by the check", here["copy_gbps"], "GB/s", "read + write, 1 GiB")
    if doc.get("exit_code") != res.returncode:
        fail(f"on {what}, the report's exit_code is {doc.get('exit_code')!r} but the process exited {res.returncode}.")

    ratio = copy_gbps / here["copy_gbps"]
    figures.add("copy, tool / check", ratio, "", f"needs {COPY_RATIO[0]} to {COPY_RATIO[1]}")
    if not COPY_RATIO[0] <= ratio <= COPY_RATIO[1]:
        fail(
            f"{where} reports {copy_gbps:.0f} GB/s for the device-to-device copy; the check measures "
            f"{here['copy_gbps']:.0f} GB/s (bytes read + bytes written, CUDA events, 1 GiB): {ratio:.2f}x, "
            f"needs {COPY_RATIO[0]}x to {COPY_RATIO[1]}x. Count both the read and the write, and time the GPU's "
            "work, not the launch."
        )

    # The tool's matmul rate is held to the check's own measurement of the same size, so a rate
    # written in (even a plausible share of the peak) fails.
    ratio = tflops / here["matmul_tflops"]
    figures.add("matmul, tool / check", ratio, "", f"needs {MATMUL_RATIO[0]} to {MATMUL_RATIO[1]}")
    if not MATMUL_RATIO[0] <= ratio <= MATMUL_RATIO[1]:
        fail(
            f"{where} reports {tflops:.1f} TFLOP/s for the bf16 matmul; the check measures "
            f"{here['matmul_tflops']:.1f} TFLOP/s ({n} x {n}, CUDA events): {ratio:.2f}x, needs "
            f"{MATMUL_RATIO[0]}x to {MATMUL_RATIO[1]}x. Time the GPU's work with CUDA events, after a warm-up, "
            "and report what you measured."
        )
    peak = reference_peak(here["name"])
    if peak is None:
        figures.add("matmul share of peak", "not checked", note=f"no datasheet peak for {here['name']}")
        return
    peak_tflops, peak_gbps = peak
    for key, want in (("matmul_peak_tflops", peak_tflops), ("copy_peak_gbps", peak_gbps)):
        got = r.get(key)
        if not isinstance(got, (int, float)) or abs(got - want) > 0.05 * want:
            fail(f"{where}: {key} is {got!r}; the datasheet figure for {here['name']} is {want}.")
    for share_key, value, peak_key in (
        ("matmul_share", tflops, "matmul_peak_tflops"),
        ("copy_share", copy_gbps, "copy_peak_gbps"),
    ):
        share = r.get(share_key)
        if not isinstance(share, (int, float)) or abs(share - value / r[peak_key]) > 0.02 * value / r[peak_key]:
            fail(f"{where}: {share_key} is {share!r}; it should be {value / r[peak_key]:.3f} (measured / peak).")
    share = tflops / peak_tflops
    figures.add("matmul share of peak", share, "", f"needs {MATMUL_SHARE[0]} to {MATMUL_SHARE[1]}")
    figures.add("copy share of peak", copy_gbps / peak_gbps, "")
    if not MATMUL_SHARE[0] <= share <= MATMUL_SHARE[1]:
        fail(
            f"{where} reports {tflops:.1f} TFLOP/s for the bf16 matmul, {share:.0%} of the datasheet's "
            f"{peak_tflops} TFLOP/s; a sound measurement lands between {MATMUL_SHARE[0]:.0%} and "
            f"{MATMUL_SHARE[1]:.0%} (the check measures {here['matmul_tflops']:.0f} TFLOP/s)."
        )
