/** Words and numbers of the memory viewer: bytes, times on a capture's axis, frames, axis ticks. */

import type { MemoryAxis, MemoryFrame } from '../api/types';

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** "512 B", "4.0 KiB", "1.50 MiB", "8.00 GiB" (binary units, as the allocator counts). */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) {
    return '—';
  }
  const sign = bytes < 0 ? '-' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) {
    return `${sign}${Math.round(value)} B`;
  }
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${sign}${value.toFixed(digits)} ${BYTE_UNITS[unit]}`;
}

/** A signed delta: "+1.00 MiB", "-512 B", "0 B". */
export function formatDelta(bytes: number): string {
  return bytes > 0 ? `+${formatBytes(bytes)}` : formatBytes(bytes);
}

/**
 * A time on the capture's axis relative to its start: "850 µs", "12.5 ms", "3.20 s"
 * for wall clock (`us` in µs), "event 1234" for the event-index axis.
 */
export function formatAxisTime(us: number, axis: MemoryAxis, startUs = 0): string {
  const t = us - startUs;
  if (axis === 'event_index') {
    return `event ${Math.round(t)}`;
  }
  const abs = Math.abs(t);
  if (abs < 1000) {
    return `${trim(t, abs < 10 ? 1 : 0)} µs`;
  }
  if (abs < 1_000_000) {
    const ms = t / 1000;
    return `${trim(ms, Math.abs(ms) < 10 ? 2 : Math.abs(ms) < 100 ? 1 : 0)} ms`;
  }
  const s = t / 1_000_000;
  return `${trim(s, Math.abs(s) < 10 ? 2 : 1)} s`;
}

function trim(value: number, digits: number): string {
  return value.toFixed(digits);
}

/** A live interval in words: "12.5 ms → 30.1 ms (17.6 ms)" or "event 10 → event 52 (42 events)". */
export function formatInterval(startUs: number, endUs: number, axis: MemoryAxis, originUs: number): string {
  const span = endUs - startUs;
  const length = axis === 'event_index' ? `${Math.round(span)} events` : formatAxisTime(span, axis);
  return `${formatAxisTime(startUs, axis, originUs)} → ${formatAxisTime(endUs, axis, originUs)} (${length})`;
}

/** "train.py:42 forward" (the file's last path part), or the fallback when there is no frame. */
export function formatFrame(frame: MemoryFrame | null | undefined, fallback = 'no user frame'): string {
  if (!frame) {
    return fallback;
  }
  const file = frame.filename.split('/').pop() || frame.filename;
  return `${file}:${frame.line} ${frame.name}`;
}

/** "0x7f0000100000" */
export function formatAddress(addr: number): string {
  return `0x${Math.max(0, Math.floor(addr)).toString(16)}`;
}

/** About `count` round tick values covering [lo, hi] (steps of 1, 2 or 5 × 10^k). */
export function niceTicks(lo: number, hi: number, count: number): number[] {
  if (!(hi > lo) || count < 1) {
    return [lo];
  }
  const raw = (hi - lo) / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * power).find(s => s >= raw) ?? 10 * power;
  const ticks: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  }
  return ticks;
}

/** Byte ticks at powers of two times 1, 2 or 5 of a binary unit (so labels read "256 MiB", not "268 MB"). */
export function byteTicks(maxBytes: number, count: number): number[] {
  if (!(maxBytes > 0)) {
    return [0];
  }
  let unit = 1;
  while (unit * 1024 <= maxBytes) {
    unit *= 1024;
  }
  return niceTicks(0, maxBytes / unit, count).map(v => v * unit);
}
