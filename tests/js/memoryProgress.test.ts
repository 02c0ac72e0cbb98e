import { progressText, progressValue } from '../../extension/src/memory/progress';
import type { AnalysisProgress } from '../../extension/src/api/types';

const at = (phase: AnalysisProgress['phase'], fraction: number | null = null, elapsed_ms = 0): AnalysisProgress => ({
  capture: 'file:big.pickle',
  phase,
  fraction,
  elapsed_ms
});

describe('analysis progress in the memory view', () => {
  it('says how much of the snapshot is read, with the time so far past a second', () => {
    expect(progressText(at('reading', 0.434, 2140))).toBe('Reading the snapshot: 43% (2.1 s)');
    expect(progressText(at('reading', 0.1, 300))).toBe('Reading the snapshot: 10%');
  });

  it('names every later phase in words', () => {
    expect(progressText(at('pairing'))).toMatch(/Pairing each allocation/);
    expect(progressText(at('indexing'))).toMatch(/peak/);
    expect(progressText(at('queued', null, 1500))).toBe('Waiting for the analysis worker (1.5 s)');
    expect(progressText(at('not_started'))).toBe('Analysing the capture…');
  });

  it('moves the bar forward only, and leaves it indeterminate when nothing is measured', () => {
    const values = [at('reading', 0.2), at('reading', 0.99), at('pairing'), at('indexing'), at('done')].map(progressValue);
    expect(values).toEqual([...(values as number[])].sort((a, b) => a - b));
    expect(values[values.length - 1]).toBe(1);
    expect(progressValue(at('queued'))).toBeNull();
    expect(progressValue(at('reading', null))).toBeNull();
  });
});
