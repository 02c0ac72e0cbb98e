import type { LabSummary, Run, Trace } from '../../extension/src/api/types';
import {
  comparablePair,
  isTraceFile,
  mainTrace,
  newestTrace,
  previousRunOf,
  profileDiffId,
  profileViewId,
  readTraceId,
  recordsProfile,
  traceIdFromInput
} from '../../extension/src/profile/commands';
import { labRecords, recordingFlags, rerunRequest } from '../../extension/src/runs/requests';
import { DDP_LAB, makeRun } from './runsFixtures';

function trace(run: string, name: string, rank: number | null, label = name): Trace {
  return { id: `run:${run}:${name}`, source: `profile/${name}`, run, rank, size_bytes: 1000, label };
}

const RUN_A = '20250101-120000-aaaaaa';
const RUN_B = '20250102-120000-bbbbbb';
const twoRanks = (run: string) => [
  trace(run, '*', null, 'all 2 ranks'),
  trace(run, 'rank0.trace.json', 0, 'rank 0'),
  trace(run, 'rank1.trace.json', 1, 'rank 1')
];

describe('profile command arguments', () => {
  it('reads trace ids without trusting them', () => {
    expect(readTraceId({ trace: `run:${RUN_A}:rank0.trace.json` })).toBe(`run:${RUN_A}:rank0.trace.json`);
    expect(readTraceId({ a: 'file:traces/before.json' }, 'a')).toBe('file:traces/before.json');
    expect(readTraceId({ trace: '/etc/passwd' })).toBeNull();
    expect(readTraceId({ trace: `file:${'x'.repeat(2000)}` })).toBeNull();
    expect(readTraceId({})).toBeNull();
  });

  it('offers "Open profile" on Chrome and Kineto traces, gzipped too', () => {
    expect(isTraceFile('out/worker0.pt.trace.json')).toBe(true);
    expect(isTraceFile('trace.json.gz')).toBe(true);
    expect(isTraceFile('snapshot.pickle')).toBe(false);
    expect(isTraceFile('train.py')).toBe(false);
  });

  it('takes a typed path as a file trace and an id as it is', () => {
    expect(traceIdFromInput('  runs/after.pt.trace.json ')).toBe('file:runs/after.pt.trace.json');
    expect(traceIdFromInput('/abs/looking.json')).toBe('file:abs/looking.json');
    expect(traceIdFromInput(`run:${RUN_B}:*`)).toBe(`run:${RUN_B}:*`);
    expect(traceIdFromInput('   ')).toBeNull();
  });

  it('gives every trace and every pair of traces its own panel id', () => {
    const a = profileViewId('file:a/b c.json');
    expect(a).toMatch(/^gpudojo-profile-[A-Za-z0-9_-]+$/);
    expect(profileViewId('file:a/b_c.json')).not.toBe(a);
    expect(profileDiffId('file:x.json', 'file:y.json')).not.toBe(profileDiffId('file:y.json', 'file:x.json'));
  });
});

describe('which traces a run offers', () => {
  it('opens all ranks first when a run has several, else the lowest rank', () => {
    expect(mainTrace(twoRanks(RUN_A))?.id).toBe(`run:${RUN_A}:*`);
    expect(mainTrace([trace(RUN_A, 'rank1.trace.json', 1), trace(RUN_A, 'rank0.trace.json', 0)])?.rank).toBe(0);
    expect(mainTrace([])).toBeNull();
  });

  it('finds the newest trace among runs that recorded a profile', async () => {
    const runs = [
      makeRun({ id: RUN_A, created_at: 100, record_profile: true } as Partial<Run>),
      makeRun({ id: RUN_B, created_at: 200, record_profile: true } as Partial<Run>),
      makeRun({ id: '20250103-120000-cccccc', created_at: 300 })
    ];
    const asked: string[] = [];
    const found = await newestTrace({
      listRuns: async () => ({ runs }),
      listTraces: async run => {
        asked.push(run);
        return { traces: run === RUN_B ? [] : [trace(run, 'rank0.trace.json', 0)] };
      }
    });
    expect(asked).toEqual([RUN_B, RUN_A]);
    expect(found?.id).toBe(`run:${RUN_A}:rank0.trace.json`);
  });

  it('compares with the latest earlier run of the same lab that recorded a profile', () => {
    const current = makeRun({ id: RUN_B, created_at: 500, record_profile: true } as Partial<Run>);
    const runs = [
      current,
      makeRun({ id: 'older-profile', created_at: 100, record_profile: true } as Partial<Run>),
      makeRun({ id: 'newer-profile', created_at: 400, record_profile: true } as Partial<Run>),
      makeRun({ id: 'no-profile', created_at: 450 }),
      makeRun({ id: 'other-lab', created_at: 480, lab: 'lab-02-pytorch-gpu', record_profile: true } as Partial<Run>),
      makeRun({ id: 'later', created_at: 900, record_profile: true } as Partial<Run>)
    ];
    expect(previousRunOf(current, runs)?.id).toBe('newer-profile');
    expect(previousRunOf(makeRun({ kind: 'script', lab: null }), runs)).toBeNull();
    expect(recordsProfile(runs[3])).toBe(false);
  });

  it('pairs all ranks with all ranks, else the same rank', () => {
    expect(comparablePair(twoRanks(RUN_A), twoRanks(RUN_B))?.map(t => t.id)).toEqual([`run:${RUN_A}:*`, `run:${RUN_B}:*`]);
    const single = [trace(RUN_B, 'rank0.trace.json', 0, 'rank 0')];
    expect(comparablePair(twoRanks(RUN_A), single)?.map(t => t.id)).toEqual([
      `run:${RUN_A}:rank0.trace.json`,
      `run:${RUN_B}:rank0.trace.json`
    ]);
    expect(comparablePair([], single)).toBeNull();
  });
});

describe('recording a profile from the run form and the script dialog', () => {
  it('offers "Record profile" only for labs whose script records one', () => {
    const profiled: LabSummary = { ...DDP_LAB, records: ['memory', 'profile'] };
    expect(labRecords(profiled, 'profile')).toBe(true);
    expect(labRecords({ ...DDP_LAB, records: ['memory'] }, 'profile')).toBe(false);
    expect(labRecords(DDP_LAB, 'profile')).toBe(false);
  });

  it('sends only the recordings asked for', () => {
    expect(recordingFlags({ memory: false, profile: true })).toEqual({ record_profile: true });
    expect(recordingFlags({ memory: true, profile: true })).toEqual({ record_memory: true, record_profile: true });
    expect(recordingFlags({ memory: false, profile: false })).toEqual({});
  });

  it('records a profile again when re-running a run that recorded one', () => {
    const run = makeRun({ params: { nproc: 2 }, record_profile: true } as Partial<Run>);
    expect(rerunRequest(run)).toEqual({ kind: 'lab', lab: 'lab-03-ddp', params: { nproc: 2 }, record_profile: true });
    const script = makeRun({ kind: 'script', lab: null, script_path: 'train.py', script_args: [], record_profile: true } as Partial<Run>);
    expect(rerunRequest(script)).toMatchObject({ kind: 'script', path: 'train.py', record_profile: true });
  });
});
