/**
 * The lab run form's logic: raw field values in, a run request or errors per
 * field out. The checks mirror the server's (server/gpudojo/runs/manifest.py),
 * so a learner sees a mistake next to its field before anything is sent; the
 * server checks again and its 400s land in the same places.
 */

import type { LabRunRequest, LabSummary, ParamSpec, ParamValue } from '../api/types';

/** What a field holds: the text of a number input, the index of a choice, a checkbox's state. */
export type RawValue = string | boolean;

export type RawValues = Record<string, RawValue>;

/** The Sweep option: run once per value of `param`, typed as a list in `text`. */
export interface SweepDraft {
  enabled: boolean;
  param: string;
  text: string;
}

/** The key under which errors of the sweep's own field are kept. */
export const SWEEP_FIELD = 'sweep';

/** Most values one sweep may have (the server's limit). */
export const MAX_SWEEP_VALUES = 8;

export type Checked = { ok: true; value: ParamValue } | { ok: false; error: string };

function fail(error: string): Checked {
  return { ok: false, error };
}

function show(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}

/** Check one value against its spec as the server does; whole floats become ints for int params. */
export function checkParam(spec: ParamSpec, value: unknown): Checked {
  if (spec.type === 'bool') {
    return typeof value === 'boolean' ? { ok: true, value } : fail(`expected true or false, got ${show(value)}`);
  }
  if (spec.type === 'choice') {
    const choices = spec.choices ?? [];
    // Strict equality keeps true apart from 1, as the server does.
    const match = choices.find(c => c === value);
    return match !== undefined
      ? { ok: true, value: match }
      : fail(`expected one of ${choices.map(String).join(', ')}; got ${show(value)}`);
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    return fail(spec.type === 'int' ? `expected a whole number, got ${show(value)}` : `expected a number, got ${show(value)}`);
  }
  if (spec.type === 'int' && !Number.isInteger(value)) {
    return fail(`expected a whole number, got ${value}`);
  }
  if (spec.min !== null && spec.min !== undefined && value < spec.min) {
    return fail(`${value} is below the minimum, ${spec.min}`);
  }
  if (spec.max !== null && spec.max !== undefined && value > spec.max) {
    return fail(`${value} is above the maximum, ${spec.max}`);
  }
  return { ok: true, value };
}

/** A field's raw value as the parameter's value, checked. */
export function parseField(spec: ParamSpec, raw: RawValue): Checked {
  if (spec.type === 'bool') {
    return checkParam(spec, raw === true || raw === 'true');
  }
  if (spec.type === 'choice') {
    const index = Number(raw);
    const choices = spec.choices ?? [];
    return Number.isInteger(index) && index >= 0 && index < choices.length
      ? checkParam(spec, choices[index])
      : fail('pick one of the choices');
  }
  const text = String(raw).trim();
  if (!text) {
    return fail('enter a number');
  }
  const value = Number(text);
  if (!Number.isFinite(value)) {
    return fail(spec.type === 'int' ? `expected a whole number, got '${text}'` : `expected a number, got '${text}'`);
  }
  return checkParam(spec, value);
}

/** The raw field value that shows `value` (a choice's index; a number's text). */
export function rawOf(spec: ParamSpec, value: ParamValue): RawValue {
  if (spec.type === 'bool') {
    return value === true;
  }
  if (spec.type === 'choice') {
    const index = (spec.choices ?? []).findIndex(c => c === value);
    return String(Math.max(0, index));
  }
  return String(value);
}

/** The form's starting values: `given` where it fits the spec, the defaults elsewhere. */
export function initialValues(lab: LabSummary, given: Record<string, ParamValue> = {}): RawValues {
  const raw: RawValues = {};
  for (const spec of lab.parameters) {
    const wanted = given[spec.name];
    const usable = wanted !== undefined && checkParam(spec, wanted).ok;
    raw[spec.name] = rawOf(spec, usable ? wanted : spec.default);
  }
  return raw;
}

/** One sweep token as the parameter's value. */
function parseToken(spec: ParamSpec, token: string): Checked {
  if (spec.type === 'bool') {
    const lower = token.toLowerCase();
    if (['true', 'yes', 'on', '1'].includes(lower)) {
      return { ok: true, value: true };
    }
    if (['false', 'no', 'off', '0'].includes(lower)) {
      return { ok: true, value: false };
    }
    return fail(`'${token}' is not true or false`);
  }
  if (spec.type === 'choice') {
    const match = (spec.choices ?? []).find(c => String(c) === token);
    return match !== undefined ? { ok: true, value: match } : checkParam(spec, token);
  }
  const value = Number(token);
  return Number.isFinite(value) ? checkParam(spec, value) : fail(`'${token}' is not a number`);
}

/** The values of a sweep typed as "1, 2, 4" (commas, spaces or semicolons); each checked. */
export function parseSweepValues(
  spec: ParamSpec,
  text: string
): { ok: true; values: ParamValue[] } | { ok: false; error: string } {
  const tokens = text.split(/[\s,;]+/).filter(Boolean);
  if (!tokens.length) {
    return { ok: false, error: `enter the values of ${spec.name} to run, e.g. 1, 2, 4` };
  }
  if (tokens.length > MAX_SWEEP_VALUES) {
    return { ok: false, error: `at most ${MAX_SWEEP_VALUES} values per sweep (${tokens.length} given)` };
  }
  const values: ParamValue[] = [];
  for (const token of tokens) {
    const checked = parseToken(spec, token);
    if (!checked.ok) {
      return { ok: false, error: `${token}: ${checked.error}` };
    }
    values.push(checked.value);
  }
  return { ok: true, values };
}

export interface FormOutcome {
  /** The request to send, or null when a field is wrong. */
  request: LabRunRequest | null;
  /** Field name (or SWEEP_FIELD) -> what is wrong with it. */
  errors: Record<string, string>;
}

/** Check every field (a swept parameter's own field is not used) and build the run request. */
export function buildLabRequest(lab: LabSummary, raw: RawValues, sweep: SweepDraft | null): FormOutcome {
  const errors: Record<string, string> = {};
  const params: Record<string, ParamValue> = {};
  const swept = sweep?.enabled ? lab.parameters.find(p => p.name === sweep.param) ?? null : null;
  if (sweep?.enabled && !swept) {
    errors[SWEEP_FIELD] = 'pick the parameter to sweep';
  }
  for (const spec of lab.parameters) {
    if (swept && spec.name === swept.name) {
      continue;
    }
    const checked = parseField(spec, raw[spec.name] ?? rawOf(spec, spec.default));
    if (checked.ok) {
      params[spec.name] = checked.value;
    } else {
      errors[spec.name] = checked.error;
    }
  }
  const request: LabRunRequest = { kind: 'lab', lab: lab.id, params };
  if (swept && sweep) {
    const parsed = parseSweepValues(swept, sweep.text);
    if (parsed.ok) {
      request.sweep = { param: swept.name, values: parsed.values };
    } else {
      errors[SWEEP_FIELD] = parsed.error;
    }
  }
  return { request: Object.keys(errors).length ? null : request, errors };
}

/**
 * The server's 400 detail as errors per field.
 *
 * Parameter errors come as [{param, message}]; a body the server's schema
 * refused (e.g. too many sweep values) as [{loc, msg}]. An error of the swept
 * parameter also shows at the sweep field, where its values were typed.
 */
export function errorsFromDetail(detail: unknown, sweepParam: string | null = null): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!Array.isArray(detail)) {
    return errors;
  }
  for (const entry of detail) {
    if (!entry || typeof entry !== 'object') {
      continue;
    }
    const record = entry as Record<string, unknown>;
    if (typeof record.param === 'string' && typeof record.message === 'string') {
      errors[record.param] = record.message;
      if (record.param === sweepParam) {
        errors[SWEEP_FIELD] = record.message;
      }
    } else if (Array.isArray(record.loc) && typeof record.msg === 'string') {
      const loc = record.loc.map(String);
      const at = loc.indexOf('params');
      const key = loc.includes('sweep') ? SWEEP_FIELD : at >= 0 && loc[at + 1] ? loc[at + 1] : loc.join('.');
      errors[key] = record.msg;
    }
  }
  return errors;
}

/** "nproc=2 epochs=1": the parameters that differ from the lab's defaults (all of them without a lab). */
export function paramSummary(params: Record<string, ParamValue>, lab: LabSummary | null = null): string {
  const defaults = new Map(lab?.parameters.map(p => [p.name, p.default]) ?? []);
  return Object.entries(params)
    .filter(([name, value]) => !lab || defaults.get(name) !== value || name === 'nproc')
    .map(([name, value]) => `${name}=${String(value)}`)
    .join(' ');
}
