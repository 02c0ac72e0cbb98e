"""The memory routes: a run's captures, analyses (cached), windowed timeline queries, diffs,
the raw file for pytorch.org/memory_viz, and the estimator.

Captures are named by id in the query string (``?capture=run:<run>:<file>`` or
``?capture=file:<path>``), so paths never have to be escaped into the URL path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .base import ApiError, GPUDojoHandler


class MemoryBase(GPUDojoHandler):
    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self.services.in_runs_thread(fn, *args)

    def capture_arg(self, name: str = "capture") -> str:
        value = self.get_query_argument(name, None)
        if not value:
            raise ApiError(400, "invalid_request", f"?{name}= names the capture (run:<run>:<file> or file:<path>)")
        return value

    def number(self, name: str, default: float | None) -> float | None:
        raw = self.get_query_argument(name, None)
        if raw is None:
            return default
        try:
            return float(raw)
        except ValueError as err:
            raise ApiError(400, "invalid_request", f"{name} must be a number") from err


class CapturesHandler(MemoryBase):
    api_doc = {"get": {"summary": "A run's memory captures (?run=ID)", "response": "CaptureList"}}

    @web.authenticated
    @authorized
    async def get(self) -> None:
        run = self.get_query_argument("run", "")
        self.write_model(await self.call(self.services.memory.captures, run))


class AnalysisHandler(MemoryBase):
    api_doc = {
        "get": {
            "summary": "A capture's analysis (?capture=ID): peak breakdown, OOMs, frames; analysed once, then cached",
            "response": "Analysis",
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_model(await self.call(self.services.memory.analysis, self.capture_arg()))


class AnalyzeHandler(MemoryBase):
    api_doc = {
        "post": {
            "summary": "Analyse a snapshot in the workspace ({path}), e.g. one uploaded through the file browser",
            "request": "AnalyzeRequest",
            "response": "Analysis",
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from ..memory.models import AnalyzeRequest

        body = self.parse_body(AnalyzeRequest)
        self.write_model(await self.call(self.services.memory.analyze_path, body.path))


class AnalysisProgressHandler(MemoryBase):
    api_doc = {
        "get": {
            "summary": "How far a capture's first analysis is (?capture=ID): phase and share of the file read",
            "response": "AnalysisProgress",
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        # A stat and a dict look-up: answered on the loop, not behind running analyses.
        self.write_model(self.services.memory.progress(self.capture_arg()))


class WindowHandler(MemoryBase):
    api_doc = {
        "get": {
            "summary": "Timeline for a viewport (?capture=&t0=&t1=&px=&top=): samples by category, top bands, the rest",
            "response": "Window",
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        capture = self.capture_arg()
        t0, t1 = self.number("t0", None), self.number("t1", None)
        px, top = int(self.number("px", 800) or 800), int(self.number("top", 500) or 0)
        memory = self.services.memory
        self.write_model(await self.call(lambda: memory.window(capture, t0, t1, px, top)))


class DiffHandler(MemoryBase):
    api_doc = {"get": {"summary": "Two captures' peaks compared (?a=ID&b=ID)", "response": "Diff"}}

    @web.authenticated
    @authorized
    async def get(self) -> None:
        a, b = self.capture_arg("a"), self.capture_arg("b")
        memory = self.services.memory
        self.write_model(await self.call(lambda: memory.diff(a, b)))


class RawHandler(MemoryBase):
    api_doc = {"get": {"summary": "The capture file itself (?capture=ID), e.g. for pytorch.org/memory_viz"}}

    @web.authenticated
    @authorized
    async def get(self) -> None:
        path = await self.call(self.services.memory.resolve, self.capture_arg())
        self.set_header("Content-Type", "application/octet-stream")
        self.set_header("Content-Disposition", f'attachment; filename="{path.name}"')
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                self.write(chunk)
                await self.flush()
        self.finish()


class EstimateHandler(MemoryBase):
    api_doc = {
        "post": {
            "summary": "Training memory by component (params, gradients, optimizer states, activations) with formulas",
            "request": "EstimateRequest",
            "response": "Estimate",
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from ..memory.models import EstimateRequest

        body = self.parse_body(EstimateRequest)
        self.write_model(self.services.memory.estimate(body))
