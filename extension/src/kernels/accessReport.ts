/**
 * The CPU emulator's memory-access report in words: per source line, global
 * sectors per request against the coalesced minimum and shared bank conflicts
 * against the conflict-free passes, the most wasteful lines first. Pure, so
 * the playground, its tests and any other view read it the same way.
 */

import type { ArrayWriters, MemoryAccessLine, MemoryAccessTotals, MemoryReport } from '../api/types';

/**
 * Where the counts come from and what they cannot show, said with every report
 * (DESIGN: the UI says which mode produced a result and what that mode cannot show).
 */
export const ACCESS_REPORT_SOURCE =
  "Counted by gpudojo's CPU emulator for each warp instruction (32 threads by thread id), not measured by hardware counters. " +
  'It shows how each warp touched memory; it cannot show caches (L1/L2 hits), DRAM bandwidth, timing or ' +
  'accesses that overlap between blocks. On a GPU, Nsight Compute measures those.';

/** A ratio within this of 1 is ideal: the per-request figures are rounded to 3 decimals. */
const IDEAL_SLACK = 1.005;

/** One row of the report, ready to show. */
export interface AccessRow {
  /** Source line (1-based), or null for an access outside the kernel's file. */
  line: number | null;
  space: MemoryAccessLine['space'];
  /** "load/store", "atomic", ... */
  ops: string;
  requests: number;
  /** What one request cost, in words: "18 sectors per request (min 4)", "32-way bank conflict (ideal 1-way)". */
  figure: string;
  /** How much worse than ideal, in words: "4.5× the minimum", "coalesced", "no bank conflict". */
  verdict: string;
  /** Transactions spent over the ideal: sectors (global) or bank passes (shared). */
  excess: number;
  /** Spent over ideal: sectors/min_sectors or wavefronts/ideal_wavefronts; 1 is ideal. */
  ratio: number;
  /** True when the line spends more than the ideal. */
  wasteful: boolean;
}

/** A number as the report writes it: integers plain, others to at most 2 decimals ("4", "4.5", "1.33"). */
export function formatCount(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(2)));
}

function ratioOf(spent: number, ideal: number): number {
  if (ideal > 0) {
    return spent / ideal;
  }
  return spent > 0 ? Infinity : 1;
}

/** One line of the server's report as a row: its figure, its verdict and how far from ideal it is. */
export function accessRow(line: MemoryAccessLine): AccessRow {
  const ops = line.ops.join('/');
  const n = line.requests;
  if (line.space === 'global') {
    const sectors = line.sectors ?? 0;
    const minimum = line.min_sectors ?? 0;
    const ratio = ratioOf(sectors, minimum);
    const wasteful = ratio > IDEAL_SLACK;
    const perRequest = line.sectors_per_request ?? (n ? sectors / n : 0);
    const minPerRequest = line.min_sectors_per_request ?? (n ? minimum / n : 0);
    return {
      line: line.line,
      space: 'global',
      ops,
      requests: n,
      figure: `${formatCount(perRequest)} sector${perRequest === 1 ? '' : 's'} per request (min ${formatCount(minPerRequest)})`,
      verdict: wasteful ? `${formatCount(ratio)}× the minimum: not coalesced` : 'coalesced',
      excess: Math.max(0, sectors - minimum),
      ratio,
      wasteful
    };
  }
  const passes = line.wavefronts ?? 0;
  const ideal = line.ideal_wavefronts ?? 0;
  const ratio = ratioOf(passes, ideal);
  const wasteful = ratio > IDEAL_SLACK;
  const ways = line.ways_per_request ?? (n ? passes / n : 0);
  const idealWays = n ? ideal / n : 1;
  const worst = line.max_ways && line.max_ways > ways ? `, worst ${line.max_ways}-way` : '';
  return {
    line: line.line,
    space: 'shared',
    ops,
    requests: n,
    figure: wasteful
      ? `${formatCount(ways)}-way bank conflict (ideal ${formatCount(idealWays)}-way${worst})`
      : `${formatCount(ways)}-way (ideal ${formatCount(idealWays)}-way)`,
    verdict: wasteful ? `${formatCount(ratio)}× the passes of a conflict-free access` : 'no bank conflict',
    excess: Math.max(0, passes - ideal),
    ratio,
    wasteful
  };
}

/**
 * The report's rows, worst first: the larger waste ratio first, then the more
 * transactions spent over ideal, then the source order (lines outside the file last).
 */
export function rankAccessRows(lines: ReadonlyArray<MemoryAccessLine>): AccessRow[] {
  const position = (row: AccessRow) => row.line ?? Number.MAX_SAFE_INTEGER;
  return lines
    .map(accessRow)
    .sort(
      (a, b) =>
        b.ratio - a.ratio || b.excess - a.excess || position(a) - position(b) || a.space.localeCompare(b.space)
    );
}

/** "Global: 64 requests, 1152 sectors (min 256), 22% efficient". */
export function accessTotalText(total: MemoryAccessTotals): string {
  const efficiency = `${Math.round(total.efficiency * 100)}% efficient`;
  const requests = `${total.requests} request${total.requests === 1 ? '' : 's'}`;
  if (total.space === 'global') {
    return `Global: ${requests}, ${total.sectors ?? 0} sectors (min ${total.min_sectors ?? 0}), ${efficiency}`;
  }
  return `Shared: ${requests}, ${total.wavefronts ?? 0} bank passes (ideal ${total.ideal_wavefronts ?? 0}), ${efficiency}`;
}

/**
 * Who stored to one array, counted in every block:
 * "y: stored by 4096 threads, 1 store each" or
 * "y: stored by 1 thread, up to 4096 stores by one thread (a loop: one thread does the work of many)".
 */
export function accessWritersText(w: ArrayWriters): string {
  const threads = `${w.threads} thread${w.threads === 1 ? '' : 's'}`;
  if (w.max_per_thread <= 1) {
    return `${w.array}: stored by ${threads}, 1 store each`;
  }
  const loop = w.max_per_thread > 4 ? ' (a loop: one thread does the work of many, serially on a GPU)' : '';
  return `${w.array}: stored by ${threads}, up to ${w.max_per_thread} stores by one thread${loop}`;
}

/** The one-line headline: how many lines waste transactions, or that every access is ideal. */
export function accessHeadline(report: MemoryReport): string {
  if (!report.lines.length) {
    return 'No global or shared memory accesses were recorded.';
  }
  const rows = report.lines.map(accessRow);
  const wasteful = rows.filter(row => row.wasteful);
  if (!wasteful.length) {
    return `Every access is ideal: coalesced global loads and stores, no shared bank conflicts (${rows.length} line${rows.length === 1 ? '' : 's'}).`;
  }
  const where = (space: AccessRow['space']) => wasteful.filter(row => row.space === space).length;
  const parts = [
    where('global') ? `${where('global')} not coalesced` : '',
    where('shared') ? `${where('shared')} with bank conflicts` : ''
  ].filter(Boolean);
  return `${wasteful.length} of ${rows.length} line${rows.length === 1 ? '' : 's'} spend more than the ideal (${parts.join(', ')}): worst first.`;
}

/** "Source line 5", or "Outside the source" for a line the report could not place. */
export function accessLineLabel(line: number | null): string {
  return line ? `Line ${line}` : 'Outside the source';
}

/** A source line the editor marks as spending more than the ideal, with the figures as its tooltip. */
export interface AccessMark {
  /** Source line (1-based). */
  line: number;
  /** "Memory access (CPU emulation): shared 32-way bank conflict (ideal 1-way); global …". */
  title: string;
}

/** The wasteful lines of a report as editor marks, one per source line, in source order. */
export function accessMarks(report: MemoryReport | null | undefined): AccessMark[] {
  const byLine = new Map<number, AccessRow[]>();
  for (const row of rankAccessRows(report?.lines ?? [])) {
    if (row.wasteful && row.line) {
      byLine.set(row.line, [...(byLine.get(row.line) ?? []), row]);
    }
  }
  return [...byLine.entries()]
    .sort(([a], [b]) => a - b)
    .map(([line, rows]) => ({
      line,
      title: `Memory access (CPU emulation): ${rows.map(row => `${row.space} ${row.ops} ${row.figure}`).join('; ')}`
    }));
}
