"""The course service: what the course handlers and the CLI call."""

from __future__ import annotations

from pathlib import Path

from ..errors import NotFound
from .catalog import CatalogData, CourseCatalog, lesson_cells, table_of_contents
from .models import (
    Catalog,
    CatalogItem,
    LessonDoc,
    NotebookCopy,
    ProgressEntry,
    ProgressUpdate,
    QuizResult,
    RelatedItem,
)
from .notebooks import copy_lesson_as_notebook
from .progress import ProgressStore
from .quiz import grade, public_questions


class UnknownItem(NotFound):
    """No lesson, lab or exercise with that id; the message names it."""


class CourseService:
    def __init__(self, catalog: CourseCatalog, store: ProgressStore, root_dir: Path) -> None:
        self.catalog_source = catalog
        self.store = store
        self.root_dir = root_dir

    def catalog(self, user: str) -> Catalog:
        data = self.catalog_source.data()
        progress = self.store.entries(user)

        def items(kind: str, entries: list) -> list[CatalogItem]:
            return [
                CatalogItem(
                    kind=kind,  # type: ignore[arg-type]
                    **e.meta.model_dump(include={"id", "title", "order", "minutes", "needs", "cpu_path"}),
                    progress=progress.get((kind, e.meta.id), ProgressEntry(kind=kind, id=e.meta.id)),  # type: ignore[arg-type]
                )
                for e in entries
            ]

        return Catalog(
            lessons=items("lesson", data.lessons),
            labs=items("lab", data.labs),
            exercises=items("exercise", data.exercises),
            problems=data.problems,
        )

    def _lesson(self, data: CatalogData, lesson_id: str):
        lesson = data.lesson(lesson_id)
        if lesson is None:
            raise UnknownItem(f"No lesson {lesson_id!r} in the course.")
        return lesson

    def lesson(self, user: str, lesson_id: str) -> LessonDoc:
        data = self.catalog_source.data()
        lesson = self._lesson(data, lesson_id)
        cells = lesson_cells(lesson.path)
        related = [
            RelatedItem(kind=kind, id=i, title=title)
            for kind, ids in (("lab", lesson.meta.labs), ("exercise", lesson.meta.exercises))
            for i in ids
            if (title := data.title_of(kind, i)) is not None  # items not written yet are not linked
        ]
        later = [x for x in data.lessons if x.meta.order > lesson.meta.order]
        return LessonDoc(
            meta=lesson.meta,
            cells=cells,
            toc=table_of_contents(cells),
            quiz=public_questions(lesson.quiz),
            related=related,
            next=RelatedItem(kind="lesson", id=later[0].meta.id, title=later[0].meta.title) if later else None,
            progress=self.store.entry(user, "lesson", lesson_id),
            last_quiz=self.store.last_quiz(user, lesson_id),
        )

    def answer_quiz(self, user: str, lesson_id: str, answers: dict[str, list[int]]) -> QuizResult:
        lesson = self._lesson(self.catalog_source.data(), lesson_id)
        if lesson.quiz is None:
            raise UnknownItem(f"Lesson {lesson_id!r} has no quiz.")
        result = grade(lesson.quiz, answers)
        self.store.record_quiz(user, lesson_id, result)
        return result

    def set_progress(self, user: str, update: ProgressUpdate) -> ProgressEntry:
        if self.catalog_source.data().title_of(update.kind, update.id) is None:
            raise UnknownItem(f"No {update.kind} {update.id!r} in the course.")
        return self.store.set_status(user, update.kind, update.id, update.status)

    def open_notebook(self, user: str, lesson_id: str, overwrite: bool = False) -> NotebookCopy:
        lesson = self._lesson(self.catalog_source.data(), lesson_id)
        copy = copy_lesson_as_notebook(lesson.path, self.root_dir, overwrite=overwrite)
        if self.store.entry(user, "lesson", lesson_id).status == "not_started":
            self.store.set_status(user, "lesson", lesson_id, "in_progress")
        return copy
