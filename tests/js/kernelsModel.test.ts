import type {
  ArchList,
  CompileRequest,
  CompileResult,
  OccupancyReport,
  OccupancyRequest,
  RunRequest,
  RunResult
} from '../../extension/src/api/types';
import type { Timers } from '../../extension/src/kernels/latest';
import { KernelSource, PlaygroundChange, PlaygroundModel } from '../../extension/src/kernels/model';
import { NUMBA_STARTER } from '../../extension/src/kernels/starters';
import { exampleState } from '../../extension/src/kernels/examples';
import { archList, compiled, example, kernel, occupancyAt, occupancyReport, simulatorRun } from './kernelsFixtures';

interface Pending<Req, Res> {
  request: Req;
  signal?: AbortSignal;
  resolve(value: Res): void;
  reject(error: Error): void;
}

/** A kernels API whose answers the test gives, in any order. */
class FakeKernels implements KernelSource {
  archs: ArchList = archList();
  compiles: Array<Pending<CompileRequest, CompileResult>> = [];
  occupancies: Array<Pending<OccupancyRequest, OccupancyReport>> = [];
  runs: Array<Pending<RunRequest, RunResult>> = [];

  getKernelArchs(): Promise<ArchList> {
    return Promise.resolve(this.archs);
  }

  compileKernel(request: CompileRequest, signal?: AbortSignal): Promise<CompileResult> {
    return new Promise((resolve, reject) => this.compiles.push({ request, signal, resolve, reject }));
  }

  kernelOccupancy(request: OccupancyRequest, signal?: AbortSignal): Promise<OccupancyReport> {
    return new Promise((resolve, reject) => this.occupancies.push({ request, signal, resolve, reject }));
  }

  runKernel(request: RunRequest, signal?: AbortSignal): Promise<RunResult> {
    return new Promise((resolve, reject) => this.runs.push({ request, signal, resolve, reject }));
  }
}

const flush = () => new Promise(resolve => setTimeout(resolve, 0));

/** Timers the test advances by hand (the model's debounce uses them). */
class ManualTimers implements Timers {
  now = 0;
  private _next = 1;
  private _due = new Map<number, { at: number; callback: () => void }>();

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this._next++;
    this._due.set(id, { at: this.now + ms, callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this._due.delete(handle as number);
  }

  advance(ms: number): void {
    this.now += ms;
    for (const [id, entry] of [...this._due]) {
      if (entry.at <= this.now) {
        this._due.delete(id);
        entry.callback();
      }
    }
  }
}

/** A model whose architectures are loaded and whose first compile has answered. */
async function ready(options: Partial<ConstructorParameters<typeof PlaygroundModel>[0]> = {}) {
  const api = new FakeKernels();
  const timers = new ManualTimers();
  const model = new PlaygroundModel({ source: api, debounceMs: 600, timers, ...options });
  const loading = model.loadArchs();
  await flush();
  api.compiles[0]?.resolve(compiled());
  await loading;
  return { api, model, timers };
}

describe('PlaygroundModel compiles', () => {
  it("compiles the starter for the server's default arch once the architectures are in", async () => {
    const { api, model } = await ready();
    expect(api.compiles).toHaveLength(1);
    expect(api.compiles[0].request).toMatchObject({
      language: 'cuda',
      arch: 'sm_80',
      sass: true,
      block_size: 256,
      dynamic_shared_bytes: 0,
      options: { opt_level: 3, max_registers: null, fast_math: false, defines: {} }
    });
    expect(api.compiles[0].request.source).toContain('saxpy');
    expect(model.compileState).toBe('ok');
    expect(model.kernel?.name).toBe('saxpy');
  });

  it("prefers this machine's GPU arch, and an arch the caller asked for over both", async () => {
    const gpu = new FakeKernels();
    gpu.archs = archList({ gpu_arch: 'sm_90' });
    void new PlaygroundModel({ source: gpu }).loadArchs();
    await flush();
    expect(gpu.compiles[0].request.arch).toBe('sm_90');

    const asked = new FakeKernels();
    asked.archs = archList({ gpu_arch: 'sm_90' });
    void new PlaygroundModel({ source: asked, arch: 'sm_80' }).loadArchs();
    await flush();
    expect(asked.compiles[0].request.arch).toBe('sm_80');
  });

  it('compiles once after a pause in typing, not on every keystroke', async () => {
    const { api, model, timers } = await ready();
    model.setSource('a');
    timers.advance(300);
    model.setSource('ab');
    timers.advance(300);
    model.setSource('abc');
    timers.advance(599);
    expect(api.compiles).toHaveLength(1);
    timers.advance(1);
    expect(api.compiles).toHaveLength(2);
    expect(api.compiles[1].request.source).toBe('abc');
  });

  it("shows only the newest compile's answer when an older one arrives late", async () => {
    const { api, model } = await ready();
    model.setSource('old edit');
    const older = model.compile();
    model.setSource('new edit');
    const newer = model.compile();
    expect(api.compiles[1].signal?.aborted).toBe(true);
    api.compiles[2].resolve(compiled({ key: 'new' }));
    await newer;
    api.compiles[1].resolve(compiled({ key: 'old', ok: false }));
    await older;
    expect(model.compileResult?.key).toBe('new');
    expect(model.compileState).toBe('ok');
  });

  it('ignores the failure of a request a newer one replaced', async () => {
    const { api, model } = await ready();
    const older = model.compile();
    const newer = model.compile();
    api.compiles[1].reject(new Error('aborted'));
    await older;
    expect(model.compileState).toBe('compiling');
    api.compiles[2].resolve(compiled({ key: 'latest' }));
    await newer;
    expect(model.compileState).toBe('ok');
    expect(model.compileError).toBeNull();
  });

  it('marks the diagnostics of code that does not compile, and says why a request failed', async () => {
    const { api, model } = await ready();
    const diagnostics = [{ line: 3, column: 9, severity: 'error' as const, message: 'identifier "q" is undefined' }];
    const failing = model.compile();
    api.compiles[1].resolve(compiled({ ok: false, diagnostics, kernels: [], ptx: '', ptx_lines: [] }));
    await failing;
    expect(model.compileState).toBe('error');
    expect(model.marks).toEqual(diagnostics);
    expect(model.kernel).toBeNull();

    const refused = model.compile();
    api.compiles[2].reject(new Error('The source is too large'));
    await refused;
    expect(model.compileState).toBe('error');
    expect(model.compileError).toBe('The source is too large');
  });

  it('does not send defines the server would refuse, and says which', async () => {
    const { api, model } = await ready();
    model.setSettings({ defines: 'N=4 2BAD=1' });
    await flush();
    expect(api.compiles).toHaveLength(1);
    expect(model.compileState).toBe('error');
    expect(model.compileError).toContain('"2BAD" is not a C identifier');
    model.setSettings({ defines: 'N=4 TILE=16' });
    expect(api.compiles[1].request.options).toMatchObject({ defines: { N: '4', TILE: '16' } });
  });

  it('sends the options the toolbar set, at once', async () => {
    const { api, model } = await ready();
    model.setSettings({ optLevel: 1, maxRegisters: 32, fastMath: true, arch: 'sm_90' });
    expect(api.compiles[1].request).toMatchObject({
      arch: 'sm_90',
      options: { opt_level: 1, max_registers: 32, fast_math: true }
    });
  });

  it('does not compile by itself when the server has no compiler', async () => {
    const api = new FakeKernels();
    api.archs = archList({ compiler_problem: 'NVRTC not found' });
    const model = new PlaygroundModel({ source: api });
    await model.loadArchs();
    model.setSource('x');
    expect(api.compiles).toHaveLength(0);
    expect(model.compileState).toBe('idle');
  });
});

describe('PlaygroundModel languages', () => {
  it('keeps a source and run fields per language', async () => {
    const { api, model } = await ready();
    model.setSource('// my cuda');
    model.setLanguage('numba');
    expect(model.source).toBe(NUMBA_STARTER);
    expect(model.form.kernel).toBe('vector_add');
    expect(model.compileResult).toBeNull();
    const request = api.compiles[api.compiles.length - 1].request;
    expect(request.language).toBe('numba');
    expect(request.signatures).toEqual({ vector_add: 'void(float32[:], float32[:], float32[:])' });
    expect(request.options?.defines).toEqual({});
    model.setLanguage('cuda');
    expect(model.source).toBe('// my cuda');
    expect(model.form.kernel).toBe('saxpy');
  });

  it("takes a linked file's new text: the shown language compiles it, the other keeps it for later", async () => {
    const { api, model, timers } = await ready();
    const changes: PlaygroundChange[] = [];
    model.changed.connect((_, change) => changes.push(change));
    const before = api.compiles.length;
    model.setSourceOf('cuda', '// typed in kernel.cu');
    expect(model.source).toBe('// typed in kernel.cu');
    timers.advance(600);
    expect(api.compiles.length).toBe(before + 1);
    expect(api.compiles[api.compiles.length - 1].request.source).toBe('// typed in kernel.cu');
    model.setLanguage('numba');
    const shown = api.compiles.length;
    changes.length = 0;
    model.setSourceOf('cuda', '// typed again');
    timers.advance(600);
    expect(changes).toEqual(['source']);
    expect(model.source).toBe(NUMBA_STARTER);
    expect(api.compiles.length).toBe(shown);
    model.setLanguage('cuda');
    expect(model.source).toBe('// typed again');
  });

  it('opens with the source and run preset a lesson gives', async () => {
    const { api, model } = await ready({
      language: 'numba',
      text: '@cuda.jit\ndef scale(x):\n    pass\n',
      run: { kernel: 'scale', grid: [2], block: [64], args: [{ kind: 'array', name: 'x', shape: [128], output: true }] }
    });
    expect(model.language).toBe('numba');
    expect(model.form).toMatchObject({ kernel: 'scale', grid: '2', block: '64' });
    expect(api.compiles[0].request).toMatchObject({ block_size: 64, signatures: { scale: 'void(float32[:])' } });
  });
});

describe('PlaygroundModel loading an example', () => {
  it("switches to the example's language with its source and launch, and compiles once, at once", async () => {
    const { api, model } = await ready();
    model.setSource('// my cuda');
    const changes: PlaygroundChange[] = [];
    model.changed.connect((_, change) => changes.push(change));
    const before = api.compiles.length;
    model.load(exampleState(example()));
    expect(model.language).toBe('numba');
    expect(model.source).toBe(example().source);
    expect(model.form).toMatchObject({ kernel: 'block_sum', grid: '4', block: '256', sharedBytes: '0' });
    expect(model.compileResult).toBeNull();
    expect(changes).toContain('loaded');
    expect(api.compiles).toHaveLength(before + 1);
    expect(api.compiles[before].request).toMatchObject({
      language: 'numba',
      block_size: 256,
      signatures: { block_sum: 'void(float32[:], float32[:], int32)' }
    });
    // The other language keeps what the learner wrote.
    model.setLanguage('cuda');
    expect(model.source).toBe('// my cuda');
  });

  it("drops the previous run, whose kernel is not this one", async () => {
    const { api, model } = await ready({ language: 'numba' });
    const running = model.run();
    api.runs[0].resolve(simulatorRun());
    await running;
    model.load(exampleState(example()));
    expect(model.runs.result).toBeNull();
  });

  it('waits for the architectures before compiling an example loaded as the playground opens', async () => {
    const api = new FakeKernels();
    const model = new PlaygroundModel({ source: api });
    model.load(exampleState(example({ language: 'cuda', kernel: 'vector_add', source: '// lab kernel' })));
    expect(api.compiles).toHaveLength(0);
    void model.loadArchs();
    await flush();
    expect(api.compiles).toHaveLength(1);
    expect(api.compiles[0].request).toMatchObject({ language: 'cuda', source: '// lab kernel' });
  });
});

describe('PlaygroundModel occupancy', () => {
  it("uses the compile's own figure at the compiled block size, and asks the server for another", async () => {
    const { api, model } = await ready();
    expect(model.occupancy?.occupancy.block_size).toBe(256);
    model.setBlockSize(512);
    expect(api.occupancies).toHaveLength(1);
    expect(api.occupancies[0].request).toEqual({
      arch: 'sm_90',
      registers_per_thread: 32,
      shared_bytes_per_block: 0,
      block_size: 512
    });
    api.occupancies[0].resolve(occupancyReport(512));
    await flush();
    expect(model.occupancy?.occupancy.block_size).toBe(512);
    model.setBlockSize(256);
    expect(api.occupancies).toHaveLength(1);
    expect(model.occupancy?.occupancy.block_size).toBe(256);
  });

  it('drops an occupancy answer a newer block size replaced', async () => {
    const { api, model } = await ready();
    model.setBlockSize(128);
    model.setBlockSize(1024);
    api.occupancies[1].resolve(occupancyReport(1024));
    api.occupancies[0].resolve(occupancyReport(128));
    await flush();
    expect(model.occupancy?.occupancy.block_size).toBe(1024);
  });

  it('follows the run block size and counts dynamic shared memory', async () => {
    const { api, model } = await ready();
    model.setForm({ block: '32, 4', sharedBytes: '4096' });
    expect(model.blockSize).toBe(128);
    const last = api.occupancies[api.occupancies.length - 1].request;
    expect(last).toMatchObject({ block_size: 128, shared_bytes_per_block: 4096 });
  });

  it('keeps the chosen kernel across compiles when it is still there', async () => {
    const { api, model } = await ready();
    const two = compiled({ kernels: [kernel('first'), kernel('second', { occupancy: occupancyAt(256) })] });
    const c1 = model.compile();
    api.compiles[1].resolve(two);
    await c1;
    model.selectKernel(1);
    expect(model.kernel?.name).toBe('second');
    const c2 = model.compile();
    api.compiles[2].resolve(compiled({ kernels: [kernel('zero'), kernel('first'), kernel('second')] }));
    await c2;
    expect(model.kernel?.name).toBe('second');
  });
});

describe('PlaygroundModel runs', () => {
  it('runs the run fields and keeps the result with the mode that produced it', async () => {
    const { api, model } = await ready({ language: 'numba' });
    const changes: PlaygroundChange[] = [];
    model.changed.connect((_, change) => changes.push(change));
    const running = model.run();
    expect(model.runs.running).toBe(true);
    expect(api.runs[0].request).toMatchObject({
      language: 'numba',
      kernel: 'vector_add',
      grid: [8],
      block: [128],
      expected: { c: 'a + b' }
    });
    api.runs[0].resolve(simulatorRun());
    await running;
    expect(model.runs.running).toBe(false);
    expect(model.runs.result?.mode).toBe('simulator');
    expect(changes.filter(c => c === 'run').length).toBeGreaterThanOrEqual(2);
  });

  it('says what is wrong with the fields instead of sending them', async () => {
    const { api, model } = await ready();
    model.setForm({ args: '[{"kind": "array", "name": "x"}]' });
    await model.run();
    expect(api.runs).toHaveLength(0);
    expect(model.runs.error).toContain('shape must be');
  });

  it('refuses a simulator launch larger than the server allows, before sending it', async () => {
    const { api, model } = await ready({ language: 'numba' });
    model.setForm({ grid: '64', block: '128' });
    await model.run();
    expect(api.runs).toHaveLength(0);
    expect(model.runs.error).toContain('at most 4096');
  });

  it('marks the line an out-of-bounds access happened on, until the source changes', async () => {
    const { api, model } = await ready({ language: 'numba' });
    const running = model.run();
    api.runs[0].resolve(
      simulatorRun({
        status: 'error',
        checks: [],
        error: { kind: 'out_of_bounds', message: 'index 1024 is out of bounds', thread: [0, 0, 0], block: [8, 0, 0], line: 9 }
      })
    );
    await running;
    expect(model.marks).toEqual([
      expect.objectContaining({ line: 9, severity: 'error', message: expect.stringContaining('thread (0, 0, 0) of block (8, 0, 0)') })
    ]);
    model.setSource(model.source + '\n');
    expect(model.runs.stale).toBe(true);
    expect(model.marks).toEqual([]);
  });

  it('shows why a run request was refused', async () => {
    const { api, model } = await ready();
    const running = model.run();
    api.runs[0].reject(new Error("No kernel named 'saxpy2'"));
    await running;
    expect(model.runs.error).toBe("No kernel named 'saxpy2'");
    expect(model.runs.running).toBe(false);
  });
});

describe('PlaygroundModel snapshot', () => {
  it('reopens as it was: language, source, arch and run fields', async () => {
    const { model } = await ready();
    model.setSource('// edited');
    model.setForm({ grid: '32', block: '128' });
    const snapshot = model.snapshot();
    const { model: again } = await ready({
      language: snapshot.language,
      text: snapshot.source,
      arch: snapshot.arch,
      run: snapshot.run
    });
    expect(again.source).toBe('// edited');
    expect(again.form).toEqual(model.form);
    expect(again.settings.arch).toBe(model.settings.arch);
  });
});
