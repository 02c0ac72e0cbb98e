/**
 * @jest-environment jsdom
 */
// jsdom has no DragEvent, which @lumino/dragdrop extends as it loads (the views are lumino widgets):
// set it before the imports below, which the CommonJS build runs in order.
(globalThis as unknown as { DragEvent: unknown }).DragEvent ??= class extends MouseEvent {};
import { Widget } from '@lumino/widgets';
import type { RunFilters } from '../../extension/src/api/client';
import type { RunList } from '../../extension/src/api/types';
import { emptyRunsState } from '../../extension/src/runs/format';
import { LabCatalog } from '../../extension/src/runs/labCatalog';
import { RunsList } from '../../extension/src/runs/runsList';
import { RunsListModel } from '../../extension/src/runs/runsListModel';
import { DDP_LAB, makeRun } from './runsFixtures';

const HELLO_LAB = { ...DDP_LAB, id: 'lab-01-cuda-hello', title: 'CUDA hello world and device introspection' };
const LABS = [HELLO_LAB, DDP_LAB];

describe('emptyRunsState', () => {
  it("offers the first lab's run form when there are no runs at all", () => {
    const state = emptyRunsState({ lab: '', status: '' }, LABS);
    expect(state.filtered).toBe(false);
    expect(state.text).toBe('No runs yet:');
    expect(state.action).toMatchObject({
      kind: 'run-lab',
      lab: 'lab-01-cuda-hello',
      label: 'Run the first lab…'
    });
    expect(state.action?.title).toContain('“CUDA hello world and device introspection”');
  });

  it('says where runs come from while the labs are not known yet', () => {
    const state = emptyRunsState({ lab: '', status: '' }, []);
    expect(state.text).toBe(
      'No runs yet. Press Run on a lab in the Course section, or right-click a .py file: Run with torchrun…'
    );
    expect(state.action).toBeNull();
  });

  it('names the filters that hide every run and offers to show them all', () => {
    expect(emptyRunsState({ lab: 'lab-03-ddp', status: 'failed' }, LABS)).toMatchObject({
      filtered: true,
      text: 'No failed runs of Multi-GPU training with DDP.',
      action: { kind: 'clear-filters', label: 'Show all runs' }
    });
    expect(emptyRunsState({ lab: '', status: 'timed_out' }, LABS).text).toBe('No timed out runs.');
    expect(emptyRunsState({ lab: 'lab-99-gone', status: '' }, LABS).text).toBe('No runs of lab-99-gone.');
  });
});

describe('RunsList with no runs', () => {
  // jsdom's page is hidden, and the list's poll stands by while the page is hidden: show the page.
  beforeAll(() => {
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => false });
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' });
  });

  /** A server with `runs`; it answers a status filter as the server does. */
  function serve(runs = [makeRun({ status: 'succeeded' })]) {
    const asked: RunFilters[] = [];
    const source = {
      listRuns: async (filters: RunFilters): Promise<RunList> => {
        asked.push(filters);
        return { runs: runs.filter(r => !filters.status || r.status === filters.status) } as RunList;
      }
    };
    return { source, asked };
  }

  /** Resolves after the model's next load (its rows or its error) is out and its poll has settled. */
  function loaded(model: RunsListModel): Promise<void> {
    return new Promise(resolve => {
      const once = () => {
        model.changed.disconnect(once);
        setTimeout(resolve, 0);
      };
      model.changed.connect(once);
    });
  }

  async function mount(runs = [makeRun({ status: 'succeeded' })]) {
    const { source, asked } = serve(runs);
    const model = new RunsListModel(source);
    const labs = new LabCatalog({ getLabs: async () => ({ labs: LABS, problems: [] }) });
    await labs.ensure();
    const started: string[] = [];
    const list = new RunsList({ model, labs, openRun: () => undefined, runLab: lab => started.push(lab) });
    const first = loaded(model);
    Widget.attach(list, document.body); // attaching starts the list's poll: the first load at once
    await first;
    return { list, model, asked, started };
  }

  afterEach(() => {
    document.body.textContent = '';
  });

  it("says so in one line whose button opens the first lab's run form", async () => {
    const { list, model, started } = await mount([]);
    const empty = list.node.querySelector('.gpudojo-runs-empty')!;
    expect(empty.textContent).toBe('No runs yet: Run the first lab…');
    empty.querySelector<HTMLButtonElement>('.gpudojo-runs-empty-action')!.click();
    expect(started).toEqual(['lab-01-cuda-hello']);
    expect(list.node.querySelector('.gpudojo-runs-none-match')).toBeNull();
    model.dispose();
    list.dispose();
  });

  it('names a filter that hides every run, and Show all runs clears it', async () => {
    const { list, model, asked } = await mount();
    expect(list.node.querySelectorAll('.gpudojo-run-row')).toHaveLength(1);
    const status = list.node.querySelector<HTMLSelectElement>('.gpudojo-runs-filter-status')!;
    status.value = 'failed';
    let reloaded = loaded(model);
    status.dispatchEvent(new Event('change'));
    await reloaded;
    const none = list.node.querySelector('.gpudojo-runs-none-match')!;
    expect(none.textContent).toBe('No failed runs. Show all runs');
    // Not the "no runs yet" line: the sidebar keeps the filters in view for it.
    expect(list.node.querySelector('.gpudojo-runs-empty')).toBeNull();
    reloaded = loaded(model);
    none.querySelector<HTMLButtonElement>('.gpudojo-runs-empty-action')!.click();
    await reloaded;
    expect(status.value).toBe('');
    expect(model.filter).toEqual({ lab: '', status: '' });
    expect(asked[asked.length - 1]).toEqual({ limit: 100 });
    expect(list.node.querySelectorAll('.gpudojo-run-row')).toHaveLength(1);
    model.dispose();
    list.dispose();
  });
});
