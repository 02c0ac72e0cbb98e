/**
 * QuizState: the learner's chosen answers and the graded result of one quiz (no DOM).
 *
 * Choices are named by their ids, never by position: the server shuffles them per
 * learner and attempt, and grades the ids it is sent.
 */

import type { QuestionResult, QuizQuestionPublic, QuizResult } from '../api/types';

/** How a choice is shown after grading. */
export type ChoiceOutcome =
  /** Chosen and correct. */
  | 'correct'
  /** Correct but not chosen. */
  | 'missed'
  /** Chosen but wrong. */
  | 'wrong'
  /** Neither chosen nor correct, or not graded yet. */
  | 'neutral';

export class QuizState {
  constructor(questions: QuizQuestionPublic[]) {
    this._questions = questions;
    for (const q of questions) {
      this._selected.set(q.id, []);
    }
  }

  /** The questions, with their choices in the order this attempt was served. */
  get questions(): QuizQuestionPublic[] {
    return this._questions;
  }

  /** The graded result, or null while answering. */
  get result(): QuizResult | null {
    return this._result;
  }

  /** The chosen choice ids of a question, in the order the choices are shown. */
  selected(questionId: string): string[] {
    return [...(this._selected.get(questionId) ?? [])];
  }

  isSelected(questionId: string, choiceId: string): boolean {
    return (this._selected.get(questionId) ?? []).includes(choiceId);
  }

  /**
   * Choose (or, for a multiple-choice question with `checked` false, unchoose) a choice.
   *
   * A single-choice question keeps only the last choice. Ignored once graded,
   * for an unknown question, or for a choice the question does not have.
   */
  choose(questionId: string, choiceId: string, checked = true): void {
    const question = this._questions.find(q => q.id === questionId);
    if (this._result || !question || !question.choices.some(c => c.id === choiceId)) {
      return;
    }
    if (question.kind === 'single') {
      this._selected.set(questionId, checked ? [choiceId] : []);
      return;
    }
    const current = new Set(this._selected.get(questionId) ?? []);
    if (checked) {
      current.add(choiceId);
    } else {
      current.delete(choiceId);
    }
    this._selected.set(
      questionId,
      question.choices.map(c => c.id).filter(id => current.has(id))
    );
  }

  /** True when every question has at least one chosen answer and the quiz is not yet graded. */
  get canSubmit(): boolean {
    return (
      !this._result &&
      this._questions.length > 0 &&
      this._questions.every(q => (this._selected.get(q.id) ?? []).length > 0)
    );
  }

  /** The body of POST course/lessons/{id}/quiz: chosen choice ids per question id. */
  answers(): Record<string, string[]> {
    const answers: Record<string, string[]> = {};
    for (const q of this._questions) {
      answers[q.id] = this.selected(q.id);
    }
    return answers;
  }

  /** Show a graded result; the choices become the ones it graded. */
  applyResult(result: QuizResult): void {
    this._result = result;
    for (const r of result.results) {
      const question = this._questions.find(q => q.id === r.id);
      if (question) {
        this._selected.set(
          r.id,
          question.choices.map(c => c.id).filter(id => r.chosen.includes(id))
        );
      }
    }
  }

  /** The graded result of one question, or null. */
  questionResult(questionId: string): QuestionResult | null {
    return this._result?.results.find(r => r.id === questionId) ?? null;
  }

  /** How a choice is shown after grading ('neutral' before). */
  outcome(questionId: string, choiceId: string): ChoiceOutcome {
    const r = this.questionResult(questionId);
    if (!r) {
      return 'neutral';
    }
    const correct = r.correct_choices.includes(choiceId);
    const chosen = r.chosen.includes(choiceId);
    if (correct) {
      return chosen ? 'correct' : 'missed';
    }
    return chosen ? 'wrong' : 'neutral';
  }

  /** The server's explanation of a choice after grading, or null. */
  explanation(questionId: string, choiceId: string): string | null {
    return this.questionResult(questionId)?.explanations[choiceId] ?? null;
  }

  /**
   * Another attempt: no result; the answers of questions graded right are kept (unless
   * `keepRight` is false), those of the others cleared.
   *
   * `questions` is the next attempt as the server serves it (its own order); answers are
   * kept by choice id, so they follow their choice wherever it moved.
   */
  retry(options: { questions?: QuizQuestionPublic[]; keepRight?: boolean } = {}): void {
    const previous = this._result;
    const questions = options.questions ?? this._questions;
    const kept = new Map<string, string[]>();
    for (const q of questions) {
      const right = options.keepRight !== false && previous?.results.find(r => r.id === q.id)?.correct;
      const chosen = right ? (this._selected.get(q.id) ?? []) : [];
      const ids = q.choices.map(c => c.id);
      // If the question changed meanwhile (a chosen choice is gone), the kept answer would no
      // longer be the one graded right: start that question afresh.
      kept.set(
        q.id,
        chosen.every(id => ids.includes(id)) ? ids.filter(id => chosen.includes(id)) : []
      );
    }
    this._questions = questions;
    this._selected = kept;
    this._result = null;
  }

  private _questions: QuizQuestionPublic[];
  private _selected = new Map<string, string[]>();
  private _result: QuizResult | null = null;
}
