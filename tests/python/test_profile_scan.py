"""The trace scanner (gpudojo.worker.trace_scan, used by read_trace in the analysis worker)
against a plain json.load of the same file (the oracle, written here), on a real with_stack +
record_shapes trace recorded in the test and on the other shapes a trace file can take; and
the nesting of spans around 0 µs operators."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

from gpudojo.profile import trace as trace_module
from gpudojo.profile.analysis import Loaded, NotATrace, write_analysis
from gpudojo.profile.trace import index_order, nesting, read_trace
from gpudojo.worker import trace_scan

# ---------------------------------------------------------------- 0 µs operators and nesting


def test_a_zero_duration_operator_nests_in_its_caller_and_shifts_no_sibling():
    """aten::empty of 0 µs inside an op, at the same time as its sibling's start and alone: each
    span's parent is the span that encloses it (what self time and stacks are made of)."""
    spans = [  # name, ts, dur
        ("step", 0.0, 100.0),
        ("aten::linear", 10.0, 50.0),
        ("aten::empty", 20.0, 0.0),  # alone, inside linear
        ("aten::t", 30.0, 5.0),  # starts where a 0 µs op does
        ("aten::empty", 30.0, 0.0),
        ("aten::addmm", 40.0, 15.0),
        ("aten::empty", 60.0, 0.0),  # at linear's end: inside step only
    ]
    ts = np.array([s[1] for s in spans])
    dur = np.array([s[2] for s in spans])
    lane = np.zeros(len(spans), dtype=np.int64)
    order = index_order(ts, dur, lane)
    depth, parent = nesting(ts[order], dur[order], lane[order])
    names = [spans[i][0] for i in order]
    got = {
        (names[i], float(ts[order][i])): (names[parent[i]] if parent[i] >= 0 else None, int(depth[i]))
        for i in range(len(order))
    }
    assert got == {
        ("step", 0.0): (None, 0),
        ("aten::linear", 10.0): ("step", 1),
        ("aten::empty", 20.0): ("aten::linear", 2),
        ("aten::t", 30.0): ("aten::linear", 2),
        ("aten::empty", 30.0): ("aten::t", 3),  # [30, 30] lies in t's [30, 35]
        ("aten::addmm", 40.0): ("aten::linear", 2),
        ("aten::empty", 60.0): ("step", 1),
    }


def _nesting_both_ways(ts, dur, lane, top, monkeypatch):
    """nesting() by the compiled one-pass walk and by the binary searches used without numba."""
    order = index_order(ts, dur, lane)
    args = (ts[order], dur[order], lane[order], None if top is None else top[order])
    compiled = nesting(*args)
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "gpudojo.worker.profile_rows", None)  # its import fails: numba missing
        plain = nesting(*args)
    return compiled, plain


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_nesting_is_the_plain_one_on_ties_zero_durations_and_crossings(seed, monkeypatch):
    """Spans on a coarse clock (many equal starts), a third of them 0 µs, on three lanes, some
    nested, some crossing, with step annotations on top: rows and parents agree exactly."""
    rng = np.random.default_rng(seed)
    n = 3000
    ts = rng.integers(0, 400, n).astype(np.float64)
    dur = np.where(rng.random(n) < 0.3, 0.0, rng.choice([1.0, 3.0, 10.0, 40.0, 150.0], n))
    lane = rng.integers(0, 3, n)
    top = (rng.random(n) < 0.02) if seed % 2 else None
    (rows, parent), (rows_plain, parent_plain) = _nesting_both_ways(ts, dur, lane, top, monkeypatch)
    assert np.array_equal(parent, parent_plain)
    assert np.array_equal(rows, rows_plain)


@pytest.mark.parametrize(
    ("spans", "rows"),
    [
        # a frame crossing the step boundary, the others nesting: steps on top, the rest by depth
        ([(0, 10, 1), (10, 10, 1), (2, 12, 0), (3, 1, 0), (15, 3, 0), (16, 1, 0)], [0, 0, 1, 2, 1, 2]),
        # the rest crossing too: each on the lowest free row below the steps
        ([(0, 10, 1), (10, 10, 1), (2, 6, 0), (3, 6, 0), (8.5, 1, 0)], [0, 0, 1, 2, 1]),
        # steps that overlap each other, the rest nesting: lowest free rows all the same
        ([(0, 10, 1), (9, 10, 1), (1, 3, 0), (2, 1, 0), (12, 2, 0)], [0, 0, 1, 2, 1]),
    ],
    ids=["rest-nests", "rest-crosses", "steps-overlap"],
)
def test_a_crossed_lane_puts_its_steps_on_top_and_the_rest_below(spans, rows, monkeypatch):
    """The compiled crossed-lane rows (the lane's steps skipped in its own arrays) and the plain ones agree, and
    say what a person reads: no two overlapping spans on one row, steps above the rest."""
    ts = np.array([s[0] for s in spans], dtype=np.float64)
    dur = np.array([s[1] for s in spans], dtype=np.float64)
    top = np.array([bool(s[2]) for s in spans])
    (got, parent), (plain, parent_plain) = _nesting_both_ways(ts, dur, np.zeros(len(ts), np.int64), top, monkeypatch)
    order = index_order(ts, dur, np.zeros(len(ts), np.int64))
    assert got[np.argsort(order)].tolist() == rows
    assert np.array_equal(got, plain) and np.array_equal(parent, parent_plain)


def test_the_compiled_nesting_is_the_plain_one_on_a_real_trace(real_trace, monkeypatch):
    events, _ = _oracle(real_trace)
    lanes = {key: i for i, key in enumerate(sorted({e[2] for e in events}, key=str))}
    ts = np.array([e[3] for e in events])
    dur = np.array([e[4] for e in events])
    lane = np.array([lanes[e[2]] for e in events])
    top = np.array([e[0].startswith("ProfilerStep#") for e in events])
    (rows, parent), (rows_plain, parent_plain) = _nesting_both_ways(ts, dur, lane, top, monkeypatch)
    assert (parent >= 0).sum() > len(events) // 2  # most spans are inside another
    assert np.array_equal(parent, parent_plain) and np.array_equal(rows, rows_plain)


def test_the_compiled_walk_has_the_one_signature_its_warm_up_compiles(real_trace, tmp_path):
    """Lane ids come as int64 from a caller, int32 from merge and int8 for a crossed lane's
    rows: each would be compiled (a second or so) during a learner's first analysis."""
    from gpudojo.worker import profile_rows

    profile_rows.warm_up()
    walks = (profile_rows.open_spans, profile_rows.lowest_free_rows)
    signatures = [list(walk.signatures) for walk in walks]
    write_analysis([real_trace], tmp_path / "a")
    ts, dur = np.array([0.0, 2.0, 3.0, 6.0]), np.array([5.0, 8.0, 1.0, 1.0])
    nesting(ts, dur, np.zeros(4, dtype=np.int64), np.array([False, True, False, False]))  # crossed, with a step
    nesting(ts, dur.astype(np.float32), np.zeros(4, dtype=np.int8), np.array([0, 1, 0, 0]) > 0)
    assert [len(s) for s in signatures] == [1, 1] and [list(walk.signatures) for walk in walks] == signatures


def test_zero_duration_operators_leave_self_times_right(tmp_path):
    """Self time = duration less the children's: a 0 µs op before a sibling must not make that
    sibling a top-level op (its time would then count twice)."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 20, "dur": 0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 20, "dur": 30},
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 25, "dur": 0},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    s = write_analysis([path], tmp_path / "out")
    ops = {o["name"]: o for o in s["top_ops"]}
    assert ops["aten::linear"]["self_us"] == 20.0 and ops["aten::linear"]["total_us"] == 50.0
    assert ops["aten::addmm"]["self_us"] == 30.0
    assert ops["aten::empty"]["calls"] == 2 and ops["aten::empty"]["self_us"] == 0.0
    lanes = Loaded(tmp_path / "out").window(0, 100, 1000)["lanes"][0]["spans"]
    depth = {(sp["name"], sp["t_us"]): sp["depth"] for sp in lanes}
    assert depth[("aten::addmm", 20.0)] == 2 and depth[("aten::empty", 25.0)] == 3


# ---------------------------------------------------------------- the scanner against json.load


def _record_trace(out: Path, steps: int) -> Path:
    """A real torch.profiler CPU trace of an MLP training loop, with_stack and record_shapes."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
        record_shapes=True,
        with_stack=True,
        on_trace_ready=lambda prof: prof.export_chrome_trace(str(out)),
    ) as prof:
        for _ in range(steps + 1):
            x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    return out


def _oracle(path: Path) -> tuple[list[tuple], dict]:
    """Every complete event as the analysis reads it, by json.load and plain Python: (name,
    cat, (pid, tid), ts, dur, correlation, Input Dims as text, args), and the metadata."""
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    out = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X" or not {"ts", "dur", "name"} <= e.keys():
            continue
        cat = e.get("cat", "")
        number = (int, float)
        if type(e["ts"]) not in number or type(e["dur"]) not in number or e["dur"] < 0 or cat == "Trace":
            continue
        args = e.get("args") if cat != "python_function" else None
        args = args or {}
        corr = args.get("correlation")
        dims = args.get("Input Dims")
        out.append(
            (
                e["name"],
                cat,
                (e.get("pid"), e.get("tid")),
                float(e["ts"]),
                float(e["dur"]),
                corr if type(corr) is int else -1,
                json.dumps(dims, separators=(", ", ": ")) if dims is not None else None,
                args,
            )
        )
    meta = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}
    return out, meta


def _as_read(c) -> list[tuple]:
    blob = bytes(c.args_blob)
    rows = []
    for i in range(len(c)):
        start, n = int(c.args_start[i]), int(c.args_len[i])
        rows.append(
            (
                c.names[c.name[i]],
                c.cats[c.cat[i]],
                c.threads[c.thread[i]],
                float(c.ts[i]),
                float(c.dur[i]),
                int(c.corr[i]),
                c.dims_text[c.dims[i]] if c.dims[i] >= 0 else None,
                orjson.loads(blob[start : start + n]) if n else {},
            )
        )
    return rows


@pytest.fixture
def scanner_only(monkeypatch):
    """read_trace with the orjson reader taken away: what it reads, the scanner read."""

    def no(*_args, **_kwargs):
        raise AssertionError("the orjson reader was used")

    monkeypatch.setattr(trace_module, "_read_whole", no)
    monkeypatch.setattr(trace_module, "_read_in_parallel", no)


@pytest.fixture(scope="module")
def real_trace(tmp_path_factory) -> Path:
    return _record_trace(tmp_path_factory.mktemp("real") / "mlp.json", steps=8)


def test_the_scanner_reads_a_real_with_stack_trace_as_json_load_does(real_trace, scanner_only):
    expected, meta = _oracle(real_trace)
    columns = read_trace(real_trace)
    assert len(expected) > 2500 and {r[1] for r in expected} >= {"cpu_op", "python_function", "user_annotation"}
    assert any(r[6] for r in expected) and any(r[7] for r in expected)  # shapes and args there to compare
    assert _as_read(columns) == expected
    assert columns.meta == meta and meta["with_stack"] == 1 and meta["record_shapes"] == 1
    assert columns.skipped == 0


@pytest.mark.parametrize("per_worker", [1, 4])
def test_a_real_trace_read_in_parts_is_the_same(real_trace, scanner_only, monkeypatch, per_worker):
    """Cut in 2 or 8 parts, two threads each taking the next part left, the parts joined."""
    monkeypatch.setattr(trace_scan, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(trace_scan, "PARTS_PER_WORKER", per_worker)
    parts = trace_scan.scan_file(real_trace, workers=2)
    assert len(parts) == 2 * per_worker and all(len(p.ts) > 20 for p in parts)
    monkeypatch.setattr(trace_module, "_cpus", lambda: 2)
    assert _as_read(read_trace(real_trace)) == _oracle(real_trace)[0]


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "in-eight-parts"])
def test_the_analysis_is_the_same_by_the_scanner_and_by_orjson(real_trace, tmp_path, monkeypatch, cut):
    if cut:  # eight parts on two threads: eight args files, chained into args.bin
        monkeypatch.setattr(trace_scan, "SPLIT_MIN_BYTES", 0)
        monkeypatch.setattr(trace_scan, "PARTS_PER_WORKER", 4)
        monkeypatch.setattr(trace_module, "_cpus", lambda: 2)
    scanned = write_analysis([real_trace], tmp_path / "scanned")
    monkeypatch.setattr(trace_module, "_scanned", lambda *_: None)
    parsed = write_analysis([real_trace], tmp_path / "parsed")
    for s in (scanned, parsed):
        s.pop("analysis_ms")
    assert scanned == parsed and scanned["top_ops"] and len(scanned["steps"]) == 8
    a, b = Loaded(tmp_path / "scanned"), Loaded(tmp_path / "parsed")
    mid = (scanned["t_start_us"] + scanned["t_end_us"]) / 2
    assert a.window(scanned["t_start_us"], mid, 800) == b.window(scanned["t_start_us"], mid, 800)
    refs = range(0, scanned["events"], 97)
    assert [a.event(r) for r in refs] == [b.event(r) for r in refs]


ODD_EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "x"}},
    {"ph": "X", "name": "caf\u00e9 \u2603 \"q\" \\ \n", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": 10, "dur": 5},
    {"ph": "X", "name": "no cat", "pid": "host", "tid": "stream 7", "ts": 11.5, "dur": 1e-3},
    {"ph": "X", "name": "no thread", "cat": "cpu_op", "ts": 12, "dur": 0},
    {"ph": "X", "name": "exact", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": 1234567890123.4567891, "dur": 2.5e2},
    {"ph": "X", "name": "huge", "cat": "kernel", "pid": 0, "tid": 3, "ts": 12345678901234567890, "dur": 1,
     "args": {"correlation": 99, "Input Dims": [[2, 3]], "nested": {"a": [1, {"b": None}]}}},
    {"ph": "X", "name": "float corr", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": 13, "dur": 1,
     "args": {"correlation": 1.5, "Input Dims": None}},
    {"ph": "X", "name": "long args", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": 14, "dur": 1,
     "args": {"blob": "x" * (trace_module.MAX_ARGS_BYTES + 10)}},
    {"ph": "X", "name": "empty args", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": 15, "dur": 1, "args": {}},
    {"ph": "X", "name": "trace", "cat": "Trace", "pid": 7, "tid": 7, "ts": 0, "dur": 100},
    {"ph": "X", "name": "negative", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": 16, "dur": -1},
    {"ph": "X", "name": "string ts", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": "16", "dur": 1},
    {"ph": "X", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": 17, "dur": 1},
    {"ph": "B", "name": "open", "pid": 7, "tid": 7, "ts": 20},
    {"ph": "E", "pid": 7, "tid": 7, "ts": 30, "args": {"k": 1}},
    {"ph": "i", "name": "instant", "pid": 7, "tid": 7, "ts": 21},
    [1, 2],
    "not an event",
]  # fmt: skip


@pytest.mark.parametrize("shape", ["object", "list", "gzip", "meta-after", "escaped-key"])
def test_odd_shapes_read_by_the_scanner_as_by_orjson(tmp_path, shape, scanner_only, monkeypatch):
    """Escapes and non-ASCII names, string thread ids, numbers past the fast conversion, odd
    args, skipped events, B/E pairs, instants, elements that are not events: the scanner's
    columns are orjson's (the reader it replaces), field for field."""
    path = tmp_path / ("t.json.gz" if shape == "gzip" else "t.json")
    if shape == "list":
        text = json.dumps(ODD_EVENTS, indent=1).encode()
    elif shape == "meta-after":
        text = b'{"traceEvents": ' + json.dumps(ODD_EVENTS).encode() + b', "schemaVersion": 1, "z": [1, {"y": 2}]}'
    elif shape == "escaped-key":  # "n\u0061me" is "name" to JSON
        text = json.dumps({"a": 1, "traceEvents": ODD_EVENTS}, ensure_ascii=True).replace('"name"', '"n\\u0061me"')
        text = text.encode()
    else:
        text = json.dumps({"schemaVersion": 1, "traceEvents": ODD_EVENTS}, ensure_ascii=False).encode()
    path.write_bytes(gzip.compress(text) if shape == "gzip" else text)
    if shape == "escaped-key":  # a key spelled with an escape: the scanner hands the file over
        with pytest.raises(trace_scan.ScanStopped, match="shape"):
            trace_scan.scan_file(path)
        monkeypatch.undo()
    scanned = read_trace(path)
    monkeypatch.undo()
    monkeypatch.setattr(trace_module, "_scanned", lambda *_: None)
    parsed = read_trace(path)
    assert _as_read(scanned) == _as_read(parsed)
    assert (scanned.skipped, scanned.unmatched, scanned.meta) == (parsed.skipped, parsed.unmatched, parsed.meta)
    exact = [r for r in _as_read(scanned) if r[0] == "exact"]
    assert exact and exact[0][3] == 1234567890123.4567891 and exact[0][4] == 250.0


def _word_edge_events() -> list[dict]:
    """Events whose strings end at every offset of an 8-byte word: names of 0 to 19 bytes that
    differ from each other in one byte only (at each position: a hash or a compare that skipped
    a byte would make two of them one), non-ASCII and escapes at each offset, keys one byte
    longer or shorter than the ones the scanner reads (ts, dur, pid, tid, cat, ph, name, args),
    and args strings copied a word at a time with their last word overlapping."""
    events = []
    base = "abcdefghijklmnopqrst"
    t = 0
    for n in range(20):
        names = [base[:n]] + [base[:k] + "Z" + base[k + 1 : n] for k in range(n)]
        names += [base[:k] + "\u00e9" + base[k:n] for k in range(0, n, 3)]
        names += [base[:k] + '"\\/' + base[k:n] for k in range(0, n, 5)]
        for name in names:
            t += 1
            events.append(
                {"ph": "X", "name": name, "cat": "cpu_op" if n % 2 else "c" * n, "pid": n % 3, "tid": base[: n % 9],
                 "ts": t, "dur": 1, "args": {"s" * n: base[:n], "Input Dims": [[n] * (n % 4)], "correlation": n}}
            )  # fmt: skip
    for key in ("t", "tss", "du", "durr", "pi", "pidd", "ti", "tidd", "ca", "catt", "p", "phh", "nam", "namee",
                "arg", "argss", "Input Dim", "Input Dimss", "correlatio", "correlations"):  # fmt: skip
        t += 1
        events.append({"ph": "X", "name": "k", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": t, "dur": 1, key: 5,
                       "args": {key: [1], "correlation": 3}})  # fmt: skip
    return events


@pytest.mark.parametrize("read_bytes", [53, 4096, 8 << 20])
def test_strings_ending_at_every_offset_of_a_word_read_as_by_orjson(tmp_path, scanner_only, monkeypatch, read_bytes):
    """The scanner reads strings, hashes and compares interned ones, tells keys apart and copies
    args a word (8 bytes) at a time; here every string ends at each offset of a word, near the
    end of a read buffer (53 bytes: most strings cross one) and of the array the bytes are in."""
    monkeypatch.setattr(trace_scan, "READ_BYTES", read_bytes)
    events = _word_edge_events()
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}, ensure_ascii=False, indent=1))
    scanned = read_trace(path)
    assert len(scanned) == len(events) and len(set(scanned.names)) == len({e["name"] for e in events})
    monkeypatch.undo()
    monkeypatch.setattr(trace_module, "_scanned", lambda *_: None)
    parsed = read_trace(path)
    assert _as_read(scanned) == _as_read(parsed)


@pytest.mark.parametrize("at", range(10))
@pytest.mark.parametrize("bad", [b"\x01", b"\x1f", b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\\x"])
def test_a_bad_byte_at_any_offset_of_a_word_stops_the_scanner(tmp_path, at, bad):
    """A control character, a byte that is not UTF-8 or a bad escape is found wherever it falls
    in the word the string is read by (the word's first special byte is the one looked at)."""
    name = b"abcdefghijklmnopq"[:at] + bad + b"rstuvwxyz"
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "' + name + b'", "ts": 1, "dur": 2}]}')
    with pytest.raises(trace_scan.ScanStopped):
        trace_scan.scan_file(path)
    with pytest.raises(NotATrace):
        read_trace(path)


@pytest.mark.parametrize(
    "content",
    [
        b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}',  # cut short
        b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2},]}',  # trailing comma
        b'{"traceEvents": [{"ph": "X", "name": "a\x01", "ts": 1, "dur": 2}]}',  # control character
        b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 01, "dur": 2}]}',  # leading zero
        b'{"traceEvents": [{"ph": "X", "name": "\xff", "ts": 1, "dur": 2}]}',  # not UTF-8
        b'{"traceEvents": [{"ph": "X", "name": 5, "ts": 1, "dur": 2}]} x',  # trailing garbage
        b'{"traceEvents": {}}',
        b'{"schemaVersion": 1}',
    ],
)
def test_what_the_scanner_does_not_take_goes_to_orjson(tmp_path, content):
    """Invalid JSON is never read as a trace: the scanner stops and orjson says why."""
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(trace_scan.ScanStopped):
        trace_scan.scan_file(path)
    with pytest.raises(NotATrace):
        read_trace(path)


def test_a_name_that_is_not_a_string_is_read_by_orjson(tmp_path, scanner_only):
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"ph": "X", "name": 5, "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]))
    with pytest.raises(trace_scan.ScanStopped, match="shape"):
        trace_scan.scan_file(path)
    with pytest.raises(AssertionError, match="orjson reader was used"):
        read_trace(path)


def _minified(text: bytes) -> bytes:
    """JSON text without the whitespace outside its strings (what the scanner keeps of args)."""
    out, in_str, escaped = bytearray(), False, False
    for c in text:
        if in_str:
            out.append(c)
            in_str = escaped or c != 0x22
            escaped = not escaped and c == 0x5C
        elif c not in b" \t\r\n":
            out.append(c)
            in_str = c == 0x22
    return bytes(out)


def test_args_are_kept_minified_in_one_walk_whatever_comes_first(tmp_path, scanner_only, monkeypatch):
    """Args copied as they are walked: before their event's cat (kept, or a python_function's:
    not), after a python cat that a second cat overrides, an event dropped after its args were
    copied, and args too big for the buffer as it stands (grown, the event walked again)."""
    big = " , ".join(f'"k{i}" : [ 1 , {{ "s" : "a b\\" \\\\ {i}" }} ]' for i in range(40000))
    events = [
        '{"ph": "X", "args": { "External id" : 1 , "Input Dims": [ [2, 3] , [ ] ] }, "name": "a",'
        ' "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2}',
        '{"ph": "X", "args": {"Python id": 5}, "name": "p", "cat": "python_function", "pid": 1, "tid": 1,'
        ' "ts": 2, "dur": 1}',
        '{"ph": "X", "cat": "python_function", "args": { "x" : [ 1 , 2 ] }, "cat": "cpu_op", "name": "b",'
        ' "pid": 1, "tid": 1, "ts": 3, "dur": 1}',
        '{"ph": "X", "cat": "cpu_op", "args": { "dropped" : true }, "name": "c", "pid": 1, "tid": 1, "ts": 4,'
        ' "dur": -1}',
        '{"ph": "X", "cat": "cpu_op", "args": { }, "name": "d", "pid": 1, "tid": 1, "ts": 5, "dur": 1}',
        '{"ph": "X", "cat": "cpu_op", "args": {' + big + '}, "name": "e", "pid": 1, "tid": 1, "ts": 6, "dur": 1}',
        '{"ph": "X", "cat": "cpu_op", "args": {"correlation" : 7 , "s": " \\u00e9 " }, "name": "f", "pid": 1,'
        ' "tid": 1, "ts": 7, "dur": 1}',
    ]
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(events) + "\n]}")
    for total in (path.stat().st_size, 1):  # a total guessed too small: the args buffer grows mid-walk
        with path.open("rb") as f:
            s = trace_scan.scan_stream(f, total)
        blob, at = bytes(s.args), 0
        kept = []
        for n in s.args_len:
            kept.append(blob[at : at + int(n)])
            at += int(n)
        assert [s.tables[0][i] for i in s.name] == [b"a", b"p", b"b", b"d", b"e", b"f"]
        assert kept[0] == _minified(events[0].split('"args": ', 1)[1].split(', "name"')[0].encode())
        assert kept[1] == b"" and kept[3] == b""  # a python_function's args, and empty ones
        assert kept[2] == b'{"x":[1,2]}'
        assert kept[4].startswith(b'{"args":"') and kept[4].endswith(b' bytes of args, not kept"}')
        assert kept[5] == b'{"correlation":7,"s":" \\u00e9 "}' and int(s.corr[5]) == 7
    monkeypatch.undo()
    monkeypatch.setattr(trace_module, "_scanned", lambda *_: None)
    parsed = read_trace(path)
    monkeypatch.undo()
    assert _as_read(read_trace(path)) == _as_read(parsed)


ALLOCATE = {"scan", "_write_note", "_rehash"}  # the compiled functions that make arrays of their own


def test_the_scanners_helpers_count_no_array_references(tmp_path):
    """Every helper the scan calls per event is compiled without numba's reference counting: with
    it, each call counted every array it was passed in and out with an atomic instruction, 45%
    of a 1M-event scan's time on an Intel Xeon (bench/RESULTS.md, issue 27). Compiled afresh in a
    child (cached code cannot be inspected) and read in its LLVM IR."""
    import os
    import subprocess
    import sys

    probe = (
        "import json, numba\n"
        "from gpudojo.worker import trace_scan as T\n"
        "T.warm_up()\n"
        "print(json.dumps({n: '\\n'.join(d.inspect_llvm().values()).count('@NRT_incref(')\n"
        "    for n, d in vars(T).items() if isinstance(d, numba.core.registry.CPUDispatcher) and d.signatures}))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    increfs = json.loads(done.stdout.strip().splitlines()[-1])
    helpers = {name: n for name, n in increfs.items() if name not in ALLOCATE}
    assert {"_intern", "_args_min", "_value_end", "_string_end", "_number"} <= set(helpers)
    assert helpers == dict.fromkeys(helpers, 0)


@pytest.mark.parametrize(
    ("n", "distinct", "span"),
    [(0, 1, 4), (1, 1, 4), (5000, 1, 12), (5000, 3, 12), (5000, 64, 100), (5000, 65, 100), (5000, 5, 1 << 17)],
)
def test_threads_are_told_apart_as_np_unique_does(n, distinct, span):
    """unique_few (a count per key, not a sort) gives np.unique's keys, first events and inverse,
    for a handful of threads and past the handful where it sorts instead."""
    rng = np.random.default_rng(n + distinct + span)
    values = rng.choice(span, size=distinct, replace=False)
    key = values[rng.integers(0, distinct, size=n)]
    got = trace_module.unique_few(key, span)
    want = np.unique(key, return_index=True, return_inverse=True)
    for g, w in zip(got, want, strict=True):
        assert g.tolist() == w.reshape(-1).tolist()
