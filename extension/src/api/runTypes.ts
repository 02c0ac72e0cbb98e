/**
 * Shapes of the runs API: mirrors server/gpudojo/runs/models.py field for field.
 *
 * Times are Unix seconds (float) unless the name says otherwise.
 */

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'lost';

/** Statuses after which a run never changes again. */
export const FINAL_STATUSES: ReadonlySet<RunStatus> = new Set<RunStatus>([
  'succeeded',
  'failed',
  'cancelled',
  'timed_out',
  'lost'
]);

export type RunLauncher = 'python' | 'torchrun';

export type LabNeeds = 'cpu' | 'gpu' | 'multi-gpu';

export type ParamValue = boolean | number | string;

export type ParamType = 'int' | 'float' | 'choice' | 'bool';

/** One typed parameter of a lab; each becomes `--name value` (nproc goes to torchrun). */
export interface ParamSpec {
  name: string;
  type: ParamType;
  default: ParamValue;
  help: string;
  min?: number | null;
  max?: number | null;
  choices?: ParamValue[] | null;
}

export interface LabMetricSpec {
  name: string;
  unit: string;
  help: string;
  /** False for a label such as an epoch number: recorded, not charted. */
  chart?: boolean;
}

export interface CheckSpec {
  id: string;
  title: string;
  kind: 'reported' | 'decreases' | 'ranks_equal' | 'succeeded';
  metric?: string | null;
  needs: LabNeeds;
  when: Record<string, ParamValue>;
}

export interface LabSummary {
  id: string;
  title: string;
  needs: LabNeeds;
  cpu_path: string | null;
  launcher: RunLauncher;
  parameters: ParamSpec[];
  metrics: LabMetricSpec[];
  checks: CheckSpec[];
}

export interface LabProblem {
  lab: string;
  message: string;
}

/** GET runs/labs: the runnable labs with their parameter forms, and manifests that failed. */
export interface LabList {
  labs: LabSummary[];
  problems: LabProblem[];
}

/** Run the lab once per value of one parameter (1 to 8 values), in order. */
export interface SweepSpec {
  param: string;
  values: ParamValue[];
}

export interface LabRunRequest {
  kind: 'lab';
  lab: string;
  params: Record<string, ParamValue>;
  sweep?: SweepSpec | null;
  /** labkit records memory per rank (a CUDA snapshot on a GPU, the profiler's timeline on a CPU). */
  record_memory?: boolean;
}

/** A learner's own script: `path` is relative to the server's root folder. */
export interface ScriptRunRequest {
  kind: 'script';
  path: string;
  nproc: number;
  args: string[];
  launcher: RunLauncher;
  /** labkit.memory_capture() in the script records memory. */
  record_memory?: boolean;
}

/** POST runs. */
export type StartRunRequest = LabRunRequest | ScriptRunRequest;

/** One entry of a 400's detail: which parameter is wrong and why. */
export interface ParamProblem {
  param: string;
  message: string;
}

/** The first failing rank's error (torchrun's error.json). */
export interface RootCause {
  rank: number | null;
  exit_code: number | null;
  /** e.g. 'RuntimeError: boom' */
  exception: string;
  traceback: string;
  timestamp: number | null;
  /** Other ranks' errors: {rank, exception, traceback, timestamp, exit_code}. */
  others: Array<Record<string, unknown>>;
}

export interface CheckResult {
  id: string;
  title: string;
  /** null: not decided yet, or does not apply. */
  ok: boolean | null;
  detail: string;
  applies: boolean;
}

export interface Run {
  id: string;
  kind: 'lab' | 'script';
  lab: string | null;
  title: string;
  params: Record<string, ParamValue>;
  launcher: RunLauncher;
  nproc: number;
  status: RunStatus;
  backend: 'nccl' | 'gloo' | 'none';
  device_mode: 'gpu' | 'cpu';
  mode_note: string;
  /** The command that ran, for the learner to copy. */
  argv: string[];
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
  exit_code: number | null;
  root_cause: RootCause | null;
  checks: CheckResult[];
  /** The run was asked to record memory (its captures list under memory/captures?run=). */
  record_memory?: boolean;
  /** Sweep group id. */
  group: string | null;
  group_param: string | null;
  /** A script run's path, relative to the server's root (null for labs). */
  script_path?: string | null;
  /** A script run's arguments. */
  script_args?: string[];
  user?: string;
}

export interface RunList {
  runs: Run[];
}

export interface Sweep {
  group: string;
  lab: string;
  param: string;
  runs: Run[];
}

/* The run stream: what WS runs/{id}/stream sends. */

export interface LogEvent {
  type: 'log';
  /** Position in the run's event stream (resume after it). */
  seq: number;
  /** null: the launcher's own output. */
  rank: number | null;
  stream: 'stdout' | 'stderr';
  text: string;
  t: number;
}

export interface MetricEvent {
  type: 'metric';
  seq: number;
  rank: number;
  step: number | null;
  values: Record<string, number | string | boolean | null>;
  t: number;
}

export interface StatusEvent {
  type: 'status';
  seq: number;
  run: Run;
}

export interface TruncatedEvent {
  type: 'truncated';
  seq: number;
  message: string;
}

export type RunEvent = LogEvent | MetricEvent | StatusEvent | TruncatedEvent;

export interface EventBatch {
  type: 'batch';
  events: RunEvent[];
}

/** Sent instead of events when the run does not exist (the socket then closes with 4404). */
export interface StreamError {
  type: 'error';
  error: { code: string; message: string };
}

export type RunStreamMessage = EventBatch | StreamError;
