/**
 * Named shapes of what the gpudojo server sends and takes, as aliases of the types
 * generated from its OpenAPI document (schema.ts, from server/gpudojo/api/openapi.json,
 * itself generated from the pydantic models: `make api-types` regenerates both).
 *
 * Units are in the field names: bytes, pct (0-100), w (watts), c (Celsius), mhz, s.
 * Every optional numeric field may be null; when its name is in the record's
 * `unsupported` list the UI says "not supported" instead of showing 0.
 */
import type { components } from './schema';
import type { LabSummary } from './runTypes';

type S = components['schemas'];

/* GPU and telemetry (server/gpudojo/gpu/models.py). */

export type MigInstance = S['MigInstance'];
export type MigState = S['MigState'];
export type MigMode = MigState['current'];
export type NvLinkState = S['NvLinkState'];
export type GpuProcess = S['GpuProcess'];
export type GpuSample = S['GpuSample'];
export type Topology = S['Topology'];
export type HostFacts = S['HostFacts'];
export type HostSample = S['HostSample'];
export type TelemetrySample = S['TelemetrySample'];
/** What a replayed recording is: synthetic or measured, its rate (Hz) and length (s). */
export type RecordingInfo = S['RecordingInfo'];
export type GpuDevice = S['GpuDevice'];
/** The static facts of a GPU (a device without its current reading). */
export type GpuFacts = Omit<GpuDevice, 'sample'>;
export type DevicesResponse = S['DevicesResponse'];
/** Where GPU data comes from: live NVML, a recorded NVML session, or no GPU at all. */
export type TelemetryMode = DevicesResponse['mode'];

/** What a telemetry subscriber may send over its socket. */
export type TelemetryControl = S['TelemetryControl'];
/** First message on a telemetry socket: recent samples and the rate in force (Hz). */
export type TelemetryHistoryMessage = S['TelemetryHistory'];
export type TelemetrySampleMessage = S['TelemetrySample'];
export type TelemetryStateMessage = S['TelemetryState'];
export type TelemetryErrorMessage = S['SocketError'];
export type TelemetryMessage =
  | TelemetryHistoryMessage
  | TelemetrySampleMessage
  | TelemetryStateMessage
  | TelemetryErrorMessage;

/** The body of every error the API returns with a 4xx/5xx status. */
export type ApiErrorBody = S['Error'];

/* Course (server/gpudojo/course/models.py). */

export type ProgressEntry = S['ProgressEntry'];
export type CatalogItem = S['CatalogItem'];
export type Catalog = S['Catalog'];
/** A manifest that could not be loaded: which file, which field, what is wrong. */
export type CourseProblem = S['Problem'];
export type LessonMeta = S['LessonMeta'];
export type LessonCell = S['LessonCell'];
export type TocEntry = S['TocEntry'];
export type QuizChoicePublic = S['QuizChoicePublic'];
export type QuizQuestionPublic = S['QuizQuestionPublic'];
export type RelatedItem = S['RelatedItem'];
export type QuestionResult = S['QuestionResult'];
export type QuizResult = S['QuizResult'];
export type LessonDoc = S['LessonDoc'];
export type QuizAnswers = S['QuizAnswers'];
export type NotebookCopy = S['NotebookCopy'];
/** A lab's README, to render as markdown. */
export type LabReadme = S['LabReadme'];
/** What every course item has: lessons, labs and exercises alike. */
export type CourseItemMeta = Omit<CatalogItem, 'progress'>;
/** What an item's runnable cells need; a CPU path exists for the other two. */
export type CourseNeeds = CatalogItem['needs'];
export type CourseKind = CatalogItem['kind'];
export type ProgressStatus = ProgressEntry['status'];
export type ModuleTestAttempt = S['ModuleTestAttempt'];
export type ModuleTestScores = S['ModuleTestScores'];
export type ModuleTestDoc = S['ModuleTestDoc'];
export type ModuleTestGraded = S['ModuleTestGraded'];
export type AcceptanceRequirement = S['AcceptanceRequirement'];
export type AcceptanceRequirementKind = AcceptanceRequirement['kind'];
export type AcceptanceItem = S['AcceptanceItem'];
export type Acceptance = S['Acceptance'];
/** One entry of the course reading list (content/resources/reading.md). */
export type ReadingEntry = S['ReadingEntry'];
export type ReadingList = S['ReadingList'];

/* Exercises (server/gpudojo/course/models.py). */
export type RequirementSpec = S['RequirementSpec'];
export type ExerciseMeta = S['ExerciseMeta'];
export type ExerciseFigure = S['Figure'];
export type RequirementResult = S['RequirementResult'];
export type RequirementOutcome = RequirementResult['outcome'];
export type CheckAttempt = S['CheckAttempt'];
export type CheckMode = CheckAttempt['mode'];
export type AttemptSummary = S['AttemptSummary'];
export type ExerciseWorkspace = S['ExerciseWorkspace'];
export type ExerciseDoc = S['ExerciseDoc'];
export type ExerciseStart = S['ExerciseStart'];

/* Kernels (server/gpudojo/kernels/models.py). Lines and columns are 1-based. */

export type CompileOptions = S['CompileOptions'];
export type CompileRequest = S['CompileRequest'];
export type Diagnostic = S['Diagnostic'];
export type SassInstruction = S['SassInstruction'];
export type Occupancy = S['Occupancy'];
export type OccupancyPoint = S['OccupancyPoint'];
export type KernelReport = S['KernelReport'];
export type CompileTimings = S['CompileTimings'];
export type CompileResult = S['CompileResult'];
export type ArchLimits = S['ArchLimits'];
export type ArchList = S['ArchList'];
export type OccupancyRequest = S['OccupancyRequest'];
export type OccupancyReport = S['OccupancyReport'];
export type ArrayArg = S['ArrayArg-Input'];
export type ScalarArg = S['ScalarArg-Input'];
export type KernelArg = ArrayArg | ScalarArg;
export type RunRequest = S['RunRequest'];
export type OutputCheck = S['OutputCheck'];
export type RunTiming = S['RunTiming'];
export type RunError = S['RunError'];
export type RunResult = S['RunResult'];
export type MemoryReport = S['MemoryReport'];
export type MemoryAccessLine = S['MemoryAccessLine'];
export type MemoryAccessTotals = S['MemoryAccessTotals'];
export type ArrayWriters = S['ArrayWriters'];
export type KernelExample = S['KernelExample'];
export type KernelExampleProblem = S['KernelExampleProblem'];
export type KernelExamples = S['KernelExamples'];
export type KernelLanguage = NonNullable<CompileRequest['language']>;
export type DiagnosticSeverity = Diagnostic['severity'];
/** The resource that caps the blocks per SM. */
export type OccupancyLimiter = Occupancy['limited_by'];
export type ArrayDtype = NonNullable<ArrayArg['dtype']>;
export type ScalarDtype = NonNullable<ScalarArg['dtype']>;
/** Where a run happened: a real GPU, numba's CUDA simulator, or nowhere (compiled only). */
export type RunMode = RunResult['mode'];
export type RunErrorKind = RunError['kind'];

/* Runs (server/gpudojo/runs/models.py). */
export * from './runTypes';

/* Memory (server/gpudojo/memory/models.py). */
export * from './memoryTypes';

/* Profiles (server/gpudojo/profile/models.py). Times are microseconds (us) on the trace's own clock. */

export type Trace = S['Trace'];
export type TraceList = S['TraceList'];
/** What a trace can and cannot show (GPU or CPU-only). */
export type ProfileMode = S['Mode'];
export type TraceMode = ProfileMode['kind'];
export type CategoryTime = S['CategoryTime'];
/** Where step time goes: compute, communication, data_loading, memcpy, sync, idle. */
export type ProfileCategory = CategoryTime['category'];
export type ProfileStep = S['Step'];
export type OpRow = S['OpRow'];
export type KernelRow = S['KernelRow'];
export type LaunchStats = S['LaunchStats'];
export type SyncSite = S['SyncSite'];
export type Overlap = S['Overlap'];
export type Finding = S['Finding'];
export type FindingSeverity = Finding['severity'];
export type Lane = S['Lane'];
export type LaneKind = Lane['kind'];
export type ProfileSummary = S['ProfileSummary'];
/** GET profile/progress: how far a trace's first analysis is. */
export type ProfileProgress = S['ProfileProgress'];
export type Span = S['Span'];
export type LaneWindow = S['LaneWindow'];
export type ProfileWindow = S['ProfileWindow'];
export type EventDetail = S['EventDetail'];
export type BreakdownDiffRow = S['BreakdownDiffRow'];
export type OpDiffRow = S['OpDiffRow'];
export type ProfileDiff = S['ProfileDiff'];
export type RunFacts = S['RunFacts'];
export type RunDifference = S['RunDifference'];

/*
 * What a run records besides its logs and metrics. The server's models have
 * LabSummary.records, Run.record_profile and the requests' record_profile; until
 * `make api-types` regenerates schema.ts with them they are typed here as optional
 * fields, which stay compatible once the generated types carry them.
 */

/** What a lab's script can record when a run asks: the run form offers "Record <it>" for these. */
export type Recording = LabSummary['records'][number];
/** The recording flags a run request carries (absent: not asked). */
export type RunRecording = { record_memory?: boolean; record_profile?: boolean };
