"""The two websockets fuzzed (hypothesis, fixed seed) against a real `jupyter server` with gpudojo:
the telemetry socket's controls (rate / pause / resume) and a run's event stream (messages, and
resuming with ?after=), with random, malformed and oversized messages and text and binary frames.

Each message gets an answer (a state frame for a valid control, an error frame otherwise) or
the socket closes with a code and a reason; afterwards the server still answers REST calls and a
fresh telemetry socket still streams. Two protocol violations end a connection without a close
frame, by tornado's design (RFC 6455 lets a server drop a connection that breaks the protocol):
a text frame that is not UTF-8, and a message over websocket_max_message_size (10 MiB).
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from typing import Any

import hypothesis
import pytest
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from pydantic import ValidationError
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from fuzz_harness import API_PREFIX, FuzzServer, fuzz_server
from gpudojo.api.models import SocketError
from gpudojo.gpu.models import TelemetryControl, TelemetryState
from gpudojo.runs.events import parse_frame

SEED = 15
TELEMETRY_MESSAGES = 1000
STREAM_MESSAGES = 200
ANSWER_TIMEOUT_S = 5.0
MIB = 1 << 20
# The server's cap on a control message (GPUDojo.max_body_bytes in fuzz_harness) and tornado's
# own on any websocket message (websocket_max_message_size, default 10 MiB).
CONTROL_CAP = 1 * MIB
TORNADO_CAP = 10 * MIB

pytestmark = pytest.mark.timeout(300)


@dataclass(frozen=True)
class Outcome:
    """What one message got: a frame (its type and error code), or the socket's end."""

    kind: str  # "frame", "closed" (a close frame: code and reason), "dropped" (no close frame), "silent"
    frame: dict[str, Any] | None = None
    code: int | None = None
    reason: str = ""

    @property
    def label(self) -> str:
        if self.kind == "frame" and self.frame is not None:
            error = self.frame.get("error", {}).get("code")
            return f"{self.frame['type']}:{error}" if error else self.frame["type"]
        return f"{self.kind}:{self.code}" if self.kind == "closed" else self.kind


# --- talking to a socket -------------------------------------------------------------------


def open_socket(server: FuzzServer, path: str) -> ClientConnection:
    return connect(f"{server.ws_url}{API_PREFIX}/{path}", additional_headers=server.headers, max_size=None)


def next_answer(ws: ClientConnection, skip: tuple[str, ...]) -> Outcome:
    """The next frame whose type is not in ``skip`` (readings, replayed events), or how the socket ended."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while True:
        try:
            text = ws.recv(timeout=max(deadline - time.monotonic(), 0.01))
        except TimeoutError:
            return Outcome("silent")
        except ConnectionClosed as closed:
            if closed.rcvd is None:
                return Outcome("dropped")
            return Outcome("closed", code=closed.rcvd.code, reason=closed.rcvd.reason)
        frame = json.loads(text)
        if frame["type"] not in skip:
            return Outcome("frame", frame=frame)


def send(ws: ClientConnection, frame: str, payload: str | bytes) -> bool:
    """Send one message as a text or binary frame ("text-bytes": bytes in a text frame, as is);
    False when the server ended the connection while it was being sent."""
    try:
        if frame == "binary":  # bytes go as a binary frame
            ws.send(payload.encode() if isinstance(payload, str) else payload)
        elif frame == "text-bytes":  # bytes in a text frame, as is (send(text=True))
            ws.send(payload, text=True)
        else:
            ws.send(payload)
    except ConnectionClosed:
        return False
    return True


# --- messages --------------------------------------------------------------------------------

ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
CONTROLS = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["pause", "resume", "rate"]), ANY_VALUE)},
    optional={"hz": st.one_of(st.floats(min_value=-1e9, max_value=1e9), ANY_VALUE), "extra": ANY_VALUE},
).map(lambda doc: json.dumps(doc, allow_nan=True))  # NaN and Infinity as JavaScript writes them
VALID_CONTROLS = st.fixed_dictionaries(
    {"type": st.sampled_from(["pause", "resume", "rate"])},
    optional={"hz": st.floats(min_value=1e-12, max_value=1e12)},
).map(json.dumps)
HUGE_NUMBERS = st.sampled_from(["1e999", "-1e999", "1" + "0" * 5000, "-0", "4.9e-324", "1e-400", "NaN", "-Infinity"])
MESSAGES = st.one_of(
    st.tuples(st.just("text"), VALID_CONTROLS),
    st.tuples(st.just("text"), CONTROLS),
    st.tuples(st.just("binary"), CONTROLS),
    st.tuples(st.just("text"), HUGE_NUMBERS.map(lambda n: f'{{"type": "rate", "hz": {n}}}')),
    st.tuples(st.just("text"), st.text(max_size=200)),
    st.tuples(st.just("binary"), st.binary(max_size=200)),
    st.tuples(st.just("text"), st.integers(min_value=1, max_value=50_000).map(lambda n: "[" * n + "]" * n)),
)


def fuzz_messages(count: int, seed: int, each: Any) -> None:
    """Call ``each(frame, payload)`` for ``count`` messages drawn from MESSAGES with ``seed``."""

    @hypothesis.settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis.seed(seed)
    @hypothesis.given(message=MESSAGES)
    def run(message: tuple[str, str | bytes]) -> None:
        each(*message)

    run()


def expected_telemetry_answer(payload: str | bytes) -> str:
    """What the server must answer a control with: the server's own rule, from the same model."""
    if len(payload) > CONTROL_CAP:
        return "error:too_large"
    try:
        control = TelemetryControl.model_validate_json(payload, strict=True)
    except ValidationError:
        return "error:invalid_message"
    return "error:invalid_message" if control.type == "rate" and control.hz is None else "state"


# --- the tests -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> FuzzServer:
    with fuzz_server(tmp_path_factory.mktemp("fuzz-ws")) as running:
        yield running


def assert_server_lives(server: FuzzServer) -> None:
    """The server answers REST, and a fresh telemetry socket sends its history and then readings."""
    assert server.alive()
    assert server.get_json("runs")[0] == 200
    with open_socket(server, "gpu/telemetry?hz=20") as ws:
        history = json.loads(ws.recv(timeout=ANSWER_TIMEOUT_S))
        assert history["type"] == "history"
        assert json.loads(ws.recv(timeout=ANSWER_TIMEOUT_S))["type"] == "sample"
    assert server.log_tracebacks() == 0, server.log_path.read_text()[-4000:]


def test_telemetry_controls_fuzzed_each_get_an_answer(server, capsys):
    outcomes: Counter = Counter()
    wrong: list[str] = []
    sockets = contextlib.ExitStack()  # every socket opened (again after each close) is closed at the end
    ws = sockets.enter_context(open_socket(server, "gpu/telemetry"))

    def each(frame: str, payload: str | bytes) -> None:
        nonlocal ws
        want = expected_telemetry_answer(payload)
        got = next_answer(ws, skip=("history", "sample")) if send(ws, frame, payload) else Outcome("dropped")
        outcomes[got.label] += 1
        if got.label != want:
            wrong.append(f"{frame} {payload[:120]!r}: wanted {want}, got {got}")
        elif got.label == "state":
            state = TelemetryState.model_validate(got.frame)
            assert 0.1 <= state.rate_hz <= 20.0, state  # clamped to [MIN_HZ, telemetry_max_hz]
        else:
            SocketError.model_validate(got.frame)
        if got.kind != "frame":
            ws = sockets.enter_context(open_socket(server, "gpu/telemetry"))

    started = time.perf_counter()
    with sockets:
        fuzz_messages(TELEMETRY_MESSAGES, SEED, each)
    with capsys.disabled():
        print(f"\ntelemetry socket fuzzing: {sum(outcomes.values())} messages in {time.perf_counter() - started:.1f} s")
        print(f"  answers: {dict(sorted(outcomes.items()))}")
    assert sum(outcomes.values()) >= TELEMETRY_MESSAGES // 2
    assert not wrong, "\n".join(wrong[:20])
    assert outcomes["state"] and outcomes["error:invalid_message"]
    assert_server_lives(server)


@pytest.mark.parametrize(
    ("frame", "size", "want"),
    [
        ("text", CONTROL_CAP + 1, "error:too_large"),
        ("binary", 2 * MIB, "error:too_large"),
        ("text", TORNADO_CAP, "error:too_large"),  # tornado's cap is inclusive: ours answers
        ("text", TORNADO_CAP + 1, "dropped"),  # tornado: close 1009 and drop, mid-send
        ("text-bytes", 3, "dropped"),  # not UTF-8 in a text frame: tornado drops the connection
        ("text", 0, "error:invalid_message"),
        ("binary", 0, "error:invalid_message"),
    ],
)
def test_telemetry_oversized_and_malformed_frames(server, frame, size, want):
    payload: str | bytes = "x" * size if frame == "text" else b"y" * size
    if frame == "text-bytes":
        payload = b"\xff\xfe\xfd"
    with open_socket(server, "gpu/telemetry") as ws:
        got = next_answer(ws, skip=("history", "sample")) if send(ws, frame, payload) else Outcome("dropped")
        assert got.label == want, got
        if got.kind == "frame":  # the socket lives on: a valid control still works
            assert send(ws, "text", json.dumps({"type": "pause"}))
            state = next_answer(ws, skip=("history", "sample")).frame
            assert state == {"type": "state", "paused": True, "rate_hz": 10.0}
    assert_server_lives(server)


def start_script_run(server: FuzzServer, seconds: float) -> str:
    """A run of a script in the server's root that prints a line every 0.1 s for ``seconds``; its id
    once it is running."""
    (server.root / "fuzz_slow.py").write_text(
        f"import time\nfor i in range({int(seconds * 10)}):\n    print('tick', i, flush=True)\n    time.sleep(0.1)\n"
    )
    _, created = server.call_json("POST", "runs", {"kind": "script", "path": "fuzz_slow.py", "launcher": "python"})
    run_id = created["runs"][0]["id"]
    deadline = time.monotonic() + 30
    while server.get_json(f"runs/{run_id}")[1]["status"] != "running":
        assert time.monotonic() < deadline, "the fuzzer's script run did not start"
        time.sleep(0.1)
    return run_id


def test_run_stream_messages_fuzzed_each_get_an_answer(server, capsys):
    run_id = start_script_run(server, seconds=15)  # cancelled as soon as the fuzzing ends
    outcomes: Counter = Counter()
    sockets = contextlib.ExitStack()
    ws = sockets.enter_context(open_socket(server, f"runs/{run_id}/stream"))

    def each(frame: str, payload: str | bytes) -> None:
        nonlocal ws
        got = next_answer(ws, skip=("batch",)) if send(ws, frame, payload) else Outcome("dropped")
        outcomes[got.label] += 1
        if got.kind != "frame":
            ws = sockets.enter_context(open_socket(server, f"runs/{run_id}/stream"))

    started = time.perf_counter()
    try:
        with sockets:
            fuzz_messages(STREAM_MESSAGES, SEED + 1, each)
            for frame, payload in (("text", "x" * TORNADO_CAP), ("binary", b"\x00" * (2 * MIB))):
                each(frame, payload)
    finally:
        server.call_json("POST", f"runs/{run_id}/cancel")
    with capsys.disabled():
        print(f"\nrun stream fuzzing: {sum(outcomes.values())} messages in {time.perf_counter() - started:.1f} s")
        print(f"  answers: {dict(sorted(outcomes.items()))}")
    assert outcomes == {"error:no_messages": sum(outcomes.values())}
    assert_server_lives(server)


# Not whole numbers (int() refuses them), and whole numbers out of range; \u0661 is an Arabic-Indic 1.
BAD_AFTER = ["", "abc", "-1", "-99999999999999999999", "1e3", "NaN", "inf", "0x10", "9" * 5000, "2.5", "\x00", "\u0661"]


def test_run_stream_resumes_after_any_after_value(server):
    """?after= that is not a whole number replays from the start; a number replays what follows it;
    the stream of an ended run then closes with 1000 "run ended"; an unknown run gets an error
    frame and 4404."""
    _, created = server.call_json("POST", "runs", {"kind": "lab", "lab": "lab-fuzz-quick", "params": {"n": 5}})
    run_id = created["runs"][0]["id"]
    deadline = time.monotonic() + 30
    while server.get_json(f"runs/{run_id}")[1]["status"] in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    replayed = Counter()
    for after in [*BAD_AFTER, "3", "0", "100000"]:
        with open_socket(server, f"runs/{run_id}/stream?after={urllib.parse.quote(after)}") as ws:
            seqs = []
            while (got := next_answer(ws, skip=())).kind == "frame":
                seqs += [event.seq for event in parse_frame(json.dumps(got.frame)).events]
            assert (got.code, got.reason) == (1000, "run ended"), (after, got)
        replayed[after] = len(seqs)
        try:
            start = int(after)
        except ValueError:
            start = -1
        assert all(seq > start for seq in seqs) and seqs == sorted(seqs), (after, seqs)
        if start < 0:
            assert seqs[:1] == [0], after  # from the start
    assert replayed["100000"] == 0 and 0 < replayed["3"] < replayed["abc"]

    with open_socket(server, "runs/20000101-000000-000000/stream?after=abc") as ws:
        error = next_answer(ws, skip=())
        assert error.kind == "frame" and SocketError.model_validate(error.frame).error.code == "not_found"
        assert next_answer(ws, skip=()) == Outcome("closed", code=4404, reason="no such run")
    assert_server_lives(server)
