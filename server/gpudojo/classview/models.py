"""What the class service answers with: one row per learner, one per course item."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..course.models import ProgressSummary

# ok: the server answered; stopped: no server running; timeout: no answer within the limit;
# error: an answer that is not a summary (gpudojo missing, refused, unreachable).
LearnerState = Literal["ok", "stopped", "timeout", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LearnerAnswer(_Model):
    """What one learner's server said (or why it said nothing)."""

    name: str
    state: LearnerState
    detail: str = Field("", description="Why there is no summary, in the instructor's words")
    elapsed_ms: float = Field(0.0, description="How long the server took to answer (ms)")
    summary: ProgressSummary | None = None


class TestScore(_Model):
    score: int
    total: int
    passed: bool


class LearnerRow(_Model):
    name: str
    state: LearnerState
    detail: str
    lessons_done: int | None
    lessons_total: int | None
    labs_done: int | None
    labs_total: int | None
    exercises_done: int | None
    exercises_total: int | None
    module_test_best: TestScore | None
    last_activity: float | None = Field(description="Unix time (s)")
    failed_requirements: list[str] = Field(description="<exercise>/<requirement> failing in each last check")


class ItemRow(_Model):
    kind: Literal["lesson", "lab", "exercise", "module-test"]
    id: str
    finished: int = Field(description="Learners who finished it (the module test: passed it)")
    of: int = Field(description="Learners whose server answered")
    most_failed: str | None = Field(None, description="The requirement failed by most learners' last check")
    most_failed_count: int = 0


class ClassReport(_Model):
    """GET class.json: the class as gathered just now."""

    generated_at: float = Field(description="Unix time (s)")
    gather_ms: float = Field(description="Wall time of the gathering (ms)")
    learners: list[LearnerRow]
    items: list[ItemRow]
    answered: int
    stopped: int
    timed_out: int
    errors: int
