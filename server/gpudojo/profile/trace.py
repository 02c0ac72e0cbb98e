"""A Chrome/Kineto trace as NumPy columns: read fast, laid out in lanes (one per thread and
per CUDA stream of each rank) with every span's nesting depth and parent.

How a file is read: in the analysis worker, by the compiled scanner (gpudojo.worker.trace_scan,
numba), which walks the bytes a buffer at a time in two threads and keeps only the fields the
analysis reads, interned, with the args (for hovers) in an unnamed temporary file: a real
1.2M-event with_stack trace (395 MB) is analysed whole in about a seventh of the time json.load
takes only to parse it, and no Python object is made per event (bench/RESULTS.md). Where numba is missing, or the
scanner stops at something it does not take (invalid JSON, a name that is not a string), the
orjson reader below reads it, and says why a file that is not JSON is not.

Why the orjson reading is done in chunks: a 1M-event trace is some 250-300 MB of JSON, and
``orjson.loads`` on the whole file builds two million dicts at once (about 2.3 GB, and the
cyclic garbage collector rescans them over and over). The ``traceEvents`` array is instead
cut at event boundaries into ~4 MB pieces, each parsed on its own (``[`` + piece + ``]``)
and turned into columns before the next one is read, with the collector paused: memory
stays at one piece's objects and the whole file reads in about the time of one parse. A cut
that is not at a boundary between two events cannot parse (it leaves a bracket or a string
open), so any failed piece sends the file to a plain whole-file parse, which either reads
it or says why it is not JSON.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import heapq
import io
import itertools
import multiprocessing
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..clipping import MAX_KEPT_JSON_BYTES, clip_text

Progress = Callable[[str, float | None], None]

# Kineto's categories for activity on the GPU (pid = device, tid = stream).
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
CHUNK_BYTES = 4 << 20
_NUMBER = (int, float)
_EVENT_GAP = re.compile(rb"\}\s*,\s*\{")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# A gzipped trace is inflated in pieces and refused past this many bytes (the default of
# GPUDojo.analysis_max_inflated_bytes): a 1.5 MB file of zeros inflates to 1.5 GB.
MAX_INFLATED_BYTES = 1024**3
INFLATE_PIECE_BYTES = 4 << 20
# One event's args kept for its hover (JSON bytes); a profiler writes a few hundred.
MAX_ARGS_BYTES = 64 * 1024


class NotATrace(ValueError):
    """The file is not a Chrome/Kineto trace; the message says why, in words."""


class TraceTooLarge(ValueError):
    """The trace is more than this server analyses (inflated, or in what its analysis keeps)."""


def size_text(n: int) -> str:
    """A byte count as a person reads a cap: 1 GiB, 64 MiB, 1000 bytes."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


@dataclass
class Columns:
    """One trace file's complete events (X, and B/E pairs) in file order."""

    ts: np.ndarray  # us, float64
    dur: np.ndarray  # us
    name: np.ndarray  # int32 into names
    cat: np.ndarray  # int32 into cats
    thread: np.ndarray  # int32 into threads, (pid, tid) pairs
    corr: np.ndarray  # int64 correlation id, -1 when none
    dims: np.ndarray  # int32 into dims_text ('Input Dims'), -1 when none
    args_start: np.ndarray  # int64 byte offset of the event's args (JSON) in args_blob
    args_len: np.ndarray  # int32, 0 when not kept
    args_blob: Any  # bytes, a uint8 array, an ArgsFile (the scanner's) or an ArgsChain: each has a len
    names: list[str]
    cats: list[str]
    threads: list[tuple[Any, Any]]
    dims_text: list[str]
    meta: dict[str, Any] = field(default_factory=dict)
    pairs: list[dict[str, Any]] = field(default_factory=list)  # B and E events, until they are paired
    skipped: int = 0
    unmatched: int = 0

    def __len__(self) -> int:
        return len(self.ts)


def _remap(table: list[Any], index: dict[Any, int], local: list[Any]) -> np.ndarray:
    """Ids of ``local``'s entries in the shared ``table`` (extended as needed), with a
    trailing -1 so that a -1 id maps to -1."""
    remap = np.empty(len(local) + 1, dtype=np.int32)
    for i, s in enumerate(local):
        at = index.get(s)
        if at is None:
            at = index[s] = len(table)
            table.append(s)
        remap[i] = at
    remap[-1] = -1
    return remap


class ArgsFile:
    """Kept args (JSON objects back to back) in a temporary file that has no name (deleted when
    closed or when the process ends), for the scanner: a 1M-event trace keeps some 90 MB of
    args, which the analysis never reads and would otherwise hold through its peak."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the columns)
        self.size = 0

    def write(self, data: Any) -> None:
        self.file.write(data)
        self.size += len(data)

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        self.file.seek(0)
        return self.file.read()

    def copy_to(self, out: Any) -> None:
        """Onto the end of ``out`` (a file open for writing), by the kernel where it can
        (copy_file_range: no trip through this process, some 4x quicker for 90 MB than a read
        and write loop), else by a loop."""
        self.file.flush()
        done = 0
        try:
            out.flush()
            while done < self.size:
                n = os.copy_file_range(self.file.fileno(), out.fileno(), self.size - done, done)
                if n == 0:
                    break
                done += n
        except (AttributeError, OSError, io.UnsupportedOperation):
            pass  # not a file with a descriptor, or a kernel or file system without it
        self.file.seek(done)
        shutil.copyfileobj(self.file, out, 1 << 20)


class ArgsChain:
    """Args blobs (bytes, uint8 arrays, ArgsFiles) read as one, back to back, none copied: the
    parts of a trace scanned apart keep some 90 MB of args between them at 1M events, and the
    only reader of the whole is save_events, which copies each part into args.bin in turn."""

    def __init__(self, blobs: list[Any]) -> None:
        self.blobs = blobs
        self.size = sum(len(b) for b in blobs)

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(bytes(b) for b in self.blobs)

    def copy_to(self, out: Any) -> None:
        for b in self.blobs:
            if hasattr(b, "copy_to"):
                b.copy_to(out)
            else:
                out.write(b)


def _joined(blobs: list[Any]) -> Any:
    """Args blobs (bytes, uint8 arrays, ArgsFiles or chains of them) back to back; a lone one
    stays as it is, and ArgsFiles are chained, not copied."""
    kept = [b for b in blobs if len(b)]
    if len(kept) <= 1:
        return kept[0] if kept else blobs[0]
    if not any(hasattr(b, "copy_to") for b in kept):
        return b"".join(bytes(b) for b in kept)
    return ArgsChain(kept)


def concat_columns(parts: list[Columns]) -> Columns:
    """Pieces of one file read separately, as one (string tables merged, file order kept).
    The pieces are used up: each column of theirs is emptied as soon as it is joined, so the
    whole file's columns never sit in memory twice."""
    if len(parts) == 1:
        return parts[0]
    tables: dict[str, tuple[list[Any], dict[Any, int]]] = {k: ([], {}) for k in ("names", "cats", "threads", "dims")}
    remaps = {
        k: [_remap(*tables[table], getattr(p, table_of)) for p in parts]
        for k, table, table_of in (
            ("name", "names", "names"),
            ("cat", "cats", "cats"),
            ("thread", "threads", "threads"),
            ("dims", "dims", "dims_text"),
        )
    }
    offsets = np.cumsum([0] + [len(p.args_blob) for p in parts[:-1]])
    blob = _joined([p.args_blob for p in parts])
    joined: dict[str, np.ndarray] = {}
    for k in _BULK:
        if k in remaps:
            pieces = [remap[getattr(p, k)] for remap, p in zip(remaps[k], parts, strict=True)]
        elif k == "args_start":
            pieces = [p.args_start + int(o) for p, o in zip(parts, offsets, strict=True)]
        else:
            pieces = [getattr(p, k) for p in parts]
        for p in parts:
            setattr(p, k, getattr(p, k)[:0].copy())
        joined[k] = np.concatenate(pieces)
        del pieces
    meta: dict[str, Any] = {}
    for p in parts:
        meta.update(p.meta)
    return Columns(
        **joined,
        args_blob=blob,
        names=tables["names"][0],
        cats=tables["cats"][0],
        threads=tables["threads"][0],
        dims_text=tables["dims"][0],
        meta=meta,
        pairs=[e for p in parts for e in p.pairs],
        skipped=sum(p.skipped for p in parts),
        unmatched=sum(p.unmatched for p in parts),
    )


class _Collector:
    """Turns parsed event dicts into column lists, interning every repeated string."""

    def __init__(self) -> None:
        self.ts: list[float] = []
        self.dur: list[float] = []
        self.name: list[int] = []
        self.cat: list[int] = []
        self.thread: list[int] = []
        self.corr: list[int] = []
        self.dims: list[int] = []
        self.args_len: list[int] = []
        # orjson's output bytes are over-allocated: keeping a million of them would cost
        # gigabytes, so args are copied into one buffer (and dims into str keys) at once.
        self.args_buf = bytearray()
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self.threads: dict[tuple[Any, Any], int] = {}
        self.dims_ids: dict[str, int] = {}
        self.pairs: list[dict[str, Any]] = []
        self.skipped = 0

    def add(self, events: list[Any]) -> None:
        """Append ``events``' complete spans; the loop is written out flat because it runs
        once per event of a million-event trace (under 1 us each)."""
        ts_l, dur_l, name_l, cat_l = self.ts, self.dur, self.name, self.cat
        thread_l, corr_l, dims_l, alen_l, buf = self.thread, self.corr, self.dims, self.args_len, self.args_buf
        names, cats, threads, dims_ids = self.names, self.cats, self.threads, self.dims_ids
        dumps = orjson.dumps
        for e in events:
            try:
                ph = e.get("ph")
                if ph != "X":
                    self._other(e, ph)
                    continue
                ts = e["ts"]
                dur = e["dur"]
                name = e["name"]
                cat = e.get("cat", "")
                if type(ts) not in _NUMBER or type(dur) not in _NUMBER or dur < 0 or cat == "Trace":
                    self.skipped += cat != "Trace"  # "Trace" is Kineto's span of the whole recording
                    continue
                nid = names.get(name)
                if nid is None:
                    nid = names[name] = len(names)
                cid = cats.get(cat)
                if cid is None:
                    cid = cats[cat] = len(cats)
                key = (e.get("pid"), e.get("tid"))
                tid = threads.get(key)
                if tid is None:
                    tid = threads[key] = len(threads)
                corr = -1
                did = -1
                kept = 0
                # python_function args are only Python ids: not worth a lookup, nor keeping
                args = e.get("args") if cat != "python_function" else None
                if args:
                    c = args.get("correlation")
                    if type(c) is int:
                        corr = c
                    d = args.get("Input Dims")
                    if d is not None:
                        dkey = dumps(d).decode()
                        did = dims_ids.get(dkey)
                        if did is None:
                            did = dims_ids[dkey] = len(dims_ids)
                    before = len(buf)
                    buf += dumps(args)
                    kept = len(buf) - before
                    if kept > MAX_ARGS_BYTES:  # the server reads them back whole on a hover
                        del buf[before:]
                        buf += dumps({"args": f"{kept} bytes of args, not kept"})
                        kept = len(buf) - before
            except (AttributeError, KeyError, TypeError):  # not a dict, a field missing, unhashable
                self.skipped += 1
                continue
            ts_l.append(ts)
            dur_l.append(dur)
            name_l.append(nid)
            cat_l.append(cid)
            thread_l.append(tid)
            corr_l.append(corr)
            dims_l.append(did)
            alen_l.append(kept)

    def _other(self, e: dict[str, Any], ph: Any) -> None:
        """Keep B/E for pairing; metadata, instants, counters and flows are not spans."""
        if ph == "B" or ph == "E":
            self.pairs.append(e)

    def finish(self, meta: dict[str, Any] | None = None) -> Columns:
        lens = np.asarray(self.args_len, dtype=np.int64)
        starts = np.zeros(len(lens), dtype=np.int64)
        if len(lens):
            starts[1:] = np.cumsum(lens)[:-1]
        return Columns(
            ts=np.asarray(self.ts, dtype=np.float64),
            dur=np.asarray(self.dur, dtype=np.float64),
            name=np.asarray(self.name, dtype=np.int32),
            cat=np.asarray(self.cat, dtype=np.int32),
            thread=np.asarray(self.thread, dtype=np.int32),
            corr=np.asarray(self.corr, dtype=np.int64),
            dims=np.asarray(self.dims, dtype=np.int32),
            args_start=starts,
            args_len=lens.astype(np.int32),
            args_blob=bytes(self.args_buf),
            # Clipped: the tables are loaded by the server and sent with every window.
            names=[clip_text(str(n)) for n in self.names],
            cats=[clip_text(str(c)) for c in self.cats],
            threads=list(self.threads),
            dims_text=[clip_text(d.replace(",", ", ")) for d in self.dims_ids],
            meta=meta or {},
            pairs=self.pairs,
            skipped=self.skipped,
        )


def _pair_begin_end(pairs: list[dict[str, Any]]) -> tuple[Columns, int]:
    """B/E pairs as complete events (an E closes the latest open B of its thread), and how
    many B or E were left without their other half."""
    open_by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    closed: list[dict[str, Any]] = []
    orphans = 0
    for e in pairs:
        stack = open_by_thread.setdefault((e.get("pid"), e.get("tid")), [])
        if e["ph"] == "B":
            stack.append(e)
        elif stack:
            begin = stack.pop()
            if type(e.get("ts")) in _NUMBER and type(begin.get("ts")) in _NUMBER:
                args = {**(begin.get("args") or {}), **(e.get("args") or {})}
                closed.append({**begin, "ph": "X", "dur": e["ts"] - begin["ts"], "args": args})
        else:
            orphans += 1
    collector = _Collector()
    collector.add(closed)
    return collector.finish(), orphans + sum(len(stack) for stack in open_by_thread.values())


def read_bytes(path: Path, max_inflated_bytes: int = MAX_INFLATED_BYTES) -> bytes | bytearray:
    """The file's bytes, gunzipped when it is gzip (by its magic number, not its name).

    A gzip file is inflated a piece at a time into one growing buffer and refused with
    TraceTooLarge as soon as it passes ``max_inflated_bytes`` (bytes): gzip.decompress would
    hold all of it, twice over while it grows, before anyone could look at its size."""
    try:
        with path.open("rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        if not gzipped:
            return path.read_bytes()
        data = bytearray()
        with gzip.open(path, "rb") as g:
            while piece := g.read(INFLATE_PIECE_BYTES):
                if len(data) + len(piece) > max_inflated_bytes:
                    raise TraceTooLarge(
                        f"{path.name} inflates past {size_text(max_inflated_bytes)}, the most this server "
                        f"inflates a gzipped trace to (GPUDojo.analysis_max_inflated_bytes): record fewer steps "
                        f"(a shorter torch.profiler schedule)"
                    )
                data += piece
        return data
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise NotATrace(f"{path.name} is a truncated or corrupt gzip file ({err})") from err
    except OSError as err:
        raise NotATrace(f"{path.name} cannot be read: {err.strerror or err}") from err


@dataclass
class _Layout:
    """Where the file is cut into self-contained JSON documents: just after the '}' of an
    event, about every CHUNK_BYTES; the first piece is closed and the last reopened so that
    they keep the object's other keys."""

    cuts: list[int]
    close: bytes
    reopen: bytes

    @property
    def count(self) -> int:
        return len(self.cuts) + 1

    def piece(self, data: bytes, i: int) -> bytes:
        if i == 0:
            return data[: self.cuts[0]] + self.close
        start = data.index(b"{", self.cuts[i - 1])
        if i == len(self.cuts):
            return self.reopen + data[start:]
        return b"[" + data[start : self.cuts[i]] + b"]"


def _layout(data: bytes) -> _Layout | None:
    """The cuts, or None when the file is small or not laid out as a trace (the caller then
    parses it whole)."""
    if len(data) < 2 * CHUNK_BYTES:
        return None
    if data[:64].lstrip().startswith(b"["):
        begin, close, reopen = data.index(b"[") + 1, b"]", b"["
    else:
        found = _EVENTS_KEY.search(data)
        if found is None:
            return None
        begin, close, reopen = found.end(), b"]}", b'{"traceEvents":['
    cuts: list[int] = []
    at = begin + CHUNK_BYTES
    while at < len(data):
        gap = _EVENT_GAP.search(data, at)
        if gap is None:
            break
        cuts.append(gap.start() + 1)
        at = gap.end() + CHUNK_BYTES
    return _Layout(cuts, close, reopen) if cuts else None


def _read_pieces(data: bytes, layout: _Layout, lo: int, hi: int, on_progress: Progress | None) -> Columns | None:
    """Pieces [lo, hi) as columns; None when one does not parse (not cut at a boundary)."""
    collector = _Collector()
    meta: dict[str, Any] = {}
    for i in range(lo, hi):
        try:
            doc = orjson.loads(layout.piece(data, i))
        except orjson.JSONDecodeError:
            return None
        if (i == 0 or i == layout.count - 1) and isinstance(doc, dict):
            events = doc.pop("traceEvents", None)
            meta.update(doc)
        else:
            events = doc
        if not isinstance(events, list):
            return None
        collector.add(events)
        del doc, events
        if on_progress is not None:
            on_progress("reading", (i + 1 - lo) / (hi - lo))
    return collector.finish(meta)


_SHARED: tuple[bytes, _Layout, Any] | None = None  # what a forked reader reads (inherited, not copied)
_BULK = ("ts", "dur", "name", "cat", "thread", "corr", "dims", "args_start", "args_len")
_SHM = Path("/dev/shm")


def _claim(counter: Any) -> int:
    with counter.get_lock():
        piece = counter.value
        counter.value = piece + 1
    return piece


def _read_claimed(data: bytes, layout: _Layout, counter: Any, on_progress: Progress | None) -> dict[int, Columns]:
    """Pieces one at a time, each the next one no reader has claimed yet (so two readers
    finish together however fast each runs); stops everyone at a piece that does not parse."""
    parts: dict[int, Columns] = {}
    while (i := _claim(counter)) < layout.count:
        columns = _read_pieces(data, layout, i, i + 1, None)
        if columns is None:
            with counter.get_lock():
                counter.value = layout.count + 1  # the other reader stops too; the caller sees a gap
            break
        parts[i] = columns
        if on_progress is not None:
            on_progress("reading", (i + 1) / layout.count)
    return parts


@dataclass
class _Handed:
    """A forked reader's pieces without their bulk, which waits in a file (in memory, under
    /dev/shm where there is one): a copy each way, where pickling 100 MB through the pool's
    pipe costs a quarter of a second."""

    pieces: list[tuple[int, Columns, list[int]]]  # (piece, columns without bulk, bulk lengths)
    path: str

    def take(self) -> dict[int, Columns]:
        parts = {}
        try:
            with open(self.path, "rb") as f:
                for i, light, counts in self.pieces:
                    arrays = {
                        k: np.fromfile(f, dtype=getattr(light, k).dtype, count=n)
                        for k, n in zip(_BULK, counts[:-1], strict=True)
                    }
                    parts[i] = replace(light, **arrays, args_blob=f.read(counts[-1]))
        finally:
            os.unlink(self.path)
        return parts


def _read_forked() -> _Handed:
    assert _SHARED is not None
    parts = _read_claimed(*_SHARED, None)
    fd, path = tempfile.mkstemp(prefix="gpudojo-trace-", dir=_SHM if _SHM.is_dir() else None)
    pieces = []
    with os.fdopen(fd, "wb") as f:
        for i, columns in sorted(parts.items()):
            for k in _BULK:
                f.write(memoryview(np.ascontiguousarray(getattr(columns, k))))
            f.write(columns.args_blob)
            light = replace(columns, **{k: getattr(columns, k)[:0] for k in _BULK}, args_blob=b"")
            pieces.append((i, light, [len(getattr(columns, k)) for k in _BULK] + [len(columns.args_blob)]))
    return _Handed(pieces, path)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _read_in_parallel(data: bytes, layout: _Layout, on_progress: Progress | None) -> Columns | None:
    """The pieces shared between this process and a forked one: parsing is CPU-bound, and a
    big trace has dozens of independent pieces. None when one did not parse."""
    global _SHARED
    if _cpus() < 2 or layout.count < 4 or "fork" not in multiprocessing.get_all_start_methods():
        return _read_pieces(data, layout, 0, layout.count, on_progress)
    context = multiprocessing.get_context("fork")
    counter = context.Value("i", 0)
    _SHARED = (data, layout, counter)
    try:
        with context.Pool(1) as pool:
            forked = pool.apply_async(_read_forked)
            parts = _read_claimed(data, layout, counter, on_progress)
            parts.update(forked.get().take())
    finally:
        _SHARED = None
    if len(parts) != layout.count:
        return None
    return concat_columns([parts[i] for i in range(layout.count)])


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the duration, then as it was. An analysis makes
    objects by the hundred thousand (parsed events, summary rows), and each time their count
    passes a threshold the collector walks every object the process holds: the analysis
    worker's numba and NumPy among them, some 5% of a 1M-event analysis. What it frees is freed
    by reference counting all the same; cycles wait for the collector's next run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_trace(
    path: Path, on_progress: Progress | None = None, max_inflated_bytes: int = MAX_INFLATED_BYTES
) -> Columns:
    """Read one trace file (.json or .json.gz, Kineto or Chrome) into columns.

    Raises NotATrace when it is not JSON, is cut short, or holds no complete events, and
    TraceTooLarge when it is gzipped and inflates past ``max_inflated_bytes`` (bytes)."""
    if on_progress is not None:
        on_progress("reading", 0.0)
    with collector_paused():  # millions of short-lived dicts: the collector would rescan them for nothing
        columns = _scanned(path, on_progress, max_inflated_bytes)
        if columns is None:
            data = read_bytes(path, max_inflated_bytes)
            layout = _layout(data)
            columns = _read_in_parallel(data, layout, on_progress) if layout else None
            if columns is None:
                columns = _read_whole(data, path.name)
            del data
        if on_progress is not None:
            on_progress("reading", 1.0)
        paired, columns.unmatched = _pair_begin_end(columns.pairs)
        if len(paired):
            columns = concat_columns([columns, paired])
        columns.pairs = []
    if not len(columns):
        what = "no events at all" if columns.skipped == 0 else f"no complete spans ({columns.skipped} lacked a field)"
        raise NotATrace(f"{path.name} holds {what}: a trace needs complete events (ph 'X', or 'B'/'E' pairs)")
    return columns


def _scanned(path: Path, on_progress: Progress | None, max_inflated_bytes: int) -> Columns | None:
    """The file read by the compiled scanner (gpudojo.worker.trace_scan: the analysis worker
    has numba), a buffer at a time; None where there is no scanner or it stops (not JSON, cut
    short, a shape it does not take): the caller then reads the file with orjson, which reads
    every valid trace and says why an invalid one is not."""
    try:
        from gpudojo.worker import trace_scan
    except ImportError:
        return None
    try:
        with path.open("rb") as raw:
            gzipped = raw.read(2) == b"\x1f\x8b"
        if not gzipped:
            columns = trace_scan.scan_file(
                path,
                None if on_progress is None else lambda f: on_progress("reading", f),
                workers=_cpus(),
                args_files=ArgsFile,
                each=_columns_of,  # each part's columns made while the next parts are scanned
            )
            return concat_columns(columns)
        with path.open("rb") as raw:
            total = os.fstat(raw.fileno()).st_size
            f = gzip.GzipFile(fileobj=raw, mode="rb")

            def progress(_: int) -> None:
                if on_progress is not None and total:
                    on_progress("reading", min(raw.tell() / total, 1.0))

            try:
                scanned = trace_scan.scan_stream(
                    f, min(total * 8, max_inflated_bytes), progress, max_inflated_bytes, args_file=ArgsFile()
                )
            finally:
                f.close()
    except OverflowError:
        raise TraceTooLarge(
            f"{path.name} inflates past {size_text(max_inflated_bytes)}, the most this server "
            f"inflates a gzipped trace to (GPUDojo.analysis_max_inflated_bytes): record fewer steps "
            f"(a shorter torch.profiler schedule)"
        ) from None
    except (trace_scan.ScanStopped, EOFError, zlib.error, gzip.BadGzipFile, OSError):
        return None  # read_bytes and orjson say what is wrong with it
    except (orjson.JSONDecodeError, UnicodeDecodeError, ValueError, TypeError):
        return None  # a table the scanner kept does not decode: orjson says why
    try:
        return _columns_of(scanned)
    except (orjson.JSONDecodeError, UnicodeDecodeError, ValueError, TypeError):
        return None


def _decoded_ids(raw: list[bytes], decode: Callable[[bytes], Any]) -> tuple[list[Any], np.ndarray]:
    """The distinct values of interned raw texts (two spellings of one value, e.g. an escaped
    character, are one) and each raw id's value id, with a trailing -1 for id -1."""
    values: list[Any] = []
    index: dict[Any, int] = {}
    remap = np.empty(len(raw) + 1, dtype=np.int32)
    for i, text in enumerate(raw):
        value = decode(text)
        at = index.get(value)
        if at is None:
            at = index[value] = len(values)
            values.append(value)
        remap[i] = at
    remap[-1] = -1
    return values, remap


def _json_string(text: bytes) -> str:
    return orjson.loads(b'"' + text + b'"') if b"\\" in text else text.decode("utf-8")


def _dims_key(text: bytes) -> str:
    return orjson.dumps(orjson.loads(text)).decode()  # as _Collector spells it


def _columns_of(scanned: Any) -> Columns:
    """Columns out of what the scanner kept: its raw interned texts decoded (and merged where
    two spellings are one value), as _Collector would have made them from parsed events."""
    names, name_map = _decoded_ids(scanned.tables[0], _json_string)
    cats, cat_map = _decoded_ids(scanned.tables[1], _json_string)
    pids, pid_map = _decoded_ids(scanned.tables[2], orjson.loads)
    tids, tid_map = _decoded_ids(scanned.tables[3], orjson.loads)
    dims, dims_map = _decoded_ids(scanned.tables[4], _dims_key)
    cat = cat_map[scanned.cat]
    if (cat < 0).any():  # no cat: "" (as e.get("cat", ""))
        if "" not in cats:
            cats.append("")
        cat = np.where(cat < 0, cats.index(""), cat).astype(np.int32)
    # threads: (pid, tid) pairs in order of first appearance; no pid or tid is None
    pid_of = np.r_[pid_map[:-1], len(pids)][scanned.pid]
    tid_of = np.r_[tid_map[:-1], len(tids)][scanned.tid]
    key = pid_of.astype(np.int64) * (len(tids) + 1) + tid_of
    pairs, first, inverse = unique_few(key, (len(pids) + 1) * (len(tids) + 1))
    by_first = np.argsort(first, kind="stable")
    threads: list[tuple[Any, Any]] = []
    thread_index: dict[tuple[Any, Any], int] = {}
    pair_map = np.empty(len(pairs), dtype=np.int32)
    pid_values, tid_values = [*pids, None], [*tids, None]
    for p in by_first.tolist():
        t = (pid_values[int(pairs[p]) // (len(tids) + 1)], tid_values[int(pairs[p]) % (len(tids) + 1)])
        at = thread_index.get(t)
        if at is None:
            at = thread_index[t] = len(threads)
            threads.append(t)
        pair_map[p] = at
    ts, dur = scanned.ts, scanned.dur
    for event, which, text in scanned.slow:
        (ts if which == 0 else dur)[event] = float(text)
    keep = np.ones(len(ts), dtype=bool)
    if scanned.slow:  # a slow dur may be negative, or a slow ts huge: _Collector's rules
        keep = dur >= 0
    args_len, blob = scanned.args_len.astype(np.int64), scanned.args
    starts = np.zeros(len(args_len), dtype=np.int64)
    if len(args_len):
        starts[1:] = np.cumsum(args_len)[:-1]
    meta = orjson.loads(b"{" + scanned.meta + b"}") if scanned.meta else {}
    columns = Columns(
        ts=ts,
        dur=dur,
        name=name_map[scanned.name],
        cat=cat,
        thread=pair_map[inverse.reshape(-1)],
        corr=scanned.corr,
        dims=dims_map[scanned.dims],
        args_start=starts,
        args_len=args_len.astype(np.int32),
        args_blob=blob,
        names=[clip_text(n) for n in names],
        cats=[clip_text(c) for c in cats],
        threads=threads,
        dims_text=[clip_text(d.replace(",", ", ")) for d in dims],
        meta=meta if isinstance(meta, dict) else {},
        pairs=[orjson.loads(e) for e in scanned.begin_end],
        skipped=scanned.skipped + int((~keep).sum()),
    )
    if not keep.all():
        columns = _take(columns, np.flatnonzero(keep))
    return columns


FEW = 64


def unique_few(key: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(key, return_index=True, return_inverse=True) for keys in [0, span) of which
    few differ (a trace's threads: a handful over a million events): a count per key and one
    look for each one's first event, not a sort of every event (34 ms of a 1M-event trace's
    reading). A wide span or many distinct keys are sorted, as np.unique does."""
    if span > 1 << 16:
        return np.unique(key, return_index=True, return_inverse=True)
    present = np.flatnonzero(np.bincount(key, minlength=span))
    if len(present) > FEW:
        return np.unique(key, return_index=True, return_inverse=True)
    lut = np.zeros(span, dtype=np.int64)
    lut[present] = np.arange(len(present))
    first = np.array([int(np.argmax(key == k)) for k in present.tolist()], dtype=np.int64)
    return present, first, lut[key]


def _take(c: Columns, idx: np.ndarray) -> Columns:
    """Only the events ``idx`` (their args stay in the blob, unreferenced)."""
    return replace(c, **{k: getattr(c, k)[idx] for k in _BULK})


def _read_whole(data: bytes, name: str) -> Columns:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        hint = " (the file looks cut short)" if "end of data" in str(err) else ""
        raise NotATrace(f"{name} is not valid JSON{hint}: {err}") from None
    events, meta = _events_of(doc, name)
    collector = _Collector()
    collector.add(events)
    return collector.finish(meta)


def _events_of(doc: Any, name: str) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(doc, list):
        return doc, {}
    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if isinstance(events, list):
            return events, {k: v for k, v in doc.items() if k != "traceEvents"}
        raise NotATrace(f"{name} is a JSON object without a traceEvents list: not a Chrome/Kineto trace")
    raise NotATrace(f"{name} holds a JSON {type(doc).__name__}, not a trace (a list of events or an object)")


# ---------------------------------------------------------------- lanes, order, nesting


@dataclass
class Source:
    """One file of a (possibly multi-rank) profile."""

    path: Path
    rank: int
    columns: Columns


@dataclass
class Events:
    """Every complete event of every source, in index order (lane, then start, longest
    first): a span's index in this order is its ``ref``."""

    ts: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    cat: np.ndarray
    lane: np.ndarray
    depth: np.ndarray  # int16, nesting level on the lane
    parent: np.ndarray  # int32, the enclosing span on the same lane, -1 at the top
    corr: np.ndarray
    dims: np.ndarray
    args_start: np.ndarray
    args_len: np.ndarray
    args_blob: Any  # bytes, a uint8 array, an ArgsFile or an ArgsChain
    names: list[str]
    cats: list[str]
    dims_text: list[str]
    lanes: list[dict[str, Any]] = field(default_factory=list)

    def cat_id(self, cat: str) -> int:
        return self.cats.index(cat) if cat in self.cats else -1


def _lanes_of(src: Source, first_id: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The source's lanes: the main thread (the one with ProfilerStep spans, else the
    busiest), its other threads, then its streams; and its thread index -> lane id."""
    c = src.columns
    device_cats = [i for i, cat in enumerate(c.cats) if cat in DEVICE_CATS]
    on_device = np.zeros(len(c.threads), dtype=bool)
    on_device[np.unique(c.thread[np.isin(c.cat, device_cats)])] = True
    counts = np.bincount(c.thread, minlength=len(c.threads))
    step_names = [i for i, n in enumerate(c.names) if n.startswith("ProfilerStep#")]
    with_steps = np.bincount(c.thread[np.isin(c.name, step_names)], minlength=len(c.threads))
    host = [t for t in range(len(c.threads)) if not on_device[t] and counts[t]]
    main = max(host, key=lambda t: (with_steps[t], counts[t])) if host else -1
    streams = sorted((t for t in range(len(c.threads)) if on_device[t]), key=lambda t: tuple(map(str, c.threads[t])))
    devices = {c.threads[t][0] for t in streams}
    lanes: list[dict[str, Any]] = []
    remap = np.full(len(c.threads), -1, dtype=np.int32)
    for t in sorted(host, key=lambda t: (t != main, str(c.threads[t][1]))) + streams:
        pid, tid = c.threads[t]
        if on_device[t]:
            where, kind = (f"GPU {pid} · stream {tid}" if len(devices) > 1 else f"stream {tid}"), "stream"
        else:
            role = "main thread" if t == main else ("gloo thread" if _has_prefix(c, t, "gloo:") else "thread")
            where, kind = f"{role} (tid {tid})", "thread"
        remap[t] = first_id + len(lanes)
        lanes.append(
            {
                "id": first_id + len(lanes),
                "label": clip_text(f"rank {src.rank} · {where}"),  # a tid may be any string
                "kind": kind,
                "rank": src.rank,
                "main": t == main,
            }
        )
    return lanes, remap


def _has_prefix(c: Columns, thread: int, prefix: str) -> bool:
    ids = [i for i, n in enumerate(c.names) if n.startswith(prefix)]
    return bool(ids) and bool(np.any(np.isin(c.name[c.thread == thread], ids)))


def merge(sources: list[Source]) -> Events:
    """All sources' events in one index, with lanes, depths and parents. Each source's columns
    are taken (left with no events, their counts and meta kept): every column is freed as soon
    as it is in the index, so the nesting that follows does not run beside a second copy."""
    names: list[str] = []
    cats: list[str] = []
    dims: list[str] = []
    n_index: dict[str, int] = {}
    c_index: dict[str, int] = {}
    d_index: dict[str, int] = {}
    lanes: list[dict[str, Any]] = []
    lane_maps: list[np.ndarray] = [np.empty(0, dtype=np.int32)] * len(sources)
    for i in sorted(range(len(sources)), key=lambda i: sources[i].rank):
        more, lane_maps[i] = _lanes_of(sources[i], len(lanes))
        lanes += more
    parts: dict[str, list[np.ndarray]] = {
        k: [] for k in ("ts", "dur", "name", "cat", "lane", "corr", "dims", "as", "al")
    }
    blob_parts: list[bytes] = []
    offset = 0
    for src, lane_map in zip(sources, lane_maps, strict=True):
        c = src.columns
        parts["ts"].append(c.ts)
        parts["dur"].append(c.dur)
        parts["name"].append(_remap(names, n_index, c.names)[c.name])
        parts["cat"].append(_remap(cats, c_index, c.cats)[c.cat])
        parts["dims"].append(_remap(dims, d_index, c.dims_text)[c.dims])
        parts["lane"].append(lane_map[c.thread])
        parts["corr"].append(c.corr)
        parts["as"].append(c.args_start + offset)
        parts["al"].append(c.args_len)
        blob_parts.append(c.args_blob)
        offset += len(c.args_blob)
        src.columns = replace(c, **{k: getattr(c, k)[:0].copy() for k in _BULK}, args_blob=b"")
        del c
    order = index_order(
        *(v[0] if len(v) == 1 else np.concatenate(v) for v in (parts["ts"], parts["dur"], parts["lane"]))
    )
    # one column at a time, each source's freed as it goes: the index is built without a
    # second copy of every column at once
    cols = {}
    for k in list(parts):
        cols[k] = (parts[k][0] if len(parts[k]) == 1 else np.concatenate(parts[k]))[order]
        del parts[k]
    del order
    step_ids = np.array([i for i, n in enumerate(names) if n.startswith("ProfilerStep#")], dtype=np.int64)
    depth, parent = nesting(cols["ts"], cols["dur"], cols["lane"], np.isin(cols["name"], step_ids))
    events = Events(
        ts=cols["ts"],
        dur=cols["dur"],
        name=cols["name"].astype(np.int32, copy=False),
        cat=cols["cat"].astype(np.int16),
        lane=cols["lane"].astype(np.int32, copy=False),
        depth=depth,
        parent=parent,
        corr=cols["corr"],
        dims=cols["dims"].astype(np.int32, copy=False),
        args_start=cols["as"],
        args_len=cols["al"],
        args_blob=_joined(blob_parts),
        names=names,
        cats=cats,
        dims_text=dims,
        lanes=lanes,
    )
    counts = np.bincount(events.lane, minlength=len(lanes))
    firsts = np.r_[0, np.cumsum(counts)[:-1]]
    deepest = np.where(counts > 0, np.maximum.reduceat(events.depth, np.minimum(firsts, len(events.ts) - 1)), 0)
    for lane in lanes:
        lane["events"] = int(counts[lane["id"]])
        lane["max_depth"] = int(deepest[lane["id"]])
    return events


def index_order(ts: np.ndarray, dur: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """The permutation that sorts spans by (lane, start, longest first).

    Traces are written nearly in time order, so a stable sort by start (timsort on nearly
    sorted data) then by lane (radix) is some ten times quicker than a three-key lexsort;
    only the runs of equal starts are then sorted by duration."""
    order = np.argsort(ts, kind="stable")
    sorted_ts = ts[order]
    tied = np.flatnonzero(sorted_ts[1:] == sorted_ts[:-1])
    if len(tied):
        members = np.unique(np.r_[tied, tied + 1])
        group = np.cumsum(np.r_[True, sorted_ts[1:] != sorted_ts[:-1]])[members]
        order[members] = order[members][np.lexsort((-dur[order[members]], group))]
    return order[np.argsort(lane[order], kind="stable")]


def _small(a: np.ndarray) -> np.ndarray:
    """Non-negative integers as int16 where they fit (a stable argsort of int16 is a radix sort,
    some ten times quicker than the merge sort int64 gets; the order is the same)."""
    return a.astype(np.int16) if len(a) and a.min() >= 0 and a.max() < 1 << 15 else a


def _rows_overlap(ts: np.ndarray, end: np.ndarray, depth: np.ndarray) -> bool:
    """Whether two spans of one lane given the same depth overlap in time."""
    if len(ts) < 2:
        return False
    small = _small(depth)
    # in start order already (as nesting has them), a stable sort by depth alone is that order
    in_order = bool(np.all(ts[1:] >= ts[:-1]))
    order = np.argsort(small, kind="stable") if in_order else np.lexsort((ts, depth))
    d = small[order]
    same = d[1:] == d[:-1]
    del d, small
    same &= ts[order[1:]] < end[order[:-1]]
    return bool(same.any())


def _lowest_free_rows(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each span (in start order, longest first) on the lowest row free when it starts: the
    nesting depth where spans nest, and never two overlapping spans on one row where they do
    not. Compiled with numba in the analysis worker; a plain loop where numba is missing."""
    try:
        from gpudojo.worker.profile_rows import lowest_free_rows
    except ImportError:
        pass
    else:
        f64 = np.float64
        return lowest_free_rows(np.ascontiguousarray(ts, f64), np.ascontiguousarray(end, f64), np.zeros(len(ts), bool))
    busy: list[tuple[float, int]] = []  # (end, row) of the spans still open
    free: list[int] = []
    rows = np.empty(len(ts), dtype=np.int64)
    top = 0
    for i, (t, e) in enumerate(zip(ts.tolist(), end.tolist(), strict=True)):
        while busy and busy[0][0] <= t:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            row = heapq.heappop(free)
        else:
            row, top = top, top + 1
        rows[i] = row
        heapq.heappush(busy, (e, row))
    return rows


def _open_count(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For spans of one lane in (start, longest first) order: how many earlier spans are still
    open when each starts (started before it, not ended by its start), by binary searches.

    The spans ended by a start are counted over the whole lane, so those that come later in
    the order are taken back out: only a 0 µs span starting at that very time can be one
    (it ends where it starts), and a run of equal starts puts its 0 µs spans last. Without
    that, a 0 µs aten::empty made every span starting with it or after it (and itself) one
    level too shallow, and gave them the wrong parent."""
    n = len(ts)
    ends = np.sort(end, kind="stable")  # nearly sorted already: timsort is quick on it
    closed = np.searchsorted(ends, ts, side="right")
    del ends
    zero = end <= ts
    if zero.any():
        group_start = np.searchsorted(ts, ts, side="left")
        group_end = np.searchsorted(ts, ts, side="right")
        zeros_before = np.r_[0, np.cumsum(zero)]
        first_zero = group_end - (zeros_before[group_end] - zeros_before[group_start])
        closed = closed - (group_end - np.maximum(np.arange(n), first_zero))
    counted = np.arange(n)
    counted -= closed
    del closed
    return np.maximum(counted, 0, out=counted)


def _open_spans(ts: np.ndarray, end: np.ndarray, lane: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For spans sorted by (lane, start, longest first): each one's open-span count (how many
    earlier spans of its lane are still open when it starts), its parent (the latest earlier
    span of the lane one level up), and per lane id whether two spans of one level overlap.
    One compiled pass in the analysis worker (worker/profile_rows.open_spans); binary searches
    and sorts by level where numba is missing."""
    lanes = int(lane.max(initial=-1)) + 1
    try:
        from gpudojo.worker.profile_rows import open_spans
    except ImportError:
        pass
    else:
        # one signature (float64, float64, int32, bool), the one warm_up compiles: no other is
        # compiled during a learner's first analysis
        f64 = np.float64
        skip = np.zeros(len(ts), bool)
        return open_spans(
            np.ascontiguousarray(ts, f64),
            np.ascontiguousarray(end, f64),
            np.ascontiguousarray(lane, np.int32),
            lanes,
            skip,
        )
    n = len(ts)
    counted = np.zeros(n, dtype=np.int64)
    crossed = np.zeros(lanes, dtype=bool)
    bounds = np.flatnonzero(np.diff(lane)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, n], strict=True):
        counted[lo:hi] = _open_count(ts[lo:hi], end[lo:hi])
        crossed[lane[lo]] = _rows_overlap(ts[lo:hi], end[lo:hi], counted[lo:hi])
    parent = np.full(n, -1, dtype=np.int32)
    by_depth = np.argsort(_small(counted), kind="stable")  # index order within each depth
    cuts = np.searchsorted(counted[by_depth], np.arange(int(counted.max(initial=0)) + 2))
    for d in range(1, len(cuts) - 1):
        above, members = by_depth[cuts[d - 1] : cuts[d]], by_depth[cuts[d] : cuts[d + 1]]
        if not len(above) or not len(members):
            continue
        # the last span one level up before this one in index order (which is lane-major)
        cand = above[np.maximum(np.searchsorted(above, members) - 1, 0)]
        ok = (cand < members) & (lane[cand] == lane[members])
        parent[members[ok]] = cand[ok]
    return counted, parent, crossed


def _crossed_rows(ts: np.ndarray, end: np.ndarray, top: np.ndarray | None) -> np.ndarray:
    """Rows for the timeline of a lane whose spans cross instead of nesting (a Python frame
    that began before a ProfilerStep annotation ends inside the next one, or a frame whose
    recorded end falls a little after its caller's): the step annotations take row 0 and the
    other spans nest below them, each on the lowest row free when it starts where they still
    cross (or where the annotations themselves overlap)."""
    if top is None or not top.any():
        return _lowest_free_rows(ts, end)
    steps_overlap = bool(np.any(ts[top][1:] < end[top][:-1]))
    try:
        from gpudojo.worker.profile_rows import lowest_free_rows, open_spans
    except ImportError:
        pass
    else:  # the lane's own arrays, its steps skipped: no copy of the rest (0.13 -> 0.05 s at 1M)
        f64 = np.float64
        ts, end, top = np.ascontiguousarray(ts, f64), np.ascontiguousarray(end, f64), np.ascontiguousarray(top, bool)
        counted, _, crossed = open_spans(ts, end, np.zeros(len(ts), np.int32), 1, top)
        rows = lowest_free_rows(ts, end, top) if crossed[0] or steps_overlap else counted
        rows += 1
        rows[top] = 0
        return rows
    rows = np.zeros(len(ts), dtype=np.int64)
    rest = ~top
    ts_rest, end_rest = ts[rest], end[rest]
    counted, _, crossed = _open_spans(ts_rest, end_rest, np.zeros(len(ts_rest), dtype=np.int8))
    rows[rest] = (_lowest_free_rows(ts_rest, end_rest) if crossed.any() or steps_overlap else counted) + 1
    return rows


def nesting(
    ts: np.ndarray, dur: np.ndarray, lane: np.ndarray, top: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each span's row on its lane's timeline and its parent's index, for spans sorted by
    (lane, start, longest first); ``top`` marks spans drawn above the rest when spans cross
    (the ProfilerStep annotations).

    The parent is the latest earlier span one level up by the open-span count (how many
    earlier spans of the lane are still open when a span starts): the enclosing span where
    spans nest, which is what operator self times and stacks need. The row is that same
    level where spans nest and never puts two overlapping spans on one row where they do
    not (_crossed_rows)."""
    end = ts + dur
    counted, parent, crossed = _open_spans(ts, end, lane)
    rows = counted
    if crossed.any():
        rows = counted.copy()
        bounds = np.flatnonzero(np.diff(lane)) + 1
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(ts)], strict=True):
            if crossed[lane[lo]]:
                rows[lo:hi] = _crossed_rows(ts[lo:hi], end[lo:hi], None if top is None else top[lo:hi])
    return rows.astype(np.int16), parent


# ---------------------------------------------------------------- the cached index


_ARRAYS = ("ts", "dur", "name", "cat", "lane", "depth", "parent", "corr", "dims", "args_start", "args_len")
_TABLES = ("names", "cats", "dims_text", "lanes")


def save_events(ev: Events, folder: Path) -> None:
    """index.npz (every column, and the string tables as JSON) and args.bin (every kept args
    object, as JSON, back to back), each written to a temporary name and renamed, so that a
    killed writer never leaves half a file under the real name."""
    tables = {f"table_{k}": np.frombuffer(orjson.dumps(getattr(ev, k)), dtype=np.uint8) for k in _TABLES}
    kept = sum(len(t) for t in tables.values())
    if kept > MAX_KEPT_JSON_BYTES:
        raise TraceTooLarge(
            f"its analysis would keep {kept} bytes of names ({len(ev.names)} distinct names, {len(ev.lanes)} "
            f"threads and streams); the most this server keeps is {MAX_KEPT_JSON_BYTES} bytes"
        )
    save_arrays(folder / "index.npz", {**{k: getattr(ev, k) for k in _ARRAYS}, **tables})
    tmp = folder / "args.tmp.bin"
    if hasattr(ev.args_blob, "copy_to"):  # an ArgsFile or an ArgsChain: on disk, copied in turn
        with tmp.open("wb") as out:
            ev.args_blob.copy_to(out)
    else:
        tmp.write_bytes(ev.args_blob)
    tmp.replace(folder / "args.bin")


def save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)


def load_events(folder: Path) -> Events:
    """The index as saved (args stay on disk: ``args_blob`` is empty, read them with
    read_args)."""
    with np.load(folder / "index.npz") as data:
        arrays = {k: data[k] for k in _ARRAYS}
        tables = {k: orjson.loads(data[f"table_{k}"].tobytes()) for k in _TABLES}
    return Events(**arrays, **tables, args_blob=b"")


def read_args(folder: Path, start: int, length: int) -> dict[str, Any]:
    """One event's args from args.bin (a hover asks for one event: no need to hold them all)."""
    if length <= 0:
        return {}
    with open(folder / "args.bin", "rb") as f:
        f.seek(start)
        raw = f.read(length)
    try:
        args = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return args if isinstance(args, dict) else {}


# ---------------------------------------------------------------- windows


@dataclass
class WindowIndex:
    """The spans of every (lane, depth) row, sorted by start, for windowed queries.

    ``end_max`` is the running maximum of the row's ends, so that the first span reaching
    into a window is one binary search away even where spans of a row overlap."""

    order: np.ndarray  # index-order position of each row entry (the span's ref)
    ts: np.ndarray
    end: np.ndarray
    end_max: np.ndarray
    rows: dict[int, list[tuple[int, int, int]]]  # lane -> [(depth, lo, hi)]

    @classmethod
    def build(cls, ev: Events) -> WindowIndex:
        depth = ev.depth.astype(np.int64)
        key = ev.lane.astype(np.int64) * (int(depth.max(initial=0)) + 1) + depth
        order = np.argsort(key, kind="stable")  # index order is already by start within a lane
        ts = ev.ts[order]
        end = ts + ev.dur[order]
        key = key[order]
        bounds = np.r_[0, np.flatnonzero(np.diff(key)) + 1, len(key)]
        end_max = np.empty_like(end)
        rows: dict[int, list[tuple[int, int, int]]] = {}
        for lo, hi in itertools.pairwise(bounds.tolist()):
            end_max[lo:hi] = np.maximum.accumulate(end[lo:hi])
            first = order[lo]
            rows.setdefault(int(ev.lane[first]), []).append((int(ev.depth[first]), int(lo), int(hi)))
        return cls(order=order.astype(np.int64), ts=ts, end=end, end_max=end_max, rows=rows)

    def query(self, ev: Events, t0: float, t1: float, px: int) -> list[dict[str, Any]]:
        """Per lane, the spans overlapping [t0, t1]; spans under one pixel that touch or
        nearly touch (gap under a pixel) at the same depth become one span (count > 1, the
        longest one's name, ref -1). At most about 2 * px spans per row."""
        unit = (t1 - t0) / px
        out = []
        for lane in ev.lanes:
            spans: list[dict[str, Any]] = []
            for depth, lo, hi in self.rows.get(lane["id"], []):
                a = lo + int(np.searchsorted(self.end_max[lo:hi], t0, side="left"))
                b = lo + int(np.searchsorted(self.ts[lo:hi], t1, side="right"))
                if a < b:
                    spans += self._merged(ev, a, b, depth, unit)  # rows come by depth: spans stay sorted
            out.append({"lane": lane["id"], "spans": spans})
        return out

    def _merged(self, ev: Events, a: int, b: int, depth: int, unit: float) -> list[dict[str, Any]]:
        ts, end = self.ts[a:b], self.end[a:b]
        dur = end - ts
        small = dur < unit
        if len(ts) > 1:
            gap = ts[1:] - self.end_max[a : b - 1]
            joins = small[:-1] & small[1:] & (gap < unit)
            starts = np.flatnonzero(np.r_[True, ~joins])
        else:
            starts = np.zeros(1, dtype=np.int64)
        count = np.diff(np.r_[starts, len(ts)])
        group_end = np.maximum.reduceat(end, starts)
        group = np.repeat(np.arange(len(starts)), count)
        longest_dur = np.maximum.reduceat(dur, starts)
        is_longest = np.flatnonzero(dur == longest_dur[group])
        first_longest = is_longest[np.r_[True, group[is_longest][1:] != group[is_longest][:-1]]]
        refs = self.order[a + first_longest]
        names, cats = ev.names, ev.cats
        name_ids = ev.name[refs].tolist()
        cat_ids = ev.cat[refs].tolist()
        t_list = ts[starts].tolist()
        dur_list = (group_end - ts[starts]).tolist()
        return [
            {
                "t_us": t,
                "dur_us": d,
                "depth": depth,
                "name": names[n],
                "cat": cats[c],
                "count": k,
                "ref": r if k == 1 else -1,
            }
            for t, d, n, c, k, r in zip(t_list, dur_list, name_ids, cat_ids, count.tolist(), refs.tolist(), strict=True)
        ]
