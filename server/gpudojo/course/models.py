"""Shapes of the course API: catalog items, lessons, quizzes and progress."""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

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
    launcher: str | None = Field(None, description="A lab's launcher: python or torchrun (None for lessons)")
    lesson: str | None = Field(
        None, description="A lab's or exercise's place in the course: the first lesson that names it (None: after all)"
    )
    progress: ProgressEntry


class Catalog(_Model):
    """GET course/catalog: the course in order, with this user's progress, and what failed to load."""

    lessons: list[CatalogItem]
    labs: list[CatalogItem]
    exercises: list[CatalogItem]
    problems: list[Problem]
    gpus: int = Field(0, description="GPUs a run can use on this machine (0: labs take their CPU path)")
    module_test: ModuleTestScores | None = Field(None, description="The module test's scores; None without a test")


class QuizChoicePublic(_Model):
    id: str = Field(description="The choice's stable id: answers name it, never its position")
    text: str


class QuizQuestionPublic(_Model):
    id: str
    kind: Literal["single", "multiple"]
    prompt: str
    choices: list[QuizChoicePublic]


CHOICE_ID = r"^[a-z0-9][a-z0-9-]{0,31}$"


def choice_id(question_id: str, text: str) -> str:
    """The id of a choice that names none: from its question and its text, so that reordering
    the choices in a file keeps every id (and the answers stored with them) as it was."""
    return hashlib.sha256(f"{question_id}\n{text}".encode()).hexdigest()[:10]


class QuizChoice(_Model):
    id: str = Field(
        "",
        pattern=rf"{CHOICE_ID}|^$",
        description="Optional; derived from the question id and the text when absent",
    )
    text: str = Field(min_length=1)
    correct: bool
    why: str = Field(min_length=1)


class QuizQuestion(_Model):
    id: str = Field(min_length=1)
    kind: Literal["single", "multiple"]
    prompt: str = Field(min_length=1)
    choices: list[QuizChoice] = Field(min_length=2)

    @model_validator(mode="after")
    def _every_choice_has_its_own_id(self) -> QuizQuestion:
        for c in self.choices:
            c.id = c.id or choice_id(self.id, c.text)
        ids = [c.id for c in self.choices]
        if len(set(ids)) != len(ids):
            raise ValueError("two choices share an id (the same text twice, or the same explicit id)")
        return self


class Quiz(_Model):
    questions: list[QuizQuestion] = Field(min_length=1)


ExpectedKind = Literal["written", "captured"]


class GpuCellMeta(_Model):
    """The `gpudojo:` block of a cell tagged needs-gpu (FORMAT.md, GPU cells)."""

    gpus: int = Field(1, ge=1, description="GPUs the cell needs to run (default 1)")
    expected_output: str | None = None
    expected_on: str | None = Field(None, description="The GPU the expected output is for")
    expected_kind: ExpectedKind = Field(
        description="written: composed from datasheets and docs, no GPU ran it; captured: printed by a real GPU"
    )
    expected_source: str | None = Field(
        None, validate_default=True, description="Where the expected output comes from (required when written)"
    )

    @field_validator("expected_source")
    @classmethod
    def _written_names_its_source(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("expected_kind") == "written" and not (value or "").strip():
            raise ValueError("required when expected_kind is written (the datasheet or doc the figures come from)")
        return value


class LessonCell(_Model):
    type: Literal["markdown", "code"]
    source: str
    needs_gpu: bool = False
    gpus: int = Field(1, description="GPUs a needs-gpu cell needs")
    expected_output: str | None = None
    expected_on: str | None = None
    expected_kind: ExpectedKind | None = None
    expected_source: str | None = None


class TocEntry(_Model):
    level: int
    title: str


class RelatedItem(_Model):
    kind: Kind
    id: str
    title: str


class LabReadme(_Model):
    """GET course/labs/{id}/readme: a lab's README, to render as markdown."""

    id: str
    title: str
    markdown: str = Field(description="labs/<id>/README.md as written (empty when the lab has none)")


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
    """POST course/lessons/{id}/quiz and course/module-test: chosen choice ids per question id."""

    answers: dict[str, list[Annotated[str, Field(max_length=64)]]]


class QuestionResult(_Model):
    id: str
    correct: bool
    chosen: list[str] = Field(description="Ids of the chosen choices")
    correct_choices: list[str] = Field(description="Ids of the correct choices")
    explanations: dict[str, str] = Field(description="The why of every choice, by choice id")


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


class ModuleTest(Quiz):
    """content/module-test.toml: the questions of the lesson quizzes' schema, across the course."""

    title: str = Field("Module test", min_length=1)
    pass_percent: int = Field(80, ge=1, le=100, description="The share of right answers that passes the test")


class ModuleTestAttempt(_Model):
    score: int
    total: int
    at: float = Field(description="Unix time (s)")


class ModuleTestScores(_Model):
    """What the Course section shows of the module test: questions, pass mark, last and best."""

    title: str
    questions: int
    pass_score: int = Field(description="Right answers needed to pass")
    attempts: int
    last: ModuleTestAttempt | None = None
    best: ModuleTestAttempt | None = None
    passed: bool = Field(description="The best attempt reached the pass score")


class ModuleTestDoc(_Model):
    """GET course/module-test: the questions (no answers), this user's scores and last graded attempt."""

    title: str
    questions: list[QuizQuestionPublic]
    scores: ModuleTestScores
    last_result: QuizResult | None = None


class ModuleTestGraded(_Model):
    """POST course/module-test: the graded attempt, every choice explained, and the scores after it."""

    result: QuizResult
    scores: ModuleTestScores


class RequirementSpec(_Model):
    """One requirement of an exercise: what the learner must make true, checked by a test."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    statement: str = Field(min_length=1)
    gpu: bool = Field(False, description="Checked only with a GPU; skipped (not applicable) without one")
    files: list[str] = Field(
        default_factory=list,
        description="Starter files the requirement is about, relative to starters/ (a failure links to them)",
    )

    @field_validator("files")
    @classmethod
    def _relative_files(cls, files: list[str]) -> list[str]:
        for f in files:
            parts = f.split("/")
            if not f or f.startswith("/") or "\\" in f or any(p in ("", ".", "..") for p in parts):
                raise ValueError(f"{f!r} is not a path relative to starters/ (no '..', no leading '/')")
        return files


class ExerciseMeta(ItemMeta):
    """content/exercises/<id>/exercise.toml (content/exercises/FORMAT.md)."""

    model_config = ConfigDict(extra="forbid")
    main: str = Field(min_length=1, description="The starter opened first, relative to starters/")
    time_limit_s: int = Field(180, ge=10, le=1800, description="The whole check run; past it the checks are stopped")
    cpu_cannot_show: str = Field("", description="What a machine without a GPU cannot show")
    lessons: list[str] = Field(default_factory=list)
    requirements: list[RequirementSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_requirements(self) -> ExerciseMeta:
        ids = [r.id for r in self.requirements]
        if len(ids) != len(set(ids)):
            raise ValueError("requirement ids must be unique")
        return self


Outcome = Literal["pending", "passed", "failed", "skipped"]


class Figure(_Model):
    """A figure a check measured (shown with the requirement, passed or failed)."""

    name: str
    value: float | int | str | None
    unit: str = ""
    note: str = ""


class RequirementResult(_Model):
    id: str
    statement: str
    gpu: bool
    outcome: Outcome = Field(description="pending while the checks run; skipped: needs a GPU this machine lacks")
    message: str = Field("", description="Why it failed or was skipped, in the learner's terms")
    figures: list[Figure] = Field(default_factory=list)
    duration_s: float = 0.0


CheckMode = Literal["gpu", "cpu"]


class CheckAttempt(_Model):
    """One run of an exercise's hidden checks against the learner's copy."""

    id: str
    exercise: str
    status: Literal["running", "done", "error"] = Field(
        description="error: the checks could not run to the end (time limit, output cap, a broken check)"
    )
    mode: CheckMode = Field(description="gpu: every requirement checked; cpu: the CPU variant (GPU ones skipped)")
    started_at: float = Field(description="Unix time (s)")
    finished_at: float | None = None
    passed: int = 0
    applicable: int = Field(0, description="Requirements not skipped")
    completed: bool = Field(
        False, description="pytest exited 0 and every applicable requirement passed (no error stopped the check)"
    )
    error: str | None = None
    sandbox: Literal["bubblewrap", "none"] | None = Field(
        None,
        description=(
            "Where the learner's programs ran: bubblewrap (a sandbox: no view of the checks, the server or the "
            "network, writes only in scratch), none (not sandboxed: sandbox_reason says why); null for attempts "
            "recorded before sandboxes"
        ),
    )
    sandbox_reason: str = Field("", description="Why the learner's programs were not sandboxed; empty when they were")
    results: list[RequirementResult]


class AttemptSummary(_Model):
    id: str
    at: float = Field(description="Unix time (s) the attempt finished")
    mode: CheckMode
    status: Literal["done", "error"]
    passed: int
    applicable: int
    completed: bool


class ExerciseWorkspace(_Model):
    path: str = Field(description="The learner's folder, relative to the server's root_dir")
    exists: bool
    main: str = Field(description="The main starter in it, relative to root_dir")
    readme: str = Field(description="The README copy in it, relative to root_dir")
    files: list[str] = Field(default_factory=list, description="Files in the folder, relative to it")


class ExerciseDoc(_Model):
    """GET exercises/{id}: the exercise, the learner's folder, the running and last check, history."""

    meta: ExerciseMeta
    readme: str = Field(description="README.md (markdown)")
    workspace: ExerciseWorkspace
    progress: ProgressEntry
    mode: CheckMode = Field(description="What a check here would run: the CPU variant without a GPU")
    gpus: int
    current: CheckAttempt | None = Field(None, description="The check running now, requirement by requirement")
    last: CheckAttempt | None = None
    history: list[AttemptSummary] = Field(default_factory=list, description="Newest first")


class ExerciseStartRequest(_Model):
    """POST exercises/{id}/start."""

    reset: bool = Field(False, description="Copy the starters again; the old folder is kept beside it")


class ExerciseStart(_Model):
    workspace: ExerciseWorkspace
    created: bool = Field(description="False when an existing copy was kept as it is")
    kept_as: str | None = Field(None, description="Where a reset moved the old copy (relative to root_dir)")


Requirement = Literal["lesson", "lab", "exercise", "module-test"]


class AcceptanceRequirementSpec(_Model):
    kind: Requirement
    id: str | None = Field(None, description="The lesson, lab or exercise id (none for the module test)")

    @model_validator(mode="after")
    def _id_names_the_item(self) -> AcceptanceRequirementSpec:
        if (self.kind == "module-test") != (self.id is None):
            raise ValueError("a lesson, lab or exercise needs its id; the module test takes none")
        return self


class AcceptanceItemSpec(_Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    text: str = Field(min_length=1)
    requires: list[AcceptanceRequirementSpec] = Field(min_length=1)


class AcceptanceSpec(_Model):
    """content/acceptance.toml: what a learner can do at the end, and what completes each."""

    items: list[AcceptanceItemSpec] = Field(min_length=1)


class AcceptanceRequirement(_Model):
    kind: Requirement
    id: str | None = None
    title: str = Field(description="The item's title (its id when it is not written yet)")
    available: bool = Field(description="False when the item is not in the course yet: it does not count")
    done: bool
    detail: str = Field(description="What done means, or why it is not available")


class AcceptanceItem(_Model):
    id: str
    text: str
    requires: list[AcceptanceRequirement]
    done: bool = Field(description="Every available requirement is done (and at least one is available)")
    available: int
    completed: int


class Acceptance(_Model):
    """GET course/acceptance: the module's acceptance list with ticks from this user's progress."""

    items: list[AcceptanceItem]
    problems: list[Problem] = Field(default_factory=list)


class ReadingEntry(_Model):
    """One entry of the course reading list (content/resources/reading.md)."""

    section: str = Field(min_length=1, description="The `##` heading the entry is listed under")
    title: str = Field(min_length=1)
    by: str = Field(min_length=1, description="Its author or publisher")
    link: str = Field(pattern=r"^https://\S+$", description="Where to find it")
    read_for: str = Field(min_length=1, description="The part worth your time (markdown: `code` spans)")
    deepens: list[str] = Field(min_length=1, description="The lessons it takes further, by id")


class ReadingList(_Model):
    """GET course/reading: the course reading list in its order, and entries that failed to load."""

    entries: list[ReadingEntry]
    problems: list[Problem] = Field(default_factory=list)


class ItemsDone(_Model):
    """How many items of one kind a learner finished, and which."""

    done: int
    total: int = Field(description="Items of this kind in the course")
    ids: list[str] = Field(description="The finished items' ids, in course order")
    course: list[str] = Field(description="Every item of this kind in the course, in order")


class RequirementOutcome(_Model):
    id: str
    outcome: Outcome


class LastCheck(_Model):
    """An exercise's last finished check: each requirement's outcome, not the learner's code."""

    exercise: str
    at: float = Field(description="Unix time (s) the check finished")
    mode: CheckMode
    status: Literal["running", "done", "error"]
    completed: bool
    passed: int
    applicable: int
    requirements: list[RequirementOutcome]


class ProgressSummary(_Model):
    """GET course/summary: one learner's progress as an instructor reads it (read-only)."""

    user: str = Field(description="Whose progress: the server's owner under JupyterHub, else the caller")
    lessons: ItemsDone
    labs: ItemsDone
    exercises: ItemsDone
    module_test: ModuleTestScores | None = Field(None, description="Best and last attempts; None without a test")
    last_checks: list[LastCheck] = Field(description="The last check of every exercise checked at least once")
    last_activity: float | None = Field(None, description="Unix time (s) of the latest progress write; None: none")
    generated_at: float = Field(description="Unix time (s) this summary was made")


Catalog.model_rebuild()
LessonDoc.model_rebuild()
ExerciseDoc.model_rebuild()
ProgressSummary.model_rebuild()
