/**
 * @jest-environment jsdom
 */
import { EditorState } from '@codemirror/state';
import type { MemoryAccessLine, MemoryReport } from '../../extension/src/api/types';
import {
  accessHeadline,
  accessMarks,
  accessRow,
  accessTotalText,
  accessWritersText,
  formatCount,
  rankAccessRows
} from '../../extension/src/kernels/accessReport';
import { renderAccessReport } from '../../extension/src/kernels/accessReportView';
import { accessDecorations } from '../../extension/src/kernels/editorMarks';

const EMPTY_GLOBAL = { wavefronts: null, ideal_wavefronts: null, ways_per_request: null, max_ways: null };
const EMPTY_SHARED = { sectors: null, min_sectors: null, sectors_per_request: null, min_sectors_per_request: null };

/** A global line as the server reports it: `sectors` over `requests` warp instructions, `min` the coalesced minimum. */
function globalLine(line: number | null, requests: number, sectors: number, min: number, ops: MemoryAccessLine['ops'] = ['load']): MemoryAccessLine {
  return {
    line,
    space: 'global',
    ops,
    requests,
    accesses: requests * 32,
    bytes: requests * 128,
    sectors,
    min_sectors: min,
    sectors_per_request: Math.round((sectors / requests) * 1000) / 1000,
    min_sectors_per_request: Math.round((min / requests) * 1000) / 1000,
    ...EMPTY_GLOBAL
  };
}

/** A shared line: `passes` bank passes where `ideal` would do, the worst request `maxWays`-way. */
function sharedLine(line: number, requests: number, passes: number, ideal: number, maxWays: number, ops: MemoryAccessLine['ops'] = ['load']): MemoryAccessLine {
  return {
    line,
    space: 'shared',
    ops,
    requests,
    accesses: requests * 32,
    bytes: requests * 128,
    ...EMPTY_SHARED,
    wavefronts: passes,
    ideal_wavefronts: ideal,
    ways_per_request: Math.round((passes / requests) * 1000) / 1000,
    max_ways: maxWays
  };
}

/** The transpose without padding: coalesced read (line 6), 32-way conflicts reading the tile (line 9), strided write (line 9). */
function transposeReport(overrides: Partial<MemoryReport> = {}): MemoryReport {
  return {
    note: "CPU emulation: counts are exact for this launch, times are not a GPU's",
    sampled: false,
    sampling: 'every access of all 4 blocks recorded',
    blocks_recorded: 4,
    blocks_total: 4,
    lines: [
      globalLine(6, 128, 512, 512),
      sharedLine(6, 128, 128, 128, 1, ['store']),
      sharedLine(9, 128, 4096, 128, 32),
      globalLine(9, 128, 4096, 512, ['store'])
    ],
    totals: [
      { space: 'global', requests: 256, accesses: 8192, bytes: 32768, sectors: 4608, min_sectors: 1024, wavefronts: null, ideal_wavefronts: null, efficiency: 0.2222 },
      { space: 'shared', requests: 256, accesses: 8192, bytes: 32768, sectors: null, min_sectors: null, wavefronts: 4224, ideal_wavefronts: 256, efficiency: 0.0606 }
    ],
    writers: [{ array: 'out', threads: 4096, stores: 4096, max_per_thread: 1 }],
    ...overrides
  };
}

describe('accessRow', () => {
  it('puts a strided global access against the coalesced minimum', () => {
    // The server's figures for out[i] = in[(i * 32) % n] on 1024 floats: 18 sectors per request where 4 would do.
    const row = accessRow(globalLine(5, 64, 1152, 256, ['load', 'store']));
    expect(row.figure).toBe('18 sectors per request (min 4)');
    expect(row.verdict).toBe('4.5× the minimum: not coalesced');
    expect(row.ops).toBe('load/store');
    expect(row.wasteful).toBe(true);
    expect(row.excess).toBe(896);
  });

  it('calls a coalesced global access coalesced', () => {
    const row = accessRow(globalLine(4, 32, 128, 128));
    expect(row.figure).toBe('4 sectors per request (min 4)');
    expect(row.verdict).toBe('coalesced');
    expect(row.wasteful).toBe(false);
    expect(row.ratio).toBe(1);
  });

  it('names a shared bank conflict n-way against the conflict-free passes, with the worst request', () => {
    const row = accessRow(sharedLine(9, 128, 4096, 128, 32));
    expect(row.figure).toBe('32-way bank conflict (ideal 1-way)');
    expect(row.verdict).toBe('32× the passes of a conflict-free access');
    expect(row.wasteful).toBe(true);
    expect(accessRow(sharedLine(9, 4, 10, 4, 8)).figure).toBe('2.5-way bank conflict (ideal 1-way, worst 8-way)');
  });

  it('does not call two passes of a 64-bit shared access a conflict', () => {
    const row = accessRow(sharedLine(3, 16, 32, 32, 2));
    expect(row.figure).toBe('2-way (ideal 2-way)');
    expect(row.verdict).toBe('no bank conflict');
    expect(row.wasteful).toBe(false);
  });
});

describe('rankAccessRows', () => {
  it('puts the worst lines first and ideal lines in source order after them', () => {
    const rows = rankAccessRows(transposeReport().lines);
    expect(rows.map(r => `${r.line}:${r.space}`)).toEqual(['9:shared', '9:global', '6:global', '6:shared']);
  });

  it('breaks a tie in waste by the transactions spent over ideal, then by line, lines outside the source last', () => {
    const rows = rankAccessRows([
      globalLine(null, 8, 64, 32),
      globalLine(12, 8, 64, 32),
      globalLine(3, 8, 64, 32),
      globalLine(20, 80, 640, 320)
    ]);
    expect(rows.map(r => r.line)).toEqual([20, 3, 12, null]);
  });
});

describe('totals and headline', () => {
  it('says the kernel totals with their efficiency', () => {
    const [global, shared] = transposeReport().totals;
    expect(accessTotalText(global)).toBe('Global: 256 requests, 4608 sectors (min 1024), 22% efficient');
    expect(accessTotalText(shared)).toBe('Shared: 256 requests, 4224 bank passes (ideal 256), 6% efficient');
  });

  it('counts the lines that spend more than ideal, by kind', () => {
    expect(accessHeadline(transposeReport())).toBe(
      '2 of 4 lines spend more than the ideal (1 not coalesced, 1 with bank conflicts): worst first.'
    );
    expect(accessHeadline(transposeReport({ lines: [globalLine(4, 32, 128, 128)] }))).toBe(
      'Every access is ideal: coalesced global loads and stores, no shared bank conflicts (1 line).'
    );
    expect(accessHeadline(transposeReport({ lines: [], totals: [] }))).toBe(
      'No global or shared memory accesses were recorded.'
    );
  });

  it('says how many threads stored to each array, and calls a loop in one thread a loop', () => {
    expect(accessWritersText({ array: 'y', threads: 4096, stores: 4096, max_per_thread: 1 })).toBe(
      'y: stored by 4096 threads, 1 store each'
    );
    expect(accessWritersText({ array: 'y', threads: 1, stores: 4096, max_per_thread: 4096 })).toBe(
      'y: stored by 1 thread, up to 4096 stores by one thread (a loop: one thread does the work of many, serially on a GPU)'
    );
    expect(accessWritersText({ array: 'hist', threads: 64, stores: 128, max_per_thread: 2 })).toBe(
      'hist: stored by 64 threads, up to 2 stores by one thread'
    );
  });

  it('writes counts plainly', () => {
    expect(formatCount(4)).toBe('4');
    expect(formatCount(4.5)).toBe('4.5');
    expect(formatCount(4 / 3)).toBe('1.33');
  });
});

describe('renderAccessReport', () => {
  it('says where the counts come from and which blocks were recorded', () => {
    const node = renderAccessReport(
      transposeReport({
        sampled: true,
        sampling: 'sampled: 16 of 1024 blocks recorded (one block in 64); per-request figures are those of the recorded blocks'
      }),
      () => undefined
    );
    expect(node.getAttribute('data-sampled')).toBe('true');
    expect(node.querySelector('.gpudojo-access-source')!.textContent).toContain('not measured by hardware counters');
    expect(node.querySelector('.gpudojo-access-source')!.textContent).toContain('cannot show caches');
    expect(node.querySelector('.gpudojo-access-note')!.textContent).toBe(
      "CPU emulation: counts are exact for this launch, times are not a GPU's; sampled: 16 of 1024 blocks recorded " +
        '(one block in 64); per-request figures are those of the recorded blocks.'
    );
  });

  it('lists the worst line first and shows a clicked line in the editor', () => {
    const shown: number[] = [];
    const node = renderAccessReport(transposeReport(), line => shown.push(line));
    const rows = Array.from(node.querySelectorAll<HTMLTableRowElement>('tr.gpudojo-access-row'));
    expect(rows.map(r => [r.dataset.line, r.dataset.space, r.dataset.wasteful])).toEqual([
      ['9', 'shared', 'true'],
      ['9', 'global', 'true'],
      ['6', 'global', 'false'],
      ['6', 'shared', 'false']
    ]);
    expect(rows[0].querySelector('.gpudojo-access-figure')!.textContent).toBe('32-way bank conflict (ideal 1-way)');
    rows[1].querySelector<HTMLButtonElement>('.gpudojo-access-goto')!.click();
    expect(shown).toEqual([9]);
    expect(Array.from(node.querySelectorAll('.gpudojo-access-totals li')).map(li => li.textContent)).toEqual([
      'Global: 256 requests, 4608 sectors (min 1024), 22% efficient',
      'Shared: 256 requests, 4224 bank passes (ideal 256), 6% efficient'
    ]);
    expect(Array.from(node.querySelectorAll('.gpudojo-access-writers li')).map(li => li.textContent)).toEqual([
      'out: stored by 4096 threads, 1 store each'
    ]);
  });

  it('shows a line outside the source without a link', () => {
    const node = renderAccessReport(transposeReport({ lines: [globalLine(null, 4, 16, 16)] }), () => undefined);
    const row = node.querySelector('tr.gpudojo-access-row')!;
    expect(row.querySelector('.gpudojo-access-goto')).toBeNull();
    expect(row.firstElementChild!.textContent).toBe('Outside the source');
  });
});

describe('accessMarks', () => {
  it('marks each wasteful source line once, with every wasteful access of it in the title', () => {
    expect(accessMarks(transposeReport())).toEqual([
      {
        line: 9,
        title:
          'Memory access (CPU emulation): shared load 32-way bank conflict (ideal 1-way); ' +
          'global store 32 sectors per request (min 4)'
      }
    ]);
    expect(accessMarks(null)).toEqual([]);
    expect(accessMarks(transposeReport({ lines: [globalLine(null, 8, 64, 32)] }))).toEqual([]);
  });

  it('becomes a bar beside the line in the editor, skipping lines the text no longer has', () => {
    const state = EditorState.create({ doc: 'a\nb\nc' });
    const set = accessDecorations(state, [
      { line: 2, title: 'Memory access (CPU emulation): global load 8 sectors per request (min 4)' },
      { line: 7, title: 'gone' }
    ]);
    const found: Array<[number, string, string]> = [];
    set.between(0, state.doc.length, (from, _to, decoration) => {
      const spec = decoration.spec as { class: string; attributes: Record<string, string> };
      found.push([from, spec.class, spec.attributes['data-access-line']]);
    });
    expect(found).toEqual([[2, 'gpudojo-access-mark', '2']]);
  });
});
