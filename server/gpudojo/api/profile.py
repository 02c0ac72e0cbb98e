"""The profile routes: a run's traces, a trace's analysis (cached), its analysis progress,
windowed timeline queries, one event's details, a comparison of two traces, and the raw
file for Perfetto UI or TensorBoard.

Traces are named by id in the query string (``?trace=run:<run>:rank0.trace.json``,
``?trace=run:<run>:*`` for all ranks, or ``?trace=file:<path>``).
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..runfolder import TRACE_NAME
from .base import ApiError, FileQueryHandler, file_id_query, run_id_query

# openapi.json's words for the query parameters and the refusals the routes over traces share.
TRACE = file_id_query("trace", TRACE_NAME.pattern[1:-1] + r"|\*")  # *: all ranks together
# Missing file, over the size cap, the analysis worker failed or ran out of time.
ANALYSIS_ERRORS = [404, 413, 502, 504]


class ProfileBase(FileQueryHandler):
    def trace_arg(self, name: str = "trace") -> str:
        return self.id_arg(name, "trace")


class TracesHandler(ProfileBase):
    api_doc = {
        "get": {
            "summary": "A run's profile traces (?run=ID): one per rank, and all ranks",
            "response": "TraceList",
            "query": {"run": run_id_query("The run whose traces to list")},
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        run = self.get_query_argument("run", "")
        self.write_model(await self.call(self.services.profile.traces, run))


class SummaryHandler(ProfileBase):
    api_doc = {
        "get": {
            "summary": "A trace's analysis (?trace=ID): steps and their breakdown, top operators, kernels, syncs, "
            "findings, lanes; analysed once in a child process, then cached",
            "response": "ProfileSummary",
            "query": {"trace": TRACE},
            "errors": ANALYSIS_ERRORS,
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json_text(await self.call(self.services.profile.summary_json, self.trace_arg()))


class AnalyzeTraceHandler(ProfileBase):
    api_doc = {
        "post": {
            "summary": "Analyse a Chrome/Kineto trace in the workspace ({path}: .json or .json.gz)",
            "request": "AnalyzeProfileRequest",
            "response": "ProfileSummary",
            "errors": ANALYSIS_ERRORS,
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from ..profile.models import AnalyzeProfileRequest

        body = self.parse_body(AnalyzeProfileRequest)
        await self.check_workspace_file(body.path)
        self.write_json_text(await self.call(self.services.profile.analyze_path_json, body.path))


class ProfileProgressHandler(ProfileBase):
    api_doc = {
        "get": {
            "summary": "How far a trace's first analysis is (?trace=ID)",
            "response": "ProfileProgress",
            "query": {"trace": TRACE},
            "errors": [404, 413],
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        # Stats and a dict look-up: answered on the loop, not behind running analyses.
        self.write_model(self.services.profile.progress(self.trace_arg()))


class ProfileWindowHandler(ProfileBase):
    api_doc = {
        "get": {
            "summary": "The timeline for a viewport (?trace=&t0=&t1=&px=): spans per lane, those under a pixel merged",
            "response": "ProfileWindow",
            "query": {
                "trace": TRACE,
                "t0": "Start of the window, in the trace's microseconds (default: its start)",
                "t1": "End of the window, in the trace's microseconds, after t0 (default: its end)",
                "px": "Pixels across the window (clamped; default 1000)",
            },
            "errors": ANALYSIS_ERRORS,
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        trace = self.trace_arg()
        t0, t1 = self.number("t0", None), self.number("t1", None)
        px = int(self.number("px", 1000) or 1000)
        profile = self.services.profile
        self.write_model(await self.call(lambda: profile.window(trace, t0, t1, px)))


class ProfileEventHandler(ProfileBase):
    api_doc = {
        "get": {
            "summary": "One span's details for the hover (?trace=&ref=): name, duration, shapes, stack, args",
            "response": "EventDetail",
            "query": {
                "trace": TRACE,
                "ref": {
                    "description": "The event's index, as the window gave it",
                    "required": True,
                    "schema": {"type": "integer", "minimum": 0},
                },
            },
            "errors": ANALYSIS_ERRORS,
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        trace = self.trace_arg()
        ref = self.number("ref", None)
        if ref is None or ref < 0 or ref != int(ref):
            raise ApiError(400, "invalid_request", "?ref= must be an event's index (a whole number >= 0)")
        profile = self.services.profile
        self.write_model(await self.call(lambda: profile.event(trace, int(ref))))


class ProfileDiffHandler(ProfileBase):
    api_doc = {
        "get": {
            "summary": "Two traces compared (?a=before&b=after): step time, breakdown, operators, findings, "
            "and what differs between their runs (parameters, lab, mode, machine)",
            "response": "ProfileDiff",
            "query": {"a": TRACE, "b": TRACE},
            "errors": ANALYSIS_ERRORS,
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from ..profile.run_changes import with_runs

        a, b = self.trace_arg("a"), self.trace_arg("b")
        profile, runs = self.services.profile, self.services.runs
        self.write_model(await self.call(lambda: with_runs(profile.diff(a, b), runs.get)))


class TraceRawHandler(ProfileBase):
    api_doc = {
        "get": {
            "summary": "The trace file itself (?trace=ID), for Perfetto UI or TensorBoard",
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
            "query": {"trace": TRACE},
            "errors": [404, 413],
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        name, f = await self.call(self.services.profile.open_raw, self.trace_arg())
        await self.send_file(name, f)
