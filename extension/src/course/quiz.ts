/**
 * QuizView: a quiz (a lesson's, or the module test), drawn from a QuizState; grading is
 * the server's. Choices are shown in the order the server served them and sent back by id.
 */

import { Panel, Widget } from '@lumino/widgets';
import type { QuizQuestionPublic, QuizResult } from '../api/types';
import { h } from '../dom';
import { ChoiceOutcome, QuizState } from './quizState';
import { inlineCodeSegments } from './toc';

export interface QuizViewOptions {
  /** The lesson's id, used to give inputs unique names. */
  lessonId: string;
  questions: QuizQuestionPublic[];
  /** Grade the answers (choice ids per question id) on the server. */
  submit: (answers: Record<string, string[]>) => Promise<QuizResult>;
  /**
   * The questions of the next attempt, in the order the server serves them. "Try again"
   * asks for them, so that every attempt is reshuffled; without it (or when it fails) the
   * current order stays.
   */
  nextAttempt?: () => Promise<QuizQuestionPublic[]>;
  /**
   * Whether "Try again" keeps the answers of questions graded right (default true). A quiz
   * that practises keeps them; a test that is retaken as a whole does not.
   */
  keepRightOnRetry?: boolean;
  /** A widget showing markdown (a question's prompt); plain text when absent. */
  createMarkdown?: (source: string) => Widget;
  /** A result graded earlier, shown at once. */
  lastResult?: QuizResult | null;
  /** The heading above the questions ('Quiz' when absent). */
  heading?: string;
  /** Called after the server graded a submission. */
  graded?: (result: QuizResult) => void;
}

interface ChoiceNodes {
  id: string;
  input: HTMLInputElement;
  row: HTMLElement;
  why: HTMLElement;
}

/** What precedes a choice's explanation after grading. */
const OUTCOME_PREFIX: Record<ChoiceOutcome, string> = {
  correct: 'Correct. ',
  missed: 'Correct answer, not chosen. ',
  wrong: 'Incorrect. ',
  neutral: ''
};

/** Text with `code` spans shown in monospace. */
function inlineText(text: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  for (const segment of inlineCodeSegments(text)) {
    fragment.appendChild(
      segment.code ? h('code', { text: segment.text }) : document.createTextNode(segment.text)
    );
  }
  return fragment;
}

export class QuizView extends Panel {
  constructor(options: QuizViewOptions) {
    super();
    this._options = options;
    this.state = new QuizState(options.questions);
    this.addClass('gpudojo-quiz');
    const heading = options.heading ?? 'Quiz';
    this.node.setAttribute('aria-label', heading);
    this.addWidget(new Widget({ node: h('h2', { className: 'gpudojo-quiz-heading', text: heading }) }));
    this._questionsPanel.addClass('gpudojo-quiz-questions');
    this.addWidget(this._questionsPanel);
    this._buildQuestions();
    this._footer = h('div', { className: 'gpudojo-quiz-footer' });
    this.addWidget(new Widget({ node: this._footer }));
    if (options.lastResult) {
      this.state.applyResult(options.lastResult);
    }
    this._render();
  }

  /** What is chosen and graded. */
  readonly state: QuizState;

  /** The question boxes, built once per attempt so focus and keyboard navigation survive updates. */
  private _buildQuestions(): void {
    for (const widget of [...this._questionsPanel.widgets]) {
      widget.dispose();
    }
    this._questionNodes.clear();
    this.state.questions.forEach((question, index) => {
      const box = new Panel();
      box.addClass('gpudojo-quiz-question');
      box.node.dataset.qid = question.id;
      box.addWidget(
        new Widget({ node: h('div', { className: 'gpudojo-quiz-number', text: `Question ${index + 1}` }) })
      );
      const prompt = this._options.createMarkdown
        ? this._options.createMarkdown(question.prompt)
        : new Widget({ node: h('p', {}, inlineText(question.prompt)) });
      prompt.addClass('gpudojo-quiz-prompt');
      box.addWidget(prompt);
      const fieldset = h('fieldset', { className: 'gpudojo-quiz-choices' });
      const choices = this._buildChoices(question, fieldset);
      const verdict = h('div', { attrs: { role: 'status' } });
      fieldset.appendChild(verdict);
      box.addWidget(new Widget({ node: fieldset }));
      this._questionsPanel.addWidget(box);
      this._questionNodes.set(question.id, { box: box.node, choices, verdict });
    });
  }

  private _render(): void {
    const { state } = this;
    const graded = state.result !== null;
    for (const question of state.questions) {
      const nodes = this._questionNodes.get(question.id);
      if (!nodes) {
        continue;
      }
      const r = state.questionResult(question.id);
      if (r) {
        nodes.box.dataset.correct = String(r.correct);
      } else {
        delete nodes.box.dataset.correct;
      }
      for (const choice of nodes.choices) {
        const outcome = state.outcome(question.id, choice.id);
        choice.input.checked = state.isSelected(question.id, choice.id);
        choice.input.disabled = graded;
        choice.row.className = `gpudojo-quiz-choice gpudojo-mod-${outcome}`;
        const why = graded ? state.explanation(question.id, choice.id) : null;
        choice.why.textContent = '';
        choice.why.hidden = !why;
        if (why) {
          choice.why.append(OUTCOME_PREFIX[outcome], inlineText(why));
        }
      }
      nodes.verdict.hidden = !r;
      nodes.verdict.textContent = r ? (r.correct ? 'Correct' : 'Not quite') : '';
      nodes.verdict.className = `gpudojo-quiz-verdict gpudojo-mod-${r?.correct ? 'correct' : 'incorrect'}`;
    }
    this._renderFooter();
  }

  private _buildChoices(question: QuizQuestionPublic, fieldset: HTMLElement): ChoiceNodes[] {
    fieldset.appendChild(
      h('legend', {
        className: 'gpudojo-quiz-hint',
        text: question.kind === 'multiple' ? 'Choose all that apply' : 'Choose one'
      })
    );
    return question.choices.map((choice, index) => {
      const inputId = `gpudojo-quiz-${this._options.lessonId}-${question.id}-${index}`;
      const input = h('input', {
        attrs: {
          type: question.kind === 'multiple' ? 'checkbox' : 'radio',
          name: `gpudojo-quiz-${this._options.lessonId}-${question.id}`,
          id: inputId,
          value: choice.id
        }
      });
      input.addEventListener('change', () => {
        this.state.choose(question.id, choice.id, input.checked);
        this._render();
      });
      const why = h('div', { className: 'gpudojo-quiz-why' });
      const row = h(
        'div',
        { className: 'gpudojo-quiz-choice', attrs: { 'data-choice-id': choice.id } },
        input,
        h('label', { attrs: { for: inputId } }, inlineText(choice.text)),
        why
      );
      fieldset.appendChild(row);
      return { id: choice.id, input, row, why };
    });
  }

  private _renderFooter(): void {
    const { state } = this;
    const footer = this._footer;
    footer.textContent = '';
    if (state.result) {
      footer.appendChild(
        h('div', {
          className: 'gpudojo-quiz-score',
          text: `Score: ${state.result.score} / ${state.result.total}`,
          attrs: { role: 'status' }
        })
      );
      const keeps = this._options.keepRightOnRetry !== false && state.result.score > 0;
      const again = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-quiz-retry',
        text: this._busy ? 'Loading…' : 'Try again',
        title: keeps
          ? 'Answer again the questions you got wrong; your right answers stay'
          : 'Start again with every question unanswered'
      });
      again.disabled = this._busy;
      again.addEventListener('click', () => void this.retry());
      footer.appendChild(again);
    } else {
      const submit = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-quiz-submit',
        text: this._busy ? 'Checking…' : 'Submit',
        title: state.canSubmit ? 'Check your answers' : 'Answer every question first'
      });
      submit.disabled = !state.canSubmit || this._busy;
      submit.addEventListener('click', () => void this._submit());
      footer.appendChild(submit);
    }
    if (this._error) {
      footer.appendChild(
        h('div', { className: 'gpudojo-error', text: this._error, attrs: { role: 'alert' } })
      );
    }
  }

  /** Another attempt: the next order from the server, right answers kept (see keepRightOnRetry). */
  async retry(): Promise<void> {
    if (!this.state.result || this._busy) {
      return;
    }
    this._busy = true;
    this._error = null;
    this._renderFooter();
    let questions: QuizQuestionPublic[] | undefined;
    try {
      questions = await this._options.nextAttempt?.();
    } catch {
      // The server grades choice ids, not positions: the attempt can go on in the current order.
      questions = undefined;
    }
    this._busy = false;
    if (this.isDisposed) {
      return;
    }
    this.state.retry({ questions, keepRight: this._options.keepRightOnRetry !== false });
    if (questions) {
      this._buildQuestions();
    }
    this._render();
    // The button that had focus is gone: continue at the first question still to answer.
    const open = this.state.questions.find(q => this.state.selected(q.id).length === 0);
    this._questionNodes.get(open?.id ?? '')?.choices[0]?.input.focus();
  }

  private async _submit(): Promise<void> {
    if (!this.state.canSubmit || this._busy) {
      return;
    }
    this._busy = true;
    this._error = null;
    this._renderFooter();
    try {
      const result = await this._options.submit(this.state.answers());
      this.state.applyResult(result);
      this._options.graded?.(result);
    } catch (error) {
      this._error = `Your answers could not be checked: ${(error as Error).message ?? error}. Try again.`;
    } finally {
      this._busy = false;
      if (!this.isDisposed) {
        this._render();
      }
    }
  }

  private _options: QuizViewOptions;
  private _questionsPanel = new Panel();
  private _footer: HTMLElement;
  private _busy = false;
  private _error: string | null = null;
  private _questionNodes = new Map<
    string,
    { box: HTMLElement; choices: ChoiceNodes[]; verdict: HTMLElement }
  >();
}
