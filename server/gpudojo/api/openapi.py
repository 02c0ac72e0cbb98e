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


def _schema_generator() -> type:
    from pydantic.json_schema import GenerateJsonSchema

    class SentAsSerialised(GenerateJsonSchema):
        """model_dump_json writes every field, defaults included: in serialization mode each
        one is required, so clients (and the generated TypeScript) need not guard for absence."""

        def field_is_required(self, field: Any, total: bool) -> bool:
            if self.mode == "serialization":
                return True
            return super().field_is_required(field, total)

    return SentAsSerialised


def build_openapi(routes: list[tuple[str, type]], prefix: str) -> dict[str, Any]:
    """An OpenAPI 3.1 document for ``routes`` (path relative to ``prefix``, handler class).

    Handlers name their models as strings (classes of gpudojo.gpu.models), so that pydantic
    is imported on the first request, not when the server starts.
    """
    from pydantic import BaseModel
    from pydantic.json_schema import JsonSchemaMode, models_json_schema

    from ..course import models as course_models
    from ..gpu import models as gpu_models
    from ..kernels import models as kernel_models
    from ..memory import models as memory_models
    from ..profile import models as profile_models
    from ..runs import models as run_models
    from . import models as api_models

    def model(name: str) -> type[BaseModel]:
        for module in (api_models, gpu_models, course_models, kernel_models, run_models, memory_models, profile_models):
            if hasattr(module, name):
                return getattr(module, name)
        raise LookupError(f"no model named {name}")

    # What the server sends is described as it is serialised (every field present); what it
    # receives as it is validated (fields with defaults optional). A model used both ways
    # whose two schemas differ comes out twice, as <Name>-Input and <Name>-Output.
    wanted: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    for _, handler in routes:
        for doc in getattr(handler, "api_doc", {}).values():
            if "response" in doc:
                wanted.append((model(doc["response"]), "serialization"))
            if "request" in doc:
                wanted.append((model(doc["request"]), "validation"))
            wanted.extend((model(m), "serialization") for m in doc.get("messages_out", []))
            wanted.extend((model(m), "validation") for m in doc.get("messages_in", []))
    unique = list(dict.fromkeys(wanted))
    SentAsSerialised = _schema_generator()
    refs, schema = models_json_schema(
        unique, ref_template="#/components/schemas/{model}", schema_generator=SentAsSerialised
    )

    def ref(name: str, mode: JsonSchemaMode = "serialization") -> dict[str, Any]:
        return refs[(model(name), mode)]

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
                    "client-messages": [ref(m, "validation") for m in doc.get("messages_in", [])],
                }
            if "response" in doc:
                op["responses"]["200"] = {"description": "OK", "content": _json(ref(doc["response"]))}
            if "request" in doc:
                op["requestBody"] = {"required": True, "content": _json(ref(doc["request"], "validation"))}
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


def openapi_text() -> str:
    """The document as committed (server/gpudojo/api/openapi.json): indented, one trailing newline."""
    from .routes import API_PREFIX, ROUTES

    return json.dumps(build_openapi(ROUTES, "/" + API_PREFIX), indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m gpudojo.api.openapi [--check] FILE``: write the document to FILE, or with
    --check exit 1 when FILE differs from what the pydantic models give now."""
    import argparse
    import sys
    from pathlib import Path

    ap = argparse.ArgumentParser(prog="python -m gpudojo.api.openapi")
    ap.add_argument("file", type=Path)
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args(argv)
    text = openapi_text()
    if not args.check:
        args.file.write_text(text, encoding="utf-8")
        return 0
    current = args.file.read_text(encoding="utf-8") if args.file.is_file() else ""
    if current != text:
        print(
            f"{args.file} is out of date with the API's pydantic models. Regenerate it and the "
            "TypeScript types from it with `make api-types`, then commit both.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
