"""Serving and grading a quiz (a lesson's, or the module test): choices in an order the learner
cannot predict, answers named by choice id, every choice explained.

The order of a question's choices comes from a keyed hash of (learner, quiz, attempt number,
question): the same attempt shows the same order after a reload, the next attempt another one,
and without the installation's secret nobody can tell in advance where a choice will be. The
order in the content files then carries no information, and neither does a position.
"""

from __future__ import annotations

import hashlib
import hmac
import random

from ..errors import Invalid
from .models import QuestionResult, Quiz, QuizChoicePublic, QuizQuestionPublic, QuizResult


class QuizAnswerError(Invalid):
    """Answers that do not fit the quiz; the message says which question and why."""

    default_code = "invalid_answers"


def order_key(secret: bytes, user: str, quiz_key: str, attempt: int) -> bytes:
    """The key that orders the choices of one learner's ``attempt``-th attempt (0-based) at a quiz."""
    return hmac.new(secret, f"{user}\0{quiz_key}\0{attempt}".encode(), hashlib.sha256).digest()


def public_questions(quiz: Quiz, key: bytes) -> list[QuizQuestionPublic]:
    """The questions as the learner sees them: choices shuffled by ``key``, no correct flags,
    no explanations."""
    out = []
    for q in quiz.questions:
        choices = [QuizChoicePublic(id=c.id, text=c.text) for c in q.choices]
        # One generator per question: adding or editing a question leaves the others' order alone.
        seed = hmac.new(key, q.id.encode(), hashlib.sha256).digest()
        random.Random(seed).shuffle(choices)
        out.append(QuizQuestionPublic(id=q.id, kind=q.kind, prompt=q.prompt, choices=choices))
    return out


def grade(quiz: Quiz, answers: dict[str, list[str]]) -> QuizResult:
    """Grade ``answers`` (choice ids per question id); unanswered questions count as wrong."""
    known = {q.id: q for q in quiz.questions}
    for qid, chosen in answers.items():
        q = known.get(qid)
        if q is None:
            raise QuizAnswerError(f"No question {qid!r} in this quiz.")
        ids = {c.id for c in q.choices}
        unknown = [c for c in chosen if c not in ids]
        if unknown:
            raise QuizAnswerError(
                f"Question {qid!r} has no choice {unknown[0]!r}: answers name choices by the ids the quiz was "
                "served with; reload the quiz if it changed."
            )
        if q.kind == "single" and len(set(chosen)) > 1:
            raise QuizAnswerError(f"Question {qid!r} takes one choice.")
    results = []
    for q in quiz.questions:
        picked = set(answers.get(q.id, []))
        chosen = [c.id for c in q.choices if c.id in picked]
        right = [c.id for c in q.choices if c.correct]
        results.append(
            QuestionResult(
                id=q.id,
                correct=chosen == right,
                chosen=chosen,
                correct_choices=right,
                explanations={c.id: c.why for c in q.choices},
            )
        )
    return QuizResult(score=sum(r.correct for r in results), total=len(results), results=results)
