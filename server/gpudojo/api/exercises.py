"""The exercise routes: the exercise with the learner's folder and checks, start, check.

Start writes into the workspace and check runs the learner's code, so both need `execute`
on `kernels` (jupyter_server's permission to run code) besides the `gpudojo` resource.
Check answers at once with the attempt as it starts (202); GET shows it requirement by
requirement while it runs, then as the last result.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from .base import GPUDojoHandler

EXERCISE_ID = r"(?P<exercise_id>[a-z0-9][a-z0-9-]{0,99})"


def _models():
    from ..course import models

    return models


class ExerciseBase(GPUDojoHandler):
    async def gpus(self) -> int:
        try:
            return await self.services.gpu_count()
        except Exception:  # a failing probe must not hide the exercise: checks then run the CPU variant
            return 0


class ExerciseHandler(ExerciseBase):
    api_doc = {
        "get": {
            "summary": "An exercise: README, requirements, your folder, the running check, the last result, history",
            "response": "ExerciseDoc",
        }
    }

    @web.authenticated
    @authorized
    async def get(self, exercise_id: str) -> None:
        gpus = await self.gpus()
        svc = self.services.exercises
        self.write_model(await self.services.in_io_thread(svc.doc, self.user_name, exercise_id, gpus))


class ExerciseStartHandler(ExerciseBase):
    api_doc = {
        "post": {
            "summary": "Copy the starters into gpudojo-exercises/<id>/ (an existing copy is kept unless reset)",
            "request": "ExerciseStartRequest",
            "response": "ExerciseStart",
        }
    }

    @web.authenticated
    @authorized
    async def post(self, exercise_id: str) -> None:
        await self.require_execute("Starting an exercise")
        body = self.parse_body(_models().ExerciseStartRequest)
        svc = self.services.exercises
        self.write_model(await self.services.in_io_thread(svc.start, self.user_name, exercise_id, body.reset))


class ExerciseCheckHandler(ExerciseBase):
    api_doc = {
        "post": {
            "summary": "Run the hidden checks against your copy; answers at once (202), GET shows progress",
            "response": "CheckAttempt",
            "status": 202,
            "errors": [409, 413, 503],
        }
    }

    @web.authenticated
    @authorized
    async def post(self, exercise_id: str) -> None:
        await self.require_execute("Checking an exercise")
        gpus = await self.gpus()
        svc = self.services.exercises
        attempt = await self.services.in_io_thread(svc.check, self.user_name, exercise_id, gpus)
        self.set_status(202)
        self.write_model(attempt)
