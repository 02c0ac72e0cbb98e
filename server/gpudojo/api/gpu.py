"""GET gpu/devices and the gpu/telemetry websocket."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .base import GPUDojoHandler, GPUDojoWebSocket

if TYPE_CHECKING:
    from ..gpu.telemetry import Subscription


class DevicesHandler(GPUDojoHandler):
    api_doc = {
        "get": {
            "summary": "Static facts and a current reading of every GPU and of the host",
            "response": "DevicesResponse",
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json_text(await self.services.devices_json())


class TelemetryHandler(GPUDojoWebSocket):
    """Streams telemetry: a history message, then readings at the subscriber's rate."""

    api_doc = {
        "get": {
            "summary": "Websocket: {type: history} then {type: sample} readings; send {type: pause|resume|rate}",
            "websocket": True,
            "query": {"hz": "Requested rate in Hz, clamped by the server"},
            "messages_out": ["TelemetryHistory", "TelemetrySample", "TelemetryState", "SocketError"],
            "messages_in": ["TelemetryControl"],
        }
    }
    _sub: Subscription | None = None

    async def open(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().open(*args, **kwargs)
        sampler = self.services.sampler
        hz = self._requested_hz()
        probe = self.services.probe
        mode, recording = await self.services.in_gpu_thread(lambda: (probe.mode, probe.inventory().recording))
        from ..gpu.models import TelemetryHistory

        history = TelemetryHistory(
            rate_hz=sampler.clamp(hz),
            max_hz=sampler.max_hz,
            mode=mode,
            recording=recording if mode == "replay" else None,
            samples=sampler.history(),
        )
        self.write_message(history.model_dump_json())
        self._sub = sampler.subscribe(self._send, hz)

    def _requested_hz(self) -> float | None:
        raw = self.get_query_argument("hz", None)
        try:
            return float(raw) if raw is not None else None
        except ValueError:
            return None

    def _send(self, text: str) -> None:
        self.write_message(text)

    def on_message(self, message: str | bytes) -> None:
        if self._sub is None:
            return
        if len(message) > self.services.settings.max_body_bytes:
            self._error("too_large", "Control message is larger than the server accepts.")
            return
        from pydantic import ValidationError

        from ..gpu.models import TelemetryControl, TelemetryState

        try:
            # Strict, as REST bodies: hz "5" or true is refused, not read as 5 or 1 Hz.
            control = TelemetryControl.model_validate_json(message, strict=True)
        except ValidationError as err:
            # Where and what only: the input itself (up to max_body_bytes) is not echoed back.
            detail = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in err.errors(include_url=False)]
            self._error("invalid_message", "Send {type: pause|resume|rate, hz?}.", detail)
            return
        if control.type == "pause":
            self._sub.pause()
        elif control.type == "resume":
            self._sub.resume()
        elif control.hz is None:
            self._error("invalid_message", "A rate message needs hz (Hz).")
            return
        else:
            self._sub.set_rate(control.hz)
        state = TelemetryState(paused=self._sub.paused, rate_hz=self._sub.hz)
        self.write_message(state.model_dump_json())

    def _error(self, code: str, message: str, detail: Any = None) -> None:
        from .models import socket_error

        self.write_message(socket_error(code, message, json.loads(json.dumps(detail, default=str))))

    def on_close(self) -> None:
        if self._sub is not None:
            self._sub.close()
            self._sub = None
