"""The profile service: finds traces (a run's per-rank Chrome traces, or a trace file in the
workspace), analyses each once in a child process (cached by file identity), and answers
the profile view's queries (summary, timeline windows, event details, comparisons).

Trace ids: ``run:<run id>:rank<N>.trace.json`` for one rank of a run, ``run:<run id>:*``
for all of a run's ranks in one view, ``file:<path>`` for a trace under the server's root
(``prof.export_chrome_trace``, a Kineto ``*.pt.trace.json``, gzipped or not).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import BinaryIO

from ..analysed_files import ALL_RANKS, KEEP_OPEN_BYTES, MAX_FILE_BYTES, AnalysedFiles, FileKind, FileRequestError
from ..errors import ServiceError
from ..runfolder import TRACE_NAME
from .analysis import ANALYSIS_VERSION, Loaded, diff
from .models import EventDetail, ProfileDiff, ProfileProgress, ProfileSummary, ProfileWindow, Trace, TraceList
from .trace import MAX_INFLATED_BYTES

TRACES = FileKind(
    noun="trace",
    folder=lambda run: run.profile_dir,
    name=TRACE_NAME,
    worker_module="gpudojo.worker.profile_analyze",
    worker_name="profile analysis",
    version=ANALYSIS_VERSION,
    merge_ranks=True,
)


# ProfileSummary's fields that each call sets; the rest is the analysis's, the same every call.
PER_CALL = ("trace", "cached", "analysis_ms")


def trace_id_for(trace: str | Path) -> str:
    """The trace id of a path or id a user typed (CLI, notebook): a run's trace id stays as it
    is; a file anywhere becomes file:<absolute path> for a service whose root is /."""
    text = str(trace)
    return text if text.startswith("run:") else "file:" + str(Path(text).resolve()).lstrip("/")


# The most pixels a window is drawn at, and the fewest.
MAX_PX = 4000
MIN_PX = 2


class ProfileService:
    def __init__(
        self,
        data_dir: Path,
        root_dir: Path,
        *,
        analysis_timeout_s: float = 600.0,
        max_trace_bytes: int = MAX_FILE_BYTES,
        max_inflated_bytes: int = MAX_INFLATED_BYTES,
        max_rss_bytes: int | None = 2 * 1024**3,
        keep_open_bytes: int = KEEP_OPEN_BYTES,
        python: str = sys.executable,
    ) -> None:
        self.cache_dir = data_dir / "profile-cache"
        self.max_inflated_bytes = max_inflated_bytes
        self.files: AnalysedFiles[Loaded] = AnalysedFiles(
            TRACES,
            data_dir,
            root_dir,
            self.cache_dir,
            Loaded,
            timeout_s=analysis_timeout_s,
            max_bytes=max_trace_bytes,
            python=python,
            max_rss_bytes=max_rss_bytes,
            keep_open_bytes=keep_open_bytes,
        )
        # Each open analysis's summary fields as served (see summary_json), gone with the analysis.
        self._bodies: weakref.WeakKeyDictionary[Loaded, str] = weakref.WeakKeyDictionary()
        self._bodies_lock = threading.Lock()

    # --- traces ---------------------------------------------------------------------------

    def traces(self, run_id: str) -> TraceList:
        """A run's traces, one per rank, and an 'all ranks' entry when there are several."""
        found = self.files.run_files(run_id)
        traces = [self._trace(tid, [path]) for tid, path, _ in found]
        if len(found) > 1:
            traces.insert(0, self._trace(f"run:{run_id}:{ALL_RANKS}", [path for _, path, _ in found]))
        return TraceList(traces=traces)

    def trace(self, trace_id: str) -> Trace:
        return self._trace(trace_id, self.files.resolve(trace_id))

    def _trace(self, trace_id: str, paths: list[Path]) -> Trace:
        size = sum(p.stat().st_size for p in paths)
        if trace_id.startswith("run:"):
            _, run, name = trace_id.split(":", 2)
            if name == ALL_RANKS:
                return Trace(id=trace_id, source="profile/", run=run, size_bytes=size, label=f"all {len(paths)} ranks")
            rank = int(TRACE_NAME.match(name)[1])
            return Trace(
                id=trace_id, source=f"profile/{name}", run=run, rank=rank, size_bytes=size, label=f"rank {rank}"
            )
        path = trace_id.removeprefix("file:")
        return Trace(id=trace_id, source=path, size_bytes=size, label=path)

    def resolve(self, trace_id: str) -> Path:
        """The one file behind a trace id (for download: 'all ranks' is several files)."""
        paths = self.files.resolve(trace_id)
        if len(paths) != 1:
            raise FileRequestError(f"{trace_id!r} names {len(paths)} files: download one rank's trace")
        return paths[0]

    def open_raw(self, trace_id: str) -> tuple[str, BinaryIO]:
        """The file name and the open trace file for a download, checked as resolve() checks it
        (no link followed in a run's folder); the caller closes it."""
        if trace_id.startswith("run:") and trace_id.endswith(f":{ALL_RANKS}"):
            raise FileRequestError(f"{trace_id!r} names every rank's trace: download one rank's trace")
        return self.files.open_one(trace_id)

    # --- analysis -------------------------------------------------------------------------

    def _request(self, paths: list[Path], folder: Path) -> dict:
        """The analysis worker's request for ``paths``, written to ``folder``."""
        sources = [str(p) for p in paths]
        return {"sources": sources, "folder": str(folder), "max_inflated_bytes": self.max_inflated_bytes}

    def _ensure(self, trace_id: str) -> tuple[Loaded, bool]:
        return self.files.ensure(trace_id, self._request)

    def _call_fields(self, trace_id: str, cached: bool, t0: float, analysis_ms: float) -> dict:
        """ProfileSummary's PER_CALL fields: the trace, whether the analysis was cached, and
        what this call took (cached) or the analysis took (made now)."""
        ms = (time.perf_counter() - t0) * 1000 if cached else float(analysis_ms)
        return {"trace": self.trace(trace_id), "cached": cached, "analysis_ms": ms}

    def summary_json(self, trace_id: str) -> str:
        """ProfileSummary as JSON text. The analysis's own fields (the steps alone are 23,000
        objects in a 10M-event trace) are validated and written once per opened analysis; each
        call adds only its PER_CALL fields."""
        t0 = time.perf_counter()
        loaded, cached = self._ensure(trace_id)
        with self._bodies_lock:
            body = self._bodies.get(loaded)
        if body is None:
            full = ProfileSummary.model_validate({**loaded.summary, "trace": self.trace(trace_id), "cached": cached})
            body = full.model_dump_json(exclude=set(PER_CALL))
            with self._bodies_lock:
                self._bodies[loaded] = body
        call = self._call_fields(trace_id, cached, t0, loaded.summary["analysis_ms"])
        head = json.dumps({**call, "trace": call["trace"].model_dump(mode="json")})
        return head[:-1] + "," + body[1:]

    def summary(self, trace_id: str) -> ProfileSummary:
        return ProfileSummary.model_validate_json(self.summary_json(trace_id))

    def summary_alone(self, trace_id: str) -> ProfileSummary:
        """The summary read from the analysis's folder, the analysis itself not opened (no
        events loaded, no timeline index built): what a one-shot reader such as the CLI needs."""
        t0 = time.perf_counter()
        folder, cached = self.files.analysed(trace_id, self._request)
        s = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        return ProfileSummary.model_validate({**s, **self._call_fields(trace_id, cached, t0, s["analysis_ms"])})

    def analyze_path_json(self, path: str) -> str:
        return self.summary_json("file:" + path)

    def progress(self, trace_id: str) -> ProfileProgress:
        p = self.files.progress(trace_id)
        return ProfileProgress(trace=trace_id, phase=p.phase, fraction=p.fraction, elapsed_ms=p.elapsed_ms)

    def window(self, trace_id: str, t0: float | None, t1: float | None, px: int) -> ProfileWindow:
        loaded, _ = self._ensure(trace_id)
        s = loaded.summary
        lo = s["t_start_us"] if t0 is None else t0
        hi = s["t_end_us"] if t1 is None else t1
        if not hi > lo:
            raise FileRequestError("t1 must be after t0")
        return ProfileWindow.model_validate(loaded.window(lo, hi, max(MIN_PX, min(px, MAX_PX))))

    def event(self, trace_id: str, ref: int) -> EventDetail:
        loaded, _ = self._ensure(trace_id)
        try:
            return EventDetail.model_validate(loaded.event(ref))
        except (KeyError, IndexError) as err:
            raise FileRequestError(f"{trace_id} has no event {ref}", "no_such_event") from err

    def diff(self, a: str, b: str) -> ProfileDiff:
        left, _ = self._ensure(a)
        right, _ = self._ensure(b)
        return ProfileDiff(a=a, b=b, **diff(left, right))

    def analyse_run(self, run_id: str) -> int:
        """Analyse a finished run's traces now (each rank, and all ranks together), so that
        opening one from the run view is the cached path; returns how many were analysed."""
        done = 0
        for trace in self.traces(run_id).traces:
            try:
                self._ensure(trace.id)
                done += 1
            except ServiceError:
                continue
        return done

    def close(self) -> None:
        self.files.close()
