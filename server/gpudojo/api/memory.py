"""The memory routes: a run's captures, analyses (cached), windowed timeline queries, diffs,
the raw file for pytorch.org/memory_viz, and the estimator.

Captures are named by id in the query string (``?capture=run:<run>:<file>`` or
``?capture=file:<path>``), so paths never have to be escaped into the URL path.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..runfolder import CAPTURE_NAME
from .base import FileQueryHandler, file_id_query, run_id_query

# openapi.json's words for the query parameters and the refusals the routes over captures share.
CAPTURE = file_id_query("capture", CAPTURE_NAME.pattern[1:-1])
# Missing file, over the size cap, the analysis worker failed or ran out of time.
ANALYSIS_ERRORS = [404, 413, 502, 504]
T_QUERY = {
    "t0": "Start of the window, in the capture's microseconds (default: its start)",
    "t1": "End of the window, in the capture's microseconds, after t0 (default: its end)",
}


class MemoryBase(FileQueryHandler):
    def capture_arg(self, name: str = "capture") -> str:
        return self.id_arg(name, "capture")


class CapturesHandler(MemoryBase):
    api_doc = {
        "get": {
            "summary": "A run's memory captures (?run=ID)",
            "response": "CaptureList",
            "query": {"run": run_id_query("The run whose captures to list")},
        }
    }

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
            "query": {"capture": CAPTURE},
            "errors": ANALYSIS_ERRORS,
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
            "errors": ANALYSIS_ERRORS,
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from ..memory.models import AnalyzeRequest

        body = self.parse_body(AnalyzeRequest)
        await self.check_workspace_file(body.path)
        self.write_model(await self.call(self.services.memory.analyze_path, body.path))


class AnalysisProgressHandler(MemoryBase):
    api_doc = {
        "get": {
            "summary": "How far a capture's first analysis is (?capture=ID): phase and share of the file read",
            "response": "AnalysisProgress",
            "query": {"capture": CAPTURE},
            "errors": [404, 413],
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
            "query": {
                "capture": CAPTURE,
                **T_QUERY,
                "px": "Samples across the window (clamped to 2..4000; default 800)",
                "top": "Largest allocations drawn as bands (clamped to 0..5000; default 500)",
            },
            "errors": ANALYSIS_ERRORS,
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
    api_doc = {
        "get": {
            "summary": "Two captures' peaks compared (?a=ID&b=ID)",
            "response": "Diff",
            "query": {"a": CAPTURE, "b": CAPTURE},
            "errors": ANALYSIS_ERRORS,
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        a, b = self.capture_arg("a"), self.capture_arg("b")
        memory = self.services.memory
        self.write_model(await self.call(lambda: memory.diff(a, b)))


class RawHandler(MemoryBase):
    api_doc = {
        "get": {
            "summary": "The capture file itself (?capture=ID), e.g. for pytorch.org/memory_viz",
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
            "query": {"capture": CAPTURE},
            "errors": [404, 413],
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        name, f = await self.call(self.services.memory.open_raw, self.capture_arg())
        await self.send_file(name, f)


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


class TransformerEstimateHandler(MemoryBase):
    api_doc = {
        "post": {
            "summary": "A transformer's training memory per GPU from its shape and parallel layout (DP, TP, PP, "
            "ZeRO, recomputation, FlashAttention), with its parameter count and training FLOPs per token",
            "request": "TransformerEstimateRequest",
            "response": "TransformerEstimate",
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from ..memory.models import TransformerEstimateRequest

        body = self.parse_body(TransformerEstimateRequest)
        self.write_model(self.services.memory.estimate_transformer(body))
