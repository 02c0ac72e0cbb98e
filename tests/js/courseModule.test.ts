import type { Run } from '../../extension/src/api/types';
import {
  acceptanceItemCount,
  acceptanceSummary,
  moduleTestSummary,
  requirementState,
  runsHere,
  scoresText
} from '../../extension/src/course/catalog';
import { newestCapture, readEstimator } from '../../extension/src/memory/commands';
import { readSweep } from '../../extension/src/runs/commands';

const DDP = { needs: 'multi-gpu' as const, cpu_path: 'gloo over loopback: the loss falls.', launcher: 'torchrun' };
const BENCH = { needs: 'gpu' as const, cpu_path: 'CPU throughput per batch size.', launcher: 'python' };
const GPU_ONLY = { needs: 'gpu' as const, cpu_path: null, launcher: 'python' };

describe('runsHere', () => {
  it('never says GPU on a machine without one when the lab has a CPU path', () => {
    const ddp = runsHere(DDP, 0);
    expect(ddp).toEqual({
      text: 'runs here (CPU, gloo)',
      tooltip: 'Made for several GPUs; this machine has no GPU, so it takes its CPU path: gloo over loopback: the loss falls.',
      where: 'cpu'
    });
    expect(runsHere(BENCH, 0).text).toBe('runs here (CPU)');
    expect(runsHere(BENCH, 0).tooltip).toContain('CPU throughput per batch size.');
  });

  it('says GPU only for a lab with no CPU path on a machine without a GPU', () => {
    expect(runsHere(GPU_ONLY, 0)).toEqual({
      text: 'GPU only',
      tooltip: 'Made for a GPU, and it has no CPU path; this machine has no GPU.',
      where: 'none'
    });
  });

  it('says what runs on the GPUs a machine has', () => {
    expect(runsHere(DDP, 8).text).toBe('runs here (8 GPUs, NCCL)');
    expect(runsHere(BENCH, 1).text).toBe('runs here (GPU)');
    expect(runsHere(GPU_ONLY, 2).where).toBe('gpu');
    const one = runsHere(DDP, 1);
    expect(one.text).toBe('runs here (1 GPU)');
    expect(one.tooltip).toContain('this machine has one');
  });

  it('says CPU for CPU items', () => {
    expect(runsHere({ needs: 'cpu', cpu_path: null, launcher: 'torchrun' }, 0).text).toBe('runs here (CPU, gloo)');
    expect(runsHere({ needs: 'cpu', cpu_path: null, launcher: null }, 4).text).toBe('runs here (CPU)');
  });
});

describe('module test summaries', () => {
  const fresh = { title: 'Module test', questions: 25, pass_score: 20, attempts: 0, last: null, best: null, passed: false };
  it('before any attempt: size and pass mark', () => {
    expect(moduleTestSummary(fresh)).toBe('25 questions · pass with 20');
    expect(scoresText(fresh)).toMatch(/^25 questions across the eight lessons\. Pass with 20 right/);
  });

  it('after attempts: last and best, and whether the best passed', () => {
    const taken = {
      ...fresh,
      attempts: 3,
      last: { score: 17, total: 25, at: 3 },
      best: { score: 22, total: 25, at: 2 },
      passed: true
    };
    expect(moduleTestSummary(taken)).toBe('last 17/25 · best 22/25 · passed');
    expect(scoresText(taken)).toBe('Last 17 / 25 · Best 22 / 25 · Passed (20 needed) · 3 attempts');
    const failing = { ...taken, attempts: 1, best: taken.last, passed: false };
    expect(moduleTestSummary(failing)).toBe('last 17/25 · best 17/25 · pass with 20');
    expect(scoresText(failing)).toBe('Last 17 / 25 · Best 17 / 25 · Not passed yet (20 needed) · 1 attempt');
  });
});

describe('acceptance', () => {
  it('labels requirements done, to do, or not available yet', () => {
    expect(requirementState({ available: true, done: true })).toEqual({ state: 'done', label: 'done' });
    expect(requirementState({ available: true, done: false })).toEqual({ state: 'todo', label: 'to do' });
    expect(requirementState({ available: false, done: false })).toEqual({
      state: 'unavailable',
      label: 'not available yet'
    });
  });

  it('counts only what is available, and says what is missing', () => {
    expect(acceptanceItemCount({ available: 3, completed: 2, requires: [1, 2, 3, 4] })).toBe(
      '2 of 3 done · 1 not available yet'
    );
    expect(acceptanceItemCount({ available: 2, completed: 2, requires: [1, 2] })).toBe('2 of 2 done');
    expect(acceptanceItemCount({ available: 0, completed: 0, requires: [1] })).toBe(
      'nothing to do here yet · 1 not available yet'
    );
    expect(acceptanceSummary([{ done: true }, { done: false }, { done: true }])).toBe('2 of 3 done');
  });
});

describe('command arguments from links', () => {
  it('reads a sweep preset and refuses malformed ones', () => {
    expect(readSweep({ sweep: { param: 'nproc', values: ['1', 2] } })).toEqual({ param: 'nproc', values: ['1', '2'] });
    expect(readSweep({})).toBeNull();
    expect(readSweep({ sweep: { param: 'n proc', values: ['1'] } })).toBeNull();
    expect(readSweep({ sweep: { param: 'nproc', values: [] } })).toBeNull();
    expect(readSweep({ sweep: { param: 'nproc', values: ['1', { x: 1 }] } })).toBeNull();
    expect(readSweep({ sweep: ['nproc'] })).toBeNull();
  });

  it('reads the estimator flag', () => {
    expect(readEstimator({ estimator: true })).toBe(true);
    expect(readEstimator({ estimator: '1' })).toBe(true);
    expect(readEstimator({ estimator: false })).toBe(false);
    expect(readEstimator({})).toBe(false);
  });
});

describe('newestCapture', () => {
  const run = (id: string, created_at: number, record_memory: boolean) =>
    ({ id, created_at, record_memory }) as unknown as Run;
  const capture = (run: string, rank: number) => ({
    id: `run:${run}:memory/rank${rank}.json`,
    kind: 'cpu-profile' as const,
    source: `memory/rank${rank}.json`,
    run,
    rank,
    size_bytes: 10,
    label: `${run} rank ${rank}`
  });

  it('takes rank 0 of the newest run that recorded memory and has a capture', async () => {
    const asked: string[] = [];
    const found = await newestCapture({
      listRuns: async () => ({
        runs: [run('old', 1, true), run('plain', 9, false), run('empty', 8, true), run('new', 5, true)]
      }),
      listCaptures: async (id: string) => {
        asked.push(id);
        return { captures: id === 'empty' ? [] : [capture(id, 1), capture(id, 0)] };
      }
    } as never);
    expect(found?.id).toBe('run:new:memory/rank0.json');
    expect(asked).toEqual(['empty', 'new']);
  });

  it('is null when no run recorded memory', async () => {
    const found = await newestCapture({
      listRuns: async () => ({ runs: [run('plain', 9, false)] }),
      listCaptures: async () => ({ captures: [] })
    } as never);
    expect(found).toBeNull();
  });
});
