import {
  formatMinutes,
  groupCatalog,
  needsTag,
  progressMark
} from '../../extension/src/course/catalog';
import { catalog, item } from './courseFixtures';

describe('groupCatalog', () => {
  it('lists lessons by order and leaves out empty labs and exercises', () => {
    const groups = groupCatalog(
      catalog({ lessons: [item('lesson', 'b', 2), item('lesson', 'a', 1), item('lesson', 'c', 10)] })
    );
    expect(groups.map(g => g.label)).toEqual(['Lessons']);
    expect(groups[0].items.map(i => i.id)).toEqual(['a', 'b', 'c']);
  });

  it('adds labs, then exercises, when they have items', () => {
    const groups = groupCatalog(
      catalog({
        lessons: [item('lesson', 'a', 1)],
        labs: [item('lab', 'l2', 2), item('lab', 'l1', 1)],
        exercises: [item('exercise', 'e1', 1)]
      })
    );
    expect(groups.map(g => g.kind)).toEqual(['lesson', 'lab', 'exercise']);
    expect(groups[1].items.map(i => i.id)).toEqual(['l1', 'l2']);
  });

  it('keeps an empty lessons group so the section can say there are none', () => {
    expect(groupCatalog(catalog())).toEqual([{ kind: 'lesson', label: 'Lessons', items: [] }]);
  });

  it('does not reorder the catalog it was given', () => {
    const lessons = [item('lesson', 'b', 2), item('lesson', 'a', 1)];
    groupCatalog(catalog({ lessons }));
    expect(lessons.map(i => i.id)).toEqual(['b', 'a']);
  });
});

describe('progressMark', () => {
  it('draws not started as an empty circle, in progress as half, completed as a check', () => {
    expect(progressMark('not_started')).toEqual({ label: 'Not started', shape: 'empty' });
    expect(progressMark('in_progress')).toEqual({ label: 'In progress', shape: 'half' });
    expect(progressMark('completed')).toEqual({ label: 'Completed', shape: 'check' });
  });

  it('reads an unknown status as not started', () => {
    expect(progressMark('archived').shape).toBe('empty');
    expect(progressMark(undefined).shape).toBe('empty');
  });
});

describe('needsTag', () => {
  it('shows nothing for a CPU item', () => {
    expect(needsTag('cpu', 'anything')).toBeNull();
  });

  it('names the CPU path in the tooltip of a GPU item', () => {
    expect(needsTag('gpu', 'Run kernels in the numba simulator.')).toEqual({
      text: 'GPU',
      tooltip: 'Needs a GPU. Without one: Run kernels in the numba simulator.'
    });
  });

  it('tags multi-GPU items and works without a CPU path', () => {
    expect(needsTag('multi-gpu', null)).toEqual({ text: 'multi-GPU', tooltip: 'Needs several GPUs.' });
    expect(needsTag('multi-gpu', 'gloo on CPU')?.tooltip).toBe(
      'Needs several GPUs. Without them: gloo on CPU'
    );
  });
});

describe('formatMinutes', () => {
  it('writes minutes as "N min" and nothing when unknown', () => {
    expect(formatMinutes(45)).toBe('45 min');
    expect(formatMinutes(240)).toBe('240 min');
    expect(formatMinutes(0)).toBe('');
    expect(formatMinutes(NaN)).toBe('');
  });
});
