"""The API fuzzer that tests/python/test_fuzz_api.py (in `make test`) and bench/bench_fuzz.py (a
larger run) share: a real `jupyter server` with gpudojo and small caps, and schemathesis cases
generated from the openapi.json that server serves, sent with the server's token.

Every case is checked for: no 5xx, a status and a body the document declares for the route
(status, content type, JSON schema, headers), invalid input refused with a 4xx, and no Python
traceback in any body. Failures are collected, not raised, so one run shows all of them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FUZZ_LABS = HERE.parent / "data" / "fuzz_labs"
TOKEN = "gpudojo-fuzz-token"
API_PREFIX = "/gpudojo/api"

# Caps that keep a fuzzed request from starting heavy work on a 2-core machine: one run at a
# time, stopped after 20 s; short compile and kernel-run timeouts; few simulator threads; one
# exercise check at a time; the labs are the two quick ones in tests/data/fuzz_labs.
FUZZ_GPUDOJO_CONFIG: dict[str, Any] = {
    "labs_dir": str(FUZZ_LABS),
    "max_concurrent_runs": 1,
    "run_timeout_s": 20.0,
    "kernel_compile_timeout_s": 10.0,
    "kernel_run_timeout_s": 10.0,
    "simulator_max_threads": 256,
    "max_concurrent_checks": 1,
    "memory_warm_worker": False,
    "telemetry_default_hz": 10.0,
    "telemetry_max_hz": 20.0,
    "max_body_bytes": 1 << 20,
}

# A Python traceback's header, or one of its frame lines: never in an answer of this API.
TRACEBACK = re.compile(r'Traceback \(most recent call last\)|File "[^"\n]+", line \d+, in ')


# --- the server -----------------------------------------------------------------------------


@dataclass
class FuzzServer:
    """A running `jupyter server` with gpudojo: where it listens, its token, folders and log."""

    port: int
    root: Path
    log_path: Path
    proc: subprocess.Popen
    token: str = TOKEN

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tracebacks(self) -> int:
        """Tracebacks the server wrote to its log (each an unexpected exception in a handler)."""
        return self.log_path.read_text(errors="replace").count("Traceback (most recent call last)")

    def get_json(self, path: str, timeout_s: float = 10.0) -> tuple[int, Any]:
        """Status and decoded body of GET {API_PREFIX}/{path} with the token."""
        return self.call_json("GET", path, None, timeout_s)

    def call_json(self, method: str, path: str, body: Any = None, timeout_s: float = 10.0) -> tuple[int, Any]:
        """Status and decoded body of one request to {API_PREFIX}/{path} with the token (a JSON body if given)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {**self.headers, "Content-Type": "application/json"}
        req = urllib.request.Request(f"{self.base_url}{API_PREFIX}/{path}", data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.status, json.loads(r.read())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(server: FuzzServer, timeout_s: float = 90.0) -> None:
    """Poll /api/status until the server answers (seconds: up to timeout_s)."""
    deadline = time.monotonic() + timeout_s
    url = f"{server.base_url}/api/status"
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"jupyter server exited with {server.proc.returncode}: {server.log_path.read_text()}")
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=server.headers), timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"jupyter server did not answer in {timeout_s:.0f} s")


@contextmanager
def fuzz_server(tmp: Path, **gpudojo_config: Any) -> Iterator[FuzzServer]:
    """A `jupyter server` with gpudojo in a subprocess on a free 127.0.0.1 port, root_dir, data
    and config under ``tmp``, live NVML (none here: the server's own no-GPU path) and
    FUZZ_GPUDOJO_CONFIG (overridden by ``gpudojo_config``); stopped on exit."""
    root, config_dir, data = tmp / "root", tmp / "config", tmp / "jupyter-data"
    for folder in (root, config_dir, data):
        folder.mkdir(parents=True, exist_ok=True)
    gpudojo = {**FUZZ_GPUDOJO_CONFIG, "data_dir": str(tmp / "gpudojo-data"), **gpudojo_config}
    config = {"ServerApp": {"jpserver_extensions": {"gpudojo": True}}, "GPUDojo": gpudojo}
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config_dir),
        "JUPYTER_DATA_DIR": str(data),
        "JUPYTER_RUNTIME_DIR": str(data / "runtime"),
    }
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.log_level=WARN",
        "--allow-root",
    ]
    log_path = tmp / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = FuzzServer(port=port, root=root, log_path=log_path, proc=proc)
    try:
        _wait_ready(server)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# --- the checks -----------------------------------------------------------------------------


def _register_traceback_check() -> Callable[..., None]:
    import schemathesis

    @schemathesis.check
    def no_traceback_in_body(ctx: Any, response: Any, case: Any) -> None:
        """A body with a Python traceback leaks the server's internals: flag it, whatever the status."""
        text = response.content.decode("utf-8", errors="replace") if response.content else ""
        found = TRACEBACK.search(text)
        if found:
            start = max(found.start() - 80, 0)
            raise AssertionError(f"Python traceback in the response body: ...{text[start : found.end() + 160]}...")

    return no_traceback_in_body


def fuzz_checks() -> list[Callable[..., Any]]:
    """The checks every case gets: schemathesis's own for the statuses, content types, bodies and
    headers the document declares, no 5xx, invalid input refused; and no traceback in a body."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
        response_headers_conformance,
        negative_data_rejection,
        _register_traceback_check(),
    ]


# --- the figures ----------------------------------------------------------------------------


@dataclass
class OperationFigures:
    """What one route got: cases sent, answers by status, failures by check and status."""

    label: str
    cases: int = 0
    positive: int = 0
    negative: int = 0
    statuses: Counter = field(default_factory=Counter)
    # Statuses of the cases generated as valid: a 400 there means the document is looser than
    # the server (it lets schemathesis generate what the server refuses).
    valid_statuses: Counter = field(default_factory=Counter)
    refused_valid: list[str] = field(default_factory=list)
    failures: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def valid_2xx(self) -> int:
        return sum(n for status, n in self.valid_statuses.items() if 200 <= status < 300)

    def fail(self, key: str, example: str) -> None:
        self.failures[key] += 1
        self.examples.setdefault(key, example)


@dataclass
class FuzzReport:
    """A whole run: per-route figures, its seed and wall time (s)."""

    seed: int
    requested_cases: int
    operations: dict[str, OperationFigures]
    seconds: float = 0.0
    log_tracebacks: int = 0

    @property
    def cases(self) -> int:
        return sum(op.cases for op in self.operations.values())

    @property
    def statuses(self) -> Counter:
        total: Counter = Counter()
        for op in self.operations.values():
            total.update(op.statuses)
        return total

    @property
    def failures(self) -> int:
        return sum(sum(op.failures.values()) for op in self.operations.values())

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)

    def table(self) -> str:
        """A plain-text table: one line per route, then the totals."""
        lines = [
            "cases: valid (+) and invalid (-) as the document says; 2xx+: valid cases answered 2xx",
            f"{'route':<58} {'cases':>6} {'+':>5} {'-':>5} {'2xx+':>5} {'s':>6}  statuses",
        ]
        for op in self.operations.values():
            statuses = " ".join(f"{s}:{n}" for s, n in sorted(op.statuses.items()))
            ok = op.valid_2xx
            lines.append(
                f"{op.label:<58} {op.cases:>6} {op.positive:>5} {op.negative:>5} {ok:>5} {op.seconds:>6.1f}  {statuses}"
            )
            lines.extend(f"    note: {note}" for note in op.notes)
        totals = " ".join(f"{s}:{n}" for s, n in sorted(self.statuses.items()))
        lines.append(
            f"total: {self.cases} cases over {len(self.operations)} operations in {self.seconds:.1f} s "
            f"(seed {self.seed}); statuses {totals}; {self.failures} failures; "
            f"{self.server_errors} responses 5xx; {self.log_tracebacks} tracebacks in the server log"
        )
        return "\n".join(lines)

    def failure_text(self, limit: int = 20) -> str:
        """The distinct failures with one example each (at most ``limit``)."""
        out = []
        for op in self.operations.values():
            for key, n in op.failures.most_common():
                out.append(f"{op.label}: {key} (x{n})\n{op.examples[key]}")
        return "\n\n".join(out[:limit]) + (f"\n... and {len(out) - limit} more" if len(out) > limit else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "requested_cases": self.requested_cases,
            "cases": self.cases,
            "seconds": round(self.seconds, 1),
            "failures": self.failures,
            "server_errors": self.server_errors,
            "log_tracebacks": self.log_tracebacks,
            "statuses": {str(s): n for s, n in sorted(self.statuses.items())},
            "routes": {
                op.label: {
                    "cases": op.cases,
                    "positive": op.positive,
                    "negative": op.negative,
                    "valid_2xx": op.valid_2xx,
                    "seconds": round(op.seconds, 1),
                    "statuses": {str(s): n for s, n in sorted(op.statuses.items())},
                    "failures": dict(op.failures),
                    "notes": op.notes,
                }
                for op in self.operations.values()
            },
        }


# --- what exists on the server ---------------------------------------------------------------


def known_values(server: FuzzServer, timeout_s: float = 60.0) -> dict[str, list[str]]:
    """Ids that exist on the server, for the fuzzer to draw from besides random ones: lessons,
    exercises and labs of its catalog, and the runs and the sweep this starts here (a quick lab
    that succeeds, one that fails, a sweep of two), waited for until they end (s: timeout_s)."""
    _, catalog = server.get_json("course/catalog")
    _, labs = server.get_json("runs/labs")
    lab_ids = [lab["id"] for lab in labs["labs"]]
    started = []
    for body in (
        {"kind": "lab", "lab": "lab-fuzz-quick", "params": {"n": 3}},
        {"kind": "lab", "lab": "lab-fuzz-fails"},
        {"kind": "lab", "lab": "lab-fuzz-quick", "sweep": {"param": "n", "values": [1, 2]}},
    ):
        _, created = server.call_json("POST", "runs", body)
        started += created["runs"]
    deadline = time.monotonic() + timeout_s
    pending = {run["id"] for run in started}
    while pending and time.monotonic() < deadline:
        time.sleep(0.2)
        pending = {rid for rid in pending if server.get_json(f"runs/{rid}")[1]["status"] in ("queued", "running")}
    if pending:
        raise TimeoutError(f"the fuzzer's seed runs {sorted(pending)} did not end in {timeout_s:.0f} s")
    return {
        "lessons": [item["id"] for item in catalog["lessons"]],
        "exercises": [item["id"] for item in catalog["exercises"]],
        "labs": lab_ids,
        "runs": [run["id"] for run in started],
        "groups": sorted({run["group"] for run in started if run.get("group")}),
    }


# Where the fuzzer draws known ids (half the time; random ones otherwise): location.name -> dictionary.
DICTIONARY_BINDINGS = {
    "path.lesson_id": "lessons",
    "path.exercise_id": "exercises",
    "path.run_id": "runs",
    "path.group": "groups",
    "query.run": "runs",
    "query.lab": "labs",
    "body.lab": "labs",
    "body.id": "lessons",
}


# --- the run --------------------------------------------------------------------------------


def load_schema(server: FuzzServer, known: dict[str, list[str]] | None = None) -> Any:
    """The schemathesis schema of the document the server serves, aimed at that server; with
    ``known``, parameters named in DICTIONARY_BINDINGS are drawn from those ids half the time."""
    import schemathesis

    data: dict[str, Any] = {}
    if known:
        dictionaries = {name: {"values": values} for name, values in known.items() if values}
        data = {
            "dictionaries": dictionaries,
            "parameters": {
                key: {"dictionary": name, "probability": 0.5}
                for key, name in DICTIONARY_BINDINGS.items()
                if name in dictionaries
            },
        }
    config = schemathesis.Config.from_dict(data)
    config.projects.default.update(base_url=server.base_url, headers=server.headers)
    return schemathesis.openapi.from_url(
        f"{server.base_url}{API_PREFIX}/openapi.json", config=config, headers=server.headers, timeout=30
    )


def _complexity(operation: Any) -> int:
    """How much there is to vary in an operation: parameters, plus a body counting as several."""
    definition = operation.definition.raw
    return len(definition.get("parameters", [])) + (5 if "requestBody" in definition else 0)


def fuzz(
    server: FuzzServer,
    *,
    cases: int,
    seed: int,
    request_timeout_s: float = 30.0,
    progress: Callable[[str], None] | None = None,
) -> FuzzReport:
    """Send about ``cases`` generated cases over every operation of the served document, half
    valid and half invalid per operation; return the figures with every failure found.

    An operation whose inputs allow fewer distinct cases than its share (a GET without
    parameters) gets what it allows; the rest goes to the operations after it, which are
    taken from the simplest to the richest so that the budget ends where there is most to vary.
    """
    import requests
    from schemathesis import GenerationMode

    schema = load_schema(server, known_values(server))
    operations = sorted((r.ok() for r in schema.get_all_operations()), key=lambda op: (_complexity(op), op.label))
    checks = fuzz_checks()
    report = FuzzReport(seed=seed, requested_cases=cases, operations={})
    session = requests.Session()
    started = time.perf_counter()
    remaining = cases
    for index, operation in enumerate(operations):
        figures = OperationFigures(label=operation.label)
        report.operations[operation.label] = figures
        share = max(remaining // (len(operations) - index), 2)
        op_started = time.perf_counter()
        for mode, budget in ((GenerationMode.POSITIVE, share - share // 2), (GenerationMode.NEGATIVE, share // 2)):
            sent = _run_mode(operation, mode, budget, seed + index, session, server, checks, figures, request_timeout_s)
            if mode is GenerationMode.POSITIVE:
                figures.positive = sent
            else:
                figures.negative = sent
        figures.seconds = time.perf_counter() - op_started
        remaining = max(remaining - figures.cases, 0)
        if progress:
            progress(f"{operation.label}: {figures.cases} cases in {figures.seconds:.1f} s")
    report.seconds = time.perf_counter() - started
    report.log_tracebacks = server.log_tracebacks()
    return report


def _run_mode(
    operation: Any,
    mode: Any,
    budget: int,
    seed: int,
    session: Any,
    server: FuzzServer,
    checks: list[Callable[..., Any]],
    figures: OperationFigures,
    timeout_s: float,
) -> int:
    """Up to ``budget`` cases of one generation mode for one operation; returns how many were sent."""
    import hypothesis
    from hypothesis import HealthCheck, Phase, Verbosity

    sent = 0

    @hypothesis.settings(
        max_examples=budget,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
    )
    @hypothesis.seed(seed)
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
    def one(case: Any) -> None:
        nonlocal sent
        sent += 1
        _send(case, session, server, checks, figures, timeout_s)

    if budget <= 0:
        return 0
    try:
        one()
    except hypothesis.errors.Unsatisfiable:
        figures.notes.append(f"{mode.value}: schemathesis generated no case")
    except Exception as err:  # a generation error is a finding about the document, not a crash
        figures.fail(f"generation error ({mode.value})", f"{type(err).__name__}: {err}"[:2000])
    return sent


def _send(
    case: Any,
    session: Any,
    server: FuzzServer,
    checks: list[Callable[..., Any]],
    figures: OperationFigures,
    timeout_s: float,
) -> None:
    """One case: send it, count its status, run the checks; failures recorded, never raised."""
    import requests
    from schemathesis.core.failures import FailureGroup

    figures.cases += 1
    try:
        response = case.call(base_url=server.base_url, session=session, headers=server.headers, timeout=timeout_s)
    except requests.RequestException as err:
        figures.fail("no answer", f"{type(err).__name__}: {err}\n{case.as_curl_command(headers=server.headers)}")
        return
    figures.statuses[response.status_code] += 1
    if case.meta is not None and case.meta.generation.mode.is_positive:
        figures.valid_statuses[response.status_code] += 1
        if response.status_code == 400 and len(figures.refused_valid) < 3:
            sent = case.body if case.body is not None else case.query
            figures.refused_valid.append(f"{json.dumps(sent, default=str)[:300]} -> {response.text[:300]}")
    try:
        case.validate_response(response, checks=checks, headers=server.headers)
    except FailureGroup as group:
        curl = case.as_curl_command(headers=server.headers)
        body = response.content[:600].decode("utf-8", errors="replace")
        for failure in group.exceptions:
            key = f"{failure.title} [{response.status_code}]"
            figures.fail(key, f"{failure.message[:1200]}\nresponse: {body}\nreproduce: {curl}")
