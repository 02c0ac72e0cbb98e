"""The whole API in one table: path under {base_url}gpudojo/api/, handler."""

from __future__ import annotations

from .gpu import DevicesHandler, TelemetryHandler
from .openapi import OpenAPIHandler

API_PREFIX = "gpudojo/api"

ROUTES: list[tuple[str, type]] = [
    ("gpu/devices", DevicesHandler),
    ("gpu/telemetry", TelemetryHandler),
    ("openapi.json", OpenAPIHandler),
]


def url_patterns() -> list[tuple[str, type]]:
    """Tornado patterns for ROUTES; the extension app puts base_url in front."""
    return [(f"/{API_PREFIX}/{path}", handler) for path, handler in ROUTES]
