/** Words and numbers of the playground, kept pure so they read the same everywhere and can be tested. */

import type {
  ArchLimits,
  ArchList,
  CompileResult,
  Diagnostic,
  Occupancy,
  OccupancyLimiter,
  OutputCheck,
  RunError,
  RunMode,
  RunResult
} from '../api/types';
import { countDiagnostics } from './diagnostics';

/** "sm_90 · Hopper (H100, H200)". */
export function archLabel(arch: ArchLimits): string {
  return arch.examples ? `${arch.arch} · ${arch.family} (${arch.examples})` : `${arch.arch} · ${arch.family}`;
}

/** The arch to select first: this machine's GPU when the server compiles for it, else the server's default. */
export function initialArch(list: ArchList): string {
  const known = (arch: string | null | undefined): arch is string =>
    !!arch && list.archs.some(a => a.arch === arch);
  if (known(list.gpu_arch)) {
    return list.gpu_arch;
  }
  if (known(list.default_arch) || list.archs.length === 0) {
    return list.default_arch;
  }
  return list.archs[0].arch;
}

const LIMITER_WORDS: Record<string, string> & Record<OccupancyLimiter, string> = {
  warps: 'warps per SM',
  blocks: 'blocks per SM',
  registers: 'registers',
  shared_memory: 'shared memory'
};

/** What a limiter (or any blocks_limit key) is in words, e.g. 'shared memory'. */
export function limiterLabel(limiter: OccupancyLimiter | string): string {
  return LIMITER_WORDS[limiter] ?? limiter.replace(/_/g, ' ');
}

/** "48 warps of 64 per SM (75%), limited by registers", or the reason it cannot launch. */
export function occupancySummary(occupancy: Occupancy): string {
  if (occupancy.error) {
    return `Cannot launch ${occupancy.block_size} threads per block: ${occupancy.error}`;
  }
  const pct = Math.round(occupancy.occupancy * 100);
  return (
    `${occupancy.active_warps_per_sm} warps of ${occupancy.max_warps_per_sm} per SM (${pct}%), ` +
    `limited by ${limiterLabel(occupancy.limited_by)}`
  );
}

/** "4 blocks of 256 threads per SM; 32 registers per thread, 1.0 KiB shared per block". */
export function occupancyDetail(occupancy: Occupancy): string {
  return (
    `${occupancy.active_blocks_per_sm} block${occupancy.active_blocks_per_sm === 1 ? '' : 's'} of ` +
    `${occupancy.block_size} threads per SM; ${occupancy.registers_per_thread} registers per thread, ` +
    `${formatBytes(occupancy.shared_bytes_per_block)} shared per block`
  );
}

/** Bytes as "0 B", "48 B", "1.5 KiB", "2.0 MiB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  if (bytes < 1024 * 1024) {
    return `${(bytes / 1024).toFixed(1)} KiB`;
  }
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** Milliseconds with a sensible precision: "0.012 ms", "3.4 ms", "120 ms". */
export function formatMs(ms: number): string {
  if (ms >= 100) {
    return `${Math.round(ms)} ms`;
  }
  if (ms >= 1) {
    return `${ms.toFixed(1)} ms`;
  }
  return `${ms.toPrecision(2)} ms`;
}

/** The state of the compile status line. */
export type CompileState = 'idle' | 'compiling' | 'ok' | 'error';

/** The status line's words for a compile result: "Compiled in 85 ms", "Cached", "2 errors, 1 warning". */
export function compileSummary(result: CompileResult): string {
  const counts = countDiagnostics(result.diagnostics);
  if (!result.ok) {
    return counts || 'Did not compile (see the log)';
  }
  const done = result.cached ? 'Cached' : `Compiled in ${formatMs(result.timings.compile_ms + result.timings.sass_ms)}`;
  return counts ? `${done}, ${counts}` : done;
}

/** The text of the simulator's mode label: what it is and what it cannot show. */
export const SIMULATOR_LABEL =
  'Simulator (numba CUDA simulator: about 200 µs per thread, no timing meaning, no memory hierarchy)';

/** The CPU emulator's mode label (a CUDA C kernel run without a GPU). */
export const CPU_EMULATION_LABEL = "CPU emulation: results are exact, times are not a GPU's";

/** What produced a run's result, in words: the mode label. */
export function runModeLabel(mode: RunMode, device: string | null | undefined): string {
  if (mode === 'gpu') {
    return `GPU: ${device || 'unnamed device'}`;
  }
  if (mode === 'simulator') {
    return SIMULATOR_LABEL;
  }
  if (mode === 'cpu-emulation') {
    return CPU_EMULATION_LABEL;
  }
  return 'Compiled, not run: no GPU';
}

/** A one-line verdict of a run: "Passed: 1 output matches", "Failed: c has 3 mismatches", ... */
export function runVerdict(result: RunResult): string {
  switch (result.status) {
    case 'passed': {
      const checked = result.checks.filter(c => c.checked).length;
      return checked === 1 ? 'Passed: 1 output matches' : `Passed: ${checked} outputs match`;
    }
    case 'failed': {
      const bad = result.checks.filter(c => c.checked && !c.ok).map(c => `${c.name} (${c.mismatches} wrong)`);
      return `Failed: ${bad.join(', ') || 'an output does not match'}`;
    }
    case 'ran':
      return 'Ran (no expected values given, nothing checked)';
    case 'not_run':
      return 'Not run';
    default:
      return `Error: ${result.error?.kind.replace(/_/g, ' ') ?? 'unknown'}`;
  }
}

/** "thread (5, 0, 0) of block (2, 0, 0)" for a run error that names them, else ''. */
export function failingThread(thread: number[] | null | undefined, block: number[] | null | undefined): string {
  const dims = (v: number[]) => `(${v.join(', ')})`;
  if (thread && block) {
    return `thread ${dims(thread)} of block ${dims(block)}`;
  }
  if (thread) {
    return `thread ${dims(thread)}`;
  }
  if (block) {
    return `block ${dims(block)}`;
  }
  return '';
}

/** A run failure on a known source line as an editor mark (compile errors are marked by the compile). */
export function runErrorMark(error: RunError | null | undefined): Diagnostic | null {
  if (!error || !error.line || error.kind === 'compile_error') {
    return null;
  }
  const who = failingThread(error.thread, error.block);
  return {
    line: error.line,
    column: null,
    severity: 'error',
    message: `${error.kind.replace(/_/g, ' ')}${who ? ` in ${who}` : ''}: ${error.message}`
  };
}

/** An output value as the table shows it; NaN and the infinities arrive as text ("NaN", "-Infinity"). */
export function formatValue(value: unknown): string {
  if (typeof value === 'number') {
    return Number.isInteger(value) ? String(value) : value.toPrecision(6);
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The largest error of a checked output: null there means an infinite one (an overflow, or NaN against a number). */
export function formatMaxError(check: Pick<OutputCheck, 'checked' | 'max_abs_error' | 'mismatches'>): string {
  if (!check.checked) {
    return '';
  }
  if (check.max_abs_error === null || check.max_abs_error === undefined) {
    return check.mismatches ? 'infinite' : '';
  }
  return check.max_abs_error.toExponential(2);
}
