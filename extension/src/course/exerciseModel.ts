/** Pure presentation rules of an exercise: which check to show, outcome marks, figures, mode. */

import type {
  AttemptSummary,
  CheckAttempt,
  CheckMode,
  ExerciseDoc,
  ExerciseFigure,
  RequirementOutcome,
  RequirementResult
} from '../api/types';

/** The requirement rows to draw: the running check's, else the last one's, else the manifest's (not run yet). */
export function requirementRows(doc: Pick<ExerciseDoc, 'meta' | 'current' | 'last'>): RequirementResult[] {
  const attempt = doc.current ?? doc.last ?? null;
  const byId = new Map((attempt?.results ?? []).map(r => [r.id, r]));
  return doc.meta.requirements.map(
    spec =>
      byId.get(spec.id) ?? {
        id: spec.id,
        statement: spec.statement,
        gpu: spec.gpu,
        outcome: 'pending',
        message: '',
        figures: [],
        duration_s: 0
      }
  );
}

export interface OutcomeMark {
  /** A short symbol drawn by CSS from `shape`; this is what a screen reader says. */
  label: string;
  shape: 'pass' | 'fail' | 'skip' | 'pending' | 'running';
}

/** How a requirement's outcome is drawn; pending while a check runs reads as "checking". */
export function outcomeMark(outcome: RequirementOutcome, running: boolean): OutcomeMark {
  switch (outcome) {
    case 'passed':
      return { label: 'Passed', shape: 'pass' };
    case 'failed':
      return { label: 'Failed', shape: 'fail' };
    case 'skipped':
      return { label: 'Skipped: needs a GPU', shape: 'skip' };
    default:
      return running ? { label: 'Checking…', shape: 'running' } : { label: 'Not checked yet', shape: 'pending' };
  }
}

/** A figure as one line: "copy bandwidth: 9.8 GB/s (41% of the measured peak)". */
export function formatFigure(figure: ExerciseFigure): string {
  const value =
    figure.value === null || figure.value === undefined
      ? 'n/a'
      : typeof figure.value === 'number'
        ? formatNumber(figure.value)
        : String(figure.value);
  const unit = figure.unit ? ` ${figure.unit}` : '';
  const note = figure.note ? ` (${figure.note})` : '';
  return `${figure.name}: ${value}${unit}${note}`;
}

function formatNumber(x: number): string {
  if (!Number.isFinite(x)) {
    return String(x);
  }
  if (Number.isInteger(x)) {
    return x.toLocaleString('en-US');
  }
  const abs = Math.abs(x);
  return abs >= 100 ? x.toFixed(0) : abs >= 1 ? x.toFixed(2).replace(/\.?0+$/, '') : x.toPrecision(3);
}

export interface ModeLabel {
  /** e.g. 'GPU' or 'CPU variant'. */
  text: string;
  /** What this mode checks, and for the CPU variant what it cannot show. */
  detail: string;
}

/** What a check on this machine runs, or what a finished check ran. */
export function modeLabel(mode: CheckMode, cannotShow: string, gpuRequirements: number): ModeLabel {
  if (mode === 'gpu') {
    return { text: 'GPU', detail: 'Every requirement is checked on this machine’s GPU.' };
  }
  const one = gpuRequirements === 1;
  const skipped =
    gpuRequirements === 0
      ? 'every requirement is checked on the CPU.'
      : `${gpuRequirements} requirement${one ? ' that needs' : 's that need'} a GPU ${one ? 'is' : 'are'} skipped.`;
  const cannot = cannotShow.trim() ? ` Without a GPU this cannot show: ${cannotShow.trim()}` : '';
  return { text: 'CPU variant', detail: `No GPU here: ${skipped}${cannot}` };
}

/** The status line over the requirement list. */
export function checkStatus(attempt: CheckAttempt | null, running: boolean): string {
  if (!attempt) {
    return 'Not checked yet. Start the exercise, edit your copy, then Check.';
  }
  const mode = attempt.mode === 'gpu' ? 'on the GPU' : 'CPU variant';
  if (running || attempt.status === 'running') {
    const done = attempt.results.filter(r => r.outcome !== 'pending').length;
    return `Checking your copy (${mode})… ${done} of ${attempt.results.length} requirements done.`;
  }
  const base = `${attempt.passed} of ${attempt.applicable} applicable requirements passed (${mode}).`;
  if (attempt.error) {
    return `${base} ${attempt.error}`;
  }
  return attempt.completed ? `${base} Completed.` : base;
}

/**
 * What the view says when the learner's code ran outside a sandbox (null when it ran in
 * one, or for an attempt from before sandboxes).
 */
export function sandboxNote(attempt: CheckAttempt | null): string | null {
  if (!attempt || attempt.sandbox !== 'none') {
    return null;
  }
  const reason = (attempt.sandbox_reason ?? '').trim();
  return (
    `Not sandboxed${reason ? `: ${reason}` : ''}. ` +
    'Your code ran with this account’s rights, able to see the checks and the server; ' +
    'the result cannot be trusted as much as a sandboxed one.'
  );
}

/** An attempt in the history list: "14:02 · CPU variant · 3/4 passed". */
export function attemptLine(a: AttemptSummary, now: Date = new Date()): string {
  const at = new Date(a.at * 1000);
  const sameDay = at.toDateString() === now.toDateString();
  const time = at.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });
  const when = sameDay ? time : `${at.toLocaleDateString('en-GB', { day: 'numeric', month: 'short' })} ${time}`;
  const mode = a.mode === 'gpu' ? 'GPU' : 'CPU variant';
  const result = a.status === 'error' ? 'stopped' : a.completed ? 'completed' : `${a.passed}/${a.applicable} passed`;
  return `${when} · ${mode} · ${result}`;
}

/** Poll again while a check runs. */
export function isRunning(doc: Pick<ExerciseDoc, 'current'>): boolean {
  return doc.current !== null && doc.current !== undefined && doc.current.status === 'running';
}

/** What `requirementFiles` reads of a requirement: its manifest entry's files and its words. */
export interface RequirementWords {
  /** The manifest's `files` (relative to the learner's folder); may be absent in older documents. */
  files?: ReadonlyArray<string>;
  statement: string;
  /** The check's message (why it failed), when there is one. */
  message?: string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The files of the learner's copy a requirement is about (relative to the copy's folder):
 * the ones its manifest names, then any other file of the copy that its statement or its
 * failure message names ("ops.py", "kernel.cu"), in the order they appear there. Files the
 * copy does not hold are left out when `workspaceFiles` is given and not empty.
 */
export function requirementFiles(req: RequirementWords, workspaceFiles: ReadonlyArray<string> = []): string[] {
  const held = new Set(workspaceFiles);
  const out: string[] = [];
  const add = (file: string) => {
    if (!out.includes(file) && (held.size === 0 || held.has(file))) {
      out.push(file);
    }
  };
  for (const file of req.files ?? []) {
    add(file);
  }
  const words = `${req.statement}\n${req.message ?? ''}`;
  const mentioned: Array<[number, string]> = [];
  for (const file of workspaceFiles) {
    if (file === 'README.md') {
      continue;
    }
    // A file's name as a word of its own: "ops.py" but not "myops.py" or "ops.pyc".
    const found = new RegExp(`(^|[^\\w./-])${escapeRegExp(file)}(?![\\w])`).exec(words);
    if (found) {
      mentioned.push([found.index, file]);
    }
  }
  mentioned.sort((a, b) => a[0] - b[0]);
  for (const [, file] of mentioned) {
    add(file);
  }
  return out;
}

/**
 * The files Start and "Open my copy" open (relative to the copy's folder): the main starter
 * and every file a requirement names, main last so that it ends up in front. Only files the
 * copy holds, when its file list is known.
 */
export function filesToOpen(
  main: string,
  requirements: ReadonlyArray<RequirementWords>,
  workspaceFiles: ReadonlyArray<string> = []
): string[] {
  const held = new Set(workspaceFiles);
  const named: string[] = [];
  for (const req of requirements) {
    for (const file of req.files ?? []) {
      if (file !== main && !named.includes(file) && (held.size === 0 || held.has(file))) {
        named.push(file);
      }
    }
  }
  return [...named, main];
}
