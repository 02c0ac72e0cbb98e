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
  /** A lab's launcher ('python' or 'torchrun'); null for lessons and exercises. */
  launcher?: string | null;
  progress: ProgressEntry;
}

/** GET course/catalog: the course in order, with this user's progress, and what failed to load. */
export interface Catalog {
  lessons: CatalogItem[];
  labs: CatalogItem[];
  exercises: CatalogItem[];
  problems: CourseProblem[];
  /** GPUs a run can use on this machine (0: labs take their CPU path). */
  gpus?: number;
  /** The module test's scores; null when the course has none. */
  module_test?: ModuleTestScores | null;
}

/** One graded attempt at the module test. */
export interface ModuleTestAttempt {
  score: number;
  total: number;
  /** Unix time (s). */
  at: number;
}

/** The module test as the Course section shows it: size, pass mark, last and best attempt. */
export interface ModuleTestScores {
  title: string;
  questions: number;
  /** Right answers needed to pass. */
  pass_score: number;
  attempts: number;
  last?: ModuleTestAttempt | null;
  best?: ModuleTestAttempt | null;
  /** The best attempt reached the pass score. */
  passed: boolean;
}

/** GET course/module-test: questions without answers, scores, the last graded attempt. */
export interface ModuleTestDoc {
  title: string;
  questions: QuizQuestionPublic[];
  scores: ModuleTestScores;
  last_result?: QuizResult | null;
}

/** POST course/module-test's answer. */
export interface ModuleTestGraded {
  result: QuizResult;
  scores: ModuleTestScores;
}

export type AcceptanceRequirementKind = CourseKind | 'module-test';

export interface AcceptanceRequirement {
  kind: AcceptanceRequirementKind;
  id?: string | null;
  title: string;
  /** False when the item is not in the course yet: it does not count. */
  available: boolean;
  done: boolean;
  /** What done means, or why it is not available. */
  detail: string;
}

export interface AcceptanceItem {
  id: string;
  text: string;
  requires: AcceptanceRequirement[];
  /** Every available requirement is done, and at least one is available. */
  done: boolean;
  available: number;
  completed: number;
}

/** GET course/acceptance: what a learner can do at the end, ticked from their progress. */
export interface Acceptance {
  items: AcceptanceItem[];
  problems?: CourseProblem[];
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
  /** The GPU the expected output is for, e.g. 'NVIDIA H100 80GB HBM3'. */
  expected_on?: string | null;
  /** GPUs the cell needs (needs_gpu cells; 1 when absent). */
  gpus?: number;
  /** written: composed from datasheets and docs, no GPU ran it; captured: printed by a real GPU. */
  expected_kind?: 'written' | 'captured' | null;
  /** The datasheet or doc a written expected output comes from. */
  expected_source?: string | null;
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

/* Kernels: mirrors server/gpudojo/kernels/models.py. Lines and columns are 1-based. */

export type KernelLanguage = 'cuda' | 'numba';

export type DiagnosticSeverity = 'error' | 'warning' | 'note';

/** The resource that caps the blocks per SM. */
export type OccupancyLimiter = 'warps' | 'blocks' | 'registers' | 'shared_memory';

export type ArrayDtype =
  | 'float16'
  | 'float32'
  | 'float64'
  | 'int8'
  | 'int32'
  | 'int64'
  | 'uint8'
  | 'uint32'
  | 'uint64';

export type ScalarDtype = 'float32' | 'float64' | 'int32' | 'int64' | 'uint32' | 'uint64';

/** Where a run happened: a real GPU, numba's CUDA simulator, or nowhere (compiled only). */
export type RunMode = 'gpu' | 'simulator' | 'none';

/** The compiler options a learner may set (the server passes nothing else to the compiler). */
export interface CompileOptions {
  /** ptxas optimisation level, 0-3. */
  opt_level?: number;
  /** -maxrregcount, 16-255, or null for the compiler's choice. */
  max_registers?: number | null;
  fast_math?: boolean;
  /** -D NAME=VALUE (CUDA C only). */
  defines?: Record<string, string>;
  std?: 'c++11' | 'c++14' | 'c++17' | 'c++20';
}

/** POST kernels/compile. */
export interface CompileRequest {
  source: string;
  language?: KernelLanguage;
  /** e.g. 'sm_90'. */
  arch?: string;
  options?: CompileOptions;
  /** numba only: kernel name -> signature, for kernels whose @cuda.jit names none. */
  signatures?: Record<string, string>;
  sass?: boolean;
  /** Threads per block for the occupancy figure. */
  block_size?: number;
  dynamic_shared_bytes?: number;
}

export interface Diagnostic {
  /** 1-based line in the source sent; null when the compiler named none. */
  line?: number | null;
  column?: number | null;
  severity: DiagnosticSeverity;
  message: string;
}

export interface SassInstruction {
  /** Byte offset in the function. */
  offset: number;
  text: string;
  /** Source line this instruction came from, when known. */
  line?: number | null;
}

/** Theoretical occupancy of one kernel at one block size on one architecture. */
export interface Occupancy {
  block_size: number;
  registers_per_thread: number;
  /** Static + dynamic + the per-block reserve. */
  shared_bytes_per_block: number;
  active_blocks_per_sm: number;
  active_warps_per_sm: number;
  max_warps_per_sm: number;
  /** Active warps / max warps, 0..1. */
  occupancy: number;
  limited_by: OccupancyLimiter;
  /** Blocks per SM each resource allows. */
  blocks_limit: Record<string, number>;
  /** Why this kernel cannot launch at this size, if it cannot. */
  error?: string | null;
}

export interface OccupancyPoint {
  block_size: number;
  active_warps_per_sm: number;
  /** 0..1 */
  occupancy: number;
  limited_by: OccupancyLimiter;
}

/** Resources of one compiled kernel. */
export interface KernelReport {
  /** The name in the source (demangled). */
  name: string;
  /** The symbol in the cubin. */
  symbol: string;
  registers: number;
  /** Static shared memory per block. */
  shared_bytes: number;
  constant_bytes: number;
  stack_bytes: number;
  local_bytes?: number;
  spill_stores_bytes: number;
  spill_loads_bytes: number;
  barriers: number;
  sass: SassInstruction[];
  occupancy: Occupancy;
  /** Occupancy over block sizes 32..1024 (step 32). */
  curve: OccupancyPoint[];
}

export interface CompileTimings {
  compile_ms: number;
  sass_ms: number;
  total_ms: number;
}

/** POST kernels/compile's answer: ok false (with diagnostics) when the code does not compile. */
export interface CompileResult {
  ok: boolean;
  language: KernelLanguage;
  arch: string;
  cached: boolean;
  /** The cache key: a hash of source, language, arch and options. */
  key: string;
  /** What compiled it, with versions. */
  compiler: string;
  diagnostics: Diagnostic[];
  log: string;
  ptx: string;
  /** For each PTX line, the source line it came from. */
  ptx_lines: Array<number | null>;
  kernels: KernelReport[];
  /** Outputs cut at the size cap: 'ptx', 'sass'. */
  truncated: string[];
  timings: CompileTimings;
}

/** Per-SM limits of one architecture. */
export interface ArchLimits {
  arch: string;
  compute_capability: string;
  /** e.g. 'Ampere'. */
  family: string;
  /** GPUs with this architecture. */
  examples: string;
  max_threads_per_block: number;
  max_warps_per_sm: number;
  max_blocks_per_sm: number;
  registers_per_sm: number;
  max_registers_per_thread: number;
  register_allocation_unit: number;
  shared_bytes_per_sm: number;
  max_shared_bytes_per_block: number;
  shared_allocation_unit: number;
  reserved_shared_bytes_per_block: number;
  warp_size: number;
}

/** GET kernels/archs: the architectures this server compiles for, and the compilers found. */
export interface ArchList {
  archs: ArchLimits[];
  default_arch: string;
  nvrtc_version?: string | null;
  numba_available: boolean;
  /** Why kernels cannot be compiled here, when they cannot. */
  compiler_problem?: string | null;
  /** The architecture of GPU 0, when there is one. */
  gpu_arch?: string | null;
  /** GPU 0's name, when this machine has a GPU. */
  gpu_name?: string | null;
  max_source_bytes: number;
  simulator_max_threads: number;
}

/** POST kernels/occupancy. */
export interface OccupancyRequest {
  arch: string;
  registers_per_thread: number;
  /** Static + dynamic shared memory per block. */
  shared_bytes_per_block?: number;
  block_size: number;
}

export interface OccupancyReport {
  occupancy: Occupancy;
  curve: OccupancyPoint[];
}

export interface ArrayArg {
  kind: 'array';
  name: string;
  dtype?: ArrayDtype;
  /** 1 to 3 dimensions, each at least 1. */
  shape: number[];
  init?: 'zeros' | 'ones' | 'arange' | 'random' | 'full';
  /** Fill value for init 'full'. */
  value?: number;
  /** Seed for init 'random'. */
  seed?: number;
  /** Read back after the launch and checked. */
  output?: boolean;
}

export interface ScalarArg {
  kind: 'scalar';
  name: string;
  dtype?: ScalarDtype;
  value: number;
}

export type KernelArg = ArrayArg | ScalarArg;

/** POST kernels/run. */
export interface RunRequest {
  source: string;
  language?: KernelLanguage;
  /** extern "C" name, or the Python name. */
  kernel: string;
  grid: number[];
  block: number[];
  /** Dynamic shared memory per block. */
  shared_bytes?: number;
  args: KernelArg[];
  /** Output name -> NumPy expression over the inputs, e.g. 'a * x + y'. */
  expected?: Record<string, string>;
  rtol?: number;
  atol?: number;
  warmup?: number;
  repeats?: number;
  arch?: string | null;
  options?: CompileOptions;
  mode?: 'auto' | 'gpu' | 'simulator';
}

export interface OutputCheck {
  name: string;
  ok: boolean;
  /** False when no expected expression was given. */
  checked: boolean;
  max_abs_error?: number | null;
  mismatches: number;
  /** {index, got, expected} of the first wrong element. */
  first_mismatch?: { index: number[]; got: number; expected: number } | null;
  /** The first values of the output. */
  preview: number[];
}

export interface RunTiming {
  warmup: number;
  repeats: number;
  mean_ms: number;
  min_ms: number;
  max_ms: number;
  /** e.g. 'CUDA events' or 'wall clock (simulator)'. */
  method: string;
}

export type RunErrorKind =
  | 'compile_error'
  | 'launch_error'
  | 'out_of_bounds'
  | 'illegal_address'
  | 'timeout'
  | 'crashed'
  | 'bad_spec'
  | 'check_error'
  | 'exception';

export interface RunError {
  kind: RunErrorKind;
  message: string;
  /** threadIdx of the failing thread, when known. */
  thread?: number[] | null;
  /** blockIdx of the failing thread, when known. */
  block?: number[] | null;
  line?: number | null;
}

/** POST kernels/run's answer; `mode` says what produced it. */
export interface RunResult {
  status: 'passed' | 'failed' | 'ran' | 'not_run' | 'error';
  mode: RunMode;
  /** What this mode is and what it cannot show. */
  mode_note: string;
  device?: string | null;
  checks: OutputCheck[];
  timing?: RunTiming | null;
  error?: RunError | null;
  stdout: string;
  /** The compile report (always for CUDA C). */
  compile?: CompileResult | null;
  wall_ms: number;
}

/** A launch a lab offers to the playground: a [[kernels]] entry of its lab.toml, with the file's source. */
export interface KernelExample {
  /** The lab's id. */
  lab: string;
  /** Position among the lab's kernels (0-based). */
  index: number;
  title: string;
  /** The file in the lab's folder the source came from. */
  file: string;
  language: KernelLanguage;
  /** extern "C" name, or the Python name. */
  kernel: string;
  grid: number[];
  block: number[];
  /** Dynamic shared memory per block (bytes). */
  shared_bytes: number;
  args: KernelArg[];
  /** Output name -> NumPy expression over the inputs. */
  expected: Record<string, string>;
  source: string;
}

/** A [[kernels]] entry the server could not offer, and why. */
export interface KernelExampleProblem {
  lab: string;
  /** Position among the lab's kernels; null when the whole lab.toml failed. */
  index?: number | null;
  message: string;
}

/** GET kernels/examples: the kernels labs offer to the playground. */
export interface KernelExamples {
  examples: KernelExample[];
  problems: KernelExampleProblem[];
}

/* Runs: mirrors server/gpudojo/runs/models.py (kept in its own file for size). */
export * from './runTypes';

/* Memory: mirrors server/gpudojo/memory/models.py. */
export * from './memoryTypes';
