import {
  archLabel,
  compileSummary,
  failingThread,
  formatMaxError,
  formatValue,
  initialArch,
  occupancySummary,
  runErrorMark,
  runModeLabel,
  runVerdict
} from '../../extension/src/kernels/format';
import { archList, compiled, occupancyAt, simulatorRun } from './kernelsFixtures';

describe('architectures', () => {
  it('labels an architecture with its family and example GPUs', () => {
    expect(archLabel(archList().archs[1])).toBe('sm_90 · Hopper (H100, H200)');
  });

  it("selects this machine's GPU first, else the server's default", () => {
    expect(initialArch(archList({ gpu_arch: 'sm_90' }))).toBe('sm_90');
    expect(initialArch(archList({ gpu_arch: null }))).toBe('sm_80');
    expect(initialArch(archList({ gpu_arch: 'sm_120', default_arch: 'sm_75' }))).toBe('sm_80');
  });
});

describe('compileSummary', () => {
  it('says how long the compile took, or that it came from the cache', () => {
    expect(compileSummary(compiled())).toBe('Compiled in 45.0 ms');
    expect(compileSummary(compiled({ cached: true }))).toBe('Cached');
    expect(
      compileSummary(compiled({ diagnostics: [{ line: 2, column: null, severity: 'warning', message: 'unused' }] }))
    ).toBe('Compiled in 45.0 ms, 1 warning');
  });

  it('counts the errors of a failed compile', () => {
    expect(
      compileSummary(
        compiled({
          ok: false,
          diagnostics: [
            { line: 3, column: null, severity: 'error', message: 'a' },
            { line: 4, column: null, severity: 'error', message: 'b' }
          ]
        })
      )
    ).toBe('2 errors');
  });
});

describe('occupancySummary', () => {
  it('says warps of max, the percentage and the limiter', () => {
    expect(
      occupancySummary(occupancyAt(256, { active_warps_per_sm: 48, occupancy: 0.75, limited_by: 'registers' }))
    ).toBe('48 warps of 64 per SM (75%), limited by registers');
    expect(occupancySummary(occupancyAt(1024, { limited_by: 'shared_memory', occupancy: 0.5, active_warps_per_sm: 32 }))).toContain(
      'limited by shared memory'
    );
  });

  it('says why a block size cannot launch', () => {
    expect(occupancySummary(occupancyAt(1024, { error: 'too much shared memory' }))).toBe(
      'Cannot launch 1024 threads per block: too much shared memory'
    );
  });
});

describe('run labels', () => {
  it('names the mode that produced a result', () => {
    expect(runModeLabel('gpu', 'NVIDIA H100 80GB HBM3')).toBe('GPU: NVIDIA H100 80GB HBM3');
    expect(runModeLabel('simulator', null)).toContain('Simulator (numba CUDA simulator');
    expect(runModeLabel('none', null)).toBe('Compiled, not run: no GPU');
    expect(runModeLabel('cpu-emulation', null)).toBe("CPU emulation: results are exact, times are not a GPU's");
  });

  it('sums up a run in one line', () => {
    expect(runVerdict(simulatorRun())).toBe('Passed: 1 output matches');
    expect(
      runVerdict(
        simulatorRun({
          status: 'failed',
          checks: [{ name: 'c', ok: false, checked: true, max_abs_error: null, mismatches: 3, first_mismatch: null, preview: [] }]
        })
      )
    ).toBe('Failed: c (3 wrong)');
    expect(runVerdict(simulatorRun({ status: 'error', error: { kind: 'out_of_bounds', message: 'index 1024', thread: null, block: null, line: null } }))).toBe(
      'Error: out of bounds'
    );
  });

  it('names the failing thread and block', () => {
    expect(failingThread([5, 0, 0], [2, 0, 0])).toBe('thread (5, 0, 0) of block (2, 0, 0)');
    expect(failingThread(null, null)).toBe('');
  });
});

describe('runErrorMark', () => {
  it('marks the line a run failed on, naming the thread', () => {
    expect(
      runErrorMark({ kind: 'out_of_bounds', message: 'index 1024', thread: [127, 0, 0], block: [7, 0, 0], line: 7 })
    ).toEqual({
      line: 7,
      column: null,
      severity: 'error',
      message: 'out of bounds in thread (127, 0, 0) of block (7, 0, 0): index 1024'
    });
  });

  it('leaves compile errors to the compile, and errors without a line unmarked', () => {
    expect(runErrorMark({ kind: 'compile_error', message: 'x', thread: null, block: null, line: 3 })).toBeNull();
    expect(runErrorMark({ kind: 'timeout', message: 'slow', thread: null, block: null, line: null })).toBeNull();
    expect(runErrorMark(null)).toBeNull();
  });
});

describe('output values in the run table', () => {
  it('shows NaN and the infinities as the server sends them, without quotes', () => {
    expect(['NaN', 'Infinity', '-Infinity', 1.5, 3].map(formatValue)).toEqual(['NaN', 'Infinity', '-Infinity', '1.50000', '3']);
  });

  it('calls an infinite largest error infinite, and leaves an unchecked one blank', () => {
    expect(formatMaxError({ checked: true, max_abs_error: null, mismatches: 2 })).toBe('infinite');
    expect(formatMaxError({ checked: true, max_abs_error: 0.00025, mismatches: 0 })).toBe('2.50e-4');
    expect(formatMaxError({ checked: false, max_abs_error: null, mismatches: 0 })).toBe('');
  });
});
