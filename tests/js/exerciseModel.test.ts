import type { CheckAttempt, ExerciseDoc, RequirementResult } from '../../extension/src/api/types';
import {
  attemptLine,
  checkStatus,
  filesToOpen,
  formatFigure,
  isRunning,
  modeLabel,
  outcomeMark,
  requirementFiles,
  requirementRows,
  sandboxNote
} from '../../extension/src/course/exerciseModel';

const meta = {
  requirements: [
    { id: 'compiles', statement: 'kernel.cu compiles', gpu: false },
    { id: 'bandwidth', statement: 'reaches half the copy bandwidth', gpu: true }
  ]
} as unknown as ExerciseDoc['meta'];

function result(id: string, outcome: RequirementResult['outcome'], message = ''): RequirementResult {
  return { id, statement: id, gpu: false, outcome, message, figures: [], duration_s: 0 };
}

function attempt(over: Partial<CheckAttempt> = {}): CheckAttempt {
  return {
    id: 'a1',
    exercise: 'cuda-kernel',
    status: 'done',
    mode: 'cpu',
    started_at: 0,
    finished_at: 1,
    passed: 1,
    applicable: 1,
    completed: true,
    error: null,
    sandbox: 'bubblewrap',
    sandbox_reason: '',
    results: [result('compiles', 'passed'), result('bandwidth', 'skipped')],
    ...over
  };
}

describe('requirementRows', () => {
  it('shows the manifest’s requirements as pending before any check', () => {
    const rows = requirementRows({ meta, current: null, last: null });
    expect(rows.map(r => [r.id, r.outcome, r.gpu])).toEqual([
      ['compiles', 'pending', false],
      ['bandwidth', 'pending', true]
    ]);
  });

  it('prefers the running check over the last one', () => {
    const running = attempt({ status: 'running', results: [result('compiles', 'failed', 'no')] });
    const rows = requirementRows({ meta, current: running, last: attempt() });
    expect(rows.map(r => r.outcome)).toEqual(['failed', 'pending']);
    expect(rows[0].message).toBe('no');
  });

  it('keeps the manifest’s order whatever order the results came in', () => {
    const last = attempt({ results: [result('bandwidth', 'skipped'), result('compiles', 'passed')] });
    expect(requirementRows({ meta, current: null, last }).map(r => r.id)).toEqual(['compiles', 'bandwidth']);
  });
});

describe('outcomeMark', () => {
  it('says what each outcome means', () => {
    expect(outcomeMark('passed', false).shape).toBe('pass');
    expect(outcomeMark('failed', false).label).toBe('Failed');
    expect(outcomeMark('skipped', false).label).toBe('Skipped: needs a GPU');
    expect(outcomeMark('pending', true)).toEqual({ label: 'Checking…', shape: 'running' });
    expect(outcomeMark('pending', false).label).toBe('Not checked yet');
  });
});

describe('formatFigure', () => {
  it('formats numbers by size, with unit and note', () => {
    expect(formatFigure({ name: 'copy bandwidth', value: 9.8, unit: 'GB/s', note: '41% of peak' })).toBe(
      'copy bandwidth: 9.8 GB/s (41% of peak)'
    );
    expect(formatFigure({ name: 'registers', value: 24, unit: '', note: '' })).toBe('registers: 24');
    expect(formatFigure({ name: 'bytes', value: 1048576, unit: 'B', note: '' })).toBe('bytes: 1,048,576 B');
    expect(formatFigure({ name: 'ratio', value: 0.01234, unit: '', note: '' })).toBe('ratio: 0.0123');
    expect(formatFigure({ name: 'step', value: 123.456, unit: 'ms', note: '' })).toBe('step: 123 ms');
    expect(formatFigure({ name: 'mode', value: 'bf16', unit: '', note: '' })).toBe('mode: bf16');
    expect(formatFigure({ name: 'peak', value: null, unit: 'GB/s', note: '' })).toBe('peak: n/a GB/s');
  });
});

describe('modeLabel', () => {
  it('says the GPU checks everything', () => {
    expect(modeLabel('gpu', 'timing', 2).text).toBe('GPU');
  });

  it('says what the CPU variant skips and cannot show', () => {
    const label = modeLabel('cpu', 'timing against torch', 2);
    expect(label.text).toBe('CPU variant');
    expect(label.detail).toBe(
      'No GPU here: 2 requirements that need a GPU are skipped. Without a GPU this cannot show: timing against torch'
    );
    expect(modeLabel('cpu', '', 1).detail).toBe('No GPU here: 1 requirement that needs a GPU is skipped.');
    expect(modeLabel('cpu', '', 0).detail).toBe('No GPU here: every requirement is checked on the CPU.');
  });
});

describe('checkStatus', () => {
  it('invites a first check', () => {
    expect(checkStatus(null, false)).toMatch(/^Not checked yet/);
  });

  it('counts what is done while running', () => {
    const running = attempt({ status: 'running', results: [result('compiles', 'passed'), result('bandwidth', 'pending')] });
    expect(checkStatus(running, true)).toBe('Checking your copy (CPU variant)… 1 of 2 requirements done.');
  });

  it('summarises a finished check, with the error when it was stopped', () => {
    expect(checkStatus(attempt(), false)).toBe('1 of 1 applicable requirements passed (CPU variant). Completed.');
    const stopped = attempt({ status: 'error', completed: false, passed: 0, error: 'Stopped at the time limit.' });
    expect(checkStatus(stopped, false)).toBe(
      '0 of 1 applicable requirements passed (CPU variant). Stopped at the time limit.'
    );
    expect(checkStatus(attempt({ mode: 'gpu', completed: false }), false)).toBe(
      '1 of 1 applicable requirements passed (on the GPU).'
    );
  });
});

describe('attemptLine and isRunning', () => {
  it('writes an attempt on one line', () => {
    const now = new Date(2026, 11, 3, 15, 0);
    const at = new Date(2026, 11, 3, 14, 2).getTime() / 1000;
    const line = attemptLine(
      { id: 'x', at, mode: 'cpu', status: 'done', passed: 3, applicable: 4, completed: false },
      now
    );
    expect(line).toBe('14:02 · CPU variant · 3/4 passed');
    expect(
      attemptLine({ id: 'y', at, mode: 'gpu', status: 'done', passed: 4, applicable: 4, completed: true }, now)
    ).toBe('14:02 · GPU · completed');
    expect(
      attemptLine({ id: 'z', at, mode: 'gpu', status: 'error', passed: 0, applicable: 4, completed: false }, now)
    ).toBe('14:02 · GPU · stopped');
  });

  it('polls only while a check runs', () => {
    expect(isRunning({ current: null })).toBe(false);
    expect(isRunning({ current: attempt({ status: 'running' }) })).toBe(true);
  });
});

describe('sandboxNote', () => {
  it('says nothing when the learner’s code ran in the sandbox, or for an old attempt', () => {
    expect(sandboxNote(attempt())).toBeNull();
    expect(sandboxNote(attempt({ sandbox: null }))).toBeNull();
    expect(sandboxNote(null)).toBeNull();
  });

  it('says "not sandboxed" with the reason otherwise', () => {
    const note = sandboxNote(attempt({ sandbox: 'none', sandbox_reason: 'bubblewrap (bwrap) is not installed' }));
    expect(note).toMatch(/^Not sandboxed: bubblewrap \(bwrap\) is not installed\. /);
    expect(sandboxNote(attempt({ sandbox: 'none', sandbox_reason: '' }))).toMatch(/^Not sandboxed\. /);
  });
});

describe('the files a requirement is about', () => {
  const copy = ['README.md', 'bench.py', 'kernel.cu', 'kernel_numba.py', 'ops.py'];

  it('takes the manifest’s files first, then the copy’s files its words name, in order', () => {
    expect(
      requirementFiles(
        { files: ['ops.py'], statement: 'ops.launch_config(n) returns (grid, block)', message: 'kernel.cu: no' },
        copy
      )
    ).toEqual(['ops.py', 'kernel.cu']);
    expect(
      requirementFiles({ statement: "kernel_numba.py's kernel and kernel.cu's twin", message: '' }, copy)
    ).toEqual(['kernel_numba.py', 'kernel.cu']);
  });

  it('matches a name as a word of its own and leaves out files the copy lacks', () => {
    expect(requirementFiles({ statement: 'myops.py and ops.pyc', message: '' }, copy)).toEqual([]);
    expect(requirementFiles({ files: ['gone.py', 'ops.py'], statement: '' }, copy)).toEqual(['ops.py']);
    expect(requirementFiles({ statement: 'README.md says so' }, copy)).toEqual([]);
  });
});

describe('the files Start and "Open my copy" open', () => {
  it('opens every file the requirements name, the main starter last so it is in front', () => {
    const reqs = [
      { files: ['kernel.cu'], statement: '' },
      { files: ['kernel_numba.py'], statement: '' },
      { files: ['ops.py', 'kernel.cu'], statement: '' },
      { statement: 'no files' }
    ];
    expect(filesToOpen('kernel.cu', reqs)).toEqual(['kernel_numba.py', 'ops.py', 'kernel.cu']);
    expect(filesToOpen('kernel.cu', reqs, ['kernel.cu', 'ops.py'])).toEqual(['ops.py', 'kernel.cu']);
    expect(filesToOpen('summer.py', [{ statement: 'x' }])).toEqual(['summer.py']);
  });
});
