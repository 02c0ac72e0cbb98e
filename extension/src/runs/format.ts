/** Words and numbers of the run views: status, duration, mode, the command line, the root cause. */

import type { Run, RootCause, RunStatus } from '../api/types';

const STATUS_LABELS: Record<RunStatus, string> = {
  queued: 'Queued',
  running: 'Running',
  succeeded: 'Succeeded',
  failed: 'Failed',
  cancelled: 'Cancelled',
  timed_out: 'Timed out',
  lost: 'Lost'
};

export function statusLabel(status: RunStatus): string {
  return STATUS_LABELS[status] ?? status;
}

/** "0.4 s", "12 s", "3 min 05 s", "1 h 02 min" for a duration in seconds. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) {
    return '—';
  }
  if (seconds < 10) {
    return `${seconds.toFixed(1)} s`;
  }
  const s = Math.floor(seconds);
  if (s < 60) {
    return `${s} s`;
  }
  const two = (n: number) => String(n).padStart(2, '0');
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${two(s % 60)} s`;
  }
  return `${Math.floor(s / 3600)} h ${two(Math.floor((s % 3600) / 60))} min`;
}

/** How long the run has run (s) at `now` (Unix s): to its end, or to now while running; null while queued. */
export function runDuration(run: Pick<Run, 'started_at' | 'ended_at'>, now: number): number | null {
  if (run.started_at === null || run.started_at === undefined) {
    return null;
  }
  const end = run.ended_at ?? now;
  return Math.max(0, end - run.started_at);
}

/** The mode badge's words: where it ran and how processes talk ("GPU · NCCL", "CPU · gloo"). */
export function modeLabel(run: Pick<Run, 'device_mode' | 'backend'>): string {
  const device = run.device_mode === 'gpu' ? 'GPU' : 'CPU';
  const backend = run.backend === 'nccl' ? 'NCCL' : run.backend === 'gloo' ? 'gloo' : null;
  return backend ? `${device} · ${backend}` : device;
}

/** An argument as a POSIX shell reads it back: quoted only when it must be. */
export function shellQuote(arg: string): string {
  if (arg && /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) {
    return arg;
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The command that ran, as one line to paste into a terminal. */
export function commandLine(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}

const SIGNALS: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  6: 'SIGABRT',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  15: 'SIGTERM'
};

/** "exit code 1", or "killed by SIGKILL" for a negative code (the process died of a signal). */
export function exitCodeText(code: number | null | undefined): string | null {
  if (code === null || code === undefined) {
    return null;
  }
  if (code < 0) {
    const name = SIGNALS[-code];
    return name ? `killed by ${name}` : `killed by signal ${-code}`;
  }
  return `exit code ${code}`;
}

/** "Rank 1 failed: RuntimeError: boom"; without a rank, "The run failed: …". */
export function rootCauseHeadline(cause: Pick<RootCause, 'rank' | 'exception'>): string {
  const who = cause.rank === null || cause.rank === undefined ? 'The run' : `Rank ${cause.rank}`;
  const what = cause.exception.trim() || 'no error message';
  return `${who} failed: ${what}`;
}

/** Another rank's error from root_cause.others, with only the fields it really has. */
export interface OtherRankError {
  rank: number | null;
  exception: string;
  traceback: string;
  exitCode: number | null;
}

/** root_cause.others as typed entries, ordered by rank (entries without an exception are dropped). */
export function otherRankErrors(cause: Pick<RootCause, 'others'>): OtherRankError[] {
  const out: OtherRankError[] = [];
  for (const other of cause.others ?? []) {
    const exception = typeof other.exception === 'string' ? other.exception : '';
    if (!exception) {
      continue;
    }
    out.push({
      rank: typeof other.rank === 'number' ? other.rank : null,
      exception,
      traceback: typeof other.traceback === 'string' ? other.traceback : '',
      exitCode: typeof other.exit_code === 'number' ? other.exit_code : null
    });
  }
  return out.sort((a, b) => (a.rank ?? Infinity) - (b.rank ?? Infinity));
}

/** "2 other ranks failed too" for the folded section's summary. */
export function othersSummary(count: number): string {
  return count === 1 ? '1 other rank failed too' : `${count} other ranks failed too`;
}

/** A number for a table cell: 3 significant figures, '—' when missing. */
export function formatNumber(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '—';
  }
  const abs = Math.abs(value);
  if (abs !== 0 && (abs >= 1e6 || abs < 1e-3)) {
    return value.toExponential(digits - 1);
  }
  return Number(value.toPrecision(digits)).toString();
}

/** 0.87 -> "87 %". */
export function formatPercent(fraction: number | null | undefined): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) {
    return '—';
  }
  return `${Math.round(fraction * 100)} %`;
}

/**
 * A run's tab label: the lab's number and title and the time it was created, e.g.
 * "lab-03 DDP on CPU · 14:02" (local time), so twenty tabs stay tellable apart.
 */
export function runTabLabel(run: { lab?: string | null; title: string; created_at: number }): string {
  const number = /^(lab-\d+)/.exec(run.lab ?? '')?.[1];
  const title = number && !run.title.startsWith(number) ? `${number} ${run.title}` : run.title;
  const d = new Date(run.created_at * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${title} · ${two(d.getHours())}:${two(d.getMinutes())}`;
}

/** What an empty Runs list says, and the one action that moves the learner on. */
export interface EmptyRunsState {
  /** True when filters hide every run (the filters stay in view to be changed). */
  filtered: boolean;
  text: string;
  /** The button: start a lab's run, or clear the filters; null when there is nothing to offer yet. */
  action: { kind: 'run-lab'; lab: string; label: string; title: string } | { kind: 'clear-filters'; label: string; title: string } | null;
}

const EMPTY_HINT = 'Press Run on a lab in the Course section, or right-click a .py file: Run with torchrun…';

/**
 * The empty list's words: no runs at all (offer the first runnable lab's run
 * form), or no runs under the chosen lab and status (offer to show them all).
 */
export function emptyRunsState(
  filter: { lab: string; status: RunStatus | '' },
  labs: ReadonlyArray<{ id: string; title: string }>
): EmptyRunsState {
  if (filter.lab || filter.status) {
    const status = filter.status ? `${statusLabel(filter.status).toLowerCase()} ` : '';
    const lab = filter.lab ? ` of ${labs.find(l => l.id === filter.lab)?.title ?? filter.lab}` : '';
    return {
      filtered: true,
      text: `No ${status}runs${lab}.`,
      action: { kind: 'clear-filters', label: 'Show all runs', title: 'Clear the lab and status filters' }
    };
  }
  const first = labs[0];
  if (!first) {
    return { filtered: false, text: `No runs yet. ${EMPTY_HINT}`, action: null };
  }
  return {
    filtered: false,
    text: 'No runs yet:',
    action: {
      kind: 'run-lab',
      lab: first.id,
      // The sidebar gives the line one row: the label stays short, the lab's name is in its title.
      label: 'Run the first lab…',
      title: `Choose the parameters of “${first.title}” and start it. Any lab runs from the Course section; a .py file runs with torchrun from its right-click menu.`
    }
  };
}
