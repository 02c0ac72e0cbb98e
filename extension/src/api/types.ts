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
