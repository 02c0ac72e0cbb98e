"""The whole API in one table: path under {base_url}gpudojo/api/, handler."""

from __future__ import annotations

from .course import LESSON_ID, CatalogHandler, LessonHandler, NotebookHandler, ProgressHandler, QuizHandler
from .gpu import DevicesHandler, TelemetryHandler
from .kernels import ArchsHandler, CompileHandler, ExamplesHandler, OccupancyHandler, RunHandler
from .openapi import OpenAPIHandler

API_PREFIX = "gpudojo/api"

ROUTES: list[tuple[str, type]] = [
    ("gpu/devices", DevicesHandler),
    ("gpu/telemetry", TelemetryHandler),
    ("course/catalog", CatalogHandler),
    (f"course/lessons/{LESSON_ID}", LessonHandler),
    (f"course/lessons/{LESSON_ID}/quiz", QuizHandler),
    (f"course/lessons/{LESSON_ID}/notebook", NotebookHandler),
    ("course/progress", ProgressHandler),
    ("kernels/archs", ArchsHandler),
    ("kernels/examples", ExamplesHandler),
    ("kernels/compile", CompileHandler),
    ("kernels/occupancy", OccupancyHandler),
    ("kernels/run", RunHandler),
    ("openapi.json", OpenAPIHandler),
]


def url_patterns() -> list[tuple[str, type]]:
    """Tornado patterns for ROUTES; the extension app puts base_url in front."""
    return [(f"/{API_PREFIX}/{path}", handler) for path, handler in ROUTES]
