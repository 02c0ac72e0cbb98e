/** Command ids of the runs feature and the arguments other features may pass. */

import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import type { ParamValue } from '../api/types';

export namespace RunCommandIds {
  /**
   * Open a lab's run form; args `{lab, params?, sweep?}`: params preset the fields,
   * sweep `{param, values}` ticks Sweep with that parameter and those values.
   */
  export const runLab = 'gpudojo:run-lab';
  /** Open (or reveal) a run's view; args `{id}`. */
  export const openRun = 'gpudojo:open-run';
  /** Show the runs list. */
  export const openRuns = 'gpudojo:open-runs';
  /** Open (or reveal) a sweep's scaling view; args `{group}`. */
  export const openSweep = 'gpudojo:open-sweep';
  /** Run a .py file with torchrun; args `{path}` (relative to the server root), else the file browser's selection. */
  export const runScript = 'gpudojo:run-script';
  /** Close the tabs of runs that have ended (succeeded, failed, cancelled, lost). */
  export const closeFinishedRuns = 'gpudojo:close-finished-run-tabs';
}

/** Lab ids as the server accepts them. */
const LAB_ID = /^[a-z0-9][a-z0-9-]{0,99}$/;
/** Run ids: "20250101-120000-abcdef". */
const RUN_ID = /^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$/;
/** Sweep groups: "sweep-0123456789". */
const GROUP_ID = /^sweep-[0-9a-f]{10}$/;

export function readLabId(args: ReadonlyPartialJSONObject): string | null {
  return typeof args.lab === 'string' && LAB_ID.test(args.lab) ? args.lab : null;
}

export function readRunId(args: ReadonlyPartialJSONObject): string | null {
  return typeof args.id === 'string' && RUN_ID.test(args.id) ? args.id : null;
}

export function readGroupId(args: ReadonlyPartialJSONObject): string | null {
  return typeof args.group === 'string' && GROUP_ID.test(args.group) ? args.group : null;
}

/** The `params` argument, keeping only JSON scalars (the form checks them against the lab). */
export function readParams(args: ReadonlyPartialJSONObject): Record<string, ParamValue> {
  const raw = args.params;
  const out: Record<string, ParamValue> = {};
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    return out;
  }
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value === 'boolean' || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) {
      out[name] = value;
    }
  }
  return out;
}

/** A sweep to preset in the run form: a parameter and the values to run, as the user would type them. */
export interface SweepPreset {
  param: string;
  values: string[];
}

/** The `sweep` argument ({param, values}), or null when absent or malformed (the form checks the values). */
export function readSweep(args: ReadonlyPartialJSONObject): SweepPreset | null {
  const raw = args.sweep;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    return null;
  }
  const { param, values } = raw as { param?: unknown; values?: unknown };
  if (typeof param !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(param) || !Array.isArray(values)) {
    return null;
  }
  const kept = values
    .filter(v => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)))
    .map(v => String(v).trim())
    .filter(v => v.length > 0 && v.length <= 32);
  return kept.length && kept.length === values.length ? { param, values: kept.slice(0, 64) } : null;
}

/** The DOM id of a run's view. */
export function runViewId(id: string): string {
  return `gpudojo-run-${id}`;
}

/** The DOM id of a sweep's view. */
export function sweepViewId(group: string): string {
  return `gpudojo-sweep-${group}`;
}

/** The DOM id of a lab's run form. */
export function runFormId(lab: string): string {
  return `gpudojo-run-form-${lab}`;
}

/** A tab label kept from before a reload (args.label), bounded; null when absent. */
export function readTabLabel(args: ReadonlyPartialJSONObject): string | null {
  return typeof args.label === 'string' && args.label.length > 0 && args.label.length <= 120 ? args.label : null;
}
