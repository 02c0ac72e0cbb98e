import { Stream } from '@lumino/signaling';
import type { Catalog, KernelExamples } from '../../extension/src/api/types';
import { courseProgress, coursePath, doneText, nextStep, quizPassed } from '../../extension/src/course/journey';
import { CourseModel, ProgressChange } from '../../extension/src/course/model';
import {
  EventEmission,
  PROGRESS_EVENT_SCHEMA_ID,
  followProgressEvents
} from '../../extension/src/course/progressEvents';
import { catalog, item } from './courseFixtures';

/** A catalog source that answers with whatever the server has now. */
class ServerCourse {
  calls = 0;
  now: Catalog = catalog();
  getCatalog(): Promise<Catalog> {
    this.calls++;
    return Promise.resolve(structuredClone(this.now));
  }
  getKernelExamples(): Promise<KernelExamples> {
    return Promise.resolve({ examples: [], problems: [] });
  }
}

const flush = async () => {
  for (let i = 0; i < 5; i++) {
    await new Promise(resolve => setTimeout(resolve, 0));
  }
};

/** A small course: two lessons, a lab and an exercise after lesson 1, a lab no lesson names. */
function course(done: string[] = [], started: string[] = []): Catalog {
  const status = (id: string) => (done.includes(id) ? 'completed' : started.includes(id) ? 'in_progress' : 'not_started');
  return catalog({
    lessons: [item('lesson', 'intro', 1, status('intro')), item('lesson', 'cuda', 2, status('cuda'))],
    labs: [
      item('lab', 'lab-late', 9, status('lab-late')),
      item('lab', 'lab-1', 1, status('lab-1'), { lesson: 'intro' })
    ],
    exercises: [item('exercise', 'ex-1', 1, status('ex-1'), { lesson: 'intro' })],
    module_test: {
      title: 'Module test',
      questions: 25,
      pass_score: 20,
      attempts: 0,
      last: null,
      best: null,
      passed: false
    }
  });
}

describe('live progress from the server’s events', () => {
  it('reloads the catalog when the server says a lab was completed, without a poll', async () => {
    const server = new ServerCourse();
    server.now = course();
    const model = new CourseModel(server);
    await model.refresh();
    const stream = new Stream<unknown, EventEmission>({});
    const following = followProgressEvents(stream, model);
    const changes: ProgressChange[] = [];
    model.progressChanged.connect((_, change) => changes.push(change));

    // A lab run passed its checks on the server: the store was written, the event emitted.
    server.now = course(['lab-1']);
    stream.emit({ schema_id: PROGRESS_EVENT_SCHEMA_ID, kind: 'lab', id: 'lab-1', status: 'completed' });
    await flush();
    expect(model.item('lab', 'lab-1')?.progress.status).toBe('completed');
    expect(changes).toEqual([{ kind: 'lab', id: 'lab-1', entry: null }]);
    expect(server.calls).toBe(2);

    // Other events of the bus (contents saved, kernels) are none of the course's business.
    stream.emit({ schema_id: 'https://events.jupyter.org/jupyter_server/contents_service/v1', action: 'save' });
    await flush();
    expect(server.calls).toBe(2);

    // A module test attempt reloads too; after dispose nothing does.
    stream.emit({ schema_id: PROGRESS_EVENT_SCHEMA_ID, kind: 'module-test', id: 'module-test', score: 20, total: 25 });
    await flush();
    expect(server.calls).toBe(3);
    following.dispose();
    stream.emit({ schema_id: PROGRESS_EVENT_SCHEMA_ID, kind: 'lesson', id: 'intro', status: 'completed' });
    await flush();
    expect(server.calls).toBe(3);
  });
});

describe('the course as one path', () => {
  it('counts what is done per kind and in all', () => {
    const progress = courseProgress(course(['intro', 'lab-1']));
    expect(progress.lesson).toEqual({ done: 1, total: 2 });
    expect(progress.lab).toEqual({ done: 1, total: 2 });
    expect(progress.exercise).toEqual({ done: 0, total: 1 });
    expect(doneText(progress.all)).toBe('2 of 5 done');
    expect(progress.moduleTest).toEqual({ available: true, passed: false, attempts: 0 });
  });

  it('puts each lab and exercise after the first lesson that names it, the rest at the end', () => {
    const stages = coursePath(course());
    expect(stages.map(s => [s.lesson?.id ?? null, s.items.map(i => i.id)])).toEqual([
      ['intro', ['lab-1', 'ex-1']],
      ['cuda', []],
      [null, ['lab-late']]
    ]);
  });

  it('names the next step in words, with its button', () => {
    expect(nextStep(course())).toMatchObject({
      kind: 'lesson',
      id: 'intro',
      text: 'Lesson 1: Title of intro',
      why: 'where the course starts',
      action: 'Open the lesson'
    });
    expect(nextStep(course(['intro']))).toMatchObject({ kind: 'lab', id: 'lab-1', text: 'Lab 1: Title of lab-1', action: 'Open the lab' });
    expect(nextStep(course(['intro', 'lab-1'], ['ex-1']))).toMatchObject({
      kind: 'exercise',
      action: 'Continue the exercise',
      why: 'continue where you left off'
    });
    const all = ['intro', 'cuda', 'lab-1', 'lab-late', 'ex-1'];
    expect(nextStep(course(all))).toMatchObject({ kind: 'module-test', action: 'Take the test' });
    const finished = course(all);
    finished.module_test!.passed = true;
    expect(nextStep(finished).kind).toBe('done');
  });
});

describe('the end of a lesson', () => {
  it('offers Mark complete once the quiz passes (4 of 5 or better)', () => {
    expect(quizPassed({ score: 5, total: 5 })).toBe(true);
    expect(quizPassed({ score: 4, total: 5 })).toBe(true);
    expect(quizPassed({ score: 3, total: 5 })).toBe(false);
    expect(quizPassed(null)).toBe(false);
  });
});
