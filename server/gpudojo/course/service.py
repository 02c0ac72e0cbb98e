"""The course service: what the course handlers and the CLI call."""

from __future__ import annotations

from pathlib import Path

from ..errors import NotFound
from . import moduletest
from .catalog import CatalogData, CourseCatalog, lesson_cells, table_of_contents
from .models import (
    Acceptance,
    AcceptanceSpec,
    Catalog,
    CatalogItem,
    LabReadme,
    LessonDoc,
    ModuleTest,
    ModuleTestDoc,
    ModuleTestGraded,
    NotebookCopy,
    Problem,
    ProgressEntry,
    ProgressSummary,
    ProgressUpdate,
    Quiz,
    QuizQuestionPublic,
    QuizResult,
    ReadingList,
    RelatedItem,
)
from .notebooks import copy_lesson_as_notebook
from .progress import ProgressStore
from .quiz import grade, order_key, public_questions
from .reading import READING_FILE, load_reading_list, unknown_lessons
from .summary import summarise

# The name of the secret that orders quiz choices (ProgressStore.secret).
QUIZ_ORDER_SECRET = "quiz-order"


class UnknownItem(NotFound):
    """No lesson, lab or exercise with that id; the message names it."""


class CourseService:
    def __init__(self, catalog: CourseCatalog, store: ProgressStore, root_dir: Path) -> None:
        self.catalog_source = catalog
        self.store = store
        self.root_dir = root_dir

    def catalog(self, user: str, gpus: int = 0) -> Catalog:
        data = self.catalog_source.data()
        progress = self.store.entries(user)

        # A lab or exercise takes its place after the first lesson that names it.
        first_lesson: dict[tuple[str, str], str] = {}
        for lesson in sorted(data.lessons, key=lambda x: x.meta.order):
            for kind, ids in (("lab", lesson.meta.labs), ("exercise", lesson.meta.exercises)):
                for item_id in ids:
                    first_lesson.setdefault((kind, item_id), lesson.meta.id)

        def items(kind: str, entries: list) -> list[CatalogItem]:
            return [
                CatalogItem(
                    kind=kind,  # type: ignore[arg-type]
                    **e.meta.model_dump(include={"id", "title", "order", "minutes", "needs", "cpu_path"}),
                    launcher=getattr(e.meta, "launcher", None) if kind == "lab" else None,
                    lesson=first_lesson.get((kind, e.meta.id)),
                    progress=progress.get((kind, e.meta.id), ProgressEntry(kind=kind, id=e.meta.id)),  # type: ignore[arg-type]
                )
                for e in entries
            ]

        test, test_problems = self._module_test()
        return Catalog(
            lessons=items("lesson", data.lessons),
            labs=items("lab", data.labs),
            exercises=items("exercise", data.exercises),
            problems=data.problems + test_problems,
            gpus=gpus,
            module_test=moduletest.scores(self.store, user, test) if test else None,
        )

    def summary(self, user: str) -> ProgressSummary:
        """``user``'s progress as an instructor reads it (course/summary.py)."""
        test, _ = self._module_test()
        scores = moduletest.scores(self.store, user, test) if test else None
        return summarise(self.catalog_source.data(), self.store, user, scores)

    def _module_test(self) -> tuple[ModuleTest | None, list[Problem]]:
        path = self.catalog_source.content_root / moduletest.MODULE_TEST_FILE
        test, problems = moduletest.load_cached(path, ModuleTest)
        return test, problems  # type: ignore[return-value]

    def _require_module_test(self) -> ModuleTest:
        test, _ = self._module_test()
        if test is None:
            raise UnknownItem("This course has no module test (content/module-test.toml is missing or invalid).")
        return test

    def _served(self, user: str, key: str, quiz: Quiz | None) -> list[QuizQuestionPublic]:
        """``quiz`` in the order of this user's next attempt at quiz ``key``."""
        if quiz is None:
            return []
        attempt = self.store.attempt_count(user, key)
        return public_questions(quiz, order_key(self.store.secret(QUIZ_ORDER_SECRET), user, key, attempt))

    def module_test(self, user: str) -> ModuleTestDoc:
        test = self._require_module_test()
        return ModuleTestDoc(
            title=test.title,
            questions=self._served(user, moduletest.MODULE_TEST_KEY, test),
            scores=moduletest.scores(self.store, user, test),
            last_result=self.store.last_quiz(user, moduletest.MODULE_TEST_KEY),
        )

    def answer_module_test(self, user: str, answers: dict[str, list[str]]) -> ModuleTestGraded:
        test = self._require_module_test()
        result = grade(test, answers)
        self.store.record_attempt(user, moduletest.MODULE_TEST_KEY, result)
        return ModuleTestGraded(result=result, scores=moduletest.scores(self.store, user, test))

    def acceptance(self, user: str) -> Acceptance:
        path = self.catalog_source.content_root / moduletest.ACCEPTANCE_FILE
        spec, problems = moduletest.load_cached(path, AcceptanceSpec)
        if spec is None:
            raise UnknownItem(
                "This course has no acceptance list (content/acceptance.toml is missing or invalid)."
                + "".join(f" {p.field or p.file}: {p.message}." for p in problems)
            )
        test, _ = self._module_test()
        return moduletest.acceptance(
            spec,  # type: ignore[arg-type]
            self.catalog_source.data(),
            self.store.entries(user),
            test,
            moduletest.scores(self.store, user, test) if test else None,
        )

    def reading_list(self) -> ReadingList:
        """The course reading list (content/resources/reading.md), with what failed to load and
        the lesson ids it names that the course does not have."""
        path = self.catalog_source.content_root / READING_FILE
        reading = load_reading_list(path)
        if reading is None:
            raise UnknownItem("This course has no reading list (content/resources/reading.md is missing).")
        lessons = [lesson.meta.id for lesson in self.catalog_source.data().lessons]
        return ReadingList(
            entries=reading.entries,
            problems=reading.problems + unknown_lessons(reading, lessons, str(path)),
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
            quiz=self._served(user, lesson_id, lesson.quiz),
            related=related,
            next=RelatedItem(kind="lesson", id=later[0].meta.id, title=later[0].meta.title) if later else None,
            progress=self.store.entry(user, "lesson", lesson_id),
            last_quiz=self.store.last_quiz(user, lesson_id),
        )

    def lab_readme(self, lab_id: str) -> LabReadme:
        """A lab's README.md as written (empty when the lab has none)."""
        lab = next((x for x in self.catalog_source.data().labs if x.meta.id == lab_id), None)
        if lab is None:
            raise UnknownItem(f"No lab {lab_id!r} in the course.")
        root = self.catalog_source.labs_root.resolve()
        readme = (lab.path.parent / "README.md").resolve()
        if not readme.is_relative_to(root) or not readme.is_file():
            return LabReadme(id=lab_id, title=lab.meta.title, markdown="")
        return LabReadme(id=lab_id, title=lab.meta.title, markdown=readme.read_text(encoding="utf-8", errors="replace"))

    def answer_quiz(self, user: str, lesson_id: str, answers: dict[str, list[str]]) -> QuizResult:
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
