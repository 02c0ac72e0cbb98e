/**
 * Named shapes of the memory API: aliases of the generated types (schema.ts) of
 * server/gpudojo/memory/models.py. Sizes in bytes, times in microseconds (us).
 */
import type { components } from './schema';

type S = components['schemas'];

export type MemoryFrame = S['Frame'];
export type Capture = S['Capture'];
export type CaptureList = S['CaptureList'];
export type CategoryTotal = S['CategoryTotal'];
export type FrameTotal = S['FrameTotal'];
export type Breakdown = S['Breakdown'];
export type MemoryFix = S['Fix'];
export type Oom = S['Oom'];
export type Analysis = S['Analysis'];
export type Band = S['Band'];
export type MemoryWindow = S['Window'];
export type DiffRow = S['DiffRow'];
export type MemoryDiff = S['Diff'];
/** POST memory/estimate: what training a model should take, by component. The client
 * always sends every field but the measured peak (the server's defaults are for other callers). */
export type EstimateRequest = Required<Omit<S['EstimateRequest'], 'measured_peak_bytes'>> &
  Pick<S['EstimateRequest'], 'measured_peak_bytes'>;
export type EstimateTerm = S['EstimateTerm'];
export type Estimate = S['Estimate'];
/** POST memory/estimate-transformer: a transformer's shape and parallel layout; the client sends every field. */
export type TransformerEstimateRequest = Required<S['TransformerEstimateRequest']>;
export type TransformerEstimate = S['TransformerEstimate'];
export type Recompute = TransformerEstimateRequest['recompute'];

export type CaptureKind = Capture['kind'];
export type MemoryAxis = Analysis['axis'];
export type OptimizerName = EstimateRequest['optimizer'];
export type TrainingPrecision = EstimateRequest['precision'];
export type ZeroStage = EstimateRequest['zero_stage'];
export type EstimateComponent = EstimateTerm['component'];

/** GET memory/progress: how far a capture's first analysis is. */
export type AnalysisProgress = S['AnalysisProgress'];
