import type { EngineInfo } from '../../extension/src/api/types';
import {
  PYTHON_ONLY_REASON,
  SAME_MACHINE,
  WHERE_FIELDS,
  buildWhere,
  engineChoices,
  initialEngine,
  initialWhereRaw,
  isLoopback,
  parseWhereField,
  proposedHost,
  reasonAndDetail,
  whereErrorsFromDetail,
  whereRangeText
} from '../../extension/src/runs/where';
import { rerunRequest } from '../../extension/src/runs/requests';
import { makeRun } from './runsFixtures';

/** GET runs/engines on a machine with a Slurm controller and no kubeconfig. */
const ENGINES: EngineInfo[] = [
  { name: 'local', title: 'This machine', available: true, reason: 'torchrun on this machine', detail: '', can_generate: true, addresses: [] },
  {
    name: 'torchrun-nodes',
    title: 'torchrun across nodes',
    available: true,
    reason: 'this machine hosts the rendezvous',
    detail: '',
    can_generate: true,
    addresses: ['10.0.0.5', '192.168.1.7']
  },
  { name: 'slurm', title: 'Slurm', available: true, reason: 'slurmctld at node-a is UP', detail: '', can_generate: true, addresses: [] },
  {
    name: 'kubernetes',
    title: 'Kubernetes',
    available: false,
    reason: 'no kubeconfig: set KUBECONFIG or write ~/.kube/config',
    detail: '',
    can_generate: true,
    addresses: []
  }
];

const field = (engine: keyof typeof WHERE_FIELDS, name: string) => WHERE_FIELDS[engine].find(f => f.name === name)!;

describe('where a run may go', () => {
  it('offers a torchrun lab every engine, the unavailable ones with their reason', () => {
    const choices = engineChoices(ENGINES, 'torchrun');
    expect(choices.map(c => [c.name, c.available])).toEqual([
      ['local', true],
      ['torchrun-nodes', true],
      ['slurm', true],
      ['kubernetes', false]
    ]);
    expect(choices[3].reason).toBe('no kubeconfig: set KUBECONFIG or write ~/.kube/config');
    expect(choices[2].title).toBe('Slurm');
  });

  it('offers a plain Python lab this machine only, and says why', () => {
    const choices = engineChoices(ENGINES, 'python');
    expect(choices).toEqual([
      { name: 'local', title: 'This machine', available: true, reason: PYTHON_ONLY_REASON, detail: '' }
    ]);
  });

  it("gives an unavailable engine's reason in one line, what lies behind it as details", () => {
    const scontrol =
      'scontrol ping found no Slurm controller that answers: is slurmctld running and reachable?';
    const said = 'slurm_load_ctl_conf error: Unable to resolve "_slurmctld._tcp"\nping failed';
    const slurm = { ...ENGINES[2], available: false, reason: scontrol, detail: said };
    const [, , choice] = engineChoices([ENGINES[0], ENGINES[1], slurm, ENGINES[3]], 'torchrun');
    expect(choice).toMatchObject({ reason: scontrol, detail: said, available: false });
    // A reason that came with several lines keeps its first; the rest goes behind it.
    expect(reasonAndDetail('Slurm is not usable here.\nerror: DNS SRV lookup failed\n', 'exit 1')).toEqual({
      reason: 'Slurm is not usable here.',
      detail: 'error: DNS SRV lookup failed\nexit 1'
    });
    expect(reasonAndDetail('one line', '')).toEqual({ reason: 'one line', detail: '' });
  });

  it('offers this machine alone until the server has said where else', () => {
    expect(engineChoices(null, 'torchrun').map(c => c.name)).toEqual(['local']);
  });

  it('starts on the engine asked for only when it can be chosen', () => {
    const choices = engineChoices(ENGINES, 'torchrun');
    expect(initialEngine(choices, 'slurm')).toBe('slurm');
    expect(initialEngine(choices, 'kubernetes')).toBe('local');
    expect(initialEngine(choices, null)).toBe('local');
  });

  it('has the bounds of the server schema on every number field', () => {
    expect(whereRangeText(field('torchrun-nodes', 'nnodes'))).toBe('1 to 64');
    expect(whereRangeText(field('torchrun-nodes', 'join_timeout_s'))).toBe('10 to 3600');
    expect(whereRangeText(field('slurm', 'gpus_per_node'))).toBe('0 to 16');
    expect(whereRangeText(field('slurm', 'time_limit_min'))).toBe('1 to 1440');
    expect(whereRangeText(field('kubernetes', 'memory_gi'))).toBe('1 to 4096');
    expect(WHERE_FIELDS.slurm.map(f => f.name)).toEqual(['nodes', 'gpus_per_node', 'time_limit_min', 'partition', 'account']);
    expect(WHERE_FIELDS['torchrun-nodes'].map(f => f.name)).toEqual([
      'nnodes',
      'min_nodes',
      'host',
      'max_restarts',
      'join_timeout_s'
    ]);
    expect(WHERE_FIELDS.kubernetes.map(f => f.name)).toEqual([
      'flavor',
      'nodes',
      'gpus_per_node',
      'namespace',
      'image',
      'cpu',
      'memory_gi',
      'shm_gi',
      'max_restarts'
    ]);
  });

  it('builds a Slurm where from the defaults, leaving empty optional fields out', () => {
    const raw = initialWhereRaw('slurm');
    expect(raw).toEqual({ nodes: '1', gpus_per_node: '0', time_limit_min: '30', partition: '', account: '' });
    expect(buildWhere('slurm', raw)).toEqual({
      where: { engine: 'slurm', nodes: 1, gpus_per_node: 0, time_limit_min: 30 },
      errors: {}
    });
    const typed = { ...raw, nodes: ' 4 ', gpus_per_node: '8', partition: 'gpu', account: 'ml-team' };
    expect(buildWhere('slurm', typed).where).toEqual({
      engine: 'slurm',
      nodes: 4,
      gpus_per_node: 8,
      time_limit_min: 30,
      partition: 'gpu',
      account: 'ml-team'
    });
  });

  it('refuses what the server schema refuses, naming the field', () => {
    const raw = { ...initialWhereRaw('slurm'), nodes: '65', time_limit_min: '1.5', partition: 'gpu queue' };
    const outcome = buildWhere('slurm', raw);
    expect(outcome.where).toBeNull();
    expect(outcome.errors).toEqual({
      nodes: '65 is above the maximum, 64',
      time_limit_min: 'expected a whole number, got 1.5',
      partition: "expected letters, digits, '_', '.' and '-' only"
    });
    expect(parseWhereField(field('kubernetes', 'namespace'), 'Team_A')).toEqual({
      ok: false,
      error: "expected a Kubernetes name: lower-case letters, digits and '-', starting and ending with a letter or digit"
    });
    expect(parseWhereField(field('kubernetes', 'namespace'), '')).toEqual({ ok: false, error: 'enter a value' });
    expect(parseWhereField(field('torchrun-nodes', 'host'), 'a'.repeat(254))).toEqual({
      ok: false,
      error: 'at most 253 characters (254 given)'
    });
    expect(parseWhereField(field('torchrun-nodes', 'host'), '10.0.0.1')).toEqual({ ok: true, value: '10.0.0.1' });
    expect(parseWhereField(field('kubernetes', 'flavor'), 'deployment')).toEqual({ ok: false, error: 'pick one of the choices' });
  });

  it('builds torchrun across nodes, elastic only when a smaller minimum is typed', () => {
    const raw = { ...initialWhereRaw('torchrun-nodes'), host: '10.0.0.5' };
    expect(buildWhere('torchrun-nodes', raw).where).toEqual({
      engine: 'torchrun-nodes',
      nnodes: 2,
      host: '10.0.0.5',
      max_restarts: 0,
      join_timeout_s: 120
    });
    const elastic = buildWhere('torchrun-nodes', { ...raw, nnodes: '4', min_nodes: '2', max_restarts: '3' });
    expect(elastic.where).toMatchObject({ nnodes: 4, min_nodes: 2, max_restarts: 3 });
    expect(buildWhere('torchrun-nodes', { ...raw, min_nodes: '3' }).errors).toEqual({
      min_nodes: 'at most the number of nodes (2)'
    });
    expect(buildWhere('torchrun-nodes', { ...raw, join_timeout_s: '5' }).errors).toEqual({
      join_timeout_s: '5 is below the minimum, 10'
    });
  });

  it('proposes an address other nodes reach and refuses loopback for several nodes, unless all run here', () => {
    expect(proposedHost(ENGINES)).toBe('10.0.0.5');
    expect(proposedHost(null)).toBeNull();
    const raw = initialWhereRaw('torchrun-nodes');
    expect(buildWhere('torchrun-nodes', raw).errors.host).toBe(
      "127.0.0.1 is this machine's loopback: a node on another machine cannot reach it. " +
        'Give an address of this machine the other nodes reach, or tick "every node on this machine (practice)".'
    );
    expect(buildWhere('torchrun-nodes', { ...raw, host: 'localhost' }).errors.host).toMatch(/loopback/);
    // Ticked, loopback is sent with same_machine (the server refuses loopback without it).
    expect(buildWhere('torchrun-nodes', { ...raw, [SAME_MACHINE]: 'true' }).where).toEqual({
      engine: 'torchrun-nodes',
      nnodes: 2,
      host: '127.0.0.1',
      same_machine: true,
      max_restarts: 0,
      join_timeout_s: 120
    });
    expect(buildWhere('torchrun-nodes', { ...raw, host: '10.0.0.5' }).where).not.toHaveProperty('same_machine');
    const again = initialWhereRaw('torchrun-nodes', { engine: 'torchrun-nodes', host: '127.0.0.1', same_machine: true });
    expect(buildWhere('torchrun-nodes', again).where).toMatchObject({ host: '127.0.0.1', same_machine: true });
    expect(buildWhere('torchrun-nodes', { ...raw, nnodes: '1' }).errors).toEqual({});
    expect(isLoopback('127.0.1.1')).toBe(true);
    expect(isLoopback('10.0.0.5')).toBe(false);
  });

  it('builds a Kubernetes where with its flavour and resources', () => {
    const raw = { ...initialWhereRaw('kubernetes'), flavor: 'pytorchjob', nodes: '4', gpus_per_node: '8' };
    expect(buildWhere('kubernetes', raw).where).toEqual({
      engine: 'kubernetes',
      flavor: 'pytorchjob',
      nodes: 4,
      gpus_per_node: 8,
      namespace: 'default',
      image: 'pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime',
      cpu: 4,
      memory_gi: 16,
      shm_gi: 2,
      max_restarts: 0
    });
  });

  it('this machine needs no options', () => {
    expect(buildWhere('local', {})).toEqual({ where: { engine: 'local' }, errors: {} });
  });

  it('starts from a run’s where when repeating it', () => {
    const raw = initialWhereRaw('slurm', { engine: 'slurm', nodes: 2, gpus_per_node: 0, partition: null, account: 'x' });
    expect(raw).toEqual({ nodes: '2', gpus_per_node: '0', time_limit_min: '30', partition: '', account: 'x' });
  });

  it('places the server’s schema errors about where at their field', () => {
    const detail = [
      { loc: ['lab', 'where', 'slurm', 'nodes'], msg: 'Input should be less than or equal to 64' },
      { loc: ['lab', 'params', 'nproc'], msg: 'not mine' },
      { loc: ['lab', 'where'], msg: "Input tag 'mainframe' found using 'engine' does not match any of the expected tags" }
    ];
    expect(whereErrorsFromDetail(detail)).toEqual({
      nodes: 'Input should be less than or equal to 64',
      engine: "Input tag 'mainframe' found using 'engine' does not match any of the expected tags"
    });
    expect(whereErrorsFromDetail('nope')).toEqual({});
  });

  it('runs again where the run ran', () => {
    const where = { engine: 'slurm', nodes: 1, gpus_per_node: 0, time_limit_min: 30, partition: null, account: null };
    const run = makeRun({ engine: 'slurm', where });
    expect(rerunRequest(run)).toEqual({ kind: 'lab', lab: 'lab-03-ddp', params: { nproc: 2, epochs: 1 }, where });
    expect(rerunRequest(makeRun())).not.toHaveProperty('where');
  });
});
