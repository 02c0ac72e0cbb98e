"""The runs routes: labs, launch (lab, sweep or a learner's script), list, one run, cancel,
and each run's websocket stream (logs per rank, metrics, status; replayed from the start).

Launching and cancelling start and stop processes, so they also need `execute` on
`kernels`; reading runs and streams needs only `read` on `gpudojo`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web, websocket

from ..runfolder import RUN_ID_PATTERN
from .base import ApiError, GPUDojoHandler, GPUDojoWebSocket

RUN_ID = f"(?P<run_id>{RUN_ID_PATTERN})"
GROUP_ID = r"(?P<group>sweep-[0-9a-f]{10})"
ARTIFACT_NAME = r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,99})"


class RunsBase(GPUDojoHandler):
    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A run service call off the event loop (its errors map to 4xx/5xx in the base handler)."""
        return await self.services.in_runs_thread(fn, *args)


class LabsHandler(RunsBase):
    api_doc = {"get": {"summary": "Runnable labs with their parameter forms and checks", "response": "LabList"}}

    @web.authenticated
    @authorized
    async def get(self) -> None:
        runs = self.services.runs
        self.write_model(await self.call(runs.labs))


class EnginesHandler(RunsBase):
    api_doc = {
        "get": {
            "summary": "Where runs can run from this machine (engines), and why not the others",
            "response": "EngineList",
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from ..runs.models import EngineList

        runs = self.services.runs
        self.write_model(EngineList(engines=await self.call(runs.engines)))


class ArtifactsHandler(RunsBase):
    api_doc = {
        "get": {
            "summary": "What an engine generated for a run: commands, batch script, manifests",
            "response": "ArtifactList",
        }
    }

    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        from ..runs.models import ArtifactList

        runs = self.services.runs
        self.write_model(ArtifactList(artifacts=await self.call(runs.artifacts, run_id)))


class ArtifactHandler(RunsBase):
    api_doc = {"get": {"summary": "One generated file of a run, with its text", "response": "Artifact"}}

    @web.authenticated
    @authorized
    async def get(self, run_id: str, name: str) -> None:
        runs = self.services.runs
        self.write_model(await self.call(runs.artifact, run_id, name))


class RunsHandler(RunsBase):
    api_doc = {
        "get": {
            "summary": "Runs, newest first (?lab=, ?status=, ?group=, ?limit=)",
            "response": "RunList",
            "query": {
                "lab": {"description": "Only this lab's runs", "schema": {"type": "string"}},
                "status": {"description": "Only runs in this status", "schema": {"type": "string"}},
                "group": {"description": "Only this sweep's runs", "schema": {"type": "string"}},
                "limit": {
                    "description": "At most this many (clamped to 1..1000; default 100)",
                    "schema": {"type": "integer"},
                },
            },
            "errors": [400],
        },
        "post": {
            "summary": "Launch a lab (params validated against lab.toml; a sweep runs one per value) or a script",
            "request": "RunRequestBody",
            "response": "RunList",
            "status": 201,
            "errors": [404, 503],  # no such lab or script; the engine cannot run jobs from here
        },
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from ..runs.models import RunList

        filters: dict[str, Any] = {k: self.get_query_argument(k, None) for k in ("lab", "status", "group")}
        try:
            filters["limit"] = max(1, min(int(self.get_query_argument("limit", "100")), 1000))
        except ValueError as err:
            raise ApiError(400, "invalid_request", "limit must be a whole number") from err
        runs = self.services.runs
        self.write_model(RunList(runs=await self.call(lambda: runs.list(**filters))))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        await self.require_execute("Starting and stopping runs")
        from ..runs.models import RunList, RunRequestBody

        body = self.parse_body(RunRequestBody)
        gpus = await self.services.gpu_count()
        runs = self.services.runs
        created = await self.call(lambda: runs.submit(body.root, user=self.user_name, gpus=gpus))
        self.set_status(201)
        self.write_model(RunList(runs=created))


class RunDocHandler(RunsBase):
    api_doc = {"get": {"summary": "One run: status, parameters, backend, root cause, checks", "response": "Run"}}

    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        runs = self.services.runs
        self.write_model(await self.call(runs.get, run_id))


class CancelHandler(RunsBase):
    api_doc = {
        "post": {"summary": "Cancel a run: SIGTERM, a grace period, then SIGKILL to every process", "response": "Run"}
    }

    @web.authenticated
    @authorized
    async def post(self, run_id: str) -> None:
        await self.require_execute("Starting and stopping runs")
        runs = self.services.runs
        self.write_model(await self.call(runs.cancel, run_id))


class SweepHandler(RunsBase):
    api_doc = {"get": {"summary": "The runs of one sweep, for the scaling chart", "response": "Sweep"}}

    @web.authenticated
    @authorized
    async def get(self, group: str) -> None:
        from ..runs.models import Sweep

        runs = self.services.runs
        members = sorted(await self.call(lambda: runs.list(group=group, limit=64)), key=lambda r: r.created_at)
        if not members:
            raise ApiError(404, "not_found", f"No sweep {group!r}.")
        self.write_model(Sweep(group=group, lab=members[0].lab or "", param=members[0].group_param or "", runs=members))


class RunStreamHandler(GPUDojoWebSocket):
    """A run's events from the start (or after ?after=SEQ), then live until the run ends.

    The run service hands over events already serialised; this handler only groups them
    into EventBatch frames (batch_frame) and forwards them."""

    api_doc = {
        "get": {
            "summary": "Websocket: the run's events (log, metric, status, truncated) from ?after=SEQ, then live",
            "websocket": True,
            "messages_out": ["EventBatch", "SocketError"],
        }
    }
    _unsubscribe: Callable[[], None] | None = None
    _pump_task: asyncio.Task | None = None

    async def open(self, run_id: str) -> None:  # type: ignore[override]
        from ..errors import ServiceError
        from ..runs.events import batch_frame
        from .models import socket_error

        super().open()
        try:
            after = int(self.get_query_argument("after", "-1"))
        except ValueError:
            after = -1
        loop = asyncio.get_running_loop()
        pending: list[str] = []
        wake = asyncio.Event()
        lock = threading.Lock()
        ended_live = threading.Event()

        def live(line: str | None) -> None:  # called from the run's threads
            # One wake-up of the event loop per burst of lines, not one per line.
            with lock:
                if line is None:
                    ended_live.set()
                else:
                    pending.append(line)
                first = len(pending) <= 1
            if first:
                loop.call_soon_threadsafe(wake.set)

        def take() -> list[str]:
            with lock:
                lines = pending[:]
                pending.clear()
                wake.clear()
            return lines

        runs = self.services.runs
        try:
            subscribed = await self.services.in_runs_thread(runs.subscribe_lines, run_id, after, live)
        except ServiceError as err:
            self.write_message(socket_error(err.code, err.message))
            self.close(4404, "no such run")
            return
        past, ended, self._unsubscribe = subscribed
        # Batches keep 100k replayed lines from becoming 100k websocket frames.
        for i in range(0, len(past), 500):
            self.write_message(batch_frame(past[i : i + 500]))
        if ended:
            self.close(1000, "run ended")
            return
        self._pump_task = asyncio.ensure_future(self._pump(wake, take, ended_live, batch_frame))

    async def _pump(
        self,
        wake: asyncio.Event,
        take: Callable[[], list[str]],
        ended: threading.Event,
        frame: Callable[[list[str]], str],
    ) -> None:
        while self.ws_connection is not None:
            await wake.wait()
            finished = ended.is_set()  # read before take(): every line up to the end is in it
            lines = take()
            for i in range(0, len(lines), 2000):
                try:
                    await self.write_message(frame(lines[i : i + 2000]))
                except websocket.WebSocketClosedError:
                    return
            if finished:
                self.close(1000, "run ended")
                return

    def on_message(self, message: str | bytes) -> None:
        # The stream is one-way; a reconnecting client says where to resume with ?after=. A client
        # that sends anything is told so (one small frame per message, whatever its size).
        from .models import socket_error

        text = "This stream takes no messages; reconnect with ?after=SEQ to resume after an event."
        with contextlib.suppress(websocket.WebSocketClosedError):
            self.write_message(socket_error("no_messages", text))

    def on_close(self) -> None:
        if self._pump_task is not None:
            self._pump_task.cancel()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
