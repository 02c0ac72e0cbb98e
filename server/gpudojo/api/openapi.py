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


# Every error status a route may answer with, and what it means; the body is always ERROR_SCHEMA.
# A handler's api_doc names those its service can give beyond the ones its shape implies (403
# always; 400 and 413 with a body, 404 with a path parameter, 400 with a required query
# parameter or on a websocket route).
ERROR_STATUSES: dict[int, str] = {
    400: "Invalid request",
    403: "Not authenticated or not authorized",
    404: "No such item",
    409: "Refused in the current state (e.g. as many running as allowed)",
    413: "Too large: the request body, or a file it names",
    502: "A child process this request needs failed",
    503: "Not available on this server now",
    504: "Timed out",
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

    _require_discriminators(schema.get("$defs", {}))

    def ref(name: str, mode: JsonSchemaMode = "serialization") -> dict[str, Any]:
        return refs[(model(name), mode)]

    paths: dict[str, Any] = {}
    for pattern, handler in routes:
        path = openapi_path(pattern)
        params = path_parameters(pattern)
        for verb, doc in getattr(handler, "api_doc", {}).items():
            op: dict[str, Any] = {"summary": doc["summary"], "responses": {}}
            errors = {403, *doc.get("errors", ())}
            if doc.get("websocket"):
                op["responses"]["101"] = {"description": "Switching to a websocket"}
                op["x-websocket"] = {
                    "server-messages": [ref(m) for m in doc.get("messages_out", [])],
                    "client-messages": [ref(m, "validation") for m in doc.get("messages_in", [])],
                }
                errors.add(400)  # a plain GET, not a websocket handshake
            if "response" in doc:
                status = str(doc.get("status", 200))
                op["responses"][status] = {"description": "OK", "content": _json(ref(doc["response"]))}
            if "content" in doc:
                op["responses"][str(doc.get("status", 200))] = {"description": "OK", "content": doc["content"]}
            if "request" in doc:
                op["requestBody"] = {"required": True, "content": _json(ref(doc["request"], "validation"))}
                errors |= {400, 413}
            parameters = [
                {"name": p, "in": "path", "required": True, "schema": {"type": "string", "pattern": f"^{regex}$"}}
                for p, regex in params.items()
            ]
            if params:
                errors.add(404)
            for name, spec in doc.get("query", {}).items():
                parameters.append(_query_parameter(name, spec))
                if isinstance(spec, dict) and spec.get("required"):
                    errors.add(400)
            if parameters:
                op["parameters"] = parameters
            for status in sorted(errors):
                op["responses"][str(status)] = {"description": ERROR_STATUSES[status], "content": _json(ERROR_SCHEMA)}
            paths.setdefault(f"{prefix}/{path}", {})[verb] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "gpudojo", "version": __version__},
        "paths": paths,
        "components": {"schemas": {**schema.get("$defs", {}), "Error": ERROR_SCHEMA}},
    }


def _require_discriminators(defs: dict[str, Any]) -> None:
    """Mark each tagged union's tag as required in every member: pydantic refuses a member without
    its tag ("Unable to extract tag"), even where the member's own model gives it a default
    (LabRunRequest's kind = "lab"), so the document must not call it optional."""

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            tag = node.get("discriminator", {}).get("propertyName")
            for member in node.get("oneOf", []) if tag else []:
                target = defs.get(member.get("$ref", "").rsplit("/", 1)[-1])
                if target is not None and tag not in target.setdefault("required", []):
                    target["required"].insert(0, tag)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(defs)


def openapi_path(pattern: str) -> str:
    """A route pattern with its named groups written as OpenAPI {parameters}."""
    out, last = [], 0
    for name, (start, end) in _named_groups(pattern).items():
        out += [pattern[last:start], "{" + name + "}"]
        last = end
    return "".join([*out, pattern[last:]])


def path_parameters(pattern: str) -> dict[str, str]:
    """Each named group of a route pattern and the regex it matches: what a client may put there."""
    groups = _named_groups(pattern)
    return {name: pattern[start + len(f"(?P<{name}>") : end - 1] for name, (start, end) in groups.items()}


def _named_groups(pattern: str) -> dict[str, tuple[int, int]]:
    """Start and end (exclusive) of every ``(?P<name>...)`` in a pattern, nested parentheses,
    character classes and escapes included (a run id's pattern has its own groups)."""
    groups: dict[str, tuple[int, int]] = {}
    for found in re.finditer(r"\(\?P<(\w+)>", pattern):
        depth, i, in_class = 1, found.end(), False
        while depth:
            ch = pattern[i]
            if ch == "\\":
                i += 1
            elif in_class:
                in_class = ch != "]"
            elif ch == "[":
                in_class = True
            elif ch in "()":
                depth += 1 if ch == "(" else -1
            i += 1
        groups[found.group(1)] = (found.start(), i)
    return groups


def _query_parameter(name: str, spec: str | dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI query parameter from a handler's ``query`` entry: words alone (an optional
    number, as the telemetry rate), or {description, schema, required}."""
    if isinstance(spec, str):
        spec = {"description": spec}
    return {
        "name": name,
        "in": "query",
        "required": spec.get("required", False),
        "description": spec["description"],
        "schema": spec.get("schema", {"type": "number"}),
    }


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


class OpenAPIHandler(GPUDojoHandler):
    api_doc = {
        "get": {
            "summary": "This document",
            "content": _json({"type": "object", "required": ["openapi", "info", "paths", "components"]}),
        }
    }
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
