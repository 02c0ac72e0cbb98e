/**
 * Turning telemetry samples into chart series: one x array (Unix seconds, or the
 * recording's time in a replay) and one y array per GPU, aligned, with null where a
 * GPU or a field is missing.
 */

import type { GpuSample, TelemetrySample } from '../api/types';
import { GIB } from './format';

/** Charts drawn per GPU, one series per GPU index. */
export type GpuMetricId =
  | 'utilization'
  | 'memory'
  | 'power'
  | 'temperature'
  | 'sm_clock';

/** Charts drawn for the host. */
export type HostMetricId = 'host_cpu' | 'host_memory';

export type MetricId = GpuMetricId | HostMetricId;

export interface MetricSpec<Id extends string> {
  id: Id;
  /** Chart title with its unit. */
  title: string;
  /** Unit shown on the y axis. */
  unit: string;
  /** Fixed y range when the metric has a natural one (e.g. 0-100 %). */
  range?: [number, number];
}

export interface GpuMetricSpec extends MetricSpec<GpuMetricId> {
  /** The GpuSample field read (also the name NVML lists as unsupported). */
  field: keyof GpuSample & string;
  /** Conversion from the field's unit to the chart's unit. */
  scale: number;
}

export interface HostMetricSpec extends MetricSpec<HostMetricId> {
  read: (sample: TelemetrySample) => number | null;
}

export const GPU_METRICS: ReadonlyArray<GpuMetricSpec> = [
  {
    id: 'utilization',
    title: 'GPU utilization (%)',
    unit: '%',
    field: 'utilization_gpu_pct',
    scale: 1,
    range: [0, 100]
  },
  {
    id: 'memory',
    title: 'GPU memory used (GiB)',
    unit: 'GiB',
    field: 'memory_used_bytes',
    scale: 1 / GIB
  },
  { id: 'power', title: 'Power (W)', unit: 'W', field: 'power_w', scale: 1 },
  {
    id: 'temperature',
    title: 'Temperature (°C)',
    unit: '°C',
    field: 'temperature_c',
    scale: 1
  },
  {
    id: 'sm_clock',
    title: 'SM clock (MHz)',
    unit: 'MHz',
    field: 'sm_clock_mhz',
    scale: 1
  }
];

export const HOST_METRICS: ReadonlyArray<HostMetricSpec> = [
  {
    id: 'host_cpu',
    title: 'Host CPU (%)',
    unit: '%',
    range: [0, 100],
    read: s => finiteOrNull(s.host?.cpu_pct)
  },
  {
    id: 'host_memory',
    title: 'Host memory used (GiB)',
    unit: 'GiB',
    read: s => {
      const used = finiteOrNull(s.host?.memory_used_bytes);
      return used === null ? null : used / GIB;
    }
  }
];

/** uPlot's data shape: xs then one ys array per series, all the same length. */
export type AlignedSeries = [number[], ...(number | null)[][]];

function finiteOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * The x of a sample: its recording time in a replay (s, increasing across passes),
 * else its Unix time (s). One function, so the axis, the hover and the window agree.
 */
export function sampleTime(sample: TelemetrySample): number {
  const t = sample.recording_t;
  return typeof t === 'number' && Number.isFinite(t) ? t : sample.t;
}

/** The value of `field` in a GPU sample in chart units, or null when missing or unsupported. */
export function gpuValue(
  sample: GpuSample | undefined,
  spec: GpuMetricSpec
): number | null {
  if (!sample) {
    return null;
  }
  if (sample.unsupported && sample.unsupported.includes(spec.field)) {
    return null;
  }
  const value = finiteOrNull(sample[spec.field]);
  return value === null ? null : value * spec.scale;
}

/** Sorted union of the GPU indices seen in `samples`. */
export function gpuIndices(samples: ReadonlyArray<TelemetrySample>): number[] {
  const seen = new Set<number>();
  for (const sample of samples) {
    for (const gpu of sample.gpus) {
      seen.add(gpu.index);
    }
  }
  return Array.from(seen).sort((a, b) => a - b);
}

/**
 * Aligned series of one GPU metric: `[xs, ys for gpus[0], ys for gpus[1], ...]`.
 *
 * xs are sample times (sampleTime); a GPU absent from a sample, or a field
 * NVML reports as unsupported, gives null (a gap in the chart, never a 0).
 */
export function gpuSeries(
  samples: ReadonlyArray<TelemetrySample>,
  spec: GpuMetricSpec,
  gpus: ReadonlyArray<number> = gpuIndices(samples)
): AlignedSeries {
  const xs: number[] = new Array(samples.length);
  const ys: (number | null)[][] = gpus.map(() => new Array(samples.length));
  const column = new Map<number, number>();
  gpus.forEach((index, i) => column.set(index, i));
  for (let row = 0; row < samples.length; row++) {
    const sample = samples[row];
    xs[row] = sampleTime(sample);
    for (let i = 0; i < gpus.length; i++) {
      ys[i][row] = null;
    }
    for (const gpu of sample.gpus) {
      const i = column.get(gpu.index);
      if (i !== undefined) {
        ys[i][row] = gpuValue(gpu, spec);
      }
    }
  }
  return [xs, ...ys];
}

/** Aligned series of one host metric: `[xs, ys]`. */
export function hostSeries(
  samples: ReadonlyArray<TelemetrySample>,
  spec: HostMetricSpec
): AlignedSeries {
  const xs: number[] = new Array(samples.length);
  const ys: (number | null)[] = new Array(samples.length);
  for (let row = 0; row < samples.length; row++) {
    xs[row] = sampleTime(samples[row]);
    ys[row] = spec.read(samples[row]);
  }
  return [xs, ys];
}
