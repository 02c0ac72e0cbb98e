import type { QuizQuestionPublic, QuizResult } from '../../extension/src/api/types';
import { QuizState } from '../../extension/src/course/quizState';
import { QUESTIONS } from './courseFixtures';

/** q1 right (chose 'global'), q2 wrong (chose shared and warp, the answer is shared and global). */
const GRADED: QuizResult = {
  score: 1,
  total: 2,
  results: [
    {
      id: 'q1',
      correct: true,
      chosen: ['global'],
      correct_choices: ['global'],
      explanations: { local: 'per block', global: 'grid-wide' }
    },
    {
      id: 'q2',
      correct: false,
      chosen: ['sh', 'wa'],
      correct_choices: ['sh', 'gl'],
      explanations: { sh: 'per block', gl: 'device-wide', wa: 'not memory' }
    }
  ]
};

/** The same questions as the server serves them for another attempt: choices in another order. */
const RESHUFFLED: QuizQuestionPublic[] = QUESTIONS.map(q => ({ ...q, choices: [...q.choices].reverse() }));

function answered(): QuizState {
  const quiz = new QuizState(QUESTIONS);
  quiz.choose('q1', 'global');
  quiz.choose('q2', 'sh');
  quiz.choose('q2', 'wa');
  quiz.applyResult(GRADED);
  return quiz;
}

describe('QuizState', () => {
  it('cannot be submitted until every question has an answer', () => {
    const quiz = new QuizState(QUESTIONS);
    expect(quiz.canSubmit).toBe(false);
    quiz.choose('q1', 'global');
    expect(quiz.canSubmit).toBe(false);
    quiz.choose('q2', 'sh');
    expect(quiz.canSubmit).toBe(true);
  });

  it('keeps only the last choice of a single-choice question', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.choose('q1', 'local');
    quiz.choose('q1', 'global');
    expect(quiz.selected('q1')).toEqual(['global']);
  });

  it('collects and removes choices of a multiple-choice question, in the order shown', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.choose('q2', 'wa');
    quiz.choose('q2', 'sh');
    quiz.choose('q2', 'gl');
    quiz.choose('q2', 'wa', false);
    expect(quiz.selected('q2')).toEqual(['sh', 'gl']);
    quiz.choose('q2', 'sh', false);
    quiz.choose('q2', 'gl', false);
    expect(quiz.canSubmit).toBe(false);
  });

  it('ignores unknown questions and choices the question does not have', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.choose('nope', 'local');
    quiz.choose('q1', 'sh');
    quiz.choose('q1', '0');
    expect(quiz.answers()).toEqual({ q1: [], q2: [] });
  });

  it('sends chosen choice ids per question id, never positions', () => {
    const quiz = new QuizState(RESHUFFLED);
    quiz.choose('q1', 'global');
    quiz.choose('q2', 'gl');
    quiz.choose('q2', 'sh');
    expect(quiz.answers()).toEqual({ q1: ['global'], q2: ['gl', 'sh'] });
  });

  it('shows a graded result: outcome and explanation of every choice, and freezes the answers', () => {
    const quiz = answered();
    expect(quiz.canSubmit).toBe(false);
    expect(quiz.selected('q2')).toEqual(['sh', 'wa']);
    expect(quiz.questionResult('q1')?.correct).toBe(true);
    expect(quiz.outcome('q1', 'global')).toBe('correct');
    expect(quiz.outcome('q1', 'local')).toBe('neutral');
    expect(quiz.outcome('q2', 'sh')).toBe('correct');
    expect(quiz.outcome('q2', 'gl')).toBe('missed');
    expect(quiz.outcome('q2', 'wa')).toBe('wrong');
    expect(quiz.explanation('q2', 'wa')).toBe('not memory');
    quiz.choose('q1', 'local');
    expect(quiz.selected('q1')).toEqual(['global']);
  });

  it('keeps the answers that were right on a retry and clears the wrong ones', () => {
    const quiz = answered();
    quiz.retry();
    expect(quiz.result).toBeNull();
    expect(quiz.selected('q1')).toEqual(['global']);
    expect(quiz.selected('q2')).toEqual([]);
    expect(quiz.outcome('q1', 'global')).toBe('neutral');
    expect(quiz.canSubmit).toBe(false);
    quiz.choose('q2', 'gl');
    expect(quiz.canSubmit).toBe(true);
  });

  it('takes the next attempt in its new order, the kept answers following their choices', () => {
    const quiz = answered();
    quiz.retry({ questions: RESHUFFLED });
    expect(quiz.questions[1].choices.map(c => c.id)).toEqual(['wa', 'gl', 'sh']);
    expect(quiz.selected('q1')).toEqual(['global']);
    quiz.choose('q2', 'sh');
    quiz.choose('q2', 'gl');
    expect(quiz.answers()).toEqual({ q1: ['global'], q2: ['gl', 'sh'] });
  });

  it('starts a right question afresh when its chosen choice is no longer served', () => {
    const quiz = answered();
    const reworded = { id: 'global2', text: 'blockIdx.x * blockDim.x + threadIdx.x' };
    const edited = [{ ...QUESTIONS[0], choices: [reworded, QUESTIONS[0].choices[0]] }, QUESTIONS[1]];
    quiz.retry({ questions: edited });
    expect(quiz.selected('q1')).toEqual([]);
  });

  it('clears every answer on a retry that keeps nothing (a retaken test)', () => {
    const quiz = answered();
    quiz.retry({ questions: RESHUFFLED, keepRight: false });
    expect(quiz.answers()).toEqual({ q1: [], q2: [] });
  });

  it('cannot submit a quiz without questions', () => {
    expect(new QuizState([]).canSubmit).toBe(false);
  });
});
