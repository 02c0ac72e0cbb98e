import type { Catalog, KernelExamples } from '../../extension/src/api/types';
import { CourseModel, ProgressChange } from '../../extension/src/course/model';
import { catalog, item } from './courseFixtures';
import { labExamples } from './kernelsFixtures';

/** A catalog source whose catalog answers the test releases one by one (examples answer at once). */
class FakeSource {
  calls = 0;
  next: Catalog | Error = catalog();
  exampleCalls = 0;
  nextExamples: KernelExamples | Error = { examples: [], problems: [] };
  private _waiting: Array<() => void> = [];
  hold = false;

  getCatalog(): Promise<Catalog> {
    this.calls++;
    const answer = this.next;
    const settle = (resolve: (c: Catalog) => void, reject: (e: Error) => void) =>
      answer instanceof Error ? reject(answer) : resolve(structuredClone(answer));
    if (!this.hold) {
      return new Promise(settle);
    }
    return new Promise((resolve, reject) => this._waiting.push(() => settle(resolve, reject)));
  }

  getKernelExamples(): Promise<KernelExamples> {
    this.exampleCalls++;
    const answer = this.nextExamples;
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(structuredClone(answer));
  }

  release(): void {
    this._waiting.shift()?.();
  }
}

const flush = () => new Promise(resolve => setTimeout(resolve, 0));

describe('CourseModel', () => {
  it('loads the catalog and finds items by kind and id', async () => {
    const source = new FakeSource();
    source.next = catalog({ lessons: [item('lesson', 'intro', 1)], labs: [item('lab', 'lab-1', 1)] });
    const model = new CourseModel(source);
    let changes = 0;
    model.changed.connect(() => changes++);
    await model.refresh();
    expect(model.catalog?.lessons.map(l => l.id)).toEqual(['intro']);
    expect(model.item('lab', 'lab-1')?.kind).toBe('lab');
    expect(model.item('lesson', 'missing')).toBeNull();
    expect(model.loading).toBe(false);
    expect(changes).toBeGreaterThanOrEqual(2);
  });

  it('keeps the last catalog and reports the error when a reload fails', async () => {
    const source = new FakeSource();
    source.next = catalog({ lessons: [item('lesson', 'intro', 1)] });
    const model = new CourseModel(source);
    await model.refresh();
    source.next = new Error('Cannot reach the Jupyter server');
    await model.refresh();
    expect(model.error).toBe('Cannot reach the Jupyter server');
    expect(model.catalog?.lessons).toHaveLength(1);
    source.next = catalog();
    await model.refresh();
    expect(model.error).toBeNull();
  });

  it('applies a progress change at once, tells listeners, then reloads', async () => {
    const source = new FakeSource();
    source.next = catalog({ lessons: [item('lesson', 'intro', 1)] });
    const model = new CourseModel(source);
    await model.refresh();
    const seen: ProgressChange[] = [];
    model.progressChanged.connect((_, change) => seen.push(change));
    source.hold = true;
    source.next = catalog({ lessons: [item('lesson', 'intro', 1, 'completed')] });
    const done = model.noteProgress('lesson', 'intro', {
      kind: 'lesson',
      id: 'intro',
      status: 'completed',
      updated_at: null,
      completed_at: null,
      quiz_score: null,
      quiz_total: null
    });
    expect(model.item('lesson', 'intro')?.progress.status).toBe('completed');
    expect(seen.map(c => [c.kind, c.id, c.entry?.status])).toEqual([['lesson', 'intro', 'completed']]);
    expect(model.loading).toBe(true);
    source.release();
    await done;
    expect(source.calls).toBe(2);
    expect(model.item('lesson', 'intro')?.progress.status).toBe('completed');
  });

  it('reloads once more when asked during a load, so the newest progress is not missed', async () => {
    const source = new FakeSource();
    source.hold = true;
    const model = new CourseModel(source);
    const first = model.refresh();
    const second = model.refresh();
    const third = model.refresh();
    source.next = catalog({ lessons: [item('lesson', 'intro', 1, 'in_progress')] });
    source.release();
    await flush();
    source.release();
    await Promise.all([first, second, third]);
    expect(source.calls).toBe(2);
    expect(model.item('lesson', 'intro')?.progress.status).toBe('in_progress');
  });

  it('knows which labs have kernel examples, asking once per load for all labs', async () => {
    const source = new FakeSource();
    source.next = catalog({ labs: [item('lab', 'lab-01-cuda-hello', 1), item('lab', 'lab-02-memory', 2)] });
    source.nextExamples = labExamples();
    const model = new CourseModel(source);
    await model.refresh();
    expect(source.exampleCalls).toBe(1);
    expect(model.hasKernelExamples('lab-01-cuda-hello')).toBe(true);
    // lab-02's only [[kernels]] entry has a problem: nothing to open.
    expect(model.hasKernelExamples('lab-02-memory')).toBe(false);
    await model.refresh();
    expect(source.exampleCalls).toBe(2);
  });

  it('keeps the course, and the labs known before, when the examples cannot be loaded', async () => {
    const source = new FakeSource();
    source.next = catalog({ labs: [item('lab', 'lab-01-cuda-hello', 1)] });
    source.nextExamples = labExamples();
    const model = new CourseModel(source);
    await model.refresh();
    source.nextExamples = new Error('Cannot reach the Jupyter server');
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      await model.refresh();
    } finally {
      warn.mockRestore();
    }
    expect(model.error).toBeNull();
    expect(model.catalog?.labs).toHaveLength(1);
    expect(model.hasKernelExamples('lab-01-cuda-hello')).toBe(true);
  });
});
