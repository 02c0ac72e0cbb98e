"""The course routes: catalog, lessons, quiz answers, progress, open as notebook, the module
test, the acceptance list, the reading list and the summary an instructor reads."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .base import GPUDojoHandler

LESSON_ID = r"(?P<lesson_id>[a-z0-9][a-z0-9-]{0,99})"
LAB_ID = r"(?P<lab_id>[a-z0-9][a-z0-9-]{0,99})"


def _models():
    # pydantic loads on the first course request, not at server start (see bench_start.py).
    from ..course import models

    return models


class CourseHandler(GPUDojoHandler):
    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a course service call off the event loop (its errors map to 4xx in the base handler)."""
        course = self.services.course
        return await self.services.in_io_thread(lambda: fn(course, *args))


class CatalogHandler(CourseHandler):
    api_doc = {"get": {"summary": "Lessons, labs and exercises in order, with progress", "response": "Catalog"}}

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            gpus = await self.services.gpu_count()  # what the labs run on here, as the run service decides
        except Exception:  # a failing probe must not hide the course: the labs then read as CPU
            gpus = 0
        self.write_model(await self.call(lambda c, u: c.catalog(u, gpus), self.user_name))


class LessonHandler(CourseHandler):
    api_doc = {"get": {"summary": "A lesson: cells, contents, quiz (no answers), progress", "response": "LessonDoc"}}

    @web.authenticated
    @authorized
    async def get(self, lesson_id: str) -> None:
        self.write_model(await self.call(lambda c, u, i: c.lesson(u, i), self.user_name, lesson_id))


class LabReadmeHandler(CourseHandler):
    api_doc = {"get": {"summary": "A lab's README (markdown), to read before running it", "response": "LabReadme"}}

    @web.authenticated
    @authorized
    async def get(self, lab_id: str) -> None:
        self.write_model(await self.call(lambda c, i: c.lab_readme(i), lab_id))


class QuizHandler(CourseHandler):
    api_doc = {
        "post": {"summary": "Grade answers to a lesson's quiz", "request": "QuizAnswers", "response": "QuizResult"}
    }

    @web.authenticated
    @authorized
    async def post(self, lesson_id: str) -> None:
        models = _models()
        body = self.parse_body(models.QuizAnswers)
        result = await self.call(lambda c, u, i: c.answer_quiz(u, i, body.answers), self.user_name, lesson_id)
        self.write_model(result)


class ProgressHandler(CourseHandler):
    api_doc = {
        "post": {
            "summary": "Set an item's status",
            "request": "ProgressUpdate",
            "response": "ProgressEntry",
            "errors": [404],
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        models = _models()
        update = self.parse_body(models.ProgressUpdate)
        self.write_model(await self.call(lambda c, u: c.set_progress(u, update), self.user_name))


class NotebookHandler(CourseHandler):
    api_doc = {
        "post": {
            "summary": "Copy a lesson into the workspace as a notebook",
            "request": "NotebookRequest",
            "response": "NotebookCopy",
        }
    }

    @web.authenticated
    @authorized
    async def post(self, lesson_id: str) -> None:
        await self.require_contents("write", "Copying a lesson into the workspace")
        models = _models()
        body = self.parse_body(models.NotebookRequest)
        copy = await self.call(lambda c, u, i: c.open_notebook(u, i, body.overwrite), self.user_name, lesson_id)
        self.write_model(copy)


class ModuleTestHandler(CourseHandler):
    api_doc = {
        "get": {
            "summary": "The module test: questions (no answers), your last and best scores",
            "response": "ModuleTestDoc",
            "errors": [404],
        },
        "post": {
            "summary": "Grade an attempt at the module test (every choice explained); retakes are kept",
            "request": "QuizAnswers",
            "response": "ModuleTestGraded",
            "errors": [404],
        },
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_model(await self.call(lambda c, u: c.module_test(u), self.user_name))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        models = _models()
        body = self.parse_body(models.QuizAnswers)
        self.write_model(await self.call(lambda c, u: c.answer_module_test(u, body.answers), self.user_name))


class AcceptanceHandler(CourseHandler):
    api_doc = {
        "get": {
            "summary": "What you can do at the end: the acceptance list, ticked from your progress",
            "response": "Acceptance",
            "errors": [404],
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_model(await self.call(lambda c, u: c.acceptance(u), self.user_name))


class ReadingListHandler(CourseHandler):
    api_doc = {
        "get": {
            "summary": "The course reading list: each entry's section, title, author, link, what to read it for "
            "and the lessons it deepens",
            "response": "ReadingList",
            "errors": [404],
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_model(await self.call(lambda c: c.reading_list()))


class LearnerSummaryHandler(CourseHandler):
    api_doc = {
        "get": {
            "summary": "This learner's progress for an instructor: items done, module test, last checks (read-only)",
            "response": "ProgressSummary",
        }
    }

    @property
    def learner(self) -> str:
        """Whose progress the summary is. Under JupyterHub the caller may be the class service
        (gpudojo-class) or an instructor with access to this server: the learner is the server's
        owner, whom the hub names in JUPYTERHUB_USER. Elsewhere it is the caller, as for every route."""
        if type(self.identity_provider).__module__.startswith("jupyterhub."):
            owner = os.environ.get("JUPYTERHUB_USER")
            if owner:
                return owner
        return self.user_name

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_model(await self.call(lambda c, u: c.summary(u), self.learner))
