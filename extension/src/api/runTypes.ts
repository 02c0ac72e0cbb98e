/**
 * Named shapes of the runs API: aliases of the generated types (schema.ts) of
 * server/gpudojo/runs/models.py. Times are Unix seconds (float) unless the name says otherwise.
 */
import type { components } from './schema';

type S = components['schemas'];

export type ParamSpec = S['ParamSpec'];
export type LabMetricSpec = S['MetricSpec'];
export type CheckSpec = S['CheckSpec'];
export type LabSummary = S['LabSummary'];
export type LabProblem = S['LabProblem'];
/** GET runs/labs: the runnable labs with their parameter forms, and manifests that failed. */
export type LabList = S['LabList'];
/** Run the lab once per value of one parameter (1 to 8 values), in order. */
export type SweepSpec = S['SweepSpec'];
export type LabRunRequest = S['LabRunRequest'];
/** A learner's own script: `path` is relative to the server's root folder. */
export type ScriptRunRequest = S['ScriptRunRequest'];
/** POST runs. */
export type StartRunRequest = S['RunRequestBody'];
/** The first failing rank's error (torchrun's error.json). */
export type RootCause = S['RootCause'];
export type CheckResult = S['CheckResult'];
export type Run = S['Run'];
export type RunList = S['RunList'];
export type Sweep = S['Sweep'];

/* Where a run runs: engines beyond this machine (server/gpudojo/runs/models.py). */
export type LocalWhere = S['LocalWhere'];
/** torchrun on several machines, joined by a c10d rendezvous hosted by this one. */
export type NodesWhere = S['NodesWhere'];
/** A Slurm batch job (sbatch). */
export type SlurmWhere = S['SlurmWhere'];
/** A Kubernetes job: a TrainJob, a PyTorchJob or a plain indexed Job. */
export type KubernetesWhere = S['KubernetesWhere'];
export type Where = LocalWhere | NodesWhere | SlurmWhere | KubernetesWhere;
export type EngineName = Run['engine'];
export type EngineInfo = S['EngineInfo'];
/** GET runs/engines: every engine, whether it can run from this machine and why not. */
export type EngineList = S['EngineList'];
/** One node (machine, Slurm node or pod) of a run, with the global ranks it runs. */
export type NodeStatus = S['NodeStatus'];
export type NodeState = NodeStatus['state'];
export type Rendezvous = S['Rendezvous'];
/** A file an engine generated for a run (content only from GET runs/{id}/artifacts/{name}). */
export type Artifact = S['Artifact'];
export type ArtifactList = S['ArtifactList'];

export type RunStatus = Run['status'];
export type RunLauncher = Run['launcher'];
export type LabNeeds = LabSummary['needs'];
export type ParamType = ParamSpec['type'];
export type ParamValue = ParamSpec['default'];

/** Statuses after which a run never changes again. */
export const FINAL_STATUSES: ReadonlySet<RunStatus> = new Set<RunStatus>([
  'succeeded',
  'failed',
  'cancelled',
  'timed_out',
  'lost'
]);

/** One entry of a 400's detail: which parameter is wrong and why (the server's ParamError). */
export interface ParamProblem {
  param: string;
  message: string;
}

/* The run stream: what WS runs/{id}/stream sends. */

export type LogEvent = S['LogEvent'];
export type MetricEvent = S['MetricEvent'];
export type StatusEvent = S['StatusEvent'];
export type TruncatedEvent = S['TruncatedEvent'];
export type RunEvent = LogEvent | MetricEvent | StatusEvent | TruncatedEvent;
export type EventBatch = S['EventBatch'];
/** Sent instead of events when the run does not exist (the socket then closes with 4404). */
export type StreamError = S['SocketError'];
export type RunStreamMessage = EventBatch | StreamError;
