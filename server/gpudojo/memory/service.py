"""The memory service: finds captures (in runs' folders, or snapshots in the workspace),
analyses each once in a child process (cached by file identity), and answers the viewer's
queries from the cached arrays.

Capture ids: ``run:<run id>:<file name>`` for a run's capture, ``file:<path>`` for a file
under the server's root (e.g. a snapshot uploaded through the file browser).
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..errors import Failed, Forbidden, Invalid, NotFound, ServiceError, TimedOut, TooLarge
from ..runfolder import CAPTURE_NAME, RUN_ID, RunFolder, runs_dir
from ..worker.pipe import WarmWorker, WorkerFailure
from .analysis import ANALYSIS_VERSION, Loaded, diff
from .estimator import estimate
from .models import Analysis, AnalysisProgress, Capture, CaptureList, Diff, Estimate, EstimateRequest, Window

# A run's captures and run ids, as gpudojo.runfolder names them.
_RUN_CAPTURE = CAPTURE_NAME
_RUN_ID = RUN_ID


class MemoryRequestError(Invalid):
    """A capture id or query the memory service cannot answer as asked."""


class MemoryService:
    def __init__(
        self,
        data_dir: Path,
        root_dir: Path,
        *,
        analysis_timeout_s: float = 300.0,
        max_capture_bytes: int = 2 * 1024**3,
        python: str = sys.executable,
    ) -> None:
        self.runs_dir = runs_dir(data_dir)
        self.cache_dir = data_dir / "memory-cache"
        self.root_dir = root_dir.resolve()
        self.analysis_timeout_s = analysis_timeout_s
        self.max_capture_bytes = max_capture_bytes
        self.python = python
        self._loaded: OrderedDict[str, Loaded] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        # One warm analysis worker (the snapshot scanner's compiled code loaded once), one
        # analysis at a time; what it is doing, per cache key, for the progress route.
        self._worker = WarmWorker(
            "gpudojo.worker.memory_analyze",
            self.cache_dir / "analysis-worker.log",
            python,
            name="memory analysis",
            args=("--serve",),
        )
        self._worker_lock = threading.Lock()
        self._progress: dict[str, dict[str, Any]] = {}

    # --- captures -------------------------------------------------------------------------

    def captures(self, run_id: str) -> CaptureList:
        if not _RUN_ID.match(run_id):
            raise MemoryRequestError(f"{run_id!r} is not a run id")
        folder = RunFolder(self.runs_dir / run_id).memory_dir
        found = []
        for path in sorted(folder.glob("rank*")) if folder.is_dir() else []:
            m = _RUN_CAPTURE.match(path.name)
            if m:
                found.append(self._capture(f"run:{run_id}:{path.name}", path))
        return CaptureList(captures=found)

    def _capture(self, capture_id: str, path: Path) -> Capture:
        kind = "cpu-profiler" if path.name.endswith(".json") else "cuda-snapshot"
        run = rank = None
        if capture_id.startswith("run:"):
            _, run, name = capture_id.split(":", 2)
            rank = int(_RUN_CAPTURE.match(name)[1])
            label = f"rank {rank}, {'CPU profiler' if kind == 'cpu-profiler' else 'CUDA snapshot'}"
        else:
            label = capture_id.removeprefix("file:")
        return Capture(
            id=capture_id,
            kind=kind,
            source=capture_id.split(":", 1)[1],
            run=run,
            rank=rank,
            size_bytes=path.stat().st_size,
            label=label,
        )

    def resolve(self, capture_id: str) -> Path:
        """The file behind a capture id, checked to stay inside its root."""
        if capture_id.startswith("run:"):
            parts = capture_id.split(":", 2)
            if len(parts) != 3 or not _RUN_ID.match(parts[1]) or not _RUN_CAPTURE.match(parts[2]):
                raise MemoryRequestError(f"{capture_id!r} is not a capture id")
            path = RunFolder(self.runs_dir / parts[1]).memory_dir / parts[2]
        elif capture_id.startswith("file:"):
            path = (self.root_dir / capture_id[5:]).resolve()
            if not path.is_relative_to(self.root_dir):
                raise Forbidden(f"{capture_id[5:]} is outside the server's root folder", "outside_root")
        else:
            raise MemoryRequestError(f"{capture_id!r} is not a capture id (run:... or file:...)")
        if not path.is_file():
            raise NotFound(f"No capture {capture_id!r}")
        if path.stat().st_size > self.max_capture_bytes:
            raise TooLarge(
                f"{path.name} is {path.stat().st_size} bytes; the most this server analyses is {self.max_capture_bytes}"
            )
        return path

    # --- analysis -------------------------------------------------------------------------

    def _key(self, path: Path) -> str:
        st = path.stat()
        ident = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{ANALYSIS_VERSION}"
        return hashlib.sha256(ident.encode()).hexdigest()[:32]

    def _ensure(self, capture_id: str) -> tuple[Loaded, bool, float]:
        """The loaded analysis of a capture (analysed now in a child process if needed),
        whether it came from the cache, and the analysis time in ms."""
        path = self.resolve(capture_id)
        key = self._key(path)
        with self._lock:
            if key in self._loaded:
                self._loaded.move_to_end(key)
                return self._loaded[key], True, self._loaded[key].summary.get("analysis_ms", 0.0)
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one analysis per file at a time; others wait for its result
            folder = self.cache_dir / key
            cached = (folder / "summary.json").is_file()
            if not cached:
                self._analyse(path, folder, key)
            loaded = Loaded(folder)
        with self._lock:
            self._loaded[key] = loaded
            while len(self._loaded) > 4:
                self._loaded.popitem(last=False)
        return loaded, cached, loaded.summary.get("analysis_ms", 0.0)

    def warm_up(self) -> None:
        """Start the analysis worker now, so that the first capture opened does not wait for
        Python, NumPy and the scanner to load (or, the first time, for numba to compile it)."""
        with self._worker_lock:
            self._ensure_worker()

    def _ensure_worker(self) -> None:
        if not self._worker.alive:
            self._worker.start(timeout_s=max(self.analysis_timeout_s, 300.0))

    def progress(self, capture_id: str) -> AnalysisProgress:
        """How far the analysis of a capture is: queued, reading (with the fraction of the
        file read), pairing, indexing, or done (cached)."""
        path = self.resolve(capture_id)
        key = self._key(path)
        if (self.cache_dir / key / "summary.json").is_file():
            return AnalysisProgress(capture=capture_id, phase="done", fraction=1.0, elapsed_ms=0.0)
        state = self._progress.get(key)
        if state is None:
            return AnalysisProgress(capture=capture_id, phase="not_started", fraction=None, elapsed_ms=0.0)
        return AnalysisProgress(
            capture=capture_id,
            phase=state["phase"],
            fraction=state["fraction"],
            elapsed_ms=(time.monotonic() - state["since"]) * 1000,
        )

    def _analyse(self, path: Path, folder: Path, key: str) -> None:
        since = time.monotonic()
        self._progress[key] = {"phase": "queued", "fraction": None, "since": since}

        def on_progress(p: dict[str, Any]) -> None:
            self._progress[key] = {"phase": p.get("phase", "reading"), "fraction": p.get("fraction"), "since": since}

        try:
            with self._worker_lock:
                try:
                    reply = self._call_worker(path, folder, on_progress)
                except WorkerFailure as err:
                    if err.kind == "timeout":
                        raise TimedOut(
                            f"Analysing {path.name} took longer than {self.analysis_timeout_s:g} s",
                            "analysis_timeout",
                        ) from err
                    raise Failed(f"The analysis of {path.name} failed: {err.message}", "analysis_failed") from err
        finally:
            self._progress.pop(key, None)
        if "error" in reply:
            kind = reply["error"]["kind"]
            code = "refused_pickle" if kind == "refused" else "not_a_capture"
            raise MemoryRequestError(f"{path.name}: {reply['error']['message']}", code)
        if not reply.get("ok"):
            raise Failed(f"The analysis of {path.name} failed: {reply}", "analysis_failed")

    def _call_worker(self, path: Path, folder: Path, on_progress: Any) -> dict[str, Any]:
        """One analysis in the warm worker; a worker that had died since the last one (killed,
        out of memory) is replaced and asked once more."""
        for attempt in (1, 2):
            self._ensure_worker()
            try:
                return self._worker.call(
                    {"source": str(path), "folder": str(folder)}, self.analysis_timeout_s, on_progress
                )
            except WorkerFailure as err:
                if err.kind != "crashed" or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def analyse_run(self, run_id: str) -> int:
        """Analyse a finished run's captures now, so that opening one is the cached path;
        returns how many were analysed (a capture that fails is left for the viewer to report)."""
        done = 0
        for capture in self.captures(run_id).captures:
            try:
                self._ensure(capture.id)
                done += 1
            except ServiceError:
                continue
        return done

    def close(self) -> None:
        with self._worker_lock:
            self._worker.stop()

    def analysis(self, capture_id: str) -> Analysis:
        t0 = time.perf_counter()
        loaded, cached, analysis_ms = self._ensure(capture_id)
        s = loaded.summary
        return Analysis(
            capture=self._capture(capture_id, self.resolve(capture_id)),
            axis=s["axis"],
            t_start_us=s["t_start_us"],
            t_end_us=s["t_end_us"],
            entries=s["entries"],
            allocations=s["allocations"],
            categories=s["categories"],
            category_source=s["category_source"],
            frames=s["frames"],
            peak=s["peak"],
            ooms=s["ooms"],
            notes=s["notes"],
            context=s.get("context") or None,
            analysis_ms=analysis_ms if not cached else (time.perf_counter() - t0) * 1000,
            cached=cached,
        )

    def analyze_path(self, path: str) -> Analysis:
        return self.analysis("file:" + path)

    def window(self, capture_id: str, t0: float | None, t1: float | None, px: int, top: int) -> Window:
        loaded, _, _ = self._ensure(capture_id)
        s = loaded.summary
        lo = s["t_start_us"] if t0 is None else t0
        hi = s["t_end_us"] if t1 is None else t1
        if hi <= lo:
            raise MemoryRequestError("t1 must be after t0")
        return Window.model_validate(loaded.window(lo, hi, max(2, min(px, 4000)), max(0, min(top, 5000))))

    def diff(self, a: str, b: str) -> Diff:
        left, _, _ = self._ensure(a)
        right, _, _ = self._ensure(b)
        return Diff(a=a, b=b, **diff(left, right))

    def estimate(self, req: EstimateRequest) -> Estimate:
        return estimate(req)

    def context(self, capture_id: str) -> dict[str, Any]:
        loaded, _, _ = self._ensure(capture_id)
        return loaded.summary.get("context", {})
