/** Formatting of GPU and host numbers for display; no DOM, no JupyterLab. */

import type { RecordingInfo, TelemetryMode } from '../api/types';

export const GIB = 1024 ** 3;

/** Text shown for a field NVML refused to report. */
export const NOT_SUPPORTED = 'not supported';

/** Text shown for a value that is simply absent (no reading yet). */
export const NO_VALUE = '—';

/** Bytes as a human size in binary units: "512 B", "1.5 KiB", "79.6 GiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) {
    return NO_VALUE;
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const sign = bytes < 0 ? '-' : '';
  if (unit === 0) {
    return `${sign}${Math.round(value)} B`;
  }
  const digits = value >= 100 ? 0 : 1;
  return `${sign}${value.toFixed(digits)} ${units[unit]}`;
}

/** Bytes to GiB as a number (for charts and bars). */
export function bytesToGiB(bytes: number): number {
  return bytes / GIB;
}

/** A number with a fixed count of decimals and a unit suffix, e.g. "71.5 W". */
export function formatNumber(
  value: number | null | undefined,
  unit = '',
  digits = 0
): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return NO_VALUE;
  }
  const text = value.toFixed(digits);
  return unit ? `${text}${unit.startsWith('%') ? '' : ' '}${unit}` : text;
}

/** A percentage 0-100, e.g. "42 %". */
export function formatPercent(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return NO_VALUE;
  }
  return `${value.toFixed(digits)} %`;
}

/**
 * Format `record[field]`, saying "not supported" when NVML refused the field.
 *
 * `format` is applied only to a present numeric value.
 */
export function formatField<T extends { unsupported?: string[] }>(
  record: T | null | undefined,
  field: keyof T & string,
  format: (value: number) => string
): string {
  if (!record) {
    return NO_VALUE;
  }
  if (record.unsupported && record.unsupported.includes(field)) {
    return NOT_SUPPORTED;
  }
  const value = record[field] as unknown;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    return NO_VALUE;
  }
  return format(value);
}

/** Whether `field` of `record` is listed as unsupported by NVML. */
export function isUnsupported(
  record: { unsupported?: string[] } | null | undefined,
  field: string
): boolean {
  return !!record && !!record.unsupported && record.unsupported.includes(field);
}

/** What the mode badge says: which source the numbers come from. */
export function modeLabel(mode: TelemetryMode): string {
  switch (mode) {
    case 'gpu':
      return 'GPU (live NVML)';
    case 'replay':
      return 'Replay of a recorded NVML session';
    case 'cpu':
    default:
      return 'No GPU: host metrics only';
  }
}

/** What a mode without a GPU cannot show. */
export const NO_GPU_LIMITS =
  'Host metrics still stream. Without a GPU this view cannot show GPU utilisation, GPU memory, power or clocks.';

/** Seconds as a short window label: "30 s", "2 min". */
export function formatWindow(seconds: number): string {
  if (seconds >= 60 && seconds % 60 === 0) {
    return `${seconds / 60} min`;
  }
  return `${seconds} s`;
}

/** A rate in Hz without trailing zeros: "4 Hz", "0.5 Hz". */
export function formatRate(hz: number | null | undefined): string {
  if (hz === null || hz === undefined || !Number.isFinite(hz)) {
    return NO_VALUE;
  }
  return `${Number(hz.toFixed(2))} Hz`;
}

/**
 * One line on a replayed recording: what its time axis is, its length and rate, and
 * that it loops, e.g. "Time axis: time into the recording (0:50 long, recorded at 2 Hz,
 * looping). Host charts are this machine's."
 */
export function recordingSummary(recording: RecordingInfo): string {
  const parts: string[] = [];
  if (typeof recording.duration_s === 'number') {
    const whole = Math.round(recording.duration_s);
    parts.push(`${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')} long`);
  }
  if (typeof recording.rate_hz === 'number') {
    parts.push(`recorded at ${formatRate(recording.rate_hz)}`);
  }
  parts.push('looping');
  return `Time axis: time into the recording (${parts.join(', ')}). Host charts are this machine's.`;
}

/** The stream's state in a word: a replay is never "Live", whatever rate it is read at. */
export function streamLabel(paused: boolean, mode: TelemetryMode | null): 'Paused' | 'Replay' | 'Live' {
  if (paused) {
    return 'Paused';
  }
  return mode === 'replay' ? 'Replay' : 'Live';
}
