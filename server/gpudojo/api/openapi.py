"""GET openapi.json: the API described from the handlers' pydantic models."""

from __future__ import annotations

import json
import re
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .. import __version__
from .base import GPUDojoHandler

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "detail": {}},
        }
    },
}


def build_openapi(routes: list[tuple[str, type]], prefix: str) -> dict[str, Any]:
    """An OpenAPI 3.1 document for ``routes`` (path relative to ``prefix``, handler class).

    Handlers name their models as strings (classes of gpudojo.gpu.models), so that pydantic
    is imported on the first request, not when the server starts.
    """
    from pydantic import BaseModel
    from pydantic.json_schema import models_json_schema

    from ..course import models as course_models
    from ..gpu import models as gpu_models
    from ..kernels import models as kernel_models
    from ..memory import models as memory_models
    from ..runs import models as run_models

    def model(name: str) -> type[BaseModel]:
        for module in (gpu_models, course_models, kernel_models, run_models, memory_models):
            if hasattr(module, name):
                return getattr(module, name)
        raise LookupError(f"no model named {name}")

    models: list[type[BaseModel]] = []
    for _, handler in routes:
        for doc in getattr(handler, "api_doc", {}).values():
            for key in ("response", "request"):
                if key in doc:
                    models.append(model(doc[key]))
            models.extend(model(m) for m in doc.get("messages_out", []) + doc.get("messages_in", []))
    unique = list(dict.fromkeys(models))
    refs, schema = models_json_schema(
        [(m, "serialization") for m in unique], ref_template="#/components/schemas/{model}"
    )

    def ref(name: str) -> dict[str, Any]:
        return refs[(model(name), "serialization")]

    paths: dict[str, Any] = {}
    for pattern, handler in routes:
        path = openapi_path(pattern)
        params = re.findall(r"{(\w+)}", path)
        for verb, doc in getattr(handler, "api_doc", {}).items():
            op: dict[str, Any] = {
                "summary": doc["summary"],
                "responses": {
                    "403": {"description": "Not authenticated or not authorized", "content": _json(ERROR_SCHEMA)},
                },
            }
            if doc.get("websocket"):
                op["responses"]["101"] = {"description": "Switching to a websocket"}
                op["x-websocket"] = {
                    "server-messages": [ref(m) for m in doc.get("messages_out", [])],
                    "client-messages": [ref(m) for m in doc.get("messages_in", [])],
                }
            if "response" in doc:
                op["responses"]["200"] = {"description": "OK", "content": _json(ref(doc["response"]))}
            if "request" in doc:
                op["requestBody"] = {"required": True, "content": _json(ref(doc["request"]))}
                op["responses"]["400"] = {"description": "Invalid request", "content": _json(ERROR_SCHEMA)}
            if params:
                op["parameters"] = [
                    {"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params
                ]
                op["responses"]["404"] = {"description": "No such item", "content": _json(ERROR_SCHEMA)}
            if "query" in doc:
                op["parameters"] = [
                    {"name": name, "in": "query", "required": False, "description": text, "schema": {"type": "number"}}
                    for name, text in doc["query"].items()
                ]
            paths.setdefault(f"{prefix}/{path}", {})[verb] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "gpudojo", "version": __version__},
        "paths": paths,
        "components": {"schemas": {**schema.get("$defs", {}), "Error": ERROR_SCHEMA}},
    }


def openapi_path(pattern: str) -> str:
    """A route pattern with its named groups written as OpenAPI {parameters}."""
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


class OpenAPIHandler(GPUDojoHandler):
    api_doc = {"get": {"summary": "This document"}}
    _text: str | None = None

    @web.authenticated
    @authorized
    async def get(self) -> None:
        if OpenAPIHandler._text is None:
            from .routes import API_PREFIX, ROUTES

            OpenAPIHandler._text = json.dumps(build_openapi(ROUTES, "/" + API_PREFIX))
        self.write_json_text(OpenAPIHandler._text)
