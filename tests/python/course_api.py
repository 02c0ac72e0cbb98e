"""The course routes as the API tests call them, and a server serving a test course."""

from __future__ import annotations

import json
from pathlib import Path


def serve_course(config, content: Path, labs: Path):
    """``config`` (pytest-jupyter's jp_server_config) with gpudojo serving this course."""
    config.GPUDojo.content_dir = str(content)
    config.GPUDojo.labs_dir = str(labs)
    return config


async def course_get(jp_fetch, *parts):
    return json.loads((await jp_fetch("gpudojo", "api", "course", *parts)).body)


async def course_post(jp_fetch, *parts, body):
    r = await jp_fetch("gpudojo", "api", "course", *parts, method="POST", body=json.dumps(body))
    return json.loads(r.body)
