/** Runs API documents for the runs tests, shaped as server/gpudojo/runs/models.py sends them. */

import type { LabSummary, LogEvent, MetricEvent, Run, RunEvent, StatusEvent } from '../../extension/src/api/types';

/** lab-03-ddp's form, as GET runs/labs lists it (a few parameters). */
export const DDP_LAB: LabSummary = {
  id: 'lab-03-ddp',
  title: 'Multi-GPU training with DDP',
  needs: 'multi-gpu',
  cpu_path: 'gloo over loopback',
  launcher: 'torchrun',
  parameters: [
    { name: 'nproc', type: 'int', default: 2, help: 'Processes', min: 1, max: 8, choices: null },
    { name: 'epochs', type: 'int', default: 3, help: 'Passes', min: 1, max: 50, choices: null },
    { name: 'lr', type: 'float', default: 0.05, help: 'SGD learning rate', min: 0.0001, max: 1, choices: null },
    { name: 'use_sampler', type: 'bool', default: true, help: 'DistributedSampler', min: null, max: null, choices: null },
    { name: 'block', type: 'choice', default: 256, help: 'Threads', min: null, max: null, choices: [64, 128, 256] },
    { name: 'part', type: 'choice', default: 'all', help: 'Which part', min: null, max: null, choices: ['vector-add', 'all'] }
  ],
  metrics: [
    { name: 'loss', unit: 'nats', help: '', chart: true },
    { name: 'epoch_time_s', unit: 's', help: '', chart: true }
  ],
  checks: [],
  records: []
};

export function makeRun(overrides: Partial<Run> = {}): Run {
  return {
    id: '20250101-120000-abcdef',
    kind: 'lab',
    lab: 'lab-03-ddp',
    title: 'Multi-GPU training with DDP',
    params: { nproc: 2, epochs: 1 },
    launcher: 'torchrun',
    nproc: 2,
    status: 'running',
    backend: 'gloo',
    device_mode: 'cpu',
    mode_note: 'CPU mode',
    argv: ['/venv/bin/python', '-m', 'torch.distributed.run', '--nproc-per-node', '2', '/labs/lab-03-ddp/train_ddp.py', '--epochs', '1'],
    created_at: 1_700_000_000,
    started_at: 1_700_000_001,
    ended_at: null,
    exit_code: null,
    root_cause: null,
    checks: [],
    record_memory: false,
    record_profile: false,
    script_path: null,
    script_args: [],
    group: null,
    group_param: null,
    user: '',
    engine: 'local',
    where: {},
    nnodes: 1,
    job_id: null,
    job_state: null,
    nodes: [],
    rendezvous: null,
    artifacts: [],
    ...overrides
  };
}

export function log(seq: number, rank: number | null, text: string, stream: 'stdout' | 'stderr' = 'stdout'): LogEvent {
  return { type: 'log', seq, rank, stream, text, t: 1_700_000_002 + seq };
}

export function metric(seq: number, rank: number, step: number | null, values: MetricEvent['values']): MetricEvent {
  return { type: 'metric', seq, rank, step, values, t: 1_700_000_002 + seq };
}

export function status(seq: number, overrides: Partial<Run> = {}): StatusEvent {
  return { type: 'status', seq, run: makeRun(overrides) };
}

export function batch(events: RunEvent[]): string {
  return JSON.stringify({ type: 'batch', events });
}
