"""The whole API in one table: path under {base_url}gpudojo/api/, handler."""

from __future__ import annotations

from .base import UnknownRouteHandler
from .course import (
    LAB_ID,
    LESSON_ID,
    AcceptanceHandler,
    CatalogHandler,
    LabReadmeHandler,
    LearnerSummaryHandler,
    LessonHandler,
    ModuleTestHandler,
    NotebookHandler,
    ProgressHandler,
    QuizHandler,
    ReadingListHandler,
)
from .exercises import EXERCISE_ID, ExerciseCheckHandler, ExerciseHandler, ExerciseStartHandler
from .gpu import DevicesHandler, TelemetryHandler
from .kernels import ArchsHandler, CompileHandler, ExamplesHandler, OccupancyHandler, RunHandler
from .memory import (
    AnalysisHandler,
    AnalysisProgressHandler,
    AnalyzeHandler,
    CapturesHandler,
    DiffHandler,
    EstimateHandler,
    RawHandler,
    TransformerEstimateHandler,
    WindowHandler,
)
from .openapi import OpenAPIHandler
from .profile import (
    AnalyzeTraceHandler,
    ProfileDiffHandler,
    ProfileEventHandler,
    ProfileProgressHandler,
    ProfileWindowHandler,
    SummaryHandler,
    TraceRawHandler,
    TracesHandler,
)
from .runs import (
    ARTIFACT_NAME,
    GROUP_ID,
    RUN_ID,
    ArtifactHandler,
    ArtifactsHandler,
    CancelHandler,
    EnginesHandler,
    LabsHandler,
    RunDocHandler,
    RunsHandler,
    RunStreamHandler,
    SweepHandler,
)

API_PREFIX = "gpudojo/api"

ROUTES: list[tuple[str, type]] = [
    ("gpu/devices", DevicesHandler),
    ("gpu/telemetry", TelemetryHandler),
    ("course/catalog", CatalogHandler),
    (f"course/lessons/{LESSON_ID}", LessonHandler),
    (f"course/lessons/{LESSON_ID}/quiz", QuizHandler),
    (f"course/lessons/{LESSON_ID}/notebook", NotebookHandler),
    ("course/progress", ProgressHandler),
    ("course/module-test", ModuleTestHandler),
    ("course/acceptance", AcceptanceHandler),
    ("course/reading", ReadingListHandler),
    ("course/summary", LearnerSummaryHandler),
    (f"course/labs/{LAB_ID}/readme", LabReadmeHandler),
    (f"exercises/{EXERCISE_ID}", ExerciseHandler),
    (f"exercises/{EXERCISE_ID}/start", ExerciseStartHandler),
    (f"exercises/{EXERCISE_ID}/check", ExerciseCheckHandler),
    ("kernels/archs", ArchsHandler),
    ("kernels/examples", ExamplesHandler),
    ("kernels/compile", CompileHandler),
    ("kernels/occupancy", OccupancyHandler),
    ("kernels/run", RunHandler),
    ("runs/labs", LabsHandler),
    ("runs/engines", EnginesHandler),
    ("runs", RunsHandler),
    (f"runs/sweeps/{GROUP_ID}", SweepHandler),
    (f"runs/{RUN_ID}", RunDocHandler),
    (f"runs/{RUN_ID}/cancel", CancelHandler),
    (f"runs/{RUN_ID}/artifacts", ArtifactsHandler),
    (f"runs/{RUN_ID}/artifacts/{ARTIFACT_NAME}", ArtifactHandler),
    (f"runs/{RUN_ID}/stream", RunStreamHandler),
    ("memory/captures", CapturesHandler),
    ("memory/analysis", AnalysisHandler),
    ("memory/analyze", AnalyzeHandler),
    ("memory/progress", AnalysisProgressHandler),
    ("memory/window", WindowHandler),
    ("memory/diff", DiffHandler),
    ("memory/raw", RawHandler),
    ("memory/estimate", EstimateHandler),
    ("memory/estimate-transformer", TransformerEstimateHandler),
    ("profile/traces", TracesHandler),
    ("profile/summary", SummaryHandler),
    ("profile/analyze", AnalyzeTraceHandler),
    ("profile/progress", ProfileProgressHandler),
    ("profile/window", ProfileWindowHandler),
    ("profile/event", ProfileEventHandler),
    ("profile/diff", ProfileDiffHandler),
    ("profile/raw", TraceRawHandler),
    ("openapi.json", OpenAPIHandler),
]


def url_patterns() -> list[tuple[str, type]]:
    """Tornado patterns for ROUTES, then a JSON 404 for any other path under the API's prefix;
    the extension app puts base_url in front."""
    routes = [(f"/{API_PREFIX}/{path}", handler) for path, handler in ROUTES]
    return [*routes, (f"/{API_PREFIX}/.*", UnknownRouteHandler)]
