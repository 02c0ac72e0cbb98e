/**
 * Shapes of what the gpudojo server sends, mirroring server/gpudojo/gpu/models.py.
 *
 * Units are in the field names: bytes, pct (0-100), w (watts), c (Celsius), mhz, s.
 * Every optional numeric field may be null; when its name is in the record's
 * `unsupported` list the UI says "not supported" instead of showing 0.
 */

/** Where GPU data comes from: live NVML, a recorded NVML session, or no GPU at all. */
export type TelemetryMode = 'gpu' | 'replay' | 'cpu';

export type MigMode = 'enabled' | 'disabled' | 'unsupported';

export interface MigInstance {
  index: number;
  uuid?: string | null;
  name?: string | null;
  gpu_instance_id?: number | null;
  compute_instance_id?: number | null;
  memory_total_bytes?: number | null;
  memory_used_bytes?: number | null;
}

export interface MigState {
  current: MigMode;
  pending: MigMode;
  instances: MigInstance[];
}

export interface NvLinkState {
  link: number;
  active: boolean;
  remote_pci_bus_id?: string | null;
  remote_gpu_index?: number | null;
}

/** What does not change while the driver is loaded. */
export interface GpuFacts {
  index: number;
  name: string;
  uuid?: string | null;
  pci_bus_id?: string | null;
  /** e.g. '9.0' */
  compute_capability?: string | null;
  memory_total_bytes?: number | null;
  pcie_max_generation?: number | null;
  pcie_max_width?: number | null;
  power_limit_w?: number | null;
  max_sm_clock_mhz?: number | null;
  max_mem_clock_mhz?: number | null;
  mig: MigState;
  nvlinks: NvLinkState[];
  unsupported: string[];
}

export interface GpuProcess {
  pid: number;
  name?: string | null;
  kind: 'compute' | 'graphics';
  used_memory_bytes?: number | null;
}

/** One reading of a GPU's counters. */
export interface GpuSample {
  index: number;
  utilization_gpu_pct?: number | null;
  utilization_memory_pct?: number | null;
  memory_used_bytes?: number | null;
  memory_free_bytes?: number | null;
  power_w?: number | null;
  temperature_c?: number | null;
  sm_clock_mhz?: number | null;
  mem_clock_mhz?: number | null;
  pcie_generation?: number | null;
  pcie_width?: number | null;
  pcie_tx_bytes_per_s?: number | null;
  pcie_rx_bytes_per_s?: number | null;
  processes: GpuProcess[];
  unsupported: string[];
}

/** The GPU-to-GPU matrix that `nvidia-smi topo -m` prints (X, NV<n>, PIX, PXB, PHB, NODE, SYS). */
export interface Topology {
  gpus: number[];
  matrix: string[][];
}

export interface HostFacts {
  hostname: string;
  platform: string;
  cpu_model: string;
  cores_logical: number;
  cores_physical?: number | null;
  memory_total_bytes: number;
}

export interface HostSample {
  /** Whole-host CPU use, 0-100. */
  cpu_pct: number;
  memory_used_bytes: number;
  memory_available_bytes: number;
}

/** One tick of the telemetry stream; `t` is Unix time in seconds. */
export interface TelemetrySample {
  t: number;
  host: HostSample;
  gpus: GpuSample[];
}

export interface GpuDevice extends GpuFacts {
  sample: GpuSample | null;
}

/** GET gpu/devices: facts and a current reading of every GPU, and of the host. */
export interface DevicesResponse {
  available: boolean;
  reason: string | null;
  mode: TelemetryMode;
  source: 'nvml' | 'replay';
  driver_version?: string | null;
  cuda_driver_version?: string | null;
  nvml_version?: string | null;
  gpus: GpuDevice[];
  topology: Topology | null;
  host: HostFacts;
  host_sample: HostSample;
  /** Unix time of the reading (s). */
  t: number;
}

/** What a telemetry subscriber may send over its socket. */
export type TelemetryControl =
  | { type: 'pause' }
  | { type: 'resume' }
  | { type: 'rate'; hz: number };

/** First message on a telemetry socket: recent samples and the rate in force (Hz). */
export interface TelemetryHistoryMessage {
  type: 'history';
  rate_hz: number;
  max_hz: number;
  mode: TelemetryMode;
  samples: TelemetrySample[];
}

export interface TelemetrySampleMessage extends TelemetrySample {
  type: 'sample';
}

export interface TelemetryStateMessage {
  type: 'state';
  paused: boolean;
  rate_hz: number;
}

export interface TelemetryErrorMessage {
  type: 'error';
  error: { code: string; message: string; detail?: unknown };
}

export type TelemetryMessage =
  | TelemetryHistoryMessage
  | TelemetrySampleMessage
  | TelemetryStateMessage
  | TelemetryErrorMessage;

/** The body of every error the API returns with a 4xx/5xx status. */
export interface ApiErrorBody {
  error: { code: string; message: string; detail?: unknown };
}

/* Course: mirrors server/gpudojo/course/models.py. */

/** What an item's runnable cells need; a CPU path exists for the other two. */
export type CourseNeeds = 'cpu' | 'gpu' | 'multi-gpu';

export type CourseKind = 'lesson' | 'lab' | 'exercise';

export type ProgressStatus = 'not_started' | 'in_progress' | 'completed';

/** A manifest that could not be loaded: which file, which field, what is wrong. */
export interface CourseProblem {
  file: string;
  field?: string | null;
  message: string;
}

/** This user's progress on one item; times are Unix time (s). */
export interface ProgressEntry {
  kind: CourseKind;
  id: string;
  status: ProgressStatus;
  updated_at?: number | null;
  completed_at?: number | null;
  quiz_score?: number | null;
  quiz_total?: number | null;
}

/** What every course item declares (ItemMeta on the server). */
export interface CourseItemMeta {
  id: string;
  title: string;
  order: number;
  minutes: number;
  needs: CourseNeeds;
  cpu_path?: string | null;
}

export interface CatalogItem extends CourseItemMeta {
  kind: CourseKind;
  progress: ProgressEntry;
}

/** GET course/catalog: the course in order, with this user's progress, and what failed to load. */
export interface Catalog {
  lessons: CatalogItem[];
  labs: CatalogItem[];
  exercises: CatalogItem[];
  problems: CourseProblem[];
}

/** The `gpudojo:` block of a lesson's front matter. */
export interface LessonMeta extends CourseItemMeta {
  objectives: string[];
  labs: string[];
  exercises: string[];
}

export interface LessonCell {
  type: 'markdown' | 'code';
  source: string;
  needs_gpu: boolean;
  /** What the cell printed on a real GPU, for machines without one. */
  expected_output?: string | null;
  /** The GPU that printed expected_output, e.g. 'NVIDIA H100 80GB HBM3'. */
  expected_on?: string | null;
}

export interface TocEntry {
  /** Heading level, 1-6. */
  level: number;
  title: string;
}

export interface QuizChoicePublic {
  text: string;
}

export interface QuizQuestionPublic {
  id: string;
  kind: 'single' | 'multiple';
  prompt: string;
  choices: QuizChoicePublic[];
}

export interface RelatedItem {
  kind: CourseKind;
  id: string;
  title: string;
}

export interface QuestionResult {
  id: string;
  correct: boolean;
  /** Choice indexes, 0-based. */
  chosen: number[];
  correct_choices: number[];
  /** The why of every choice, in choice order. */
  explanations: string[];
}

export interface QuizResult {
  score: number;
  total: number;
  results: QuestionResult[];
}

/** GET course/lessons/{id}: the lesson to render, its quiz (without answers) and progress. */
export interface LessonDoc {
  meta: LessonMeta;
  cells: LessonCell[];
  toc: TocEntry[];
  quiz: QuizQuestionPublic[];
  related: RelatedItem[];
  next?: RelatedItem | null;
  progress: ProgressEntry;
  last_quiz?: QuizResult | null;
}

/** POST course/lessons/{id}/quiz: chosen choice indexes (0-based) per question id. */
export interface QuizAnswers {
  answers: Record<string, number[]>;
}

/** POST course/lessons/{id}/notebook's answer. */
export interface NotebookCopy {
  /** Relative to the server's root_dir. */
  path: string;
  /** False when an earlier copy was kept (the learner's edits are never lost). */
  created: boolean;
}
