import type { NodeStatus, Rendezvous } from '../../extension/src/api/types';
import {
  awaitingNodes,
  joinCommandOf,
  jobLine,
  missingNodes,
  nodeStateLabel,
  rankNodeNames,
  ranksLabel,
  rendezvousLine,
  whereShort
} from '../../extension/src/runs/engineStatus';
import { makeRun } from './runsFixtures';

const RDZV: Rendezvous = {
  endpoint: '10.0.0.1:29400',
  id: '20250101-120000-abcdef',
  min_nodes: 2,
  max_nodes: 2,
  joined: ['node-a'],
  timeout_s: 120,
  state: 'waiting'
};

const WAITING_NODES: NodeStatus[] = [
  { name: 'node-a', state: 'running', ranks: [0, 1], detail: '10.0.0.1' },
  { name: 'node 1', state: 'waiting', ranks: [], detail: 'not joined yet' }
];

describe('a run elsewhere, in words', () => {
  it('names the engine’s job and its state', () => {
    expect(jobLine(makeRun({ engine: 'slurm', job_id: '12', job_state: 'RUNNING' }))).toBe('Slurm job 12 · RUNNING');
    expect(jobLine(makeRun({ engine: 'slurm', job_id: null, job_state: null }))).toBe('Slurm · not submitted yet');
    expect(jobLine(makeRun({ engine: 'kubernetes', job_id: 'gpudojo-lab-03-abc', job_state: 'Running' }))).toBe(
      'Kubernetes job gpudojo-lab-03-abc · Running'
    );
    expect(jobLine(makeRun({ engine: 'torchrun-nodes', nnodes: 2 }))).toBe('torchrun across 2 nodes');
    expect(jobLine(makeRun())).toBeNull();
  });

  it('says in the runs list where a run ran, and nothing for this machine', () => {
    expect(whereShort(makeRun({ engine: 'slurm', nnodes: 2 }))).toBe('Slurm, 2 nodes');
    expect(whereShort(makeRun({ engine: 'torchrun-nodes', nnodes: 1 }))).toBe('torchrun, 1 node');
    expect(whereShort(makeRun({ engine: 'kubernetes', nnodes: 4 }))).toBe('Kubernetes, 4 nodes');
    expect(whereShort(makeRun())).toBeNull();
  });

  it('says how far the rendezvous is, and when it gives up', () => {
    expect(rendezvousLine(RDZV)).toBe(
      'Rendezvous: 1 of 2 nodes joined · 10.0.0.1:29400 · waiting for nodes · gives up after 120 s'
    );
    const elastic = { ...RDZV, min_nodes: 2, max_nodes: 4, joined: ['a', 'b', 'c'], state: 'complete' as const };
    expect(rendezvousLine(elastic)).toBe(
      'Rendezvous: 3 of 4 nodes joined (starts with 2) · 10.0.0.1:29400 · complete · timeout 120 s'
    );
    expect(rendezvousLine({ ...RDZV, state: 'timed_out' })).toContain('timed out');
  });

  it('labels nodes and their ranks', () => {
    expect(nodeStateLabel('waiting')).toBe('Waiting');
    expect(nodeStateLabel('missing')).toBe('Missing');
    expect(ranksLabel([1, 0])).toBe('ranks 0, 1');
    expect(ranksLabel([3])).toBe('rank 3');
    expect(ranksLabel([])).toBe('no ranks yet');
    expect(missingNodes(WAITING_NODES).map(n => n.name)).toEqual(['node 1']);
  });

  it('maps each global rank to its node only when there are several', () => {
    const nodes: NodeStatus[] = [
      { name: 'node-a', state: 'succeeded', ranks: [0, 1], detail: '' },
      { name: 'node-b', state: 'succeeded', ranks: [2, 3], detail: '' }
    ];
    expect([...rankNodeNames(nodes)]).toEqual([
      [0, 'node-a'],
      [1, 'node-a'],
      [2, 'node-b'],
      [3, 'node-b']
    ]);
    expect(rankNodeNames(nodes.slice(0, 1)).size).toBe(0);
  });

  it('shows the join command while torchrun across nodes waits for them, not after', () => {
    const waiting = makeRun({ engine: 'torchrun-nodes', status: 'running', rendezvous: RDZV, nodes: WAITING_NODES });
    expect(awaitingNodes(waiting)).toBe(true);
    expect(awaitingNodes({ ...waiting, rendezvous: { ...RDZV, state: 'complete' } })).toBe(false);
    expect(awaitingNodes({ ...waiting, status: 'failed' })).toBe(false);
    // Queued, before the host has said anything: the other nodes may join already.
    expect(awaitingNodes({ ...waiting, status: 'queued', rendezvous: null, nodes: [] })).toBe(true);
    expect(awaitingNodes(makeRun({ engine: 'slurm', status: 'running' }))).toBe(false);
  });

  it('takes the command to paste out of the join file', () => {
    const text =
      '# On the other machine (gpudojo installed, this machine reachable at 10.0.0.1), run:\n' +
      'gpudojo node join 10.0.0.1:40123 --token abc-DEF_123\n';
    expect(joinCommandOf(text)).toEqual({
      command: 'gpudojo node join 10.0.0.1:40123 --token abc-DEF_123',
      note: 'On the other machine (gpudojo installed, this machine reachable at 10.0.0.1), run:'
    });
    expect(joinCommandOf('')).toEqual({ command: '', note: '' });
  });
});
