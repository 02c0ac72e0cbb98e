/**
 * @jest-environment jsdom
 */
// jsdom has no DragEvent, which @lumino/dragdrop extends as it loads (the views are lumino widgets):
// set it before the imports below, which the CommonJS build runs in order.
(globalThis as unknown as { DragEvent: unknown }).DragEvent ??= class extends MouseEvent {};
import type { GpudojoClient } from '../../extension/src/api/client';
import type { LabRunRequest, LabSummary, ProfileDiff, ProfileSummary, Run, Trace } from '../../extension/src/api/types';
import { ComparePicker } from '../../extension/src/profile/comparePicker';
import { renderProfileDiff, traceName } from '../../extension/src/profile/diffView';
import { OpsTable } from '../../extension/src/profile/opsTable';
import { ProfileView } from '../../extension/src/profile/profileView';
import { RunProfileSection } from '../../extension/src/profile/runProfile';
import { StepChart } from '../../extension/src/profile/stepChart';
import { RunForm } from '../../extension/src/runs/runForm';
import { DDP_LAB, makeRun } from './runsFixtures';

// The icon comes from @jupyterlab/ui-components, an ES module jest does not load; the views only set it as a title icon.
jest.mock('../../extension/src/icons', () => ({ gpudojoIcon: undefined }));

const RUN = '20250101-120000-aaaaaa';

/** A CPU trace of a training loop with a single-worker DataLoader and .item() syncs, as the server summarises it. */
function cpuSummary(overrides: Partial<ProfileSummary> = {}): ProfileSummary {
  const step = (n: number, start: number) => ({
    step: n,
    start_us: start,
    dur_us: 100_000,
    breakdown: [
      { category: 'compute' as const, us: 52_000 },
      { category: 'data_loading' as const, us: 41_000 },
      { category: 'sync' as const, us: 2_000 },
      { category: 'idle' as const, us: 5_000 }
    ]
  });
  return {
    trace: { id: `run:${RUN}:rank0.trace.json`, source: 'profile/rank0.trace.json', run: RUN, rank: 0, size_bytes: 2_400_000, label: 'rank 0' },
    mode: {
      kind: 'cpu',
      label: 'CPU-only trace',
      shows: ['operator time', 'loader stalls', 'host syncs'],
      cannot_show: ['GPU kernels', 'host-device copies', 'NCCL']
    },
    ranks: [0],
    t_start_us: 1_000_000,
    t_end_us: 1_400_000,
    events: 18_250,
    steps: [step(1, 1_000_000), step(2, 1_100_000), step(3, 1_200_000)],
    step_source: 'profiler-steps',
    mean_step_us: 100_000,
    breakdown: [
      { category: 'compute', us: 52_000 },
      { category: 'data_loading', us: 41_000 },
      { category: 'sync', us: 2_000 },
      { category: 'idle', us: 5_000 }
    ],
    top_ops: [
      { name: 'aten::addmm', calls: 30, self_us: 40_000, total_us: 45_000, device_self_us: 0, device_total_us: 0, input_shapes: ['[[64], [64, 512], [512, 64]]'] },
      { name: 'aten::relu', calls: 90, self_us: 9_000, total_us: 9_000, device_self_us: 0, device_total_us: 0, input_shapes: [] },
      { name: 'aten::item', calls: 6, self_us: 6_000, total_us: 6_100, device_self_us: 0, device_total_us: 0, input_shapes: [] }
    ],
    kernels: [],
    launch: null,
    syncs: [{ op: 'aten::item', location: 'train.py:57', per_step: 2, total_us: 6_000 }],
    overlap: [],
    findings: [
      {
        id: 'data-loading',
        severity: 'high',
        title: 'data loading is 41% of the step',
        evidence: '41.0 ms of 100 ms per step waiting on the DataLoader (num_workers=0)',
        suggestion: 'num_workers=0: try workers and pin_memory'
      },
      {
        id: 'host-syncs',
        severity: 'medium',
        title: '2 host syncs per step at train.py:57 (.item())',
        evidence: 'aten::item twice per step',
        suggestion: 'keep the loss on the device and read it every N steps'
      }
    ],
    lanes: [{ id: 0, label: 'rank 0 · main thread', kind: 'thread', rank: 0, events: 18_000, max_depth: 4 }],
    hta: [],
    notes: ['No CUDA activity in the trace.'],
    analysis_ms: 412,
    cached: false,
    ...overrides
  };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

beforeAll(() => {
  // jsdom has no ResizeObserver; the timeline only needs to be constructible here.
  (globalThis as unknown as { ResizeObserver: unknown }).ResizeObserver = class {
    observe(): void {}
    disconnect(): void {}
  };
});

function fakeClient(summary: ProfileSummary, extra: Partial<Record<keyof GpudojoClient, unknown>> = {}): GpudojoClient {
  return {
    getProfileSummary: async () => summary,
    getProfileProgress: async () => ({ trace: summary.trace.id, phase: 'done', fraction: null, elapsed_ms: 0 }),
    getProfileWindow: async () => ({ t0_us: 0, t1_us: 1, px: 1, lanes: [] }),
    getProfileEvent: async () => {
      throw new Error('not asked here');
    },
    listTraces: async () => ({ traces: [] }),
    profileRawUrl: (trace: string) => `/gpudojo/api/profile/raw?trace=${encodeURIComponent(trace)}`,
    ...extra
  } as unknown as GpudojoClient;
}

describe('the profile view of a CPU trace', () => {
  async function open(summary = cpuSummary()): Promise<ProfileView> {
    const view = new ProfileView({
      trace: summary.trace.id,
      client: fakeClient(summary),
      candidates: async () => [],
      compare: () => undefined
    });
    await settle();
    return view;
  }

  it('says what a CPU-only trace cannot show and what it still shows', async () => {
    const view = await open();
    expect(view.node.getAttribute('data-state')).toBe('ready');
    expect(view.node.getAttribute('data-mode')).toBe('cpu');
    const banner = view.node.querySelector('.gpudojo-profile-banner')!;
    expect(banner.querySelector('.gpudojo-profile-cannot-show')?.textContent).toBe(
      'A CPU-only trace cannot show: GPU kernels; host-device copies; NCCL.'
    );
    expect(banner.querySelector('.gpudojo-profile-shows')?.textContent).toBe('It shows: operator time; loader stalls; host syncs.');
    expect(banner.querySelector('.gpudojo-profile-facts')?.textContent).toBe('18,250 events · 1 rank · 3 steps · mean step 100 ms');
    expect(view.title.label).toBe(`Profile: rank 0 · ${RUN}`);
  });

  it('labels every figure with its mode', async () => {
    const view = await open();
    const sections = Array.from(view.node.querySelectorAll('section.gpudojo-profile-section[data-mode]'));
    expect(sections.map(s => s.querySelector('h3')?.firstChild?.textContent)).toEqual([
      'Step time',
      'Findings',
      'Top operators',
      'Timeline'
    ]);
    for (const section of sections) {
      expect(section.querySelector('.gpudojo-profile-mode-badge')?.textContent).toBe('CPU-only trace');
    }
  });

  it('draws one stacked bar per step and the mean breakdown as a line', async () => {
    const view = await open();
    const bars = view.node.querySelectorAll('.gpudojo-profile-step');
    expect(bars).toHaveLength(3);
    expect(Array.from(bars[0].querySelectorAll('.gpudojo-profile-segment')).map(s => s.getAttribute('data-category'))).toEqual([
      'compute',
      'data_loading',
      'sync',
      'idle'
    ]);
    expect(view.node.querySelector('.gpudojo-profile-mean')?.textContent).toBe(
      'Mean step 100 ms: compute 52% · data loading 41% · idle 5% · sync 2%'
    );
  });

  it('lists the findings with their evidence and what to try', async () => {
    const view = await open();
    const finding = view.node.querySelector('.gpudojo-profile-finding[data-finding="data-loading"]')!;
    expect(finding.getAttribute('data-severity')).toBe('high');
    expect(finding.querySelector('.gpudojo-profile-finding-title')?.textContent).toBe('data loading is 41% of the step');
    expect(finding.querySelector('.gpudojo-profile-finding-suggestion')?.textContent).toBe(
      'Try: num_workers=0: try workers and pin_memory'
    );
  });

  it('shows host syncs with their location and no device columns on a CPU trace', async () => {
    const view = await open();
    const headers = Array.from(view.node.querySelectorAll('.gpudojo-profile-ops th')).map(th => th.textContent);
    expect(headers).toEqual(['Operator', 'Calls', 'Self', 'Total', 'Input shapes']);
    expect(view.node.querySelector('.gpudojo-profile-basis')).toBeNull();
    const sync = view.node.querySelector('.gpudojo-profile-syncs tr[data-op="aten::item"]')!;
    expect(Array.from(sync.querySelectorAll('td')).map(td => td.textContent)).toEqual(['aten::item', 'train.py:57', '2', '6.00 ms']);
  });

  it('links the raw trace for Perfetto UI or TensorBoard', async () => {
    const view = await open();
    const link = view.node.querySelector<HTMLAnchorElement>('.gpudojo-profile-download')!;
    expect(link.getAttribute('href')).toBe(`/gpudojo/api/profile/raw?trace=${encodeURIComponent(`run:${RUN}:rank0.trace.json`)}`);
    expect(link.title).toMatch(/ui\.perfetto\.dev/);
    expect(link.title).toMatch(/TensorBoard/);
    expect(link.getAttribute('download')).toBe('rank0.trace.json');
  });

  it('says why when the trace cannot be analysed', async () => {
    const view = new ProfileView({
      trace: 'file:notes.json',
      client: fakeClient(cpuSummary(), {
        getProfileSummary: async () => {
          throw new Error('notes.json is not a Chrome trace (no traceEvents)');
        }
      }),
      candidates: async () => [],
      compare: () => undefined
    });
    await settle();
    expect(view.node.getAttribute('data-state')).toBe('error');
    expect(view.node.querySelector('.gpudojo-error')?.textContent).toBe(
      'The trace could not be analysed: notes.json is not a Chrome trace (no traceEvents)'
    );
  });
});

describe('step chart', () => {
  it('hands the clicked step to the timeline and marks its bar', () => {
    const chosen: number[] = [];
    const chart = new StepChart({ summary: cpuSummary(), selected: step => chosen.push(step.step) });
    const bars = chart.node.querySelectorAll<HTMLButtonElement>('.gpudojo-profile-step');
    bars[1].click();
    expect(chosen).toEqual([2]);
    expect(Array.from(bars).map(b => b.getAttribute('aria-pressed'))).toEqual(['false', 'true', 'false']);
    chart.clearSelection();
    expect(bars[1].getAttribute('aria-pressed')).toBe('false');
  });
});

describe('top operator table on a GPU trace', () => {
  const rows = [
    { name: 'aten::mm', calls: 10, self_us: 500, total_us: 600, device_self_us: 9000, device_total_us: 9000, input_shapes: [] },
    { name: 'aten::add', calls: 30, self_us: 800, total_us: 800, device_self_us: 50, device_total_us: 50, input_shapes: [] }
  ];
  const names = (table: OpsTable) => Array.from(table.node.querySelectorAll('tbody tr')).map(tr => tr.getAttribute('data-op'));

  it('sorts by a clicked header, and by device time from the toggle', () => {
    const table = new OpsTable(rows, 'gpu');
    expect(names(table)).toEqual(['aten::add', 'aten::mm']);
    table.node.querySelector<HTMLButtonElement>('.gpudojo-profile-basis button[data-basis="device"]')!.click();
    expect(names(table)).toEqual(['aten::mm', 'aten::add']);
    expect(table.node.querySelector('table')?.getAttribute('data-sort')).toBe('device_self_us');
    const calls = () => table.node.querySelector<HTMLButtonElement>('th[data-key="calls"] button')!;
    calls().click();
    expect(names(table)).toEqual(['aten::add', 'aten::mm']);
    calls().click();
    expect(names(table)).toEqual(['aten::mm', 'aten::add']);
    expect(table.node.querySelector('th[data-key="calls"]')?.getAttribute('aria-sort')).toBe('ascending');
  });
});

describe('profile comparison', () => {
  const diff: ProfileDiff = {
    a: `run:${RUN}:rank0.trace.json`,
    b: 'file:after.json',
    a_mode: 'cpu',
    b_mode: 'cpu',
    step_a_us: 100_000,
    step_b_us: 62_500,
    speedup: 1.6,
    breakdown: [
      { key: 'compute', a_us: 52_000, b_us: 53_000, delta_us: 1000 },
      { key: 'data_loading', a_us: 41_000, b_us: 4_000, delta_us: -37_000 }
    ],
    ops: [{ name: 'enumerate(DataLoader)', a_self_us: 40_000, b_self_us: 3_000, delta_us: -37_000, a_calls: 1, b_calls: 1 }],
    findings_resolved: ['data-loading'],
    findings_new: [],
    a_run: null,
    b_run: null,
    changes: []
  };

  it('leads with the speed-up and marks each change’s direction', () => {
    const host = document.createElement('div');
    host.append(...renderProfileDiff(diff));
    expect(host.querySelector('.gpudojo-profile-diff-headline')?.textContent).toMatch(
      /^Step time 100 ms → 62\.5 ms: after is 1\.60× faster/
    );
    expect(host.querySelector('.gpudojo-profile-diff-runs')?.textContent).toContain('A trace file is no run');
    const loading = host.querySelector('.gpudojo-profile-diff-breakdown tr[data-key="data_loading"]')!;
    expect(loading.querySelector('td')?.textContent).toBe('data loading');
    expect(loading.querySelector('.gpudojo-profile-delta')?.getAttribute('data-sign')).toBe('-');
    expect(host.querySelector('.gpudojo-profile-diff-resolved li')?.textContent).toBe('data-loading');
    expect(host.querySelector('.gpudojo-profile-diff-new p')?.textContent).toBe('No new finding.');
  });

  it('names traces by run and file, or path', () => {
    expect(traceName(`run:${RUN}:rank0.trace.json`)).toBe(`${RUN} · rank0.trace.json`);
    expect(traceName(`run:${RUN}:*`)).toBe(`${RUN} (all ranks)`);
    expect(traceName('file:traces/a.json')).toBe('traces/a.json');
  });

  it('names what differs between the runs, and warns when before is the newer one', () => {
    const run = (id: string, created_at: number) => ({
      id,
      title: 'PyTorch on the GPU',
      lab: 'lab-02-pytorch-gpu',
      created_at,
      device_mode: 'cpu' as const
    });
    const host = document.createElement('div');
    host.append(
      ...renderProfileDiff({
        ...diff,
        a_run: run('newer', 200),
        b_run: run('older', 100),
        changes: [{ key: 'param:max_batch', label: 'max_batch', a: '8', b: '4' }]
      })
    );
    const runs = host.querySelector('.gpudojo-profile-diff-runs')!;
    expect(runs.querySelector('.gpudojo-profile-diff-runs-summary')?.textContent).toBe('What changed: max_batch 8 → 4.');
    expect(runs.querySelector('li[data-key="param:max_batch"]')?.textContent).toBe('max_batch: 8 → 4');
    expect(runs.querySelector('.gpudojo-profile-diff-newer-first')?.textContent).toContain('swap before and after');
    expect(runs.textContent).not.toContain('newer ·');
  });

  it('compares with a listed trace, or a typed path before it', async () => {
    const compared: string[] = [];
    const picker = new ComparePicker({
      trace: 'file:a.json',
      candidates: async () => [
        { id: 'file:a.json', label: 'this one' },
        { id: `run:${RUN}:*`, label: 'lab-02 · all ranks' }
      ],
      compare: (_a, b) => compared.push(b)
    });
    await settle();
    const select = picker.node.querySelector('select')!;
    const button = picker.node.querySelector<HTMLButtonElement>('.gpudojo-profile-compare')!;
    expect(Array.from(select.options).map(o => o.value)).toEqual(['', `run:${RUN}:*`]);
    expect(button.disabled).toBe(true);
    select.value = `run:${RUN}:*`;
    select.dispatchEvent(new Event('change'));
    button.click();
    const path = picker.node.querySelector<HTMLInputElement>('.gpudojo-profile-compare-path')!;
    path.value = 'traces/after.pt.trace.json';
    path.dispatchEvent(new Event('input'));
    button.click();
    expect(compared).toEqual([`run:${RUN}:*`, 'file:traces/after.pt.trace.json']);
  });

  it('puts the older run before whichever profile it is opened from, swaps, and lists a run that ended since', async () => {
    const OLD = `run:20250101-110000-oooooo:rank0.trace.json`;
    const NEW = `run:${RUN}:rank0.trace.json`;
    const LATER = `run:20250101-130000-llllll:rank0.trace.json`;
    const listed = [
      { id: OLD, label: 'lab-02 · 11:00:00 · rank 0', createdAt: 100 },
      { id: NEW, label: 'lab-02 · 12:00:00 · rank 0', createdAt: 200 }
    ];
    const compared: Array<[string, string]> = [];
    // Opened from the newer run's profile: the older one is still before.
    const picker = new ComparePicker({ trace: NEW, candidates: async () => [...listed], compare: (a, b) => compared.push([a, b]) });
    await settle();
    const select = picker.node.querySelector('select')!;
    select.value = OLD;
    select.dispatchEvent(new Event('change'));
    expect(picker.node.getAttribute('data-before')).toBe(OLD);
    expect(picker.node.getAttribute('data-after')).toBe(NEW);
    expect(picker.node.querySelector('.gpudojo-profile-compare-order-text')?.textContent).toBe(
      'Before: lab-02 · 11:00:00 · rank 0 → after: this trace'
    );
    picker.node.querySelector<HTMLButtonElement>('.gpudojo-profile-compare-swap')!.click();
    expect(picker.pair()).toEqual([NEW, OLD]);
    picker.node.querySelector<HTMLButtonElement>('.gpudojo-profile-compare')!.click();
    expect(compared).toEqual([[NEW, OLD]]);

    // A run that ended after the picker first listed: the pointer coming to the picker lists it.
    listed.push({ id: LATER, label: 'lab-02 · 13:00:00 · rank 0', createdAt: 300 });
    picker.node.querySelector('.gpudojo-profile-compare-row')!.dispatchEvent(new Event('pointerenter'));
    await settle();
    expect(Array.from(select.options).map(o => o.value)).toEqual(['', OLD, LATER]);
    expect(select.value).toBe(OLD);
    select.value = LATER;
    select.dispatchEvent(new Event('change'));
    expect(picker.pair()).toEqual([NEW, LATER]);
  });
});

describe('the run view’s Profile section', () => {
  const traces: Trace[] = [
    { id: `run:${RUN}:rank0.trace.json`, source: 'profile/rank0.trace.json', run: RUN, rank: 0, size_bytes: 2048, label: 'rank 0' },
    { id: `run:${RUN}:*`, source: 'profile/', run: RUN, rank: null, size_bytes: 4096, label: 'all 2 ranks' },
    { id: `run:${RUN}:rank1.trace.json`, source: 'profile/rank1.trace.json', run: RUN, rank: 1, size_bytes: 2048, label: 'rank 1' }
  ];
  const PREVIOUS = '20241231-120000-pppppp';

  it('stays out of a run that neither recorded a profile nor has a trace', async () => {
    const section = new RunProfileSection({
      client: fakeClient(cpuSummary()),
      openTrace: () => undefined,
      compare: () => undefined
    });
    section.update(makeRun({ status: 'succeeded' }));
    await settle();
    expect(section.node.hidden).toBe(true);
  });

  it('lists the traces, all ranks first, and compares with the previous run of the lab', async () => {
    const opened: string[] = [];
    const compared: Array<[string, string]> = [];
    const run = makeRun({ id: RUN, status: 'succeeded', created_at: 200, record_profile: true } as Partial<Run>);
    const previous = makeRun({ id: PREVIOUS, status: 'succeeded', created_at: 100, record_profile: true } as Partial<Run>);
    const client = fakeClient(cpuSummary(), {
      listTraces: async (id: string) => ({
        traces: id === RUN ? traces : traces.map(t => ({ ...t, id: t.id.replace(RUN, PREVIOUS), run: PREVIOUS }))
      }),
      listRuns: async () => ({ runs: [run, previous] })
    });
    const listed: string[] = [];
    const section = new RunProfileSection({
      client,
      openTrace: trace => opened.push(trace),
      compare: (a, b) => compared.push([a, b]),
      listed: (ended, found) => listed.push(`${ended.id}: ${found.length}`)
    });
    section.update(run);
    await settle();
    await settle();
    expect(section.node.hidden).toBe(false);
    const items = Array.from(section.node.querySelectorAll('.gpudojo-profile-traces li'));
    expect(items.map(li => li.getAttribute('data-trace'))).toEqual([
      `run:${RUN}:*`,
      `run:${RUN}:rank0.trace.json`,
      `run:${RUN}:rank1.trace.json`
    ]);
    items[0].querySelector<HTMLButtonElement>('.gpudojo-profile-trace-open')!.click();
    expect(opened).toEqual([`run:${RUN}:*`]);
    section.node.querySelector<HTMLButtonElement>('.gpudojo-profile-compare-previous')!.click();
    expect(compared).toEqual([[`run:${PREVIOUS}:*`, `run:${RUN}:*`]]);
    // The ended run's traces are announced, so open compare pickers list them.
    expect(listed).toEqual([`${RUN}: 3`]);
  });

  it('says why a run that asked for a profile has none', async () => {
    const section = new RunProfileSection({
      client: fakeClient(cpuSummary()),
      openTrace: () => undefined,
      compare: () => undefined
    });
    section.update(makeRun({ status: 'failed', record_profile: true } as Partial<Run>));
    await settle();
    expect(section.node.hidden).toBe(false);
    expect(section.node.querySelector('.gpudojo-profile-traces-message')?.textContent).toMatch(/wrote no trace/);
  });
});

describe('"Record profile" in the run form', () => {
  it('is offered for a lab that records profiles, and sends record_profile when ticked', async () => {
    const sent: LabRunRequest[] = [];
    const lab: LabSummary = { ...DDP_LAB, records: ['memory', 'profile'] };
    const form = new RunForm({
      lab,
      start: async request => {
        sent.push(request);
        return [makeRun()];
      }
    });
    const box = form.node.querySelector<HTMLInputElement>('input[name="record_profile"]')!;
    expect(box.closest('.gpudojo-run-record-profile-toggle')).not.toBeNull();
    box.checked = true;
    await form.submit();
    expect(sent[0]).toMatchObject({ kind: 'lab', lab: 'lab-03-ddp', record_profile: true });
    expect(sent[0]).not.toHaveProperty('record_memory');
  });

  it('is not offered for a lab whose script records no profile', () => {
    const form = new RunForm({ lab: DDP_LAB, start: async () => [] });
    expect(form.node.querySelector('input[name="record_profile"]')).toBeNull();
    expect(form.node.querySelector('input[name="record_memory"]')).not.toBeNull();
  });
});
