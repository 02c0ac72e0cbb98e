/**
 * The top of a run's view: the header (title, status, duration, where it ran,
 * the command, Cancel and Re-run), the root cause of a failure and the checks.
 * Render functions of the run document; the view calls them when it changes.
 */

import type { CheckResult, RootCause, Run } from '../api/types';
import { FINAL_STATUSES } from '../api/types';
import { h } from '../dom';
import {
  commandLine,
  exitCodeText,
  formatDuration,
  modeLabel,
  otherRankErrors,
  othersSummary,
  rootCauseHeadline,
  runDuration,
  statusLabel
} from './format';
import { paramSummary } from './params';

export interface HeaderActions {
  cancel: () => void;
  rerun: () => void;
  /** Open the scaling view of the run's sweep. */
  openSweep: (group: string) => void;
}

/** The header: updated in place, so the buttons keep focus and the duration can tick. */
export class RunHeader {
  constructor(actions: HeaderActions) {
    this._title = h('h2', { className: 'gpudojo-run-title' });
    this._status = h('span', { className: 'gpudojo-run-status' });
    this._duration = h('span', { className: 'gpudojo-run-duration', title: 'Time running' });
    this._mode = h('span', { className: 'gpudojo-run-mode' });
    this._modeNote = h('span', { className: 'gpudojo-run-mode-note' });
    this._recording = h('span', {
      className: 'gpudojo-run-record-memory',
      text: 'recording memory',
      title: 'labkit records this run’s memory per rank: see the Memory section'
    });
    this._recordingProfile = h('span', {
      className: 'gpudojo-run-record-profile',
      text: 'recording profile',
      title: 'labkit records a torch.profiler trace per rank: see the Profile section'
    });
    this._params = h('span', { className: 'gpudojo-run-params' });
    this._sweep = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-run-sweep-link',
      attrs: { type: 'button' }
    });
    this._sweep.addEventListener('click', () => this._group && actions.openSweep(this._group));
    this._cancel = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-warn gpudojo-run-cancel',
      text: 'Cancel',
      title: 'Stop every process of the run (SIGTERM, then SIGKILL after a grace period)',
      attrs: { type: 'button' }
    });
    this._cancel.addEventListener('click', () => actions.cancel());
    this._rerun = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-run-rerun',
      text: 'Re-run',
      title: 'Start the same run again, with the same parameters',
      attrs: { type: 'button' }
    });
    this._rerun.addEventListener('click', () => actions.rerun());
    this._command = h('code', { className: 'gpudojo-run-command' });
    const copy = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-run-copy',
      text: 'Copy',
      title: 'Copy the command to the clipboard',
      attrs: { type: 'button' }
    });
    copy.addEventListener('click', () => void this._copy(copy));
    this.node = h(
      'div',
      { className: 'gpudojo-run-header' },
      h(
        'div',
        { className: 'gpudojo-run-header-row' },
        this._title,
        this._status,
        this._duration,
        h('span', { className: 'gpudojo-run-header-spacer' }),
        this._cancel,
        this._rerun
      ),
      h('div', { className: 'gpudojo-run-header-row' }, this._mode, this._modeNote, this._recording, this._recordingProfile),
      h('div', { className: 'gpudojo-run-header-row' }, this._params, this._sweep),
      h('div', { className: 'gpudojo-run-command-row' }, this._command, copy)
    );
  }

  readonly node: HTMLElement;

  /** Show `run` as of `now` (Unix s). */
  update(run: Run, now: number): void {
    this._title.textContent = run.title;
    this._title.title = `Run ${run.id}`;
    this._status.textContent = statusLabel(run.status);
    this._status.setAttribute('data-status', run.status);
    this.tick(run, now);
    this._mode.textContent = modeLabel(run);
    this._mode.setAttribute('data-mode', run.device_mode);
    this._mode.setAttribute('data-backend', run.backend);
    this._mode.title = run.mode_note;
    this._modeNote.textContent = run.mode_note;
    this._recording.hidden = !run.record_memory;
    this._recordingProfile.hidden = !run.record_profile;
    const perNode = `${run.nproc} process${run.nproc === 1 ? '' : 'es'}`;
    const nodes = run.nnodes > 1 ? `${run.nnodes} nodes × ${perNode} each` : perNode;
    const processes = `${nodes} (${run.launcher})`;
    const params = paramSummary(run.params);
    this._params.textContent = params ? `${processes} · ${params}` : processes;
    this._group = run.group;
    this._sweep.hidden = !run.group;
    this._sweep.textContent = run.group_param ? `Sweep of ${run.group_param}: scaling chart` : 'Sweep: scaling chart';
    const command = commandLine(run.argv);
    if (this._command.textContent !== command) {
      this._command.textContent = command;
    }
    const final = FINAL_STATUSES.has(run.status);
    this._cancel.hidden = final;
    this._rerun.disabled = !final;
  }

  /** Update the duration only (each second while running). */
  tick(run: Run, now: number): void {
    const seconds = runDuration(run, now);
    this._duration.textContent = seconds === null ? 'waiting for a free slot' : formatDuration(seconds);
  }

  /** While a cancel is in flight, its button says so. */
  setCancelling(cancelling: boolean): void {
    this._cancel.disabled = cancelling;
    this._cancel.textContent = cancelling ? 'Cancelling…' : 'Cancel';
  }

  private async _copy(button: HTMLButtonElement): Promise<void> {
    const text = this._command.textContent ?? '';
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = 'Copied';
    } catch {
      // No clipboard permission: select the text so Ctrl-C copies it.
      const range = document.createRange();
      range.selectNodeContents(this._command);
      const selection = window.getSelection();
      selection?.removeAllRanges();
      selection?.addRange(range);
      button.textContent = 'Selected: press Ctrl-C';
    }
    setTimeout(() => (button.textContent = 'Copy'), 2000);
  }

  private _title: HTMLElement;
  private _status: HTMLElement;
  private _duration: HTMLElement;
  private _mode: HTMLElement;
  private _modeNote: HTMLElement;
  private _recording: HTMLElement;
  private _recordingProfile: HTMLElement;
  private _params: HTMLElement;
  private _sweep: HTMLButtonElement;
  private _cancel: HTMLButtonElement;
  private _rerun: HTMLButtonElement;
  private _command: HTMLElement;
  private _group: string | null = null;
}

/** The failure's root cause: the first failing rank's error and traceback, other ranks folded. */
export function renderRootCause(cause: RootCause): HTMLElement {
  const exit = exitCodeText(cause.exit_code);
  const others = otherRankErrors(cause);
  const node = h(
    'section',
    {
      className: 'gpudojo-root-cause',
      attrs: { 'data-rank': cause.rank === null ? '' : String(cause.rank), role: 'alert' }
    },
    h('h3', { className: 'gpudojo-root-cause-headline', text: rootCauseHeadline(cause) }),
    exit ? h('div', { className: 'gpudojo-root-cause-exit', text: exit }) : null,
    cause.traceback ? h('pre', { className: 'gpudojo-root-cause-traceback', text: cause.traceback }) : null
  );
  if (others.length) {
    const list = h('div', { className: 'gpudojo-root-cause-others' });
    for (const other of others) {
      const otherExit = exitCodeText(other.exitCode);
      list.appendChild(
        h(
          'div',
          { className: 'gpudojo-root-cause-other', attrs: { 'data-rank': other.rank === null ? '' : String(other.rank) } },
          h('div', {
            className: 'gpudojo-root-cause-other-headline',
            text: `${rootCauseHeadline(other)}${otherExit ? ` (${otherExit})` : ''}`
          }),
          other.traceback ? h('pre', { className: 'gpudojo-root-cause-traceback', text: other.traceback }) : null
        )
      );
    }
    node.appendChild(h('details', {}, h('summary', { text: othersSummary(others.length) }), list));
  }
  return node;
}

/** A check's state for data-ok: 'true', 'false', 'pending' (not decided) or 'na' (does not apply). */
export function checkState(check: CheckResult): 'true' | 'false' | 'pending' | 'na' {
  if (!check.applies) {
    return 'na';
  }
  return check.ok === null ? 'pending' : check.ok ? 'true' : 'false';
}

const CHECK_MARKS = { true: '✓', false: '✗', pending: '…', na: '–' } as const;
const CHECK_WORDS = { true: 'passed', false: 'failed', pending: 'not decided yet', na: 'does not apply' } as const;

/** The lab's checks, each ticked, crossed, pending or not applicable. */
export function renderChecks(checks: CheckResult[]): HTMLElement {
  const list = h('ul', { className: 'gpudojo-run-checks', attrs: { 'aria-label': 'Checks' } });
  for (const check of checks) {
    const state = checkState(check);
    list.appendChild(
      h(
        'li',
        { attrs: { 'data-check': check.id, 'data-ok': state } },
        h('span', {
          className: 'gpudojo-check-mark',
          text: CHECK_MARKS[state],
          attrs: { role: 'img', 'aria-label': CHECK_WORDS[state] }
        }),
        h('span', { className: 'gpudojo-check-title', text: check.title }),
        check.detail ? h('span', { className: 'gpudojo-check-detail', text: check.detail }) : null
      )
    );
  }
  return list;
}
