"""What every gpudojo handler shares: JSON errors, the services, auth resource names."""

from __future__ import annotations

import getpass
import json
import sys
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web, websocket

from .. import errors

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..services import Services

M = TypeVar("M", bound="BaseModel")

# The resource name that jupyter_server's Authorizer sees for every gpudojo route.
AUTH_RESOURCE = "gpudojo"


class ApiError(web.HTTPError):
    """An error the client can act on: a status, a short code and words for a person."""

    def __init__(self, status: int, code: str, message: str, detail: Any = None) -> None:
        super().__init__(status, reason=HTTPStatus(status).phrase)
        self.code = code
        self.message = message
        self.detail = detail


def error_body(status: int, code: str, message: str, detail: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "detail": detail}}


# The one place where a service's refusal becomes an HTTP status. A subclass that derives
# from two kinds (a compile timeout is a TimedOut and a CompileFailure) gets the first in
# its MRO, so the most specific kind wins.
SERVICE_ERROR_STATUS: dict[type[errors.ServiceError], int] = {
    errors.Invalid: 400,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.TooLarge: 413,
    errors.Failed: 502,
    errors.Unavailable: 503,
    errors.TimedOut: 504,
}


def status_of(err: errors.ServiceError) -> int:
    """The HTTP status for a service error (500 for a kind without one)."""
    for cls in type(err).__mro__:
        if cls in SERVICE_ERROR_STATUS:
            return SERVICE_ERROR_STATUS[cls]
    return 500


class GPUDojoHandler(ExtensionHandlerMixin, APIHandler):
    """Base of the REST handlers: JSON in and out, errors as {error: {code, message, detail}}."""

    auth_resource = AUTH_RESOURCE

    @property
    def services(self) -> Services:
        return self.settings["gpudojo"]

    @property
    def user_name(self) -> str:
        """Whose progress this is. A plain single-user server gives every browser an anonymous,
        random user; progress then belongs to the account running the server instead, so it
        survives new browsers and cleared cookies. Real identity providers (JupyterHub) name users."""
        # jupyter_server's own token/password providers (jupyter_server.auth.identity) serve one
        # person; providers from elsewhere (JupyterHub's) carry real user names.
        if type(self.identity_provider).__module__ == "jupyter_server.auth.identity":
            return getpass.getuser()
        user = self.current_user
        return getattr(user, "username", None) or str(user)

    async def require_execute(self, what: str) -> None:
        """403 unless this user may execute code (`execute` on jupyter_server's `kernels`):
        gpudojo routes that start or stop processes need it, so read-only users of a shared
        server can look but not launch."""
        allowed = await ensure_async(self.authorizer.is_authorized(self, self.current_user, "execute", "kernels"))
        if not allowed:
            raise ApiError(403, "forbidden", f"{what} needs permission to execute code.")

    def parse_body(self, model: type[M]) -> M:
        """The request body validated as ``model``; a 4xx ApiError saying what is wrong if not."""
        from pydantic import ValidationError

        body = self.request.body or b"{}"
        if len(body) > self.services.settings.max_body_bytes:
            raise ApiError(413, "too_large", "The request body is larger than the server accepts.")
        try:
            return model.model_validate_json(body)
        except ValidationError as err:
            detail = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in err.errors(include_url=False)]
            code = "invalid_json" if any(e["type"] == "json_invalid" for e in err.errors()) else "invalid_request"
            raise ApiError(400, code, "The request body does not match what this route takes.", detail) from err

    def write_model(self, model: BaseModel) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(model.model_dump_json())

    def write_json_text(self, text: str) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(text)

    def _handle_request_exception(self, e: BaseException) -> None:
        # A service's refusal is an answer, not a crash: its status, no traceback in the log.
        if isinstance(e, errors.ServiceError) and not self._finished:
            self.send_error(status_of(e), exc_info=sys.exc_info())
            return
        super()._handle_request_exception(e)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        # Never a traceback: a code the client can switch on and words for a person.
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, ApiError | errors.ServiceError):
            body = error_body(status_code, exc.code, exc.message, exc.detail)
        elif isinstance(exc, web.HTTPError):
            phrase = HTTPStatus(status_code).phrase if status_code in HTTPStatus._value2member_map_ else "Error"
            body = error_body(status_code, phrase.lower().replace(" ", "_"), exc.log_message or phrase)
        else:
            body = error_body(
                status_code, "internal_error", "gpudojo hit an unexpected error; the server log has the details."
            )
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))


class FileQueryHandler(GPUDojoHandler):
    """Routes over analysed files (memory captures, profile traces): the file is named by id in
    the query string (``?capture=run:<run>:<file>``, ``?trace=file:<path>``), so paths never
    have to be escaped into the URL path; service calls run on the runs' threads."""

    async def call(self, fn: Any, *args: Any) -> Any:
        return await self.services.in_runs_thread(fn, *args)

    def id_arg(self, name: str, what: str) -> str:
        value = self.get_query_argument(name, None)
        if not value:
            raise ApiError(400, "invalid_request", f"?{name}= names the {what} (run:<run>:<file> or file:<path>)")
        return value

    def number(self, name: str, default: float | None) -> float | None:
        raw = self.get_query_argument(name, None)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError as err:
            raise ApiError(400, "invalid_request", f"{name} must be a number") from err
        if value != value or value in (float("inf"), float("-inf")):
            raise ApiError(400, "invalid_request", f"{name} must be a finite number")
        return value

    async def send_file(self, path: Any) -> None:
        """The file itself, as an attachment, in 1 MiB chunks."""
        self.set_header("Content-Type", "application/octet-stream")
        self.set_header("Content-Disposition", f'attachment; filename="{path.name}"')
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                self.write(chunk)
                await self.flush()
        self.finish()


class GPUDojoWebSocket(WebSocketMixin, websocket.WebSocketHandler, ExtensionHandlerMixin, JupyterHandler):
    """Base of the websockets: authenticated, authorized to read `gpudojo` before the
    upgrade (a 403, not an accepted socket closed later), Jupyter's origin check kept."""

    auth_resource = AUTH_RESOURCE

    @property
    def services(self) -> Services:
        return self.settings["gpudojo"]

    async def pre_get(self) -> None:
        allowed = await ensure_async(self.authorizer.is_authorized(self, self.current_user, "read", AUTH_RESOURCE))
        if not allowed:
            raise web.HTTPError(403)

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        await self.pre_get()
        await super().get(*args, **kwargs)
