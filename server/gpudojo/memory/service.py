"""The memory service: finds captures (in runs' folders, or snapshots in the workspace),
analyses each once in a child process (cached by file identity), and answers the viewer's
queries from the cached arrays.

Capture ids: ``run:<run id>:<file name>`` for a run's capture, ``file:<path>`` for a file
under the server's root (e.g. a snapshot uploaded through the file browser).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

from ..analysed_files import KEEP_OPEN_BYTES, MAX_FILE_BYTES, AnalysedFiles, FileKind, FileRequestError
from ..errors import ServiceError, TooLarge
from ..runfolder import CAPTURE_NAME
from ..worker.pipe import WarmWorker
from .analysis import ANALYSIS_VERSION, Loaded, diff
from .estimator import estimate
from .models import (
    Analysis,
    AnalysisProgress,
    Capture,
    CaptureList,
    Diff,
    Estimate,
    EstimateRequest,
    TransformerEstimate,
    TransformerEstimateRequest,
    Window,
)
from .transformer import estimate_transformer

CAPTURES = FileKind(
    noun="capture",
    folder=lambda run: run.memory_dir,
    name=CAPTURE_NAME,
    worker_module="gpudojo.worker.memory_analyze",
    worker_name="memory analysis",
    version=ANALYSIS_VERSION,
)


class _Captures(AnalysedFiles[Loaded]):
    def refusal(self, name: str, error: dict[str, Any]) -> ServiceError:
        if error.get("kind") == "too_large":
            return TooLarge(f"{name}: {error.get('message', 'too large')}", "capture_too_large")
        code = "refused_pickle" if error.get("kind") == "refused" else "not_a_capture"
        return FileRequestError(f"{name}: {error.get('message', 'not readable')}", code)


class MemoryService:
    def __init__(
        self,
        data_dir: Path,
        root_dir: Path,
        *,
        analysis_timeout_s: float = 300.0,
        max_capture_bytes: int = MAX_FILE_BYTES,
        max_rss_bytes: int | None = 2 * 1024**3,
        keep_open_bytes: int = KEEP_OPEN_BYTES,
        python: str = sys.executable,
    ) -> None:
        self.cache_dir = data_dir / "memory-cache"
        # One warm analysis worker (the snapshot scanner's compiled code loaded once), one
        # analysis at a time, the last few analyses open for the viewer's queries (analysed_files).
        self.files = _Captures(
            CAPTURES,
            data_dir,
            root_dir,
            self.cache_dir,
            Loaded,
            timeout_s=analysis_timeout_s,
            max_bytes=max_capture_bytes,
            python=python,
            max_rss_bytes=max_rss_bytes,
            keep_open_bytes=keep_open_bytes,
        )

    @property
    def _worker(self) -> WarmWorker:
        return self.files._worker

    # --- captures -------------------------------------------------------------------------

    def captures(self, run_id: str) -> CaptureList:
        return CaptureList(captures=[self._capture(cid, path) for cid, path, _ in self.files.run_files(run_id)])

    def _capture(self, capture_id: str, path: Path) -> Capture:
        kind = "cpu-profiler" if path.name.endswith(".json") else "cuda-snapshot"
        run = rank = None
        if capture_id.startswith("run:"):
            _, run, name = capture_id.split(":", 2)
            rank = int(CAPTURE_NAME.match(name)[1])
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
        return self.files.resolve(capture_id)[0]

    def open_raw(self, capture_id: str) -> tuple[str, BinaryIO]:
        """The file name and the open capture file for a download, checked as resolve() checks
        it (no link followed in a run's folder); the caller closes it."""
        return self.files.open_one(capture_id)

    # --- analysis -------------------------------------------------------------------------

    def _ensure(self, capture_id: str) -> tuple[Loaded, bool, float]:
        """The loaded analysis of a capture (analysed now in a child process if needed),
        whether it came from the cache, and the analysis time in ms."""
        loaded, cached = self.files.ensure(
            capture_id, lambda paths, folder: {"source": str(paths[0]), "folder": str(folder)}
        )
        return loaded, cached, loaded.summary.get("analysis_ms", 0.0)

    def warm_up(self) -> None:
        """Start the analysis worker now, so that the first capture opened does not wait for
        Python, NumPy and the scanner to load (or, the first time, for numba to compile it)."""
        self.files.warm_up()

    def progress(self, capture_id: str) -> AnalysisProgress:
        """How far the analysis of a capture is: queued, reading (with the fraction of the
        file read), pairing, indexing, or done (cached)."""
        p = self.files.progress(capture_id)
        return AnalysisProgress(capture=capture_id, phase=p.phase, fraction=p.fraction, elapsed_ms=p.elapsed_ms)

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
        self.files.close()

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
            raise FileRequestError("t1 must be after t0")
        return Window.model_validate(loaded.window(lo, hi, max(2, min(px, 4000)), max(0, min(top, 5000))))

    def diff(self, a: str, b: str) -> Diff:
        left, _, _ = self._ensure(a)
        right, _, _ = self._ensure(b)
        return Diff(a=a, b=b, **diff(left, right))

    def estimate(self, req: EstimateRequest) -> Estimate:
        return estimate(req)

    def estimate_transformer(self, req: TransformerEstimateRequest) -> TransformerEstimate:
        return estimate_transformer(req)

    def context(self, capture_id: str) -> dict[str, Any]:
        loaded, _, _ = self._ensure(capture_id)
        return loaded.summary.get("context", {})
