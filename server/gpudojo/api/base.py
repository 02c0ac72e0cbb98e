"""What every gpudojo handler shares: JSON errors, the services, auth resource names."""

from __future__ import annotations

import getpass
import json
import sys
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar
from urllib.parse import quote

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web, websocket

from .. import errors
from ..runfolder import RUN_ID_PATTERN

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

    async def require_contents(self, action: str, what: str) -> None:
        """403 unless this user may ``action`` (read, write) Jupyter's `contents`: gpudojo routes
        that read or write workspace files on the user's behalf need what the file browser would."""
        allowed = await ensure_async(self.authorizer.is_authorized(self, self.current_user, action, "contents"))
        if not allowed:
            raise ApiError(403, "forbidden", f"{what} needs permission to {action} files in the workspace.")

    def parse_body(self, model: type[M]) -> M:
        """The request body validated as ``model``; a 4xx ApiError saying what is wrong if not."""
        from pydantic import ValidationError

        body = self.request.body or b"{}"
        if len(body) > self.services.settings.max_body_bytes:
            raise ApiError(413, "too_large", "The request body is larger than the server accepts.")
        try:
            # Strict: a JSON value must have the type openapi.json gives (false is not 0, "5" not
            # 5), so what the document says a route takes is exactly what it accepts.
            return model.model_validate_json(body, strict=True)
        except ValidationError as err:
            # A validator's own sentence is for the learner as it stands (not "Value error, ...").
            detail = [
                {"loc": list(e["loc"]), "msg": e["msg"].removeprefix("Value error, ")}
                for e in err.errors(include_url=False)
            ]
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


# RFC 5987's attr-char beyond letters and digits (quote() keeps "_.-~" and those itself).
_ATTR_CHARS = "!#$&+^`|"


def attachment(name: str) -> str:
    """Content-Disposition for a download called ``name`` (RFC 6266): the name itself, UTF-8 and
    percent-encoded, in filename* (RFC 5987), after a plain ASCII filename for older clients.
    Headers are Latin-1 on the wire, so "fullwidth\\uff0e.json" as it is would not go out at all,
    and a quote or a control character in a name must not end the header's quoted string."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in name) or "download"
    encoded = quote(name.encode("utf-8", errors="replace"), safe=_ATTR_CHARS)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"


def file_id_query(what: str, run_file: str) -> dict[str, Any]:
    """openapi.json's words for a file-analysis id (?capture=, ?trace=): a run's file, its name
    matching the regex ``run_file``, or a file under the server's root."""
    return {
        "description": f"The {what}: run:<run id>:<file name> or file:<path under the server's root>",
        "required": True,
        "schema": {"type": "string", "pattern": f"^(run:{RUN_ID_PATTERN}:({run_file})|file:.+)$"},
    }


def run_id_query(description: str) -> dict[str, Any]:
    """openapi.json's words for a required ?run= run id."""
    schema = {"type": "string", "pattern": f"^{RUN_ID_PATTERN}$"}
    return {"description": description, "required": True, "schema": schema}


class FileQueryHandler(GPUDojoHandler):
    """Routes over analysed files (memory captures, profile traces): the file is named by id in
    the query string (``?capture=run:<run>:<file>``, ``?trace=file:<path>``), so paths never
    have to be escaped into the URL path; service calls run on the runs' threads."""

    async def call(self, fn: Any, *args: Any) -> Any:
        return await self.services.in_runs_thread(fn, *args)

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()
        if self.current_user is None:
            return  # @web.authenticated refuses the request
        # Every id naming a workspace file (?capture=, ?trace=, ?a=, ?b=) is checked here, once.
        for values in self.request.query_arguments.values():
            for raw in values:
                text = raw.decode(errors="replace")
                if text.startswith("file:"):
                    await self.check_workspace_file(text[5:])

    async def check_workspace_file(self, path: str) -> None:
        """403 unless this user could open ``path`` in Jupyter itself: reading it takes `read` on
        `contents`, and a hidden file (or one in a hidden folder, symlinks followed) stays hidden
        unless the contents manager shows hidden files. Paths out of the root are the service's 403."""
        await self.require_contents("read", "Opening a file of the workspace")
        if getattr(self.contents_manager, "allow_hidden", False):
            return
        from pathlib import Path

        from jupyter_core.paths import is_hidden

        root = Path(self.services.settings.root_dir).resolve()
        try:
            target = (root / path).resolve()
            hidden = target.is_relative_to(root) and is_hidden(target, root)
        except (OSError, ValueError):
            return  # not a path a file can have (a NUL, a name too long): the service says so
        if hidden:
            raise ApiError(403, "hidden", f"{path} is hidden (or in a hidden folder); gpudojo does not open it.")

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

    async def send_file(self, name: str, f: BinaryIO) -> None:
        """An open file (closed here) as an attachment called ``name``, in 1 MiB chunks."""
        with f:
            # As Jupyter's own /files/ handler does: a cookie-authenticated download needs this
            # site's Referer (or the _xsrf token), so another site cannot pull a file in with <script>.
            self.check_xsrf_cookie()
            self.set_header("Content-Type", "application/octet-stream")
            self.set_header("Content-Disposition", attachment(name))
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
        if self.request.headers.get("Upgrade", "").lower() != "websocket":
            # tornado's own answer is an HTML 400; the API's errors are all JSON.
            self.set_status(400)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(error_body(400, "not_a_websocket", "Connect with a websocket (Upgrade: websocket)")))
            return
        await super().get(*args, **kwargs)


class UnknownRouteHandler(GPUDojoHandler):
    """Any path under gpudojo/api/ that no route matches (e.g. a run id of the wrong shape): a
    JSON 404 like every other refusal of the API, not Jupyter's HTML page. Authenticated first,
    so an anonymous caller learns nothing about which paths exist."""

    @web.authenticated
    @authorized
    async def get(self, *args: Any) -> None:
        raise ApiError(404, "not_found", "No such API route; the routes are listed in gpudojo/api/openapi.json.")

    post = put = patch = delete = get
