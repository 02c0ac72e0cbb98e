/**
 * The run panel's fields (text, as the learner types them) -> a RunRequest,
 * with messages that say which field is wrong and how, checked by the same
 * rules as the server's RunRequest model.
 */

import type {
  ArchList,
  ArrayArg,
  ArrayDtype,
  CompileOptions,
  KernelArg,
  KernelLanguage,
  RunRequest,
  ScalarArg,
  ScalarDtype
} from '../api/types';

/** What a caller may preset in the run panel (the command's `run` argument). */
export type RunPreset = Partial<Pick<RunRequest, 'kernel' | 'grid' | 'block' | 'shared_bytes' | 'args' | 'expected'>>;

/** The run panel's fields as text. */
export interface RunForm {
  kernel: string;
  /** "256" or "16, 16" (1 to 3 positive integers). */
  grid: string;
  block: string;
  /** Dynamic shared memory per block (bytes). */
  sharedBytes: string;
  /** A JSON list of ArrayArg / ScalarArg. */
  args: string;
  /** A JSON object: output name -> NumPy expression. */
  expected: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const ARRAY_DTYPES: ReadonlyArray<ArrayDtype> = [
  'float16',
  'bfloat16', // CUDA C's __nv_bfloat16 (numba has no bfloat16 arrays: the server says so)
  'float32',
  'float64',
  'int8',
  'int32',
  'int64',
  'uint8',
  'uint32',
  'uint64'
];
const SCALAR_DTYPES: ReadonlyArray<ScalarDtype> = ['float32', 'float64', 'int32', 'int64', 'uint32', 'uint64'];
const INITS: ReadonlyArray<NonNullable<ArrayArg['init']>> = ['zeros', 'ones', 'arange', 'random', 'full'];
const ARRAY_KEYS = new Set(['kind', 'name', 'dtype', 'shape', 'init', 'value', 'seed', 'output']);
const SCALAR_KEYS = new Set(['kind', 'name', 'dtype', 'value']);
const ARG_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;
const KERNEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The server's limits: arguments per launch, dynamic shared memory (bytes). */
export const MAX_ARGS = 32;
export const MAX_SHARED_BYTES = 1 << 20;

function fail<T>(error: string): Parsed<T> {
  return { ok: false, error };
}

/** The fields showing `preset`, with `fallback`'s values where the preset has none. */
export function formFromPreset(preset: RunPreset, fallback: RunForm): RunForm {
  return {
    kernel: preset.kernel ?? fallback.kernel,
    grid: preset.grid ? preset.grid.join(', ') : fallback.grid,
    block: preset.block ? preset.block.join(', ') : fallback.block,
    sharedBytes: preset.shared_bytes !== undefined ? String(preset.shared_bytes) : fallback.sharedBytes,
    args: preset.args ? formatArgs(preset.args) : fallback.args,
    expected: preset.expected ? JSON.stringify(preset.expected, null, 2) : fallback.expected
  };
}

/** One argument as one readable line: {"kind": "array", "name": "x", "shape": [1024]}. */
function formatArg(arg: KernelArg): string {
  const fields = Object.entries(arg)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${JSON.stringify(key)}: ${JSON.stringify(value)}`);
  return `{${fields.join(', ')}}`;
}

/** Arguments as the textarea shows them: one argument per line. */
export function formatArgs(args: ReadonlyArray<KernelArg>): string {
  if (args.length === 0) {
    return '[]';
  }
  return `[\n${args.map(arg => `  ${formatArg(arg)}`).join(',\n')}\n]`;
}

/** "16, 16" or "[16, 16]" or "16x16" -> [16, 16]: 1 to 3 integers, each at least 1. */
export function parseDim3(text: string, what: string): Parsed<number[]> {
  const parts = text
    .replace(/^\s*\[|\]\s*$/g, '')
    .split(/[\s,x×]+/)
    .filter(part => part !== '');
  if (parts.length < 1 || parts.length > 3) {
    return fail(`${what}: give 1 to 3 sizes, e.g. "256" or "16, 16"`);
  }
  const dims: number[] = [];
  for (const part of parts) {
    const n = Number(part);
    if (!Number.isInteger(n) || n < 1) {
      return fail(`${what}: "${part}" is not a whole number of at least 1`);
    }
    dims.push(n);
  }
  return { ok: true, value: dims };
}

/** Threads in a launch: the product of grid and block sizes. */
export function threadCount(grid: ReadonlyArray<number>, block: ReadonlyArray<number>): number {
  return [...grid, ...block].reduce((total, n) => total * n, 1);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function parseArg(raw: unknown, index: number): Parsed<KernelArg> {
  const where = `args[${index}]`;
  if (!isObject(raw)) {
    return fail(`${where}: each argument is an object such as {"kind": "array", "name": "x", "shape": [1024]}`);
  }
  const kind = raw.kind ?? ('shape' in raw ? 'array' : 'scalar');
  if (kind !== 'array' && kind !== 'scalar') {
    return fail(`${where}: kind must be "array" or "scalar"`);
  }
  const name = raw.name;
  if (typeof name !== 'string' || !ARG_NAME.test(name)) {
    return fail(`${where}: name must be an identifier of at most 32 characters`);
  }
  const label = `${where} (${name})`;
  const allowed = kind === 'array' ? ARRAY_KEYS : SCALAR_KEYS;
  const unknown = Object.keys(raw).filter(key => !allowed.has(key));
  if (unknown.length) {
    return fail(`${label}: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; a ${kind} takes ${[...allowed].join(', ')}`);
  }
  if (kind === 'scalar') {
    const dtype = raw.dtype ?? 'int32';
    if (!SCALAR_DTYPES.includes(dtype as ScalarDtype)) {
      return fail(`${label}: dtype must be one of ${SCALAR_DTYPES.join(', ')}`);
    }
    if (typeof raw.value !== 'number' || !Number.isFinite(raw.value)) {
      return fail(`${label}: a scalar needs a numeric value`);
    }
    const arg: ScalarArg = { kind: 'scalar', name, dtype: dtype as ScalarDtype, value: raw.value };
    return { ok: true, value: arg };
  }
  const dtype = raw.dtype ?? 'float32';
  if (!ARRAY_DTYPES.includes(dtype as ArrayDtype)) {
    return fail(`${label}: dtype must be one of ${ARRAY_DTYPES.join(', ')}`);
  }
  const shape = typeof raw.shape === 'number' ? [raw.shape] : raw.shape;
  if (
    !Array.isArray(shape) ||
    shape.length < 1 ||
    shape.length > 3 ||
    !shape.every(n => Number.isInteger(n) && (n as number) >= 1)
  ) {
    return fail(`${label}: shape must be a list of 1 to 3 whole numbers of at least 1, e.g. [1024]`);
  }
  const arg: ArrayArg = { kind: 'array', name, dtype: dtype as ArrayDtype, shape: shape as number[] };
  if (raw.init !== undefined) {
    if (!INITS.includes(raw.init as NonNullable<ArrayArg['init']>)) {
      return fail(`${label}: init must be one of ${INITS.join(', ')}`);
    }
    arg.init = raw.init as NonNullable<ArrayArg['init']>;
  }
  if (raw.value !== undefined) {
    if (typeof raw.value !== 'number' || !Number.isFinite(raw.value)) {
      return fail(`${label}: value (the fill value of init "full") must be a number`);
    }
    arg.value = raw.value;
  }
  if (raw.seed !== undefined) {
    if (!Number.isInteger(raw.seed)) {
      return fail(`${label}: seed must be a whole number`);
    }
    arg.seed = raw.seed as number;
  }
  if (raw.output !== undefined) {
    if (typeof raw.output !== 'boolean') {
      return fail(`${label}: output must be true or false`);
    }
    arg.output = raw.output;
  }
  return { ok: true, value: arg };
}

/** Parse the arguments textarea: a JSON list of ArrayArg / ScalarArg with distinct names. */
export function parseRunArgs(text: string): Parsed<KernelArg[]> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return fail(`Arguments are not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(raw)) {
    return fail('Arguments must be a JSON list, e.g. [{"kind": "array", "name": "x", "shape": [1024]}]');
  }
  if (raw.length > MAX_ARGS) {
    return fail(`At most ${MAX_ARGS} arguments`);
  }
  const args: KernelArg[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < raw.length; i++) {
    const parsed = parseArg(raw[i], i);
    if (!parsed.ok) {
      return parsed;
    }
    if (seen.has(parsed.value.name)) {
      return fail(`args[${i}]: the name "${parsed.value.name}" is used twice`);
    }
    seen.add(parsed.value.name);
    args.push(parsed.value);
  }
  return { ok: true, value: args };
}

/** Parse the expected textarea: {output name: NumPy expression}; every name an output array of `args`. */
export function parseExpected(text: string, args: ReadonlyArray<KernelArg>): Parsed<Record<string, string>> {
  if (!text.trim()) {
    return { ok: true, value: {} };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return fail(`Expected is not valid JSON: ${(error as Error).message}`);
  }
  if (!isObject(raw)) {
    return fail('Expected must be a JSON object, e.g. {"y": "a * x + y"}');
  }
  const outputs = new Set(args.filter(arg => arg.kind === 'array' && arg.output).map(arg => arg.name));
  const expected: Record<string, string> = {};
  for (const [name, expression] of Object.entries(raw)) {
    if (typeof expression !== 'string' || !expression.trim()) {
      return fail(`Expected ${name}: give a NumPy expression as a string, e.g. "a * x + y"`);
    }
    if (!outputs.has(name)) {
      return fail(`Expected ${name}: not an output array (mark the argument with "output": true)`);
    }
    expected[name] = expression;
  }
  return { ok: true, value: expected };
}

/** numba's type of one argument: float32[:] for a 1-d array, float32[:, :] for 2-d, int32 for a scalar. */
function numbaType(arg: KernelArg): string {
  const dtype = arg.dtype ?? (arg.kind === 'array' ? 'float32' : 'int32');
  if (arg.kind === 'scalar') {
    return dtype;
  }
  return `${dtype}[${arg.shape.map(() => ':').join(', ')}]`;
}

/** The numba signature that launches a kernel with `args`, e.g. 'void(float32[:], float32[:], int32)'. */
export function numbaSignature(args: ReadonlyArray<KernelArg>): string {
  return `void(${args.map(numbaType).join(', ')})`;
}

/** What a run needs besides the form. */
export interface RunContext {
  source: string;
  language: KernelLanguage;
  options: CompileOptions;
}

/** The whole form checked into a RunRequest, or the first problem found. */
export function buildRunRequest(form: RunForm, context: RunContext): Parsed<RunRequest> {
  const kernel = form.kernel.trim();
  if (!KERNEL_NAME.test(kernel)) {
    return fail('Kernel: give the name of the kernel to launch (the extern "C" name, or the Python function)');
  }
  const grid = parseDim3(form.grid, 'Grid');
  if (!grid.ok) {
    return grid;
  }
  const block = parseDim3(form.block, 'Block');
  if (!block.ok) {
    return block;
  }
  const shared = form.sharedBytes.trim() === '' ? 0 : Number(form.sharedBytes);
  if (!Number.isInteger(shared) || shared < 0 || shared > MAX_SHARED_BYTES) {
    return fail(`Shared bytes: a whole number from 0 to ${MAX_SHARED_BYTES}`);
  }
  const args = parseRunArgs(form.args);
  if (!args.ok) {
    return args;
  }
  const expected = parseExpected(form.expected, args.value);
  if (!expected.ok) {
    return expected;
  }
  const request: RunRequest = {
    source: context.source,
    language: context.language,
    kernel,
    grid: grid.value,
    block: block.value,
    shared_bytes: shared,
    args: args.value,
    expected: expected.value,
    options: context.options
  };
  return { ok: true, value: request };
}

/** True when the decorator of Python function `name` names its own signature, e.g. @cuda.jit("void(int32[:])"). */
export function hasExplicitSignature(source: string, name: string): boolean {
  if (!KERNEL_NAME.test(name)) {
    return false;
  }
  const lines = source.split(/\r?\n/);
  const def = new RegExp(`^\\s*def\\s+${name}\\s*\\(`);
  const at = lines.findIndex(line => def.test(line));
  // A first positional argument (not `device=...`, not empty) is the signature.
  const signed = /@(?:cuda\.)?jit\(\s*(?![A-Za-z_]\w*\s*=)(?!\))/;
  for (let i = at - 1; i >= 0; i--) {
    const line = lines[i].trim();
    if (!line.startsWith('@')) {
      break;
    }
    if (signed.test(line)) {
      return true;
    }
  }
  return false;
}

/**
 * The numba signatures a compile needs: the run panel's kernel typed from its
 * arguments, unless its decorator names a signature (which then wins).
 *
 * Empty when the form does not parse; the compile then says which kernel lacks one.
 */
export function compileSignatures(source: string, form: RunForm): Record<string, string> {
  const kernel = form.kernel.trim();
  const args = parseRunArgs(form.args);
  if (!KERNEL_NAME.test(kernel) || !args.ok || hasExplicitSignature(source, kernel)) {
    return {};
  }
  return { [kernel]: numbaSignature(args.value) };
}

/** The run fields as a preset (to reopen the playground with): every field that parses. */
export function presetFromForm(form: RunForm): RunPreset {
  const preset: RunPreset = { kernel: form.kernel };
  const grid = parseDim3(form.grid, 'Grid');
  const block = parseDim3(form.block, 'Block');
  const args = parseRunArgs(form.args);
  const shared = Number(form.sharedBytes);
  if (grid.ok) {
    preset.grid = grid.value;
  }
  if (block.ok) {
    preset.block = block.value;
  }
  if (Number.isInteger(shared) && shared >= 0) {
    preset.shared_bytes = shared;
  }
  if (args.ok) {
    preset.args = args.value;
    const expected = parseExpected(form.expected, args.value);
    if (expected.ok) {
      preset.expected = expected.value;
    }
  }
  return preset;
}

/**
 * Why the simulator would refuse this launch (more threads than the server
 * simulates), said before sending it; null when it is fine or will run on a GPU.
 */
export function simulatorProblem(request: RunRequest, archs: ArchList | null): string | null {
  if (request.language !== 'numba' || !archs || archs.gpu_arch) {
    return null;
  }
  const threads = threadCount(request.grid, request.block);
  const limit = archs.simulator_max_threads;
  if (threads <= limit) {
    return null;
  }
  return (
    `This launch has ${threads} threads; with no GPU it runs in the simulator, which runs at most ` +
    `${limit} (about 200 µs each). Make the grid or the arrays smaller.`
  );
}
