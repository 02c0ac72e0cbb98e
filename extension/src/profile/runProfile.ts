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
import { RunArtifactSection } from '../runs/artifactSection';
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

export class RunProfileSection extends RunArtifactSection<Trace> implements IRunProfileSection {
  constructor(options: RunProfileSectionOptions) {
    const previous = h('div', { className: 'gpudojo-profile-previous' });
    super({
      title: 'Profile',
      sectionClass: 'gpudojo-run-profile-section',
      listClass: 'gpudojo-profile-traces',
      messageClass: 'gpudojo-profile-muted gpudojo-profile-traces-message',
      below: previous,
      what: 'profile traces'
    });
    this._options = options;
    this._previous = previous;
    this.node.hidden = true;
  }

  protected async fetch(run: Run): Promise<Trace[]> {
    return (await this._options.client.listTraces(run.id)).traces;
  }

  protected listFailed(run: Run): void {
    this.node.hidden = !recordsProfile(run);
  }

  /** List the traces, and look for the previous run to compare with once this one has ended. */
  protected async show(run: Run, traces: Trace[]): Promise<void> {
    this._render(run, traces);
    if (traces.length && FINAL_STATUSES.has(run.status)) {
      this._options.listed?.(run, traces);
      await this._findPrevious(run, traces);
    }
  }

  dispose(): void {
    this.run = null;
  }

  private _render(run: Run, traces: Trace[]): void {
    this.node.hidden = !traces.length && !recordsProfile(run);
    this.node.setAttribute('data-traces', String(traces.length));
    this.startList(traces.length, emptyProfileMessage(run));
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
      this.list.appendChild(
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
      if (!previous || this.run?.id !== run.id) {
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
  private _previous: HTMLElement;
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
