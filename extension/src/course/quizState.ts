/** QuizState: the learner's chosen answers and the graded result of one quiz (no DOM). */

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
    this.questions = questions;
    for (const q of questions) {
      this._selected.set(q.id, []);
    }
  }

  readonly questions: QuizQuestionPublic[];

  /** The graded result, or null while answering. */
  get result(): QuizResult | null {
    return this._result;
  }

  /** The chosen choice indexes (0-based, ascending) of a question. */
  selected(questionId: string): number[] {
    return [...(this._selected.get(questionId) ?? [])];
  }

  isSelected(questionId: string, choice: number): boolean {
    return (this._selected.get(questionId) ?? []).includes(choice);
  }

  /**
   * Choose (or, for a multiple-choice question with `checked` false, unchoose) a choice.
   *
   * A single-choice question keeps only the last choice. Ignored once graded,
   * for an unknown question, or for an index outside the choices.
   */
  choose(questionId: string, choice: number, checked = true): void {
    const question = this.questions.find(q => q.id === questionId);
    if (this._result || !question || choice < 0 || choice >= question.choices.length) {
      return;
    }
    if (question.kind === 'single') {
      this._selected.set(questionId, checked ? [choice] : []);
      return;
    }
    const current = new Set(this._selected.get(questionId) ?? []);
    if (checked) {
      current.add(choice);
    } else {
      current.delete(choice);
    }
    this._selected.set(
      questionId,
      [...current].sort((a, b) => a - b)
    );
  }

  /** True when every question has at least one chosen answer and the quiz is not yet graded. */
  get canSubmit(): boolean {
    return (
      !this._result &&
      this.questions.length > 0 &&
      this.questions.every(q => (this._selected.get(q.id) ?? []).length > 0)
    );
  }

  /** The body of POST course/lessons/{id}/quiz: chosen indexes per question id. */
  answers(): Record<string, number[]> {
    const answers: Record<string, number[]> = {};
    for (const q of this.questions) {
      answers[q.id] = this.selected(q.id);
    }
    return answers;
  }

  /** Show a graded result; the choices become the ones it graded. */
  applyResult(result: QuizResult): void {
    this._result = result;
    for (const r of result.results) {
      if (this._selected.has(r.id)) {
        this._selected.set(r.id, [...r.chosen].sort((a, b) => a - b));
      }
    }
  }

  /** The graded result of one question, or null. */
  questionResult(questionId: string): QuestionResult | null {
    return this._result?.results.find(r => r.id === questionId) ?? null;
  }

  /** How a choice is shown after grading ('neutral' before). */
  outcome(questionId: string, choice: number): ChoiceOutcome {
    const r = this.questionResult(questionId);
    if (!r) {
      return 'neutral';
    }
    const correct = r.correct_choices.includes(choice);
    const chosen = r.chosen.includes(choice);
    if (correct) {
      return chosen ? 'correct' : 'missed';
    }
    return chosen ? 'wrong' : 'neutral';
  }

  /** The server's explanation of a choice after grading, or null. */
  explanation(questionId: string, choice: number): string | null {
    return this.questionResult(questionId)?.explanations[choice] ?? null;
  }

  /** Start over: no result, nothing chosen. */
  reset(): void {
    this._result = null;
    for (const q of this.questions) {
      this._selected.set(q.id, []);
    }
  }

  private _selected = new Map<string, number[]>();
  private _result: QuizResult | null = null;
}
