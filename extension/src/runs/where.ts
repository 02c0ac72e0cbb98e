/**
 * The run form's "Where" logic: which engines a lab can use, each engine's
 * options as typed fields with the bounds of the server's schema
 * (server/gpudojo/runs/models.py: NodesWhere, SlurmWhere, KubernetesWhere),
 * their defaults, and the `where` object a request carries, checked field by
 * field with the same words as the lab's own parameters.
 */

import type { EngineInfo, EngineName, ParamSpec, RunLauncher, Where } from '../api/types';
import { parseField } from './params';

/** One option of an engine: an int with bounds, a text with a pattern, or a choice. */
export interface WhereField {
  /** Its key in the `where` object. */
  name: string;
  label: string;
  type: 'int' | 'text' | 'choice';
  /** null: left out of the request unless typed (optional fields only). */
  default: number | string | null;
  help: string;
  optional?: boolean;
  min?: number;
  max?: number;
  maxLength?: number;
  pattern?: RegExp;
  /** What a text must look like, said when it does not. */
  patternHint?: string;
  choices?: ReadonlyArray<{ value: string; label: string }>;
}

/** What a field holds: the text typed, or the choice's value. */
export type WhereRaw = Record<string, string>;

/** Engine titles when the server's list has not come (the server's own words otherwise). */
export const ENGINE_TITLES: Record<EngineName, string> = {
  local: 'This machine',
  'torchrun-nodes': 'torchrun across nodes',
  slurm: 'Slurm',
  kubernetes: 'Kubernetes'
};

const NAME_CHARS = "letters, digits, '_', '.' and '-' only";
const K8S_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Each engine's options, in the order the form shows them. */
export const WHERE_FIELDS: Record<EngineName, ReadonlyArray<WhereField>> = {
  local: [],
  'torchrun-nodes': [
    {
      name: 'nnodes',
      label: 'Nodes',
      type: 'int',
      default: 2,
      min: 1,
      max: 64,
      help: 'Machines the job waits for, this one included (the most, when elastic).'
    },
    {
      name: 'min_nodes',
      label: 'Elastic: at least',
      type: 'int',
      default: null,
      optional: true,
      min: 1,
      max: 64,
      help: 'Start once this many nodes have joined (torchrun --nnodes MIN:MAX); empty: wait for all.'
    },
    {
      name: 'host',
      label: 'This machine’s address',
      type: 'text',
      default: '127.0.0.1',
      maxLength: 253,
      pattern: /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/,
      patternHint: 'a host name or an IPv4 address (letters, digits, dots and hyphens)',
      help: 'How the other nodes reach this one: the rendezvous and the log relay listen here.'
    },
    {
      name: 'max_restarts',
      label: 'Restarts',
      type: 'int',
      default: 0,
      min: 0,
      max: 10,
      help: 'torchrun --max-restarts: times the whole job starts again after a failure.'
    },
    {
      name: 'join_timeout_s',
      label: 'Join timeout (s)',
      type: 'int',
      default: 120,
      min: 10,
      max: 3600,
      help: 'How long the rendezvous waits for the nodes before the run fails.'
    }
  ],
  slurm: [
    {
      name: 'nodes',
      label: 'Nodes',
      type: 'int',
      default: 1,
      min: 1,
      max: 64,
      help: '#SBATCH --nodes: one torchrun agent per node.'
    },
    {
      name: 'gpus_per_node',
      label: 'GPUs per node',
      type: 'int',
      default: 0,
      min: 0,
      max: 16,
      help: '#SBATCH --gpus-per-node; 0 runs the ranks on CPUs (gloo).'
    },
    {
      name: 'time_limit_min',
      label: 'Time limit (min)',
      type: 'int',
      default: 30,
      min: 1,
      max: 1440,
      help: '#SBATCH --time: Slurm ends the job after this long.'
    },
    {
      name: 'partition',
      label: 'Partition',
      type: 'text',
      default: null,
      optional: true,
      maxLength: 64,
      pattern: /^[A-Za-z0-9_.-]+$/,
      patternHint: NAME_CHARS,
      help: '#SBATCH --partition; empty: the cluster’s default partition.'
    },
    {
      name: 'account',
      label: 'Account',
      type: 'text',
      default: null,
      optional: true,
      maxLength: 64,
      pattern: /^[A-Za-z0-9_.-]+$/,
      patternHint: NAME_CHARS,
      help: '#SBATCH --account; empty: your default account.'
    }
  ],
  kubernetes: [
    {
      name: 'flavor',
      label: 'Job kind',
      type: 'choice',
      default: 'trainjob',
      choices: [
        { value: 'trainjob', label: 'TrainJob (Kubeflow Trainer v2.2 and later)' },
        { value: 'pytorchjob', label: 'PyTorchJob (legacy training-operator v1)' },
        { value: 'job', label: 'Indexed Job + headless Service (no operator)' }
      ],
      help: 'Which resource the job is: an operator’s, or plain Kubernetes.'
    },
    {
      name: 'nodes',
      label: 'Pods (nodes)',
      type: 'int',
      default: 1,
      min: 1,
      max: 64,
      help: 'One torchrun agent per pod.'
    },
    {
      name: 'gpus_per_node',
      label: 'GPUs per pod',
      type: 'int',
      default: 0,
      min: 0,
      max: 16,
      help: 'nvidia.com/gpu requested per pod (the NVIDIA device plugin); 0: CPUs and gloo.'
    },
    {
      name: 'namespace',
      label: 'Namespace',
      type: 'text',
      default: 'default',
      maxLength: 63,
      pattern: K8S_NAME,
      patternHint: "a Kubernetes name: lower-case letters, digits and '-', starting and ending with a letter or digit",
      help: 'Where the job and its ConfigMap are created.'
    },
    {
      name: 'image',
      label: 'Image',
      type: 'text',
      default: 'pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime',
      maxLength: 256,
      pattern: /^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/,
      patternHint: 'an image reference such as pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime (no spaces)',
      help: 'The container image; it must have torch. The lab’s code comes in a ConfigMap.'
    },
    {
      name: 'cpu',
      label: 'CPUs per pod',
      type: 'int',
      default: 4,
      min: 1,
      max: 256,
      help: 'CPU cores requested per pod.'
    },
    {
      name: 'memory_gi',
      label: 'Memory per pod (GiB)',
      type: 'int',
      default: 16,
      min: 1,
      max: 4096,
      help: 'Memory requested per pod.'
    },
    {
      name: 'shm_gi',
      label: '/dev/shm (GiB)',
      type: 'int',
      default: 2,
      min: 0,
      max: 512,
      help: 'Shared memory for the data loader’s worker processes.'
    },
    {
      name: 'max_restarts',
      label: 'Restarts',
      type: 'int',
      default: 0,
      min: 0,
      max: 10,
      help: 'backoffLimit, or elasticPolicy.maxRestarts for a PyTorchJob.'
    }
  ]
};

/** An engine as the form offers it: whether it can be chosen, and why not. */
export interface EngineChoice {
  name: EngineName;
  title: string;
  available: boolean;
  /** Why it cannot be chosen, or what the server found when it can: one sentence. */
  reason: string;
  /** What lies behind the reason (e.g. what scontrol said), shown on demand; '' for none. */
  detail: string;
}

/**
 * An engine's reason as one line, whatever the server sent: its first line; the lines after
 * it go before the detail (a tool's multi-line error belongs behind the sentence, not in it).
 */
export function reasonAndDetail(reason: string, detail = ''): { reason: string; detail: string } {
  const lines = reason.trim().split(/\r?\n/);
  const first = lines[0].trim();
  const rest = lines.slice(1).join('\n').trim();
  return { reason: first, detail: [rest, detail.trim()].filter(Boolean).join('\n') };
}

/** Why a lab started with plain Python offers only this machine. */
export const PYTHON_ONLY_REASON = 'This lab runs as one Python process, so it runs on this machine.';

/**
 * The engines a lab's form offers: this machine always; the others from GET
 * runs/engines, each with the server's reason, and only for torchrun labs
 * (the engines launch torchrun agents). `engines` null: not known (yet).
 */
export function engineChoices(engines: ReadonlyArray<EngineInfo> | null, launcher: RunLauncher): EngineChoice[] {
  const local = engines?.find(e => e.name === 'local');
  const choices: EngineChoice[] = [
    {
      name: 'local',
      title: local?.title || ENGINE_TITLES.local,
      available: true,
      ...reasonAndDetail(launcher === 'python' ? PYTHON_ONLY_REASON : local?.reason ?? '', local?.detail ?? '')
    }
  ];
  if (launcher !== 'torchrun' || !engines) {
    return choices;
  }
  for (const info of engines) {
    if (info.name !== 'local') {
      choices.push({
        name: info.name,
        title: info.title || ENGINE_TITLES[info.name],
        available: info.available,
        ...reasonAndDetail(info.reason, info.detail ?? '')
      });
    }
  }
  return choices;
}

/** The engine to select at first: `wanted` when it can be chosen, else this machine. */
export function initialEngine(choices: ReadonlyArray<EngineChoice>, wanted: EngineName | null | undefined): EngineName {
  const match = choices.find(c => c.name === wanted && c.available);
  return match ? match.name : 'local';
}

/** The fields' starting text: `given` (e.g. a run's `where` to repeat) where it is set, the defaults elsewhere. */
export function initialWhereRaw(engine: EngineName, given: Record<string, unknown> = {}): WhereRaw {
  const raw: WhereRaw = {};
  for (const field of WHERE_FIELDS[engine]) {
    const value = given[field.name];
    const usable = typeof value === 'number' || (typeof value === 'string' && value !== '');
    raw[field.name] = usable ? String(value) : field.default === null ? '' : String(field.default);
  }
  if (engine === 'torchrun-nodes' && given[SAME_MACHINE] === true) {
    raw[SAME_MACHINE] = 'true'; // repeating a practice run keeps it one
  }
  return raw;
}

export type WhereChecked = { ok: true; value: number | string | null } | { ok: false; error: string };

/** The range under a number field: "1 to 64". */
export function whereRangeText(field: WhereField): string {
  const bounded = field.type === 'int' && field.min !== undefined && field.max !== undefined;
  return bounded ? `${field.min} to ${field.max}` : '';
}

/** One field's text as its value, checked as the server's schema checks it; null: optional and empty. */
export function parseWhereField(field: WhereField, raw: string | undefined): WhereChecked {
  const text = (raw ?? '').trim();
  if (!text && field.optional) {
    return { ok: true, value: null };
  }
  if (field.type === 'int') {
    const spec: ParamSpec = {
      name: field.name,
      type: 'int',
      default: 0,
      help: '',
      min: field.min ?? null,
      max: field.max ?? null,
      choices: null
    };
    const checked = parseField(spec, text);
    return checked.ok ? { ok: true, value: checked.value as number } : checked;
  }
  if (field.type === 'choice') {
    const match = (field.choices ?? []).find(c => c.value === text);
    return match ? { ok: true, value: match.value } : { ok: false, error: 'pick one of the choices' };
  }
  if (!text) {
    return { ok: false, error: 'enter a value' };
  }
  if (field.maxLength !== undefined && text.length > field.maxLength) {
    return { ok: false, error: `at most ${field.maxLength} characters (${text.length} given)` };
  }
  if (field.pattern && !field.pattern.test(text)) {
    return { ok: false, error: `expected ${field.patternHint ?? 'another value'}` };
  }
  return { ok: true, value: text };
}

export interface WhereOutcome {
  /** The `where` to send, or null when a field is wrong. */
  where: Where | null;
  /** Field name -> what is wrong with it. */
  errors: Record<string, string>;
}

/** Check the chosen engine's fields and build the request's `where` (optional fields left empty are left out). */
export function buildWhere(engine: EngineName, raw: WhereRaw): WhereOutcome {
  const errors: Record<string, string> = {};
  const where: Record<string, unknown> = { engine };
  for (const field of WHERE_FIELDS[engine]) {
    const checked = parseWhereField(field, raw[field.name]);
    if (!checked.ok) {
      errors[field.name] = checked.error;
    } else if (checked.value !== null) {
      where[field.name] = checked.value;
    }
  }
  // The server takes a minimum at or above nnodes as "not elastic"; a learner who typed one meant less.
  const nnodes = where.nnodes;
  if (engine === 'torchrun-nodes') {
    const sameMachine = raw[SAME_MACHINE] === 'true';
    const refused = errors.host
      ? null
      : loopbackRefusal(String(where.host ?? ''), typeof nnodes === 'number' ? nnodes : 1, sameMachine);
    if (refused) {
      errors.host = refused;
    }
    if (sameMachine) {
      where[SAME_MACHINE] = true;
    }
  }
  const least = where.min_nodes;
  if (engine === 'torchrun-nodes' && typeof nnodes === 'number' && typeof least === 'number' && least > nnodes) {
    errors.min_nodes = `at most the number of nodes (${nnodes})`;
  }
  return { where: Object.keys(errors).length ? null : (where as Where), errors };
}

/**
 * The server's 400 detail about `where` as errors per field: a body its
 * schema refused comes as [{loc: [..., 'where', <engine>, <field>], msg}].
 */
export function whereErrorsFromDetail(detail: unknown): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!Array.isArray(detail)) {
    return errors;
  }
  for (const entry of detail) {
    const record = entry && typeof entry === 'object' ? (entry as Record<string, unknown>) : null;
    if (!record || !Array.isArray(record.loc) || typeof record.msg !== 'string') {
      continue;
    }
    const loc = record.loc.map(String);
    const at = loc.indexOf('where');
    if (at < 0) {
      continue;
    }
    // After 'where' comes the engine (the union's tag), then the field.
    const rest = loc.slice(at + 1).filter(part => !(part in WHERE_FIELDS));
    errors[rest[0] ?? 'engine'] = record.msg;
  }
  return errors;
}

/**
 * The chooser's "every node on this machine (practice)" checkbox, kept in the raw values
 * ('true'/''); sent as NodesWhere.same_machine when ticked.
 */
export const SAME_MACHINE = 'same_machine';

/** Whether `host` names this machine's loopback (127.0.0.0/8, localhost, ::1). */
export function isLoopback(host: string): boolean {
  const h = host.trim().toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){0,3}$/.test(h);
}

/**
 * Why a multi-node run cannot use `host`: a loopback address, which a node on another
 * machine cannot reach, unless every node runs on this machine (`sameMachine`, practice).
 * null when the address can be used. The server refuses the same (NodesWhere.host).
 */
export function loopbackRefusal(host: string, nnodes: number, sameMachine: boolean): string | null {
  if (nnodes <= 1 || sameMachine || !isLoopback(host)) {
    return null;
  }
  return (
    `${host} is this machine's loopback: a node on another machine cannot reach it. ` +
    'Give an address of this machine the other nodes reach, or tick "every node on this machine (practice)".'
  );
}

/** The address the form proposes for this machine: its first reachable one, else loopback (s). */
export function proposedHost(engines: ReadonlyArray<EngineInfo> | null): string | null {
  const nodes = engines?.find(e => e.name === 'torchrun-nodes');
  return nodes?.addresses?.[0] ?? null;
}
