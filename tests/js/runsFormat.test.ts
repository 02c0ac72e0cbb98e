import {
  commandLine,
  exitCodeText,
  formatDuration,
  formatNumber,
  formatPercent,
  modeLabel,
  otherRankErrors,
  othersSummary,
  rootCauseHeadline,
  runDuration
} from '../../extension/src/runs/format';
import { hasActiveRun } from '../../extension/src/runs/runsListModel';
import { makeRun } from './runsFixtures';

describe('root cause formatting', () => {
  it('names the failing rank and its exception', () => {
    expect(rootCauseHeadline({ rank: 1, exception: 'RuntimeError: rank 1 crashed at step 3' })).toBe(
      'Rank 1 failed: RuntimeError: rank 1 crashed at step 3'
    );
    expect(rootCauseHeadline({ rank: 0, exception: '  ' })).toBe('Rank 0 failed: no error message');
    expect(rootCauseHeadline({ rank: null, exception: 'exited with code 1' })).toBe('The run failed: exited with code 1');
  });

  it('types the other ranks’ errors from loose dicts, in rank order', () => {
    const others = otherRankErrors({
      others: [
        { rank: 3, exception: 'RuntimeError: peer closed', traceback: 'tb3', exit_code: 1, timestamp: 2 },
        { rank: 2, exception: 'RuntimeError: peer closed', exit_code: null },
        { rank: 5, traceback: 'no exception: dropped' }
      ]
    });
    expect(others).toEqual([
      { rank: 2, exception: 'RuntimeError: peer closed', traceback: '', exitCode: null },
      { rank: 3, exception: 'RuntimeError: peer closed', traceback: 'tb3', exitCode: 1 }
    ]);
    expect(othersSummary(1)).toBe('1 other rank failed too');
    expect(othersSummary(3)).toBe('3 other ranks failed too');
  });

  it('says which signal killed a process', () => {
    expect(exitCodeText(1)).toBe('exit code 1');
    expect(exitCodeText(-9)).toBe('killed by SIGKILL');
    expect(exitCodeText(-40)).toBe('killed by signal 40');
    expect(exitCodeText(null)).toBeNull();
  });
});

describe('run header formatting', () => {
  it('says clearly where a run ran and how its processes talk', () => {
    expect(modeLabel({ device_mode: 'gpu', backend: 'nccl' })).toBe('GPU · NCCL');
    expect(modeLabel({ device_mode: 'cpu', backend: 'gloo' })).toBe('CPU · gloo');
    expect(modeLabel({ device_mode: 'cpu', backend: 'none' })).toBe('CPU');
  });

  it('writes the command so that a shell reads it back', () => {
    expect(commandLine(['python', '-m', 'torch.distributed.run', '/my labs/x.py', "it's", ''])).toBe(
      "python -m torch.distributed.run '/my labs/x.py' 'it'\\''s' ''"
    );
  });

  it('ticks the duration while running and stops at the end', () => {
    const running = makeRun({ started_at: 100, ended_at: null });
    expect(runDuration(running, 112.5)).toBe(12.5);
    expect(runDuration({ ...running, ended_at: 105 }, 1000)).toBe(5);
    expect(runDuration({ ...running, started_at: null }, 1000)).toBeNull();
    expect(formatDuration(4.25)).toBe('4.3 s');
    expect(formatDuration(42)).toBe('42 s');
    expect(formatDuration(185)).toBe('3 min 05 s');
    expect(formatDuration(3720)).toBe('1 h 02 min');
  });

  it('formats table numbers', () => {
    expect(formatNumber(1.23456)).toBe('1.23');
    expect(formatNumber(null)).toBe('—');
    expect(formatNumber(0.0001)).toBe('1.00e-4');
    expect(formatPercent(0.876)).toBe('88 %');
  });

  it('polls fast only while a run may still change', () => {
    expect(hasActiveRun([makeRun({ status: 'succeeded' }), makeRun({ status: 'queued' })])).toBe(true);
    expect(hasActiveRun([makeRun({ status: 'failed' }), makeRun({ status: 'lost' })])).toBe(false);
  });
});
