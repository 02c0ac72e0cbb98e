/**
 * Words of a run that ran elsewhere: the engine's job and its state, the
 * rendezvous of torchrun across nodes, each node's state and ranks, and the
 * join command the other nodes paste. Pure functions of the run document.
 */

import type { EngineName, NodeState, NodeStatus, Rendezvous, Run } from '../api/types';
import { FINAL_STATUSES } from '../api/types';
import { ENGINE_TITLES } from './where';

/** The artifact that holds torchrun-nodes' join command. */
export const JOIN_ARTIFACT = 'join-command.txt';

export function engineTitle(engine: EngineName): string {
  return ENGINE_TITLES[engine] ?? engine;
}

/**
 * The engine's line in the run view: "Slurm job 12 · RUNNING", "Kubernetes
 * job lab-03-x · Running", "torchrun across 2 nodes"; null for this machine.
 */
export function jobLine(run: Pick<Run, 'engine' | 'job_id' | 'job_state' | 'nnodes'>): string | null {
  if (run.engine === 'local') {
    return null;
  }
  const state = run.job_state ? ` · ${run.job_state}` : '';
  if (run.engine === 'torchrun-nodes') {
    return `torchrun across ${run.nnodes} node${run.nnodes === 1 ? '' : 's'}${state}`;
  }
  const title = engineTitle(run.engine);
  return run.job_id ? `${title} job ${run.job_id}${state}` : `${title} · not submitted yet${state}`;
}

/** Where a run ran, for the runs list: "Slurm, 2 nodes"; null for this machine. */
export function whereShort(run: Pick<Run, 'engine' | 'nnodes'>): string | null {
  if (run.engine === 'local') {
    return null;
  }
  const title = run.engine === 'torchrun-nodes' ? 'torchrun' : engineTitle(run.engine);
  return `${title}, ${run.nnodes} node${run.nnodes === 1 ? '' : 's'}`;
}

const RENDEZVOUS_WORDS: Record<Rendezvous['state'], string> = {
  waiting: 'waiting for nodes',
  complete: 'complete',
  timed_out: 'timed out',
  closed: 'closed'
};

/** "Rendezvous: 1 of 2 nodes joined · 10.0.0.1:29400 · waiting for nodes · gives up after 120 s". */
export function rendezvousLine(rdzv: Rendezvous): string {
  const elastic = rdzv.min_nodes < rdzv.max_nodes ? ` (starts with ${rdzv.min_nodes})` : '';
  const joined = `${rdzv.joined.length} of ${rdzv.max_nodes} node${rdzv.max_nodes === 1 ? '' : 's'} joined${elastic}`;
  const timeout = rdzv.state === 'waiting' ? `gives up after ${rdzv.timeout_s} s` : `timeout ${rdzv.timeout_s} s`;
  return `Rendezvous: ${joined} · ${rdzv.endpoint} · ${RENDEZVOUS_WORDS[rdzv.state] ?? rdzv.state} · ${timeout}`;
}

const NODE_STATE_LABELS: Record<NodeState, string> = {
  waiting: 'Waiting',
  joined: 'Joined',
  running: 'Running',
  succeeded: 'Succeeded',
  failed: 'Failed',
  lost: 'Lost',
  missing: 'Missing'
};

export function nodeStateLabel(state: NodeState): string {
  return NODE_STATE_LABELS[state] ?? state;
}

/** "ranks 0, 1", "rank 3", or "no ranks yet" for a node still joining. */
export function ranksLabel(ranks: ReadonlyArray<number>): string {
  if (!ranks.length) {
    return 'no ranks yet';
  }
  return `${ranks.length === 1 ? 'rank' : 'ranks'} ${[...ranks].sort((a, b) => a - b).join(', ')}`;
}

/** Which node runs each global rank (for labelling log tabs); empty with one node or none, where it says nothing. */
export function rankNodeNames(nodes: ReadonlyArray<NodeStatus>): Map<number, string> {
  const names = new Map<number, string>();
  if (nodes.length < 2) {
    return names;
  }
  for (const node of nodes) {
    for (const rank of node.ranks) {
      names.set(rank, node.name);
    }
  }
  return names;
}

/** Nodes the run still waits for (not joined yet, or gone missing). */
export function missingNodes(nodes: ReadonlyArray<NodeStatus>): NodeStatus[] {
  return nodes.filter(node => node.state === 'waiting' || node.state === 'missing');
}

/** Whether the view shows the join command up front: torchrun across nodes, not ended, its rendezvous still open. */
export function awaitingNodes(run: Pick<Run, 'engine' | 'status' | 'rendezvous' | 'nodes'>): boolean {
  if (run.engine !== 'torchrun-nodes' || FINAL_STATUSES.has(run.status)) {
    return false;
  }
  if (run.rendezvous) {
    return run.rendezvous.state === 'waiting';
  }
  return run.nodes.length === 0 || missingNodes(run.nodes).length > 0;
}

/** The join artifact's text split into the command to paste (its last non-comment line) and the note above it. */
export function joinCommandOf(text: string): { command: string; note: string } {
  const lines = text
    .split('\n')
    .map(line => line.trim())
    .filter(Boolean);
  const commands = lines.filter(line => !line.startsWith('#'));
  const note = lines
    .filter(line => line.startsWith('#'))
    .map(line => line.replace(/^#+\s*/, ''))
    .join(' ');
  return { command: commands[commands.length - 1] ?? '', note };
}
