import { readGroupId, readLabId, readParams, readRunId } from '../../extension/src/runs/commands';
import { rerunRequest, scriptArgsOf, scriptRequest, splitArgs } from '../../extension/src/runs/requests';
import { makeRun } from './runsFixtures';

describe('run requests', () => {
  it('splits script arguments as a shell would', () => {
    expect(splitArgs(`--epochs 2  --name "my run" --tag 'a b' x\\ y`)).toEqual([
      '--epochs',
      '2',
      '--name',
      'my run',
      '--tag',
      'a b',
      'x y'
    ]);
    expect(splitArgs('   ')).toEqual([]);
    expect(splitArgs(`--empty ''`)).toEqual(['--empty', '']);
    expect(() => splitArgs('"open')).toThrow(/unclosed double quote/);
  });

  it('checks the process count of a script run', () => {
    expect(scriptRequest('train.py', '4', '--lr 0.1')).toEqual({
      kind: 'script',
      path: 'train.py',
      nproc: 4,
      args: ['--lr', '0.1'],
      launcher: 'torchrun'
    });
    expect(() => scriptRequest('train.py', '0', '')).toThrow(/1 to 64/);
    expect(() => scriptRequest('train.py', '2.5', '')).toThrow(/whole number/);
  });

  it('runs a lab again with the same parameters, as one run even from a sweep', () => {
    const run = makeRun({ params: { nproc: 4, epochs: 1 }, group: 'sweep-0123456789', group_param: 'nproc' });
    expect(rerunRequest(run)).toEqual({ kind: 'lab', lab: 'lab-03-ddp', params: { nproc: 4, epochs: 1 } });
  });

  it('runs a script again with the arguments that followed it in the command', () => {
    const run = makeRun({
      kind: 'script',
      lab: null,
      title: 'work/train.py',
      nproc: 3,
      params: {},
      argv: ['/py', '-m', 'torch.distributed.run', '--nproc-per-node', '3', '/home/me/work/train.py', '--lr', '0.1']
    });
    expect(scriptArgsOf(run)).toEqual(['--lr', '0.1']);
    expect(rerunRequest(run)).toEqual({
      kind: 'script',
      path: 'work/train.py',
      nproc: 3,
      args: ['--lr', '0.1'],
      launcher: 'torchrun'
    });
  });

  it('reads command arguments without trusting them', () => {
    expect(readLabId({ lab: 'lab-03-ddp' })).toBe('lab-03-ddp');
    expect(readLabId({ lab: '../etc' })).toBeNull();
    expect(readRunId({ id: '20250101-120000-abcdef' })).toBe('20250101-120000-abcdef');
    expect(readRunId({ id: 'x' })).toBeNull();
    expect(readGroupId({ group: 'sweep-0123456789' })).toBe('sweep-0123456789');
    expect(readParams({ params: { nproc: 2, ok: true, name: 'a', bad: [1], inf: null } })).toEqual({
      nproc: 2,
      ok: true,
      name: 'a'
    });
  });
});
