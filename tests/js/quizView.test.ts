/**
 * @jest-environment jsdom
 */
// jsdom has no DragEvent, which @lumino/dragdrop extends as it loads (the views are lumino widgets):
// set it before the imports below, which the CommonJS build runs in order.
(globalThis as unknown as { DragEvent: unknown }).DragEvent ??= class extends MouseEvent {};
import { Widget } from '@lumino/widgets';
import type { QuizQuestionPublic, QuizResult } from '../../extension/src/api/types';
import { QuizView, QuizViewOptions } from '../../extension/src/course/quiz';
import { QUESTIONS } from './courseFixtures';

/** Grades as the server does: by choice id. q1's answer is 'global', q2's is shared and global. */
function grade(answers: Record<string, string[]>): QuizResult {
  const key: Record<string, string[]> = { q1: ['global'], q2: ['sh', 'gl'] };
  const results = QUESTIONS.map(q => {
    const chosen = answers[q.id] ?? [];
    const right = key[q.id];
    return {
      id: q.id,
      correct: chosen.length === right.length && right.every(id => chosen.includes(id)),
      chosen,
      correct_choices: right,
      explanations: Object.fromEntries(q.choices.map(c => [c.id, `why ${c.text}`]))
    };
  });
  return { score: results.filter(r => r.correct).length, total: results.length, results };
}

/** The next attempt as the server serves it: every question's choices in another order. */
const NEXT: QuizQuestionPublic[] = QUESTIONS.map(q => ({ ...q, choices: [...q.choices].reverse() }));

const flush = () => new Promise(resolve => setTimeout(resolve, 0));

function mount(options: Partial<QuizViewOptions> = {}) {
  const submit = jest.fn(async (answers: Record<string, string[]>) => grade(answers));
  const nextAttempt = jest.fn(async () => NEXT);
  const view = new QuizView({
    lessonId: 'cuda-basics',
    questions: QUESTIONS,
    submit,
    nextAttempt,
    ...options
  });
  Widget.attach(view, document.body);
  const input = (qid: string, choice: string) =>
    view.node.querySelector<HTMLInputElement>(`[data-qid="${qid}"] [data-choice-id="${choice}"] input`)!;
  const check = (qid: string, choice: string) => {
    input(qid, choice).checked = true;
    input(qid, choice).dispatchEvent(new Event('change'));
  };
  const rows = (qid: string) => [
    ...view.node.querySelectorAll<HTMLElement>(`[data-qid="${qid}"] .gpudojo-quiz-choice`)
  ];
  const shown = (qid: string) => rows(qid).map(r => r.dataset.choiceId);
  const checked = (qid: string) =>
    rows(qid)
      .map(r => r.querySelector('input')!)
      .filter(i => i.checked)
      .map(i => i.value);
  const find = (cls: string) => view.node.querySelector<HTMLButtonElement>(`.${cls}`);
  return { view, submit, nextAttempt, input, check, shown, checked, find };
}

afterEach(() => {
  document.body.textContent = '';
});

describe('QuizView', () => {
  it('shows the choices in the served order and sends the chosen ids', async () => {
    const { submit, check, shown, find, view } = mount({ questions: NEXT });
    expect(shown('q2')).toEqual(['wa', 'gl', 'sh']);
    check('q1', 'global');
    check('q2', 'gl');
    check('q2', 'sh');
    find('gpudojo-quiz-submit')!.click();
    await flush();
    expect(submit).toHaveBeenCalledWith({ q1: ['global'], q2: ['gl', 'sh'] });
    expect(find('gpudojo-quiz-score')!.textContent).toBe('Score: 2 / 2');
    const why = view.node.querySelector('[data-qid="q2"] [data-choice-id="sh"] .gpudojo-quiz-why')!;
    expect(why.textContent).toBe('Correct. why shared');
    view.dispose();
  });

  it('keeps right answers on "Try again", clears wrong ones, and takes the reshuffled attempt', async () => {
    const { nextAttempt, check, shown, checked, find, view } = mount();
    check('q1', 'global'); // right
    check('q2', 'sh');
    check('q2', 'wa'); // wrong: warp is not a memory space, and global is missing
    find('gpudojo-quiz-submit')!.click();
    await flush();
    expect(find('gpudojo-quiz-score')!.textContent).toBe('Score: 1 / 2');
    expect(find('gpudojo-quiz-retry')!.title).toMatch(/right answers stay/);
    find('gpudojo-quiz-retry')!.click();
    await flush();
    expect(nextAttempt).toHaveBeenCalledTimes(1);
    expect(shown('q2')).toEqual(['wa', 'gl', 'sh']);
    expect(checked('q1')).toEqual(['global']);
    expect(checked('q2')).toEqual([]);
    expect(view.node.querySelector('.gpudojo-quiz-why:not([hidden])')).toBeNull();
    expect(find('gpudojo-quiz-submit')!.disabled).toBe(true);
    // The first question still to answer has the focus, now that the button is gone.
    expect(document.activeElement).toBe(view.node.querySelector('[data-qid="q2"] input'));
    check('q2', 'gl');
    check('q2', 'sh');
    expect(find('gpudojo-quiz-submit')!.disabled).toBe(false);
    view.dispose();
  });

  it('starts a retaken test from nothing when right answers are not kept', async () => {
    const { check, checked, find, view } = mount({ keepRightOnRetry: false });
    check('q1', 'global');
    check('q2', 'sh');
    find('gpudojo-quiz-submit')!.click();
    await flush();
    expect(find('gpudojo-quiz-retry')!.title).toMatch(/every question unanswered/);
    find('gpudojo-quiz-retry')!.click();
    await flush();
    expect(checked('q1')).toEqual([]);
    expect(checked('q2')).toEqual([]);
    view.dispose();
  });

  it('retries in the current order when the next attempt cannot be fetched', async () => {
    const nextAttempt = jest.fn(async (): Promise<QuizQuestionPublic[]> => {
      throw new Error('offline');
    });
    const { check, shown, checked, find, view } = mount({ nextAttempt });
    check('q1', 'global');
    check('q2', 'gl');
    find('gpudojo-quiz-submit')!.click();
    await flush();
    find('gpudojo-quiz-retry')!.click();
    await flush();
    expect(shown('q2')).toEqual(['sh', 'gl', 'wa']);
    expect(checked('q1')).toEqual(['global']);
    expect(find('gpudojo-quiz-submit')).not.toBeNull();
    view.dispose();
  });

  it('shows a result graded earlier against this attempt\'s order', () => {
    const lastResult = grade({ q1: ['local'], q2: ['sh', 'gl'] });
    const { shown, checked, view } = mount({ questions: NEXT, lastResult });
    expect(shown('q1')).toEqual(['global', 'local']);
    expect(checked('q1')).toEqual(['local']);
    const missed = view.node.querySelector('[data-qid="q1"] [data-choice-id="global"]')!;
    expect(missed.className).toContain('gpudojo-mod-missed');
    view.dispose();
  });
});
