/**
 * PlaygroundModel: the state of one kernel playground (source per language,
 * compile settings, run fields, the latest compile, occupancy and run results)
 * and the requests that change it. Views render it and call its methods.
 *
 * Compiles happen after a pause in typing; only the newest compile's answer is
 * ever shown, so a slow answer to an old edit cannot overwrite a newer one.
 */

import { ISignal, Signal } from '@lumino/signaling';
import type {
  ArchList,
  CompileRequest,
  CompileResult,
  Diagnostic,
  KernelLanguage,
  KernelReport,
  OccupancyReport,
  OccupancyRequest,
  RunRequest,
  RunResult
} from '../api/types';
import { CompileSettings, DEFAULT_SETTINGS, buildCompileRequest, compileOptions } from './compileSpec';
import type { PlaygroundState } from './examples';
import { CompileState, initialArch, runErrorMark } from './format';
import { Debouncer, LatestRequest, Timers } from './latest';
import { RunState } from './runState';
import {
  Parsed,
  RunForm,
  RunPreset,
  buildRunRequest,
  formFromPreset,
  parseDim3,
  presetFromForm,
  simulatorProblem,
  threadCount
} from './runSpec';
import { starterRun, starterSource } from './starters';

/** The part of the API client the playground uses (GpudojoClient satisfies it). */
export interface KernelSource {
  getKernelArchs(): Promise<ArchList>;
  compileKernel(request: CompileRequest, signal?: AbortSignal): Promise<CompileResult>;
  kernelOccupancy(request: OccupancyRequest, signal?: AbortSignal): Promise<OccupancyReport>;
  runKernel(request: RunRequest, signal?: AbortSignal): Promise<RunResult>;
}

export type { CompileSettings } from './compileSpec';

/** What changed, so a view redraws only its part. */
export type PlaygroundChange =
  | 'archs'
  | 'source'
  | 'language'
  | 'settings'
  | 'form'
  /** Language, source and run fields replaced at once (an example loaded). */
  | 'loaded'
  | 'compile'
  | 'kernel'
  | 'occupancy'
  | 'run';

export interface PlaygroundModelOptions {
  source: KernelSource;
  language?: KernelLanguage;
  /** The source of `language` (the other language gets its starter). */
  text?: string;
  arch?: string;
  run?: RunPreset;
  /** Quiet time after an edit before compiling (ms). */
  debounceMs?: number;
  timers?: Timers;
}

/** Pause in typing before an automatic compile (ms). */
export const COMPILE_DELAY_MS = 600;

/** Threads per block the occupancy figure uses when the run fields do not say. */
const DEFAULT_BLOCK_SIZE = 256;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class PlaygroundModel {
  constructor(options: PlaygroundModelOptions) {
    this._client = options.source;
    this._language = options.language ?? 'cuda';
    for (const language of ['cuda', 'numba'] as const) {
      const base = formFromPreset(starterRun(language), EMPTY_FORM);
      this._sources[language] = starterSource(language);
      this._forms[language] = base;
    }
    if (options.text !== undefined) {
      this._sources[this._language] = options.text;
    }
    if (options.run) {
      this._forms[this._language] = formFromPreset(options.run, this._forms[this._language]);
    }
    this._requestedArch = options.arch ?? null;
    this._blockSize = this._formBlockSize();
    this.runs = new RunState(options.source, () => this._changed.emit('run'));
    this._debouncer = new Debouncer(() => void this.compile(), options.debounceMs ?? COMPILE_DELAY_MS, options.timers);
  }

  /** Emitted after every change, saying which part changed. */
  get changed(): ISignal<this, PlaygroundChange> {
    return this._changed;
  }

  // --- state ---------------------------------------------------------------------------

  /** The server's architectures and compilers, once loaded. */
  get archs(): ArchList | null {
    return this._archs;
  }

  /** Why the architectures could not be loaded, or null. */
  get archsError(): string | null {
    return this._archsError;
  }

  get language(): KernelLanguage {
    return this._language;
  }

  /** The source of the current language. */
  get source(): string {
    return this._sources[this._language];
  }

  /** The source `language` has (each language keeps its own). */
  sourceOf(language: KernelLanguage): string {
    return this._sources[language];
  }

  get settings(): Readonly<CompileSettings> {
    return this._settings;
  }

  /** The run panel's fields of the current language. */
  get form(): Readonly<RunForm> {
    return this._forms[this._language];
  }

  get compileState(): CompileState {
    return this._compileState;
  }

  /** The newest compile's answer (kept while a newer compile is in flight). */
  get compileResult(): CompileResult | null {
    return this._compileResult;
  }

  /** Why the last compile request failed (not the code: the request), or null. */
  get compileError(): string | null {
    return this._compileError;
  }

  /** Index of the kernel the SASS and occupancy views show. */
  get kernelIndex(): number {
    return this._kernelIndex;
  }

  /** The kernel the SASS and occupancy views show, or null when none compiled. */
  get kernel(): KernelReport | null {
    return this._compileResult?.kernels[this._kernelIndex] ?? null;
  }

  /** Threads per block of the occupancy figure. */
  get blockSize(): number {
    return this._blockSize;
  }

  /** Occupancy at `blockSize` for the shown kernel: the queried report, else the compile's own. */
  get occupancy(): OccupancyReport | null {
    if (this._occupancy) {
      return this._occupancy;
    }
    const kernel = this.kernel;
    return kernel ? { occupancy: kernel.occupancy, curve: kernel.curve } : null;
  }

  /** Why the last occupancy query failed, or null. */
  get occupancyError(): string | null {
    return this._occupancyError;
  }

  /** The newest run: in flight, its result, why it was refused, whether it is stale. */
  readonly runs: RunState;

  /**
   * What the editor marks: the compile's diagnostics, plus the line a run
   * failed on (an out-of-bounds access, say) while that run is current.
   */
  get marks(): Diagnostic[] {
    const marks = [...(this._compileResult?.diagnostics ?? [])];
    const runMark = this.runs.stale ? null : runErrorMark(this.runs.result?.error);
    return runMark ? [...marks, runMark] : marks;
  }

  // --- changes -------------------------------------------------------------------------

  /** Load the architectures; the first compile follows. */
  async loadArchs(): Promise<void> {
    try {
      this._archs = await this._client.getKernelArchs();
      this._archsError = null;
      const wanted = this._requestedArch ?? this._settings.arch;
      const known = this._archs.archs.some(a => a.arch === wanted);
      this._settings = { ...this._settings, arch: known ? wanted : initialArch(this._archs) };
    } catch (error) {
      this._archsError = messageOf(error);
    }
    this._changed.emit('archs');
    this._changed.emit('settings');
    if (this._archs && !this._archs.compiler_problem) {
      await this.compile();
    }
  }

  /** The editor's text changed: compile after a pause in typing. */
  setSource(text: string): void {
    if (text === this._sources[this._language]) {
      return;
    }
    this._sources[this._language] = text;
    this.runs.markStale();
    this._changed.emit('source');
    this._scheduleCompile();
  }

  /** Replace `language`'s source (its linked file changed); the shown language's compiles again. */
  setSourceOf(language: KernelLanguage, text: string): void {
    if (language === this._language) {
      this.setSource(text);
    } else if (text !== this._sources[language]) {
      this._sources[language] = text;
      this._changed.emit('source');
    }
  }

  /** Switch language: each language keeps its own source and run fields. */
  setLanguage(language: KernelLanguage): void {
    if (language === this._language) {
      return;
    }
    this._language = language;
    this._clearCompile();
    this._blockSize = this._formBlockSize();
    this._changed.emit('language');
    this._changed.emit('compile');
    this.runs.clear();
    this._scheduleCompile(true);
  }

  /**
   * Replace the language, its source and its run fields at once (an example
   * loaded): one compile follows now, where switching language, pasting the
   * source and typing the fields would compile up to three times.
   */
  load(state: PlaygroundState): void {
    const switched = state.language !== this._language;
    this._language = state.language;
    this._sources[state.language] = state.source;
    this._forms[state.language] = formFromPreset(state.run, this._forms[state.language]);
    if (switched) {
      // The other language's outputs say nothing about this source.
      this._clearCompile();
    }
    this._blockSize = this._formBlockSize();
    this.runs.clear();
    this._changed.emit('loaded');
    if (switched) {
      this._changed.emit('compile');
    }
    this._scheduleCompile(true);
  }

  /** Change compile settings; a compile follows at once (no typing to wait for). */
  setSettings(settings: Partial<CompileSettings>): void {
    this._settings = { ...this._settings, ...settings };
    this.runs.markStale();
    this._changed.emit('settings');
    this._scheduleCompile(true);
  }

  /** Change run fields; block and shared size also move the occupancy figure. */
  setForm(form: Partial<RunForm>): void {
    const before = this._forms[this._language];
    const next = { ...before, ...form };
    this._forms[this._language] = next;
    this._changed.emit('form');
    if (next.block !== before.block || next.sharedBytes !== before.sharedBytes) {
      this._blockSize = this._formBlockSize();
      void this.queryOccupancy();
    }
    // numba compiles need the kernel's argument types, which come from these fields.
    if (this._language === 'numba' && (next.kernel !== before.kernel || next.args !== before.args)) {
      this._scheduleCompile();
    }
  }

  /** Show kernel `index` (0-based) in the SASS and occupancy views. */
  selectKernel(index: number): void {
    const count = this._compileResult?.kernels.length ?? 0;
    if (index < 0 || index >= count || index === this._kernelIndex) {
      return;
    }
    this._kernelIndex = index;
    this._occupancy = null;
    this._changed.emit('kernel');
    void this.queryOccupancy();
  }

  /** Threads per block of the occupancy figure (1-1024): asks the server for that size. */
  setBlockSize(threads: number): void {
    if (!Number.isInteger(threads) || threads < 1 || threads > 1024 || threads === this._blockSize) {
      return;
    }
    this._blockSize = threads;
    void this.queryOccupancy();
  }

  /** The compile request of the current state, or why none can be sent. */
  compileRequest(): Parsed<CompileRequest> {
    return buildCompileRequest({
      source: this.source,
      language: this._language,
      settings: this._settings,
      form: this.form,
      blockSize: this._blockSize,
      dynamicSharedBytes: this._dynamicShared()
    });
  }

  /** Compile now (the Compile button); resolves when this compile's answer is shown or dropped. */
  async compile(): Promise<void> {
    this._debouncer.cancel();
    const built = this.compileRequest();
    if (!built.ok) {
      this._latestCompile.cancel();
      this._compileState = this._settings.arch ? 'error' : 'idle';
      this._compileError = this._settings.arch ? built.error : null;
      this._changed.emit('compile');
      return;
    }
    const request = built.value;
    const ticket = this._latestCompile.start();
    this._compileState = 'compiling';
    this._changed.emit('compile');
    try {
      const result = await this._client.compileKernel(request, ticket.signal);
      if (!ticket.isLatest()) {
        return;
      }
      const previous = this.kernel?.name;
      this._compileResult = result;
      this._compiledFor = { blockSize: request.block_size ?? DEFAULT_BLOCK_SIZE, dynamicShared: request.dynamic_shared_bytes ?? 0 };
      this._compileError = null;
      this._compileState = result.ok ? 'ok' : 'error';
      // Keep showing the same kernel when it is still there.
      const again = result.kernels.findIndex(k => k.name === previous);
      this._kernelIndex = again >= 0 ? again : 0;
      this._occupancy = null;
      this._occupancyError = null;
      // The compile's occupancy is for the sizes it was asked with; newer sizes need a query.
      if (request.block_size !== this._blockSize || request.dynamic_shared_bytes !== this._dynamicShared()) {
        void this.queryOccupancy();
      }
    } catch (error) {
      if (!ticket.isLatest()) {
        return;
      }
      this._compileError = messageOf(error);
      this._compileState = 'error';
    }
    this._changed.emit('compile');
  }

  /** Ask the server for the shown kernel's occupancy at `blockSize`. */
  async queryOccupancy(): Promise<void> {
    const kernel = this.kernel;
    const result = this._compileResult;
    if (!kernel || !result) {
      this._changed.emit('occupancy');
      return;
    }
    if (this._compiledFor.blockSize === this._blockSize && this._compiledFor.dynamicShared === this._dynamicShared()) {
      this._latestOccupancy.cancel();
      this._occupancy = null;
      this._occupancyError = null;
      this._changed.emit('occupancy');
      return;
    }
    const ticket = this._latestOccupancy.start();
    try {
      const report = await this._client.kernelOccupancy(
        {
          arch: result.arch,
          registers_per_thread: Math.max(1, kernel.registers),
          shared_bytes_per_block: kernel.shared_bytes + this._dynamicShared(),
          block_size: this._blockSize
        },
        ticket.signal
      );
      if (!ticket.isLatest()) {
        return;
      }
      this._occupancy = report;
      this._occupancyError = null;
    } catch (error) {
      if (!ticket.isLatest()) {
        return;
      }
      this._occupancyError = messageOf(error);
    }
    this._changed.emit('occupancy');
  }

  /** Run the kernel with the run fields; the result says where it ran. */
  async run(): Promise<void> {
    const options = compileOptions(this._settings, this._language);
    const built = options.ok
      ? buildRunRequest(this.form, { source: this.source, language: this._language, options: options.value })
      : options;
    if (!built.ok) {
      this.runs.refuse(built.error);
      return;
    }
    const problem = simulatorProblem(built.value, this._archs);
    if (problem) {
      this.runs.refuse(problem);
      return;
    }
    await this.runs.start(built.value);
  }

  /** The state to reopen this playground with (after a reload). */
  snapshot(): { language: KernelLanguage; source: string; arch: string; run: RunPreset } {
    return {
      language: this._language,
      source: this.source,
      arch: this._settings.arch,
      run: presetFromForm(this.form)
    };
  }

  dispose(): void {
    this._debouncer.cancel();
    this._latestCompile.cancel();
    this._latestOccupancy.cancel();
    this.runs.dispose();
    Signal.clearData(this);
  }

  /** Forget the shown compile and occupancy (and drop any compile in flight). */
  private _clearCompile(): void {
    this._latestCompile.cancel();
    this._compileResult = null;
    this._compileError = null;
    this._compileState = 'idle';
    this._kernelIndex = 0;
    this._occupancy = null;
  }

  private _scheduleCompile(now = false): void {
    if (!this._archs || this._archs.compiler_problem) {
      return;
    }
    if (now) {
      void this.compile();
    } else {
      this._debouncer.schedule();
    }
  }

  /** Threads per block of the run fields (capped at 1024), or the default when they do not parse. */
  private _formBlockSize(): number {
    const block = parseDim3(this.form.block, 'block');
    return block.ok ? Math.min(1024, threadCount([], block.value)) : DEFAULT_BLOCK_SIZE;
  }

  /** Dynamic shared memory of the run fields (bytes), 0 when they do not parse. */
  private _dynamicShared(): number {
    const bytes = Number(this.form.sharedBytes);
    return Number.isInteger(bytes) && bytes >= 0 ? bytes : 0;
  }

  private _client: KernelSource;
  private _changed = new Signal<this, PlaygroundChange>(this);
  private _archs: ArchList | null = null;
  private _archsError: string | null = null;
  private _requestedArch: string | null;
  private _language: KernelLanguage;
  private _sources: Record<KernelLanguage, string> = { cuda: '', numba: '' };
  private _forms: Record<KernelLanguage, RunForm> = { cuda: EMPTY_FORM, numba: EMPTY_FORM };
  private _settings: CompileSettings = { ...DEFAULT_SETTINGS };
  private _debouncer: Debouncer;
  private _latestCompile = new LatestRequest();
  private _latestOccupancy = new LatestRequest();
  private _compileState: CompileState = 'idle';
  private _compileResult: CompileResult | null = null;
  private _compileError: string | null = null;
  private _kernelIndex = 0;
  private _blockSize: number;
  /** The block size (threads) and dynamic shared memory (bytes) the shown compile was asked with. */
  private _compiledFor = { blockSize: 0, dynamicShared: 0 };
  private _occupancy: OccupancyReport | null = null;
  private _occupancyError: string | null = null;
}

const EMPTY_FORM: RunForm = { kernel: '', grid: '1', block: '256', sharedBytes: '0', args: '[]', expected: '{}' };
