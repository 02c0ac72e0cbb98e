/**
 * The one typed client of the gpudojo server API: REST through
 * ServerConnection.makeRequest (which adds the XSRF token) and the telemetry
 * websocket through the server settings' wsUrl, token and WebSocket.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { GpudojoApiError, errorFromResponse } from './errors';
import { RunStream, RunStreamOptions } from './runStream';
import { TelemetryStream, TelemetryStreamOptions } from './telemetry';
import type {
  Acceptance,
  Artifact,
  CheckAttempt,
  ExerciseDoc,
  ExerciseStart,
  Analysis,
  AnalysisProgress,
  ArchList,
  CaptureList,
  Catalog,
  LabReadme,
  CompileRequest,
  CompileResult,
  CourseKind,
  DevicesResponse,
  EngineList,
  Estimate,
  EventDetail,
  EstimateRequest,
  TransformerEstimate,
  TransformerEstimateRequest,
  KernelExamples,
  LabList,
  LessonDoc,
  MemoryDiff,
  MemoryWindow,
  ModuleTestDoc,
  ModuleTestGraded,
  NotebookCopy,
  OccupancyReport,
  OccupancyRequest,
  ProfileDiff,
  ProfileProgress,
  ProfileSummary,
  ProfileWindow,
  ProgressEntry,
  ProgressStatus,
  QuizResult,
  ReadingList,
  Run,
  RunList,
  RunRequest,
  RunResult,
  RunStatus,
  StartRunRequest,
  Sweep,
  TraceList
} from './types';

export { GpudojoApiError } from './errors';
export type { ConnectionState, ConnectionStatus } from './telemetry';

/** Path of the API below the server's base URL. */
export const API_PATH = 'gpudojo/api';

/**
 * Call `{baseUrl}gpudojo/api/{endPoint}` and return the parsed JSON body.
 *
 * Throws GpudojoApiError carrying the server's message on a 4xx/5xx answer or
 * when the server cannot be reached.
 */
export async function requestAPI<T>(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, API_PATH, endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new GpudojoApiError(
      `Cannot reach the Jupyter server: ${(error as Error).message ?? error}`,
      'network_error',
      0
    );
  }
  const text = await response.text();
  if (!response.ok) {
    throw errorFromResponse(response.status, response.statusText, text);
  }
  if (!text) {
    return undefined as unknown as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new GpudojoApiError(
      `The gpudojo server sent a response that is not JSON (${endPoint})`,
      'bad_response',
      response.status,
      text.slice(0, 500)
    );
  }
}

/** Typed calls of the gpudojo API. */
export class GpudojoClient {
  constructor(settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {
    this.serverSettings = settings;
  }

  readonly serverSettings: ServerConnection.ISettings;

  /** GET gpu/devices: facts and a current reading of every GPU and of the host. */
  getDevices(): Promise<DevicesResponse> {
    return requestAPI<DevicesResponse>('gpu/devices', { method: 'GET' }, this.serverSettings);
  }

  /** GET course/catalog: lessons, labs and exercises in order, with this user's progress. */
  getCatalog(): Promise<Catalog> {
    return requestAPI<Catalog>('course/catalog', { method: 'GET' }, this.serverSettings);
  }

  /** GET course/labs/{id}/readme: the lab's README as markdown (empty when it has none). */
  getLabReadme(id: string): Promise<LabReadme> {
    return requestAPI<LabReadme>(`course/labs/${encodeURIComponent(id)}/readme`, { method: 'GET' }, this.serverSettings);
  }

  /** GET course/lessons/{id}: the lesson's cells, table of contents, quiz and progress. */
  getLesson(id: string): Promise<LessonDoc> {
    return requestAPI<LessonDoc>(
      `course/lessons/${encodeURIComponent(id)}`,
      { method: 'GET' },
      this.serverSettings
    );
  }

  /** POST course/lessons/{id}/quiz: grade the chosen choice ids per question id. */
  submitQuiz(id: string, answers: Record<string, string[]>): Promise<QuizResult> {
    return this._post<QuizResult>(`course/lessons/${encodeURIComponent(id)}/quiz`, { answers });
  }

  /** POST course/progress: set this user's status of one item. */
  setProgress(kind: CourseKind, id: string, status: ProgressStatus): Promise<ProgressEntry> {
    return this._post<ProgressEntry>('course/progress', { kind, id, status });
  }

  /** POST course/lessons/{id}/notebook: copy the lesson as a notebook (an earlier copy is kept unless `overwrite`). */
  createLessonNotebook(id: string, overwrite = false): Promise<NotebookCopy> {
    return this._post<NotebookCopy>(`course/lessons/${encodeURIComponent(id)}/notebook`, {
      overwrite
    });
  }

  /** GET course/module-test: the questions (no answers), this user's last and best scores. */
  getModuleTest(): Promise<ModuleTestDoc> {
    return requestAPI<ModuleTestDoc>('course/module-test', { method: 'GET' }, this.serverSettings);
  }

  /** POST course/module-test: grade an attempt (choice ids per question id); every attempt is kept. */
  submitModuleTest(answers: Record<string, string[]>): Promise<ModuleTestGraded> {
    return this._post<ModuleTestGraded>('course/module-test', { answers });
  }

  /** GET course/acceptance: the module's acceptance list, ticked from this user's progress. */
  getAcceptance(): Promise<Acceptance> {
    return requestAPI<Acceptance>('course/acceptance', { method: 'GET' }, this.serverSettings);
  }

  /** GET course/reading: the course reading list, each entry with the lessons it deepens. */
  getReadingList(): Promise<ReadingList> {
    return requestAPI<ReadingList>('course/reading', { method: 'GET' }, this.serverSettings);
  }

  /** GET exercises/{id}: README, requirements, your folder, the running check, the last result, history. */
  getExercise(id: string): Promise<ExerciseDoc> {
    return requestAPI<ExerciseDoc>(`exercises/${encodeURIComponent(id)}`, { method: 'GET' }, this.serverSettings);
  }

  /** POST exercises/{id}/start: copy the starters into the workspace (an existing copy is kept unless `reset`). */
  startExercise(id: string, reset = false): Promise<ExerciseStart> {
    return this._post<ExerciseStart>(`exercises/${encodeURIComponent(id)}/start`, { reset });
  }

  /** POST exercises/{id}/check: start the hidden checks against your copy; GET shows them tick. */
  checkExercise(id: string): Promise<CheckAttempt> {
    return this._post<CheckAttempt>(`exercises/${encodeURIComponent(id)}/check`, {});
  }

  /** GET kernels/archs: the architectures this server compiles for, and which compilers it has. */
  getKernelArchs(): Promise<ArchList> {
    return requestAPI<ArchList>('kernels/archs', { method: 'GET' }, this.serverSettings);
  }

  /** GET kernels/examples: the kernel launches the labs offer (of lab `lab` only, when given). */
  getKernelExamples(lab?: string): Promise<KernelExamples> {
    const query = lab ? `?lab=${encodeURIComponent(lab)}` : '';
    return requestAPI<KernelExamples>(`kernels/examples${query}`, { method: 'GET' }, this.serverSettings);
  }

  /**
   * POST kernels/compile: PTX, SASS, resources and occupancy, or diagnostics (ok false).
   *
   * `signal` aborts the request when a newer edit made it stale.
   */
  compileKernel(request: CompileRequest, signal?: AbortSignal): Promise<CompileResult> {
    return this._post<CompileResult>('kernels/compile', request, signal);
  }

  /** POST kernels/occupancy: theoretical occupancy of a kernel's resources at one block size. */
  kernelOccupancy(request: OccupancyRequest, signal?: AbortSignal): Promise<OccupancyReport> {
    return this._post<OccupancyReport>('kernels/occupancy', request, signal);
  }

  /** POST kernels/run: launch on the GPU, in the simulator, or compile only; `mode` says which ran. */
  runKernel(request: RunRequest, signal?: AbortSignal): Promise<RunResult> {
    return this._post<RunResult>('kernels/run', request, signal);
  }

  /** GET runs/labs: the labs that can run, with their parameter forms, metrics and checks. */
  getLabs(): Promise<LabList> {
    return requestAPI<LabList>('runs/labs', { method: 'GET' }, this.serverSettings);
  }

  /**
   * POST runs: start a lab (one run, or one per value of a sweep) or a script.
   *
   * A 400 names the bad parameters in the error's detail ([{param, message}]);
   * a 403 means this user may not execute code.
   */
  startRun(request: StartRunRequest): Promise<RunList> {
    return this._post<RunList>('runs', request);
  }

  /** GET runs: runs newest first, filtered by lab, status or sweep group; at most `limit` (default 100). */
  listRuns(filters: RunFilters = {}): Promise<RunList> {
    const query = Object.entries(filters)
      .filter(([, value]) => value !== undefined && value !== null && value !== '')
      .map(([key, value]) => `${key}=${encodeURIComponent(String(value))}`)
      .join('&');
    return requestAPI<RunList>(`runs${query ? `?${query}` : ''}`, { method: 'GET' }, this.serverSettings);
  }

  /** GET runs/{id}: one run's status, parameters, backend, root cause and checks. */
  getRun(id: string): Promise<Run> {
    return requestAPI<Run>(`runs/${encodeURIComponent(id)}`, { method: 'GET' }, this.serverSettings);
  }

  /** POST runs/{id}/cancel: stop every process of the run; answers once it has ended. */
  cancelRun(id: string): Promise<Run> {
    return this._post<Run>(`runs/${encodeURIComponent(id)}/cancel`, {});
  }

  /** GET runs/engines: where runs can run from this machine (this machine, nodes, Slurm, Kubernetes) and why not. */
  getEngines(): Promise<EngineList> {
    return requestAPI<EngineList>('runs/engines', { method: 'GET' }, this.serverSettings);
  }

  /** GET runs/{id}/artifacts/{name}: one file an engine generated for a run, with its text. */
  getArtifact(id: string, name: string): Promise<Artifact> {
    return requestAPI<Artifact>(
      `runs/${encodeURIComponent(id)}/artifacts/${encodeURIComponent(name)}`,
      { method: 'GET' },
      this.serverSettings
    );
  }

  /** GET runs/sweeps/{group}: the runs of one sweep, oldest first. */
  getSweep(group: string): Promise<Sweep> {
    return requestAPI<Sweep>(`runs/sweeps/${encodeURIComponent(group)}`, { method: 'GET' }, this.serverSettings);
  }

  /** GET memory/captures?run=: the memory captures a run recorded (one per rank). */
  listCaptures(run: string): Promise<CaptureList> {
    return this._get<CaptureList>(`memory/captures?run=${encodeURIComponent(run)}`);
  }

  /** GET memory/analysis?capture=: peak and OOM breakdowns, frames, notes (analysed once, then cached). */
  getMemoryAnalysis(capture: string): Promise<Analysis> {
    return this._get<Analysis>(`memory/analysis?capture=${encodeURIComponent(capture)}`);
  }

  /** GET memory/progress: how far the first analysis of `capture` is (poll it while waiting). */
  getMemoryProgress(capture: string): Promise<AnalysisProgress> {
    return this._get<AnalysisProgress>(`memory/progress?capture=${encodeURIComponent(capture)}`);
  }

  /**
   * GET memory/window: the timeline of [t0, t1] (µs) sampled at `px` times, with the `top`
   * largest allocations. `signal` aborts a query a newer viewport made stale.
   */
  getMemoryWindow(query: MemoryWindowQuery, signal?: AbortSignal): Promise<MemoryWindow> {
    const q = `capture=${encodeURIComponent(query.capture)}&t0=${query.t0}&t1=${query.t1}&px=${Math.round(
      query.px
    )}&top=${Math.round(query.top)}`;
    return this._get<MemoryWindow>(`memory/window?${q}`, signal);
  }

  /** GET memory/diff: two captures' peaks compared (deltas are b - a, bytes). */
  diffMemory(a: string, b: string): Promise<MemoryDiff> {
    return this._get<MemoryDiff>(`memory/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  }

  /** POST memory/estimate: training memory by component, with formulas and the gap to a measured peak. */
  estimateMemory(request: EstimateRequest): Promise<Estimate> {
    return this._post<Estimate>('memory/estimate', request);
  }

  /** POST memory/estimate-transformer: a transformer's memory per GPU (bytes), parameters and FLOPs per token. */
  estimateTransformer(request: TransformerEstimateRequest): Promise<TransformerEstimate> {
    return this._post<TransformerEstimate>('memory/estimate-transformer', request);
  }

  /** The URL of GET memory/raw (a link's href: the browser downloads the capture file itself). */
  memoryRawUrl(capture: string): string {
    const base = URLExt.join(this.serverSettings.baseUrl, API_PATH, 'memory/raw');
    const token = this.serverSettings.token ? `&token=${encodeURIComponent(this.serverSettings.token)}` : '';
    return `${base}?capture=${encodeURIComponent(capture)}${token}`;
  }

  /** GET profile/traces?run=: a run's profile traces, one per rank, and 'all ranks' (run:<id>:*) when several. */
  listTraces(run: string): Promise<TraceList> {
    return this._get<TraceList>(`profile/traces?run=${encodeURIComponent(run)}`);
  }

  /** GET profile/summary?trace=: steps, breakdown, operators, kernels, syncs, findings, lanes (analysed once, then cached). */
  getProfileSummary(trace: string): Promise<ProfileSummary> {
    return this._get<ProfileSummary>(`profile/summary?trace=${encodeURIComponent(trace)}`);
  }

  /** GET profile/progress: how far the first analysis of `trace` is (poll it while waiting for the summary). */
  getProfileProgress(trace: string): Promise<ProfileProgress> {
    return this._get<ProfileProgress>(`profile/progress?trace=${encodeURIComponent(trace)}`);
  }

  /**
   * GET profile/window: the spans of [t0, t1] (µs, the trace's clock) per lane, those under one
   * of `px` pixels merged. `signal` aborts a query a newer viewport made stale.
   */
  getProfileWindow(query: ProfileWindowQuery, signal?: AbortSignal): Promise<ProfileWindow> {
    const q = `trace=${encodeURIComponent(query.trace)}&t0=${query.t0}&t1=${query.t1}&px=${Math.round(query.px)}`;
    return this._get<ProfileWindow>(`profile/window?${q}`, signal);
  }

  /** GET profile/event: one span's name, duration, input shapes, stack and args (the timeline's hover). */
  getProfileEvent(trace: string, ref: number, signal?: AbortSignal): Promise<EventDetail> {
    return this._get<EventDetail>(
      `profile/event?trace=${encodeURIComponent(trace)}&ref=${Math.floor(ref)}`,
      signal
    );
  }

  /** GET profile/diff: trace `a` (before) against `b` (after); deltas are b - a, operator times per step. */
  diffProfiles(a: string, b: string): Promise<ProfileDiff> {
    return this._get<ProfileDiff>(`profile/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  }

  /** The URL of GET profile/raw (a link's href: the browser downloads the trace for Perfetto UI or TensorBoard). */
  profileRawUrl(trace: string): string {
    const base = URLExt.join(this.serverSettings.baseUrl, API_PATH, 'profile/raw');
    const token = this.serverSettings.token ? `&token=${encodeURIComponent(this.serverSettings.token)}` : '';
    return `${base}?trace=${encodeURIComponent(trace)}${token}`;
  }

  /** A run's event stream (not yet connected): replays from the start, then live, resuming after drops. */
  openRunStream(id: string): RunStream {
    const settings = this.serverSettings;
    const options: RunStreamOptions = {
      createSocket: after => new settings.WebSocket(runStreamUrl(settings, id, after))
    };
    return new RunStream(options);
  }

  /** A telemetry stream (not yet connected) asking for `rateHz` samples per second. */
  openTelemetry(rateHz: number): TelemetrySocket {
    return new TelemetrySocket({ settings: this.serverSettings, rateHz });
  }

  private _get<T>(endPoint: string, signal?: AbortSignal): Promise<T> {
    return requestAPI<T>(endPoint, { method: 'GET', signal }, this.serverSettings);
  }

  private _post<T>(endPoint: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return requestAPI<T>(
      endPoint,
      {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json' },
        signal
      },
      this.serverSettings
    );
  }
}

/** GET memory/window's query: a capture's viewport [t0, t1] (µs), `px` samples, the `top` largest allocations. */
export interface MemoryWindowQuery {
  capture: string;
  t0: number;
  t1: number;
  px: number;
  top: number;
}

/** GET profile/window's query: a trace's viewport [t0, t1] (µs on the trace's clock), drawn `px` pixels wide. */
export interface ProfileWindowQuery {
  trace: string;
  t0: number;
  t1: number;
  px: number;
}

/** Filters of GET runs. */
export interface RunFilters {
  lab?: string;
  status?: RunStatus;
  group?: string;
  limit?: number;
}

/** The URL of run `id`'s event stream, replaying the events after seq `after`, with the token when there is one. */
export function runStreamUrl(settings: ServerConnection.ISettings, id: string, after: number): string {
  const base = URLExt.join(settings.wsUrl, API_PATH, `runs/${encodeURIComponent(id)}/stream`);
  const params = [`after=${encodeURIComponent(String(Math.floor(after)))}`];
  if (settings.token) {
    params.push(`token=${encodeURIComponent(settings.token)}`);
  }
  return `${base}?${params.join('&')}`;
}

/** The URL of the telemetry socket for a requested rate (Hz), with the token when there is one. */
export function telemetryUrl(settings: ServerConnection.ISettings, hz: number): string {
  const base = URLExt.join(settings.wsUrl, API_PATH, 'gpu/telemetry');
  const params = [`hz=${encodeURIComponent(String(hz))}`];
  if (settings.token) {
    params.push(`token=${encodeURIComponent(settings.token)}`);
  }
  return `${base}?${params.join('&')}`;
}

export interface TelemetrySocketOptions
  extends Omit<TelemetryStreamOptions, 'createSocket'> {
  settings?: ServerConnection.ISettings;
}

/**
 * The telemetry websocket of this server: reconnects with backoff
 * (0.5 s doubling to 10 s, reset on open) and reports its state via statusChanged.
 */
export class TelemetrySocket extends TelemetryStream {
  constructor(options: TelemetrySocketOptions = {}) {
    const settings = options.settings ?? ServerConnection.makeSettings();
    super({
      ...options,
      createSocket: hz => new settings.WebSocket(telemetryUrl(settings, hz))
    });
  }
}
