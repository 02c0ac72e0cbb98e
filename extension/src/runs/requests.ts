/** Run requests built from what the learner typed or from an earlier run (Re-run). */

import type { LabSummary, Recording, Run, RunRecording, ScriptRunRequest, StartRunRequest, Where } from '../api/types';

/** Most processes a script may ask for (the server's limit). */
export const MAX_SCRIPT_NPROC = 64;

/**
 * Split an argument line as a shell would, without running one: spaces
 * separate, single and double quotes group, a backslash escapes the next
 * character. Throws an Error naming an unclosed quote.
 */
export function splitArgs(text: string): string[] {
  const args: string[] = [];
  let current = '';
  let inArg = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) {
        quote = null;
      } else if (c === '\\' && quote === '"' && i + 1 < text.length) {
        current += text[++i];
      } else {
        current += c;
      }
    } else if (c === '"' || c === "'") {
      quote = c;
      inArg = true;
    } else if (c === '\\' && i + 1 < text.length) {
      current += text[++i];
      inArg = true;
    } else if (/\s/.test(c)) {
      if (inArg) {
        args.push(current);
        current = '';
        inArg = false;
      }
    } else {
      current += c;
      inArg = true;
    }
  }
  if (quote) {
    throw new Error(`The arguments have an unclosed ${quote === '"' ? 'double' : 'single'} quote`);
  }
  if (inArg) {
    args.push(current);
  }
  return args;
}

/** A script request from the dialog's fields; throws an Error saying which field is wrong. */
export function scriptRequest(path: string, nprocText: string, argsText: string): ScriptRunRequest {
  const nproc = Number(nprocText.trim());
  if (!Number.isInteger(nproc) || nproc < 1 || nproc > MAX_SCRIPT_NPROC) {
    throw new Error(`Processes: a whole number from 1 to ${MAX_SCRIPT_NPROC}`);
  }
  return { kind: 'script', path, nproc, args: splitArgs(argsText), launcher: 'torchrun' };
}

/**
 * The arguments a script run was given: what follows the script in the
 * command that ran (the run keeps its path relative to the server root as
 * its title; argv has it absolute).
 */
export function scriptArgsOf(run: Pick<Run, 'argv' | 'title'>): string[] {
  const tail = `/${run.title}`;
  const at = run.argv.findIndex(arg => arg === run.title || arg.endsWith(tail));
  return at >= 0 ? run.argv.slice(at + 1) : [];
}

/** Whether the run form offers "Record <it>" for `lab` (the lab's manifest lists what its script records). */
export function labRecords(lab: LabSummary, recording: Recording): boolean {
  return (lab.records ?? []).includes(recording);
}

/** The recording flags a request carries: only those asked for, so a plain request stays as it was. */
export function recordingFlags(asked: { memory: boolean; profile: boolean }): RunRecording {
  return {
    ...(asked.memory ? { record_memory: true } : {}),
    ...(asked.profile ? { record_profile: true } : {})
  };
}

/** The `where` a run was started with, to start it again in the same place (absent for this machine). */
export function rerunWhere(run: Pick<Run, 'engine' | 'where'>): { where?: Where } {
  if (!run.engine || run.engine === 'local') {
    return {};
  }
  return { where: { ...run.where, engine: run.engine } as Where };
}

/** The request that runs `run` again with the same parameters, recordings and engine (one run, even for a sweep's member). */
export function rerunRequest(run: Run): StartRunRequest {
  const recordings = recordingFlags({ memory: run.record_memory, profile: run.record_profile });
  if (run.kind === 'lab' && run.lab) {
    return { kind: 'lab', lab: run.lab, params: { ...run.params }, ...recordings, ...rerunWhere(run) };
  }
  return {
    ...recordings,
    ...rerunWhere(run),
    kind: 'script',
    path: run.script_path ?? run.title,
    nproc: run.nproc,
    args: run.script_path ? [...(run.script_args ?? [])] : scriptArgsOf(run),
    launcher: run.launcher
  };
}
