"""Shapes of the course API: catalog items, lessons, quizzes and progress."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Needs = Literal["cpu", "gpu", "multi-gpu"]
Kind = Literal["lesson", "lab", "exercise"]
Status = Literal["not_started", "in_progress", "completed"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Problem(_Model):
    """A manifest that could not be loaded: which file, which field, what is wrong."""

    file: str
    field: str | None = None
    message: str


class ItemMeta(_Model):
    """What every course item declares: a lab's lab.toml and an exercise's exercise.toml
    hold this and more (their own issues define the rest)."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str = Field(min_length=1)
    order: int = Field(ge=1)
    minutes: int = Field(ge=1)
    needs: Needs = "cpu"
    cpu_path: str | None = None


class LessonMeta(ItemMeta):
    """The `gpudojo:` block of a lesson's front matter."""

    model_config = ConfigDict(extra="forbid")
    objectives: list[str] = Field(default_factory=list)
    labs: list[str] = Field(default_factory=list)
    exercises: list[str] = Field(default_factory=list)


class ProgressEntry(_Model):
    kind: Kind
    id: str
    status: Status = "not_started"
    updated_at: float | None = Field(None, description="Unix time (s)")
    completed_at: float | None = Field(None, description="Unix time (s)")
    quiz_score: int | None = None
    quiz_total: int | None = None


class CatalogItem(_Model):
    kind: Kind
    id: str
    title: str
    order: int
    minutes: int
    needs: Needs
    cpu_path: str | None = None
    progress: ProgressEntry


class Catalog(_Model):
    """GET course/catalog: the course in order, with this user's progress, and what failed to load."""

    lessons: list[CatalogItem]
    labs: list[CatalogItem]
    exercises: list[CatalogItem]
    problems: list[Problem]


class QuizChoicePublic(_Model):
    text: str


class QuizQuestionPublic(_Model):
    id: str
    kind: Literal["single", "multiple"]
    prompt: str
    choices: list[QuizChoicePublic]


class QuizChoice(_Model):
    text: str = Field(min_length=1)
    correct: bool
    why: str = Field(min_length=1)


class QuizQuestion(_Model):
    id: str = Field(min_length=1)
    kind: Literal["single", "multiple"]
    prompt: str = Field(min_length=1)
    choices: list[QuizChoice] = Field(min_length=2)


class Quiz(_Model):
    questions: list[QuizQuestion] = Field(min_length=1)


class LessonCell(_Model):
    type: Literal["markdown", "code"]
    source: str
    needs_gpu: bool = False
    expected_output: str | None = None
    expected_on: str | None = None


class TocEntry(_Model):
    level: int
    title: str


class RelatedItem(_Model):
    kind: Kind
    id: str
    title: str


class LessonDoc(_Model):
    """GET course/lessons/{id}: the lesson to render, its quiz (without answers) and progress."""

    meta: LessonMeta
    cells: list[LessonCell]
    toc: list[TocEntry]
    quiz: list[QuizQuestionPublic]
    related: list[RelatedItem]
    next: RelatedItem | None = None
    progress: ProgressEntry
    last_quiz: QuizResult | None = None


class QuizAnswers(_Model):
    """POST course/lessons/{id}/quiz: chosen choice indexes per question id."""

    answers: dict[str, list[int]]


class QuestionResult(_Model):
    id: str
    correct: bool
    chosen: list[int]
    correct_choices: list[int]
    explanations: list[str] = Field(description="The why of every choice, in choice order")


class QuizResult(_Model):
    score: int
    total: int
    results: list[QuestionResult]


class ProgressUpdate(_Model):
    """POST course/progress."""

    kind: Kind
    id: str = Field(min_length=1, max_length=100)
    status: Status


class NotebookRequest(_Model):
    """POST course/lessons/{id}/notebook."""

    overwrite: bool = False


class NotebookCopy(_Model):
    path: str = Field(description="Path of the notebook, relative to the server's root_dir")
    created: bool = Field(description="False when an earlier copy was kept (the learner's edits are never lost)")


LessonDoc.model_rebuild()
