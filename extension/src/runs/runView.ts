/**
 * RunView: one run in the main area. The RunStream feeds the RunModel; this
 * view draws the model once per animation frame whatever the rate of events
 * (charts at most a few times a second), and only the parts that changed.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import type { GpudojoClient } from '../api/client';
import type { RunStream, RunStreamStatus } from '../api/runStream';
import type { Run, RunEvent } from '../api/types';
import type { IMemoryViewer, IProfileViewer, IRunMemorySection, IRunProfileSection } from '../tokens';
import { NextFrame, h } from '../dom';
import { gpudojoIcon } from '../icons';
import { runViewId } from './commands';
import { RunEngineSection } from './engineSection';
import { rankNodeNames } from './engineStatus';
import { runTabLabel, statusLabel } from './format';
import type { LabCatalog } from './labCatalog';
import { LogView } from './logView';
import { MetricCharts } from './metricCharts';
import { RunChange, RunModel } from './runModel';
import { RunHeader, renderChecks, renderRootCause } from './runSummary';

/** Least time between two chart redraws (ms): uPlot redraws are the dear part. */
const CHART_INTERVAL_MS = 250;

export interface RunViewOptions {
  runId: string;
  client: GpudojoClient;
  labs: LabCatalog;
  /** The memory feature: adds the Memory section (absent: no section). */
  memory?: IMemoryViewer | null;
  /** The profile feature: adds the Profile section (absent: no section). */
  profile?: IProfileViewer | null;
  /** Start the same run again and show it. */
  rerun: (run: Run) => void;
  openSweep: (group: string) => void;
  /** The tab's label until the run is loaded (kept across a reload), e.g. "lab-03 DDP · 14:02". */
  label?: string | null;
}

export class RunView extends Widget {
  constructor(options: RunViewOptions) {
    super();
    this.runId = options.runId;
    this.addClass('gpudojo-run-view');
    this.node.setAttribute('data-status', 'loading');
    this.title.label = options.label ?? `Run ${this.runId}`;
    this.title.icon = gpudojoIcon;
    this.title.closable = true;
    this._client = options.client;
    this._labs = options.labs;
    this.model = new RunModel(this.runId);

    this._header = new RunHeader({
      cancel: () => void this._cancel(),
      rerun: () => this.model.run && options.rerun(this.model.run),
      openSweep: options.openSweep
    });
    this._error = h('div', { className: 'gpudojo-error', attrs: { role: 'alert' } });
    this._error.hidden = true;
    this._connection = h('div', { className: 'gpudojo-run-connection', attrs: { 'aria-live': 'polite' } });
    this._rootCause = h('div', { className: 'gpudojo-run-root-cause-slot' });
    this._checks = h('div', { className: 'gpudojo-run-checks-slot' });
    this._charts = new MetricCharts();
    this._logs = new LogView(this.model.logs);
    this._engine = new RunEngineSection({
      fetchArtifact: name => this._client.getArtifact(this.runId, name),
      showRank: rank => {
        this._logs.setTab(String(rank));
        this._logs.node.scrollIntoView({ block: 'nearest' });
      }
    });
    const checksSection = h(
      'section',
      { className: 'gpudojo-run-section gpudojo-run-checks-section' },
      h('h3', { text: 'Checks' }),
      this._checks
    );
    this._checksSection = checksSection;
    this._metricsSection = h(
      'section',
      { className: 'gpudojo-run-section gpudojo-run-metrics-section' },
      h('h3', { text: 'Metrics' }),
      this._charts.node
    );
    this._memory = options.memory?.createRunSection() ?? null;
    this._profile = options.profile?.createRunSection() ?? null;
    this.node.append(
      h(
        'div',
        { className: 'gpudojo-run-top' },
        this._header.node,
        this._engine.summary,
        this._connection,
        this._error,
        this._rootCause,
        checksSection,
        this._engine.nodes,
        this._metricsSection,
        this._memory?.node ?? null,
        this._profile?.node ?? null,
        this._engine.artifacts
      ),
      this._logs.node
    );

    this.model.changed.connect(this._onModelChanged, this);
    this._labs.changed.connect(() => this._schedule({ run: false, logs: false, metrics: true }), this);
    this._stream = this._client.openRunStream(this.runId);
    this._stream.batchReceived.connect((_, events: RunEvent[]) => this.model.applyBatch(events), this);
    this._stream.statusChanged.connect((_, status) => this._showConnection(status), this);
    this._stream.errorReported.connect((_, message) => this._showError(message), this);
    this._stream.connect(-1);
    void this._loadRun();
    void this._labs.ensure();
  }

  readonly runId: string;
  readonly model: RunModel;

  /** Rebuild the charts with the theme's colours. */
  refreshTheme(): void {
    this._charts.refreshTheme(this.model.metrics, this._manifestMetrics());
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._stopTicking();
    this._frame.cancel();
    if (this._chartTimer !== null) {
      clearTimeout(this._chartTimer);
    }
    this._stream.dispose();
    this._engine.dispose();
    this._memory?.dispose();
    this._profile?.dispose();
    this._charts.dispose();
    this._logs.dispose();
    this.model.dispose();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._schedule({ run: true, logs: true, metrics: true });
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._schedule({ run: false, logs: true, metrics: false });
    // Lumino says the window changed: follow now, not when the tab is next shown.
    this._charts.relayout();
  }

  private async _loadRun(): Promise<void> {
    try {
      this.model.offerRun(await this._client.getRun(this.runId));
    } catch (error) {
      if (!this.model.run) {
        this._showError(`Run ${this.runId} could not be loaded: ${(error as Error).message}`);
      }
    }
  }

  private async _cancel(): Promise<void> {
    this._header.setCancelling(true);
    try {
      this.model.offerRun(await this._client.cancelRun(this.runId));
    } catch (error) {
      this._showError(`The run could not be cancelled: ${(error as Error).message}`);
    } finally {
      this._header.setCancelling(false);
    }
  }

  private _onModelChanged(_: RunModel, change: RunChange): void {
    this._schedule(change);
  }

  /** Note what to redraw and draw it on the next frame. */
  private _schedule(change: RunChange): void {
    this._dirty.run ||= change.run;
    this._dirty.logs ||= change.logs;
    this._dirty.metrics ||= change.metrics;
    if (this.isVisible) {
      this._frame.schedule();
    }
  }

  private _render(): void {
    const dirty = this._dirty;
    this._dirty = { run: false, logs: false, metrics: false };
    const run = this.model.run;
    if (dirty.run && run) {
      this._renderRun(run);
    }
    if (dirty.logs) {
      this._logs.update();
    }
    if (dirty.metrics) {
      this._renderChartsSoon();
    }
  }

  private _renderRun(run: Run): void {
    this.node.setAttribute('data-status', run.status);
    this.title.label = runTabLabel(run);
    this.title.caption = `Run ${run.id}: ${run.title} (${statusLabel(run.status)})`;
    this._header.update(run, Date.now() / 1000);
    this._engine.update(run);
    if (this._logs.setRankNodes(rankNodeNames(run.nodes ?? []))) {
      this._logs.update();
    }
    this._memory?.update(run);
    this._profile?.update(run);
    const cause = run.root_cause;
    const key = cause ? JSON.stringify(cause) : '';
    if (key !== this._causeKey) {
      this._causeKey = key;
      this._rootCause.textContent = '';
      if (cause) {
        this._rootCause.appendChild(renderRootCause(cause));
      }
    }
    this._checks.textContent = '';
    this._checksSection.hidden = !run.checks.length;
    if (run.checks.length) {
      this._checks.appendChild(renderChecks(run.checks));
    }
    if (run.status === 'running') {
      this._startTicking();
    } else {
      this._stopTicking();
    }
    // The manifest may name the metrics now that the lab is known.
    this._renderChartsSoon();
  }

  /** Charts redraw at most every CHART_INTERVAL_MS, the last change always drawn. */
  private _renderChartsSoon(): void {
    if (this._chartTimer !== null) {
      return;
    }
    const wait = Math.max(0, this._lastChartAt + CHART_INTERVAL_MS - Date.now());
    this._chartTimer = setTimeout(() => {
      this._chartTimer = null;
      this._lastChartAt = Date.now();
      if (!this.isDisposed) {
        const shown = this._charts.update(this.model.metrics, this._manifestMetrics());
        // A script that reports nothing has no metrics to wait for once it has ended.
        this._metricsSection.hidden = shown === 0 && this.model.isFinal;
      }
    }, wait);
  }

  private _manifestMetrics() {
    const run = this.model.run;
    const declared = run?.kind === 'lab' ? this._labs.get(run.lab)?.metrics ?? null : null;
    return declared ? declared.filter(metric => metric.chart !== false) : null;
  }

  private _startTicking(): void {
    if (this._ticker !== null) {
      return;
    }
    this._ticker = setInterval(() => {
      const run = this.model.run;
      if (run && this.isVisible) {
        this._header.tick(run, Date.now() / 1000);
      }
    }, 1000);
  }

  private _stopTicking(): void {
    if (this._ticker !== null) {
      clearInterval(this._ticker);
      this._ticker = null;
    }
  }

  private _showConnection(status: RunStreamStatus): void {
    this._connection.setAttribute('data-state', status.state);
    if (status.state === 'reconnecting') {
      const wait = status.retryInMs !== undefined ? ` in ${Math.ceil(status.retryInMs / 1000)} s` : '';
      this._connection.textContent = `Connection lost: resuming the stream${wait} (attempt ${status.attempt}).`;
    } else {
      this._connection.textContent = '';
    }
  }

  private _showError(message: string): void {
    this._error.textContent = message;
    this._error.hidden = false;
  }

  private _client: GpudojoClient;
  private _labs: LabCatalog;
  private _stream: RunStream;
  private _header: RunHeader;
  private _error: HTMLElement;
  private _connection: HTMLElement;
  private _rootCause: HTMLElement;
  private _checks: HTMLElement;
  private _checksSection: HTMLElement;
  private _metricsSection: HTMLElement;
  private _charts: MetricCharts;
  private _memory: IRunMemorySection | null;
  private _profile: IRunProfileSection | null;
  private _logs: LogView;
  private _engine: RunEngineSection;
  private _dirty: RunChange = { run: false, logs: false, metrics: false };
  private _frame = new NextFrame(() => this._render());
  private _chartTimer: ReturnType<typeof setTimeout> | null = null;
  private _lastChartAt = 0;
  private _causeKey = '';
  private _ticker: ReturnType<typeof setInterval> | null = null;
}

/** A run's view in a main-area widget, found again by its id. */
export function createRunWidget(options: RunViewOptions): MainAreaWidget<RunView> {
  const content = new RunView(options);
  const widget = new MainAreaWidget({ content });
  widget.id = runViewId(options.runId);
  widget.addClass('gpudojo-run-panel');
  widget.title.closable = true;
  return widget;
}
