"""Grading a lesson's quiz: every question right or wrong, with every choice explained."""

from __future__ import annotations

from ..errors import Invalid
from .models import QuestionResult, Quiz, QuizChoicePublic, QuizQuestionPublic, QuizResult


class QuizAnswerError(Invalid):
    """Answers that do not fit the quiz; the message says which question and why."""

    default_code = "invalid_answers"


def public_questions(quiz: Quiz | None) -> list[QuizQuestionPublic]:
    """The questions as the learner sees them: no correct flags, no explanations."""
    if quiz is None:
        return []
    return [
        QuizQuestionPublic(
            id=q.id, kind=q.kind, prompt=q.prompt, choices=[QuizChoicePublic(text=c.text) for c in q.choices]
        )
        for q in quiz.questions
    ]


def grade(quiz: Quiz, answers: dict[str, list[int]]) -> QuizResult:
    """Grade ``answers`` (choice indexes per question id); unanswered questions count as wrong."""
    known = {q.id: q for q in quiz.questions}
    for qid, chosen in answers.items():
        q = known.get(qid)
        if q is None:
            raise QuizAnswerError(f"No question {qid!r} in this quiz.")
        if any(i < 0 or i >= len(q.choices) for i in chosen):
            raise QuizAnswerError(f"Question {qid!r} has choices 0 to {len(q.choices) - 1}.")
        if q.kind == "single" and len(chosen) > 1:
            raise QuizAnswerError(f"Question {qid!r} takes one choice.")
    results = []
    for q in quiz.questions:
        chosen = sorted(set(answers.get(q.id, [])))
        right = [i for i, c in enumerate(q.choices) if c.correct]
        results.append(
            QuestionResult(
                id=q.id,
                correct=chosen == right,
                chosen=chosen,
                correct_choices=right,
                explanations=[c.why for c in q.choices],
            )
        )
    return QuizResult(score=sum(r.correct for r in results), total=len(results), results=results)
