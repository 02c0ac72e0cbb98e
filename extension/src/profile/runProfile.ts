/**
 * The Profile section of a run view: the run's traces (all ranks, then each
 * rank) with Open buttons, and "Compare with previous run of this lab" once
 * there is an earlier run of the lab that recorded a profile. A run that did
 * not record one shows no section; one that did but wrote nothing says why.
 */

import type { GpudojoClient } from '../api/client';
import { FINAL_STATUSES } from '../api/types';
import type { Run, Trace } from '../api/types';
import { h } from '../dom';
import { formatBytes } from '../memory/format';
import type { IRunProfileSection } from '../tokens';
import { comparablePair, isAllRanks, previousRunOf, recordsProfile } from './commands';

export interface RunProfileSectionOptions {
  client: GpudojoClient;
  /** Open a trace in its own profile panel. */
  openTrace: (trace: string) => void;
  /** Open the diff panel of a (before) against b (after). */
  compare: (a: string, b: string) => void;
  /** The ended run's traces are listed (a run event other views may follow: the compare pickers). */
  listed?: (run: Run, traces: readonly Trace[]) => void;
}

/** Runs of the lab looked at for the previous one. */
const PREVIOUS_RUNS_LOOKED_AT = 50;

export class RunProfileSection implements IRunProfileSection {
  constructor(options: RunProfileSectionOptions) {
    this._options = options;
    this._list = h('ul', { className: 'gpudojo-profile-traces' });
    this._message = h('p', { className: 'gpudojo-profile-muted gpudojo-profile-traces-message' });
    this._previous = h('div', { className: 'gpudojo-profile-previous' });
    this.node = h(
      'section',
      { className: 'gpudojo-run-section gpudojo-run-profile-section' },
      h('h3', { text: 'Profile' }),
      this._message,
      this._list,
      this._previous
    );
    this.node.hidden = true;
  }

  readonly node: HTMLElement;

  /** Look for traces when the run starts, and again once it has ended (when they are written). */
  update(run: Run): void {
    const phase = FINAL_STATUSES.has(run.status) ? 'final' : 'live';
    this._run = run;
    if (phase === this._phase) {
      return;
    }
    this._phase = phase;
    void this.refresh();
  }

  /** GET profile/traces for the run, list them, and look for the previous run to compare with. */
  async refresh(): Promise<void> {
    const run = this._run;
    if (!run) {
      return;
    }
    let traces: Trace[];
    try {
      traces = (await this._options.client.listTraces(run.id)).traces;
    } catch (error) {
      this.node.hidden = !recordsProfile(run);
      this._message.textContent = `The run's profile traces could not be listed: ${(error as Error).message}`;
      return;
    }
    this._render(run, traces);
    if (traces.length && FINAL_STATUSES.has(run.status)) {
      this._options.listed?.(run, traces);
      await this._findPrevious(run, traces);
    }
  }

  dispose(): void {
    this._run = null;
  }

  private _render(run: Run, traces: Trace[]): void {
    this.node.hidden = !traces.length && !recordsProfile(run);
    this.node.setAttribute('data-traces', String(traces.length));
    this._message.textContent = traces.length ? '' : emptyProfileMessage(run);
    this._message.hidden = traces.length > 0;
    this._list.textContent = '';
    // All ranks first: it is the one to read when a run has several.
    const ordered = [...traces].sort((a, b) => Number(isAllRanks(b)) - Number(isAllRanks(a)) || (a.rank ?? 0) - (b.rank ?? 0));
    for (const trace of ordered) {
      const open = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-profile-trace-open',
        text: 'Open',
        title: `Open the profile of ${trace.label} (${trace.source})`,
        attrs: { type: 'button' }
      });
      open.addEventListener('click', () => this._options.openTrace(trace.id));
      this._list.appendChild(
        h(
          'li',
          { attrs: { 'data-trace': trace.id, 'data-all-ranks': String(isAllRanks(trace)) } },
          h('span', { className: 'gpudojo-profile-trace-label', text: trace.label }),
          h('span', { className: 'gpudojo-profile-muted', text: formatBytes(trace.size_bytes) }),
          open
        )
      );
    }
  }

  /** Offer "Compare with previous run of this lab" when an earlier run of it has a trace to compare. */
  private async _findPrevious(run: Run, traces: Trace[]): Promise<void> {
    this._previous.textContent = '';
    if (run.kind !== 'lab' || !run.lab) {
      return;
    }
    try {
      const runs = (await this._options.client.listRuns({ lab: run.lab, limit: PREVIOUS_RUNS_LOOKED_AT })).runs;
      const previous = previousRunOf(run, runs);
      if (!previous || this._run?.id !== run.id) {
        return;
      }
      const pair = comparablePair((await this._options.client.listTraces(previous.id)).traces, traces);
      if (!pair) {
        return;
      }
      const button = h('button', {
        className: 'jp-Button jp-mod-styled gpudojo-profile-compare-previous',
        text: 'Compare with previous run of this lab',
        title: `Run ${previous.id} (${pair[0].label}) before, this run (${pair[1].label}) after`,
        attrs: { type: 'button', 'data-a': pair[0].id, 'data-b': pair[1].id }
      });
      button.addEventListener('click', () => this._options.compare(pair[0].id, pair[1].id));
      this._previous.appendChild(button);
    } catch {
      // No comparison offered: the traces above still open.
    }
  }

  private _options: RunProfileSectionOptions;
  private _list: HTMLElement;
  private _message: HTMLElement;
  private _previous: HTMLElement;
  private _run: Run | null = null;
  private _phase: 'live' | 'final' | null = null;
}

/** What an empty list means for a run that asked for a profile, and what to do about it. */
export function emptyProfileMessage(run: Run): string {
  if (!recordsProfile(run)) {
    return 'This run did not record a profile. Tick “Record profile” in the run form (or send record_profile: true) and run it again.';
  }
  if (!FINAL_STATUSES.has(run.status)) {
    return 'Recording a profile: each rank writes its trace when its profiler schedule completes or the run ends.';
  }
  return 'The run was asked to record a profile but wrote no trace (it may have ended before the profiler’s schedule reached its active steps: see the logs).';
}
