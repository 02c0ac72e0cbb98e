import { QuizState } from '../../extension/src/course/quizState';
import { QUESTIONS } from './courseFixtures';

describe('QuizState', () => {
  it('cannot be submitted until every question has an answer', () => {
    const quiz = new QuizState(QUESTIONS);
    expect(quiz.canSubmit).toBe(false);
    quiz.choose('q1', 1);
    expect(quiz.canSubmit).toBe(false);
    quiz.choose('q2', 0);
    expect(quiz.canSubmit).toBe(true);
  });

  it('keeps only the last choice of a single-choice question', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.choose('q1', 0);
    quiz.choose('q1', 1);
    expect(quiz.selected('q1')).toEqual([1]);
  });

  it('collects and removes choices of a multiple-choice question, sorted', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.choose('q2', 2);
    quiz.choose('q2', 0);
    quiz.choose('q2', 1);
    quiz.choose('q2', 2, false);
    expect(quiz.selected('q2')).toEqual([0, 1]);
    quiz.choose('q2', 0, false);
    quiz.choose('q2', 1, false);
    expect(quiz.canSubmit).toBe(false);
  });

  it('ignores unknown questions and choices out of range', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.choose('nope', 0);
    quiz.choose('q1', 5);
    quiz.choose('q1', -1);
    expect(quiz.answers()).toEqual({ q1: [], q2: [] });
  });

  it('sends chosen indexes per question id', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.choose('q1', 1);
    quiz.choose('q2', 1);
    quiz.choose('q2', 0);
    expect(quiz.answers()).toEqual({ q1: [1], q2: [0, 1] });
  });

  it('shows a graded result: outcome and explanation of every choice, and freezes the answers', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.applyResult({
      score: 1,
      total: 2,
      results: [
        { id: 'q1', correct: true, chosen: [1], correct_choices: [1], explanations: ['local', 'global'] },
        {
          id: 'q2',
          correct: false,
          chosen: [0, 2],
          correct_choices: [0, 1],
          explanations: ['per block', 'device-wide', 'not memory']
        }
      ]
    });
    expect(quiz.canSubmit).toBe(false);
    expect(quiz.selected('q2')).toEqual([0, 2]);
    expect(quiz.questionResult('q1')?.correct).toBe(true);
    expect(quiz.outcome('q1', 1)).toBe('correct');
    expect(quiz.outcome('q1', 0)).toBe('neutral');
    expect(quiz.outcome('q2', 0)).toBe('correct');
    expect(quiz.outcome('q2', 1)).toBe('missed');
    expect(quiz.outcome('q2', 2)).toBe('wrong');
    expect(quiz.explanation('q2', 2)).toBe('not memory');
    quiz.choose('q1', 0);
    expect(quiz.selected('q1')).toEqual([1]);
  });

  it('starts over on reset: no result, nothing chosen', () => {
    const quiz = new QuizState(QUESTIONS);
    quiz.choose('q1', 0);
    quiz.applyResult({ score: 0, total: 2, results: [] });
    quiz.reset();
    expect(quiz.result).toBeNull();
    expect(quiz.selected('q1')).toEqual([]);
    expect(quiz.outcome('q1', 0)).toBe('neutral');
    quiz.choose('q1', 0);
    quiz.choose('q2', 2);
    expect(quiz.canSubmit).toBe(true);
  });

  it('cannot submit a quiz without questions', () => {
    expect(new QuizState([]).canSubmit).toBe(false);
  });
});
