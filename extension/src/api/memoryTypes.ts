/**
 * Shapes of the memory API: mirrors server/gpudojo/memory/models.py field for field.
 *
 * Bytes are named *_bytes (or `bytes`); times are microseconds named *_us on the
 * capture's own clock: wall clock when `axis` is 'time_us', else the event index.
 */

export type CaptureKind = 'cuda-snapshot' | 'cpu-profiler';

export type MemoryAxis = 'time_us' | 'event_index';

export interface MemoryFrame {
  filename: string;
  line: number;
  name: string;
}

/** A memory capture file: one rank of a run, or a snapshot from the workspace. */
export interface Capture {
  /** 'run:<run>:<file>' or 'file:' + a path relative to the server's root. */
  id: string;
  kind: CaptureKind;
  source: string;
  run: string | null;
  rank: number | null;
  size_bytes: number;
  label: string;
}

export interface CaptureList {
  captures: Capture[];
}

export interface CategoryTotal {
  category: string;
  bytes: number;
}

export interface FrameTotal {
  /** Index into the analysis' frames (-1: no user frame). */
  frame: number;
  bytes: number;
  count: number;
}

/** What was live at one moment, by category and by user frame (top 20, largest first). */
export interface Breakdown {
  t_us: number;
  total_bytes: number;
  by_category: CategoryTotal[];
  by_frame: FrameTotal[];
}

/** One way out of an OOM, with what the estimator says it saves. */
export interface MemoryFix {
  action: string;
  saving_bytes: number;
  detail: string;
}

export interface Oom {
  t_us: number;
  /** A CPU run's budget check (labkit), not a real out-of-memory error. */
  simulated?: boolean;
  requested_bytes: number;
  device_free_bytes?: number | null;
  device_total_bytes?: number | null;
  live: Breakdown;
  /** Cheapest first; empty without model context. */
  fixes: MemoryFix[];
}

/** GET memory/analysis and POST memory/analyze: what the viewer opens with. */
export interface Analysis {
  capture: Capture;
  axis: MemoryAxis;
  t_start_us: number;
  t_end_us: number;
  entries: number;
  allocations: number;
  categories: string[];
  category_source: 'profiler' | 'phases' | 'none';
  frames: MemoryFrame[];
  peak: Breakdown;
  ooms: Oom[];
  /** What this capture cannot show, and why. */
  notes: string[];
  analysis_ms: number;
  cached: boolean;
  /**
   * What labkit recorded about the model (parameters, optimizer, ...), to prefill the
   * estimator. Not in the server's contract yet: read when present, else the form's defaults.
   */
  context?: Partial<EstimateRequest> | null;
}

/** One allocation of a window: live over [start_us, end_us). */
export interface Band {
  /** Allocation index in the analysis. */
  id: number;
  start_us: number;
  end_us: number;
  size_bytes: number;
  /** Index into categories (-1: none). */
  category: number;
  /** Index into the analysis' frames (-1: none). */
  frame: number;
  addr: number;
}

/**
 * GET memory/window: what a viewport draws. At each of the px sample times,
 * other_bytes[i] + sum(size of bands live at times_us[i]) == sum_c by_category[c][i].
 */
export interface MemoryWindow {
  t0_us: number;
  t1_us: number;
  times_us: number[];
  by_category: number[][];
  other_bytes: number[];
  /** The `top` largest allocations overlapping the window, sorted by start. */
  bands: Band[];
  /** The frames the bands reference, by index (JSON object keys are strings). */
  frames: Record<string, MemoryFrame>;
}

export interface DiffRow {
  /** A category, or a frame as 'file:line name'. */
  key: string;
  a_bytes: number;
  b_bytes: number;
  delta_bytes: number;
}

/** GET memory/diff: two captures' peaks side by side (delta = b - a). */
export interface MemoryDiff {
  a: string;
  b: string;
  peak_a_bytes: number;
  peak_b_bytes: number;
  delta_bytes: number;
  by_category: DiffRow[];
  by_frame: DiffRow[];
}

export type OptimizerName = 'sgd' | 'sgd-momentum' | 'adam' | 'adamw';
export type TrainingPrecision = 'fp32' | 'mixed-fp16' | 'mixed-bf16' | 'bf16';
export type ZeroStage = 0 | 1 | 2 | 3;

/** POST memory/estimate: what training a model should take, by component. */
export interface EstimateRequest {
  parameters: number;
  optimizer: OptimizerName;
  precision: TrainingPrecision;
  zero_stage: ZeroStage;
  data_parallel: number;
  micro_batch: number;
  /** Without checkpointing. */
  activation_bytes_per_sample: number;
  checkpointing: boolean;
  layers: number;
  measured_peak_bytes?: number | null;
}

export type EstimateComponent =
  | 'parameters'
  | 'gradients'
  | 'optimizer_states'
  | 'master_weights'
  | 'activations';

export interface EstimateTerm {
  component: EstimateComponent;
  bytes: number;
  /** How it was computed, with the numbers. */
  formula: string;
}

export interface Estimate {
  terms: EstimateTerm[];
  total_bytes: number;
  measured_peak_bytes?: number | null;
  gap_bytes?: number | null;
  gap_explained: string[];
}

/** GET memory/progress: how far a capture's first analysis is. */
export interface AnalysisProgress {
  capture: string;
  phase: 'not_started' | 'queued' | 'reading' | 'pairing' | 'indexing' | 'done';
  /** Share of the file read (0-1), while reading. */
  fraction: number | null;
  elapsed_ms: number;
}
