"""Files that are analysed once, in a warm child process, and then queried from a cache:
the memory service's captures and the profile service's traces.

A file is named by an id: ``run:<run id>:<file name>`` for a file a run wrote into one of
its folders, or ``file:<path>`` for a file under the server's root (one the learner made
or uploaded). A run's id may also name all of a run's files at once, ``run:<run id>:*``
(the profile service merges the ranks' traces). Each analysis is keyed by the files'
identities (path, size, mtime) and the analysis version, written by the worker into a
cache folder of its own, and kept open for queries in a small LRU.

What the server process keeps of the analyses is bounded: at most ``keep_open`` of them open
and at most ``keep_open_bytes`` of their arrays, strings and tables (as held_bytes counts
them), least recently used closed first; the one in use stays open whatever its size. Results
never pass through the server whole: the worker writes them to the cache folder and replies a
few hundred bytes; windows are computed from the open arrays. Glibc keeps freed memory in its
arenas (the service's queries run on several threads), so closing an analysis hands the freed
pages back with malloc_trim.

Importing this module is cheap: the service process never loads what the analyses need
(numpy is loaded by the Loaded classes the services pass in, torch and pandas never).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import re
import shutil
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from .errors import Failed, Forbidden, Invalid, NotFound, ServiceError, TimedOut, TooLarge
from .nofollow import LinkInPath, open_beneath, open_file_beneath
from .runfolder import RUN_ID, RunFolder
from .worker.pipe import WarmWorker, WorkerFailure

L = TypeVar("L")

ALL_RANKS = "*"
# The worker's replies are a few hundred bytes (its analysis goes to files): a longer line is
# not read into the server (bytes).
MAX_REPLY_BYTES = 1 << 20
# Refusals remembered per file identity, so that a file that was too much for its analysis is
# not analysed again on every query of the viewer.
REFUSALS_KEPT = 256
# Analyses kept open for queries, per service, and the most bytes they may hold together.
KEEP_OPEN = 4
KEEP_OPEN_BYTES = 128 * 1024**2
# The largest file analysed (bigger: 413 before any work). The scanners stream their files, so
# the size is bounded by what the analysis keeps, not the file: a 10M-event with_stack trace
# (3.9 GB) peaks at 1.5 GiB in its worker, under the workers' 2 GiB memory cap (bench/RESULTS.md).
MAX_FILE_BYTES = 8 * 1024**3


def held_bytes(obj: object) -> int:
    """Bytes an opened analysis holds in this process (bytes): every NumPy buffer once (views
    count their base), strings and containers by sys.getsizeof, gpudojo's own objects through
    their fields; what two parts share is counted once."""
    import numpy as np

    seen: set[int] = set()
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)  # an array's buffer included when it owns it, not when a view
        if isinstance(o, np.ndarray):
            if o.base is not None:
                stack.append(o.base)
            elif o.dtype == object:
                stack.extend(o.ravel().tolist())
        elif isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list | tuple | set | frozenset):
            stack.extend(o)
        elif type(o).__module__.startswith("gpudojo."):
            fields = getattr(o, "__dict__", None)
            if fields is not None:
                stack.append(fields)
            for name in getattr(type(o), "__slots__", ()):
                if hasattr(o, name):
                    stack.append(getattr(o, name))
    return total


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim = ctypes.CDLL(None).malloc_trim  # glibc's; musl and macOS have none
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_freed_memory() -> None:
    """Hand the pages malloc keeps free in its arenas back to the system (glibc's
    malloc_trim(0); nothing where there is none)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class FileRequestError(Invalid):
    """An id or a query a file-analysis service cannot answer as asked."""


@dataclass(frozen=True)
class FileKind:
    """What a service analyses: how its files are named and where a run keeps them."""

    noun: str  # "capture", "trace": how messages name one
    folder: Callable[[RunFolder], Path]  # a run's folder of these files
    name: re.Pattern[str]  # a file name in that folder, group 1 the rank
    worker_module: str  # python -m ... --serve
    worker_name: str  # how errors name the worker ("memory analysis")
    version: int  # bumped when the analysis changes: old caches are ignored
    merge_ranks: bool = False  # whether run:<id>:* names all of a run's files at once


@dataclass
class Progress:
    phase: str
    fraction: float | None
    elapsed_ms: float


class AnalysedFiles(Generic[L]):
    """Resolves ids to files (never outside their root), analyses each set of files once in
    a warm worker (one analysis at a time; callers of the same file wait for its result),
    and keeps up to ``keep_open`` analyses, ``keep_open_bytes`` bytes of them, open for
    queries (the one just asked for stays open whatever its size)."""

    def __init__(
        self,
        kind: FileKind,
        data_dir: Path,
        root_dir: Path,
        cache_dir: Path,
        open_cached: Callable[[Path], L],
        *,
        timeout_s: float,
        max_bytes: int,
        python: str = sys.executable,
        keep_open: int = KEEP_OPEN,
        keep_open_bytes: int = KEEP_OPEN_BYTES,
        max_rss_bytes: int | None = None,
    ) -> None:
        from .runfolder import runs_dir

        self.kind = kind
        self.runs_dir = runs_dir(data_dir)
        self.root_dir = root_dir.resolve()
        self.cache_dir = cache_dir
        self.open_cached = open_cached
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.keep_open = max(1, keep_open)
        self.keep_open_bytes = keep_open_bytes
        # key -> (the open analysis, the bytes it holds), least recently used first.
        self._open: OrderedDict[str, tuple[L, int]] = OrderedDict()
        # key -> (its analysis lock, how many callers hold or wait for it): gone when none do.
        self._locks: dict[str, tuple[threading.Lock, int]] = {}
        self._lock = threading.Lock()
        self._worker = WarmWorker(
            kind.worker_module,
            cache_dir / "analysis-worker.log",
            python,
            name=kind.worker_name,
            args=("--serve",),
            max_rss_bytes=max_rss_bytes,
            max_line_bytes=MAX_REPLY_BYTES,
        )
        self._worker_lock = threading.Lock()
        self._progress: dict[str, dict[str, Any]] = {}
        self._refused: OrderedDict[str, ServiceError] = OrderedDict()
        self.worker_starts = 0

    # --- naming ---------------------------------------------------------------------------

    def run_files(self, run_id: str) -> list[tuple[str, Path, int]]:
        """(id, path, rank) of every file of this kind a run wrote, in name order. A link (the
        folder, the run's folder, or a file) lists nothing: it would not be served either."""
        if not RUN_ID.match(run_id):
            raise FileRequestError(f"{run_id!r} is not a run id")
        folder = self.kind.folder(RunFolder(self.runs_dir / run_id))
        try:
            fd = open_beneath(self.runs_dir, self._run_parts(run_id), folder=True)
        except (LinkInPath, OSError):
            return []
        try:
            with os.scandir(fd) as entries:
                names = [e.name for e in entries if e.is_file(follow_symlinks=False)]
        finally:
            os.close(fd)
        found = []
        for name in names:
            m = self.kind.name.match(name)
            if m:
                found.append((f"run:{run_id}:{name}", folder / name, int(m[1])))
        return sorted(found, key=lambda f: (f[2], f[0]))

    def _run_parts(self, run_id: str, name: str | None = None) -> list[str]:
        """The names from the runs folder down to a run's folder of this kind (and a file in it)."""
        folder = self.kind.folder(RunFolder(self.runs_dir / run_id))
        return [*folder.relative_to(self.runs_dir).parts, *([name] if name else [])]

    def _located(self, file_id: str) -> list[tuple[Path, Path, list[str]]]:
        """(path, root, names below the root) of each file behind an id; nothing opened yet."""
        noun = self.kind.noun
        if file_id.startswith("run:"):
            parts = file_id.split(":", 2)
            if len(parts) != 3 or not RUN_ID.match(parts[1]):
                raise FileRequestError(f"{file_id!r} is not a {noun} id")
            run_id, name = parts[1], parts[2]
            if name == ALL_RANKS and self.kind.merge_ranks:
                files = self.run_files(run_id)
                if not files:
                    raise NotFound(f"Run {run_id} has no {noun}s")
                return [(p, self.runs_dir, self._run_parts(run_id, p.name)) for _, p, _ in files]
            if self.kind.name.match(name):
                names = self._run_parts(run_id, name)
                return [(self.runs_dir.joinpath(*names), self.runs_dir, names)]
            raise FileRequestError(f"{file_id!r} is not a {noun} id")
        if file_id.startswith("file:"):
            try:
                path = (self.root_dir / file_id[5:]).resolve()
            except (OSError, ValueError) as err:  # a NUL byte in the name: no file can have it
                raise FileRequestError(f"{file_id!r} is not a path a file can have") from err
            if not path.is_relative_to(self.root_dir):
                raise Forbidden(f"{file_id[5:]} is outside the server's root folder", "outside_root")
            # Links in the workspace are followed as Jupyter follows them, by resolve() above; the
            # file is then opened along the resolved path, so that a link swapped in since
            # cannot lead anywhere else.
            return [(path, self.root_dir, list(path.relative_to(self.root_dir).parts))]
        raise FileRequestError(f"{file_id!r} is not a {noun} id (run:... or file:...)")

    def _open_file(self, file_id: str, path: Path, root: Path, names: list[str]) -> BinaryIO:
        """The file at root/names, opened without following a link below ``root``: a 403 for a
        link, a 404 for no regular file there, a 413 past the size cap."""
        try:
            f = open_file_beneath(root, names)
        except LinkInPath as err:
            if root == self.runs_dir:
                raise LinkInPath(f"{file_id} leads outside the run's folder: {err.message}") from err
            raise Forbidden(f"{file_id[5:]} leads outside the server's root folder", "outside_root") from err
        except (OSError, ValueError) as err:  # ValueError: not a name a file can have
            raise NotFound(f"No {self.kind.noun} {file_id!r}") from err
        size = os.fstat(f.fileno()).st_size
        if size > self.max_bytes:
            f.close()
            raise TooLarge(
                f"{path.name} is {size:,} bytes; the most this server analyses is {self.max_bytes:,} "
                "(GPUDojo.analysis_max_file_bytes).",
                f"{self.kind.noun}_too_large",
            )
        return f

    def resolve(self, file_id: str) -> list[Path]:
        """The file(s) behind an id, checked to stay inside their root (no link followed in a
        run's folder) and within the size cap."""
        located = self._located(file_id)
        for path, root, names in located:
            self._open_file(file_id, path, root, names).close()
        return [path for path, _, _ in located]

    def open_one(self, file_id: str) -> tuple[str, BinaryIO]:
        """The name and the open file behind an id that names one file (for a download), opened
        as resolve() checks it, so that what is sent is what was checked. The caller closes it."""
        located = self._located(file_id)
        if len(located) != 1:
            raise FileRequestError(f"{file_id!r} names {len(located)} files: download one of them")
        path, root, names = located[0]
        return path.name, self._open_file(file_id, path, root, names)

    def key(self, paths: list[Path]) -> str:
        parts = []
        for path in paths:
            st = path.stat()
            parts.append(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}")
        ident = "||".join(parts) + f"|{self.kind.version}"
        return hashlib.sha256(ident.encode()).hexdigest()[:32]

    # --- analysis -------------------------------------------------------------------------

    def ensure(self, file_id: str, request: Callable[[list[Path], Path], dict[str, Any]]) -> tuple[L, bool]:
        """The open analysis of an id's files (analysed now if needed) and whether it came
        from the cache. ``request(paths, folder)`` is the worker request for them."""
        paths = self.resolve(file_id)
        key = self.key(paths)
        with self._lock:
            if key in self._open:
                self._open.move_to_end(key)
                return self._open[key][0], True
        with self._one_analysis(key):
            with self._lock:
                if key in self._open:  # opened by the caller this one waited for
                    self._open.move_to_end(key)
                    return self._open[key][0], True
            folder, cached = self._on_disk(paths, key, request)
            opened = self.open_cached(folder)
            self._keep(key, opened, held_bytes(opened))
        return opened, cached

    def analysed(self, file_id: str, request: Callable[[list[Path], Path], dict[str, Any]]) -> tuple[Path, bool]:
        """The folder of an id's analysis (analysed now if needed) and whether it was there
        already, without opening the analysis in this process: for a one-shot reader of its
        summary (the CLI), which needs no timeline index."""
        paths = self.resolve(file_id)
        key = self.key(paths)
        with self._one_analysis(key):
            return self._on_disk(paths, key, request)

    def _on_disk(
        self, paths: list[Path], key: str, request: Callable[[list[Path], Path], dict[str, Any]]
    ) -> tuple[Path, bool]:
        refused = self._refused.get(key)
        if refused is not None:
            raise refused
        folder = self.cache_dir / key
        cached = (folder / "summary.json").is_file()
        if not cached:
            self._analyse(paths, folder, key, request(paths, folder))
        return folder, cached

    @contextlib.contextmanager
    def _one_analysis(self, key: str) -> Iterator[None]:
        """Held while ``key`` is analysed or opened: one analysis per file at a time, and the
        callers that wait for it get its result."""
        with self._lock:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._lock:
                lock, users = self._locks[key]
                if users > 1:
                    self._locks[key] = (lock, users - 1)
                else:
                    del self._locks[key]

    def _keep(self, key: str, opened: L, nbytes: int) -> None:
        """Open ``opened`` for queries, closing the least recently used analyses past the count
        and byte bounds (never the one just opened)."""
        closed = []
        with self._lock:
            self._open[key] = (opened, nbytes)
            held = sum(b for _, b in self._open.values())
            while len(self._open) > 1 and (len(self._open) > self.keep_open or held > self.keep_open_bytes):
                _, (old, old_bytes) = self._open.popitem(last=False)
                held -= old_bytes
                closed.append(old)
        if closed:
            del closed, old
            release_freed_memory()

    def kept(self) -> tuple[int, int]:
        """How many analyses this process keeps open, and the bytes they hold (bytes)."""
        with self._lock:
            return len(self._open), sum(b for _, b in self._open.values())

    def progress(self, file_id: str) -> Progress:
        """How far an id's first analysis is: not_started, queued, the worker's phases, done."""
        key = self.key(self.resolve(file_id))
        if (self.cache_dir / key / "summary.json").is_file():
            return Progress("done", 1.0, 0.0)
        state = self._progress.get(key)
        if state is None:
            return Progress("not_started", None, 0.0)
        return Progress(state["phase"], state["fraction"], (time.monotonic() - state["since"]) * 1000)

    def _analyse(self, paths: list[Path], folder: Path, key: str, message: dict[str, Any]) -> None:
        since = time.monotonic()
        self._progress[key] = {"phase": "queued", "fraction": None, "since": since}
        name = paths[0].name if len(paths) == 1 else f"{len(paths)} {self.kind.noun}s"

        def on_progress(p: dict[str, Any]) -> None:
            self._progress[key] = {"phase": p.get("phase", "reading"), "fraction": p.get("fraction"), "since": since}

        try:
            with self._worker_lock:
                try:
                    reply = self._call_worker(message, on_progress)
                except WorkerFailure as err:
                    if err.kind == "timeout":
                        raise TimedOut(
                            f"Analysing {name} took longer than {self.timeout_s:g} s", "analysis_timeout"
                        ) from err
                    if err.kind == "memory":
                        # Whatever the worker left there was written past the cap: not a result.
                        shutil.rmtree(folder, ignore_errors=True)
                        raise self._refuse(key, self.out_of_memory(name, err.message)) from err
                    raise Failed(f"The analysis of {name} failed: {err.message}", "analysis_failed") from err
        finally:
            self._progress.pop(key, None)
        if "error" in reply:
            raise self._refuse(key, self.refusal(name, reply["error"]))
        if not reply.get("ok"):
            raise Failed(f"The analysis of {name} failed: {str(reply)[:1000]}", "analysis_failed")

    def _refuse(self, key: str, error: ServiceError) -> ServiceError:
        """``error``, remembered as the answer for these files while they stay as they are."""
        with self._lock:
            self._refused[key] = error
            while len(self._refused) > REFUSALS_KEPT:
                self._refused.popitem(last=False)
        return error

    def out_of_memory(self, name: str, message: str) -> ServiceError:
        """The 413 for files whose analysis outgrew the worker's memory cap."""
        return TooLarge(
            f"{name}: {message} The most an analysis may hold is set by GPUDojo.analysis_max_rss_bytes; "
            f"a smaller {self.kind.noun} (fewer steps or entries) fits.",
            f"{self.kind.noun}_too_large",
        )

    def refusal(self, name: str, error: dict[str, Any]) -> ServiceError:
        """The 4xx error for a file the worker refused (not this kind of file, unsafe, or more
        than this server analyses)."""
        message = f"{name}: {str(error.get('message', 'not readable'))[:2000]}"
        if error.get("kind") == "too_large":
            return TooLarge(message, f"{self.kind.noun}_too_large")
        return FileRequestError(message, f"not_a_{self.kind.noun}")

    def _call_worker(self, message: dict[str, Any], on_progress: Callable[[Any], None]) -> dict[str, Any]:
        """One analysis in the warm worker; a worker that had died since the last one (killed,
        out of memory) is replaced and asked once more."""
        for attempt in (1, 2):
            self._start_worker()
            try:
                return self._worker.call(message, self.timeout_s, on_progress)
            except WorkerFailure as err:
                if err.kind != "crashed" or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _start_worker(self) -> None:
        """Start the worker if it is not running (the caller holds the worker lock); a first
        start may compile or import a lot, hence the long limit."""
        if not self._worker.alive:
            self.worker_starts += 1
            self._worker.start(timeout_s=max(self.timeout_s, 300.0))

    def warm_up(self) -> None:
        """Start the worker now, so that the first file opened does not wait for it."""
        with self._worker_lock:
            self._start_worker()

    def close(self) -> None:
        with self._worker_lock:
            self._worker.stop()
