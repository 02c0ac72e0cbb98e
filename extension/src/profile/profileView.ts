/**
 * ProfileView: one trace in a main-area panel. It opens with the analysis's
 * progress (a trace never opened before is analysed in a child process), then
 * shows, top to bottom: the mode banner, the step-time chart, the findings,
 * the operator tables, the timeline, and the links (download, compare).
 */

import { Message } from '@lumino/messaging';
import type { GpudojoClient } from '../api/client';
import type { ProfileStep, ProfileSummary, Trace } from '../api/types';
import { AnalysedView } from '../analysed/analysedView';
import { h } from '../dom';
import { isAllRanks } from './commands';
import { ComparePicker, TraceChoice } from './comparePicker';
import { formatUs, modeTag } from './format';
import { OpsTable } from './opsTable';
import {
  profileSection,
  renderDownloads,
  renderFindings,
  renderKernels,
  renderLaunch,
  renderModeBanner,
  renderNotes,
  renderOverlap,
  renderSyncs
} from './panels';
import { PROFILE_PROGRESS } from './progress';
import { StepChart } from './stepChart';
import { stepRange } from './stepBars';
import { ProfileTimeline } from './timeline';

export interface ProfileViewOptions {
  trace: string;
  client: GpudojoClient;
  /** Traces to offer for a comparison (every profiled run's, those open in this page), this one among them. */
  candidates: () => Promise<TraceChoice[]>;
  /** Open the diff panel of a (before) against b (after). */
  compare: (a: string, b: string) => void;
}

export class ProfileView extends AnalysedView<ProfileSummary, ProfileTimeline> {
  constructor(options: ProfileViewOptions) {
    super({
      id: options.trace,
      feature: 'profile',
      idAttribute: 'trace',
      label: 'Profile',
      words: PROFILE_PROGRESS,
      fetch: () => options.client.getProfileSummary(options.trace),
      progress: () => options.client.getProfileProgress(options.trace)
    });
    this.trace = options.trace;
    this._options = options;
    this.start();
  }

  readonly trace: string;

  /** The summary, once loaded. */
  get summary(): ProfileSummary | null {
    return this._summary;
  }

  /** List the traces to compare with again (a run has ended with a profile). */
  refreshCompare(): void {
    void this._picker?.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._picker?.dispose();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    // A run may have ended while this panel was hidden: list its traces.
    void this._picker?.refresh();
  }

  protected draw(summary: ProfileSummary): void {
    this._summary = summary;
    const kind = summary.mode.kind;
    this.title.label = `Profile: ${summary.trace.label}${summary.trace.run ? ` · ${summary.trace.run}` : ''}`;
    this.title.caption = `${summary.mode.label}: ${summary.trace.source}`;
    const timeline = this._createTimeline(summary);
    this.timeline = timeline;
    const steps = new StepChart({ summary, selected: step => this._showStep(step) });
    this._steps = steps;
    const header = h(
      'div',
      { className: 'gpudojo-profile-header' },
      h('h2', {
        className: 'gpudojo-profile-title',
        text: summary.trace.run ? `${summary.trace.label} of run ${summary.trace.run}` : summary.trace.label
      }),
      h('span', {
        className: 'gpudojo-profile-stats',
        text: `${summary.trace.source} · analysed in ${Math.round(summary.analysis_ms)} ms${summary.cached ? ' (cached)' : ''}`
      })
    );
    this.node.append(
      header,
      renderModeBanner(summary),
      renderNotes(summary) ?? '',
      steps.node,
      renderFindings(summary.findings, kind),
      this._operators(summary),
      profileSection(
        'gpudojo-profile-timeline-section',
        'Timeline',
        kind,
        h('p', {
          className: 'gpudojo-profile-muted',
          text: `${summary.lanes.length} lane${summary.lanes.length === 1 ? '' : 's'}; spans under a pixel are merged and drawn hatched.`
        }),
        timeline.node
      ),
      this._links(summary)
    );
    this.node.setAttribute('data-mode', kind);
  }

  private _createTimeline(summary: ProfileSummary): ProfileTimeline {
    const client = this._options.client;
    return new ProfileTimeline({
      summary,
      fetch: (request, signal) =>
        client.getProfileWindow({ trace: this.trace, t0: request.t0, t1: request.t1, px: request.px }, signal),
      detail: ref => client.getProfileEvent(this.trace, ref),
      failed: message => this.showError(message),
      moved: () => this._steps?.clearSelection()
    });
  }

  /** The operator table, then on a GPU trace the kernels and launch statistics; host syncs; overlap. */
  private _operators(summary: ProfileSummary): HTMLElement {
    const kind = summary.mode.kind;
    const perStep = summary.steps.length > 1 ? ` over ${summary.steps.length} steps` : '';
    const section = profileSection(
      'gpudojo-profile-ops-section',
      'Top operators',
      kind,
      h('p', {
        className: 'gpudojo-profile-muted',
        text: `Times${perStep}; click a header to sort.${kind === 'cpu' ? ' A CPU-only trace has no device time.' : ''}`
      }),
      summary.top_ops.length
        ? new OpsTable(summary.top_ops, kind).node
        : h('p', { className: 'gpudojo-profile-muted', text: 'No operators recorded.' })
    );
    if (kind === 'gpu' && summary.kernels.length) {
      section.append(h('h4', { text: 'GPU kernels' }), renderKernels(summary.kernels));
    }
    if (summary.launch) {
      section.append(h('h4', { text: 'Kernel launches' }), renderLaunch(summary.launch));
    }
    section.append(
      h('h4', { text: 'Host syncs' }),
      summary.syncs.length
        ? renderSyncs(summary.syncs)
        : h('p', { className: 'gpudojo-profile-muted gpudojo-profile-no-syncs', text: 'No host syncs found (.item(), .cpu(), synchronize).' })
    );
    if (summary.overlap.length) {
      section.append(h('h4', { text: 'Communication overlapped with computation' }), renderOverlap(summary.overlap));
    }
    return section;
  }

  /** Download the trace (per rank for an all-ranks view) and compare it with another. */
  private _links(summary: ProfileSummary): HTMLElement {
    const client = this._options.client;
    const downloads = h('div', { className: 'gpudojo-profile-download-row' });
    const fill = (perRank: readonly Trace[]) => {
      downloads.textContent = '';
      downloads.appendChild(renderDownloads(summary.trace, perRank, id => client.profileRawUrl(id)));
    };
    fill([]);
    if (isAllRanks(summary.trace) && summary.trace.run) {
      void client
        .listTraces(summary.trace.run)
        .then(list => fill(list.traces.filter(t => !isAllRanks(t))))
        .catch(() => undefined);
    }
    const picker = new ComparePicker({
      trace: this.trace,
      candidates: this._options.candidates,
      compare: (a, b) => this._options.compare(a, b)
    });
    this._picker = picker;
    return h(
      'section',
      { className: 'gpudojo-profile-section gpudojo-profile-links' },
      h('h3', { className: 'gpudojo-profile-section-title', text: 'Links' }),
      downloads,
      picker.node,
      h('p', {
        className: 'gpudojo-profile-muted',
        text: `This is a ${modeTag(summary.mode.kind)}; mean step ${formatUs(summary.mean_step_us)}. Compare it with a run after a change to see what the change bought.`
      })
    );
  }

  /** Zoom the timeline to a step's time and bring it into view. */
  private _showStep(step: ProfileStep): void {
    const summary = this._summary;
    const timeline = this.timeline;
    if (!summary || !timeline) {
      return;
    }
    timeline.showRange(stepRange(step, { t0: summary.t_start_us, t1: summary.t_end_us }));
    timeline.node.scrollIntoView({ block: 'nearest' });
  }

  private _options: ProfileViewOptions;
  private _summary: ProfileSummary | null = null;
  private _steps: StepChart | null = null;
  private _picker: ComparePicker | null = null;
}
