/**
 * GpuMonitor: live charts of GPU and host telemetry in the main area.
 *
 * The TelemetryModel holds the samples; the TelemetrySocket feeds it; this
 * view only turns the model into charts, the toolbar and the no-GPU message.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { Toolbar } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { GpudojoClient, TelemetrySocket } from '../api/client';
import type { ConnectionStatus } from '../api/telemetry';
import type { RecordingInfo } from '../api/types';
import { NextFrame, h } from '../dom';
import { gpudojoIcon } from '../icons';
import { categoryCss } from '../palette';
import { TelemetryChart, TimeAxis, readChartTheme } from './chart';
import { formatRate, formatWindow, modeLabel, recordingSummary, streamLabel } from './format';
import { TelemetryChange, TelemetryModel } from './model';
import { renderNoGpu, renderSyntheticTag } from './cards';
import { GPU_METRICS, HOST_METRICS } from './series';

/** The time windows the toolbar offers (s). */
export const WINDOW_CHOICES: ReadonlyArray<number> = [30, 60, 120, 300, 600];

/** Height of one chart's plotting area (px). */
const CHART_HEIGHT = 170;

/** Width above which charts sit two per row (px). */
const TWO_COLUMNS_MIN_WIDTH = 900;

/** Gap between charts and padding inside one, as in the CSS (px). */
const CHART_GAP = 12;
const CHART_PADDING = 16;

export interface MonitorSettings {
  /** Requested telemetry rate (Hz). */
  rateHz: number;
  /** Width of the charts' time window (s). */
  windowSeconds: number;
}

export class GpuMonitor extends Widget {
  constructor(options: { client: GpudojoClient; settings: MonitorSettings }) {
    super();
    this.id = 'gpudojo-gpu-monitor-body';
    this.addClass('gpudojo-monitor');
    this._client = options.client;
    this.model = new TelemetryModel({ windowSeconds: options.settings.windowSeconds });
    this.socket = options.client.openTelemetry(options.settings.rateHz);

    this._banner = h('div', { className: 'gpudojo-monitor-banner' });
    this._error = h('div', { className: 'gpudojo-error', attrs: { role: 'alert' } });
    this._error.hidden = true;
    this._selector = h('div', {
      className: 'gpudojo-gpu-selector',
      attrs: { role: 'group', 'aria-label': 'GPUs shown in the charts' }
    });
    this._selector.hidden = true;
    this._charts = h('div', { className: 'gpudojo-charts' });
    this.node.append(this._banner, this._error, this._selector, this._charts);
    this.node.setAttribute('data-samples', '0');

    this.model.changed.connect(this._onModelChanged, this);
    this.model.errorReported.connect((_, message) => this._showError(message), this);
    this.socket.messageReceived.connect((_, message) => this.model.handleMessage(message), this);
    this.socket.protocolError.connect((_, message) => this._showError(message), this);
    this._resizeObserver = new ResizeObserver(() => this._layoutCharts());
    this._resizeObserver.observe(this.node);
    this.socket.connect();
    void this._loadReason();
  }

  readonly model: TelemetryModel;
  readonly socket: TelemetrySocket;

  /** Pause or resume the stream (asks the server, and ignores samples meanwhile). */
  togglePaused(): void {
    const paused = !this.model.paused;
    this.model.setPaused(paused);
    if (paused) {
      this.socket.pause();
    } else {
      this.socket.resume();
    }
  }

  /** Follow new settings: the rate is sent to the server, the window applied locally. */
  applySettings(settings: MonitorSettings): void {
    if (settings.rateHz !== this.socket.rateHz) {
      this.socket.setRate(settings.rateHz);
    }
    this.setWindow(settings.windowSeconds);
  }

  /** Set the width of the time window (s). */
  setWindow(seconds: number): void {
    this.model.windowSeconds = seconds;
  }

  /** The GPUs the charts show, or null for all of them. */
  get shownGpus(): ReadonlySet<number> | null {
    return this._shown;
  }

  /** Show only `gpus` in the charts (null: every GPU). */
  selectGpus(gpus: Iterable<number> | null): void {
    this._shown = gpus === null ? null : new Set(gpus);
    if (this._shown && this._shown.size === 0) {
      this._shown = null;
    }
    this._applySelection();
  }

  /** Rebuild the charts with the theme's current colours. */
  refreshTheme(): void {
    this._chartKey = '';
    this._render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._resizeObserver.disconnect();
    this._frame.cancel();
    this.socket.dispose();
    this._disposeCharts();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._scheduleRender();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._scheduleRender();
  }

  private async _loadReason(): Promise<void> {
    try {
      const devices = await this._client.getDevices();
      this._reason = devices.reason;
      this._deviceMode = devices.mode;
      this._deviceRecording = devices.recording ?? null;
      this._names = new Map(devices.gpus.map(g => [g.index, g.name]));
      this._renderBanner();
      this._renderSelector();
    } catch (error) {
      // The stream still says which mode it is in; the reason is a nicety.
    }
  }

  private _onModelChanged(_: TelemetryModel, change: TelemetryChange): void {
    this.node.setAttribute('data-samples', String(this.model.received));
    if (change === 'history' || change === 'state') {
      this._renderBanner();
    }
    if (change === 'history') {
      this._error.hidden = true;
    }
    this._scheduleRender();
  }

  private _showError(message: string): void {
    this._error.textContent = message;
    this._error.hidden = false;
  }

  private _scheduleRender(): void {
    if (this.isVisible) {
      this._frame.schedule();
    }
  }

  private _renderBanner(): void {
    const mode = this.model.mode ?? this._deviceMode;
    this._banner.textContent = '';
    if (!mode) {
      return;
    }
    this._banner.appendChild(
      h('span', {
        className: `gpudojo-mode-badge gpudojo-mode-${mode}`,
        text: modeLabel(mode),
        attrs: { 'data-mode': mode }
      })
    );
    if (mode === 'cpu') {
      this._banner.appendChild(renderNoGpu(this._reason));
    }
    const recording = this._recording();
    if (mode === 'replay' && recording) {
      if (recording.synthetic) {
        this._banner.appendChild(renderSyntheticTag(recording));
      }
      this._banner.appendChild(
        h('div', { className: 'gpudojo-recording-line', text: recordingSummary(recording) })
      );
    }
  }

  private _recording(): RecordingInfo | null {
    return this.model.recording ?? this._deviceRecording;
  }

  /** Which x axis the charts use: the recording's time in a replay, else the clock. */
  private _timeAxis(): TimeAxis {
    const mode = this.model.mode ?? this._deviceMode;
    return mode === 'replay'
      ? { kind: 'recording', cycleSeconds: this._recording()?.cycle_s ?? null }
      : { kind: 'clock' };
  }

  /** One toggle per GPU, in its chart colour; "All GPUs" shows every one again. */
  private _renderSelector(): void {
    const gpus = this._gpus;
    this._selector.textContent = '';
    this._selector.hidden = gpus.length < 2;
    if (gpus.length < 2) {
      return;
    }
    const all = h('button', {
      className: 'gpudojo-gpu-chip gpudojo-gpu-chip-all',
      text: 'All GPUs',
      title: 'Show every GPU',
      attrs: { type: 'button', 'aria-pressed': String(this._shown === null) }
    });
    all.addEventListener('click', () => this.selectGpus(null));
    this._selector.appendChild(all);
    for (const index of gpus) {
      const pressed = this._shown !== null && this._shown.has(index);
      const chip = h(
        'button',
        {
          className: 'gpudojo-gpu-chip',
          title: `${this._names.get(index) ?? `GPU ${index}`}: show only this GPU (Ctrl-click: add or remove it)`,
          attrs: { type: 'button', 'data-gpu-index': String(index), 'aria-pressed': String(pressed) }
        },
        h('span', { className: 'gpudojo-gpu-swatch' }),
        `GPU ${index}`
      );
      (chip.firstChild as HTMLElement).style.setProperty('--gpudojo-swatch-color', categoryCss(index));
      chip.addEventListener('click', event => {
        if (event.ctrlKey || event.metaKey || event.shiftKey) {
          const next = new Set(this._shown ?? []);
          if (next.has(index)) {
            next.delete(index);
          } else {
            next.add(index);
          }
          this.selectGpus(next.size ? next : null);
        } else {
          this.selectGpus([index]);
        }
      });
      this._selector.appendChild(chip);
    }
  }

  private _applySelection(): void {
    this.node.setAttribute(
      'data-shown-gpus',
      this._shown === null ? 'all' : [...this._shown].sort((a, b) => a - b).join(',')
    );
    for (const [, chart] of this._gpuCharts) {
      this._gpus.forEach((index, i) => chart.setSeriesShown(i, this._shown === null || this._shown.has(index)));
    }
    this._renderSelector();
  }

  /** Build the charts when the set of GPUs changed, then feed every chart its series. */
  private _render(): void {
    const gpus = this.model.mode === 'cpu' ? [] : this.model.gpuIndices();
    const axis = this._timeAxis();
    const key = `${gpus.join(',')}|${JSON.stringify(axis)}`;
    if (key !== this._chartKey || !this._hostCharts.length) {
      this._gpus = gpus;
      this.node.setAttribute('data-time-axis', axis.kind);
      this._buildCharts(gpus, axis);
      this._chartKey = key;
      this._applySelection();
    }
    for (const [spec, chart] of this._gpuCharts) {
      chart.windowSeconds = this.model.windowSeconds;
      chart.setData(this.model.gpuSeries(spec, gpus));
    }
    for (const [spec, chart] of this._hostCharts) {
      chart.windowSeconds = this.model.windowSeconds;
      chart.setData(this.model.hostSeries(spec));
    }
  }

  private _buildCharts(gpus: number[], timeAxis: TimeAxis): void {
    this._disposeCharts();
    this._charts.classList.toggle('gpudojo-mod-two-columns', this._chartLayout().columns === 2);
    const theme = readChartTheme(this.node.isConnected ? this.node : document.body);
    const width = this._chartWidth();
    this._lastWidth = width;
    const common = { windowSeconds: this.model.windowSeconds, theme, width, height: CHART_HEIGHT, timeAxis };
    if (gpus.length) {
      const labels = gpus.map(i => `GPU ${i}`);
      const colors = gpus.map(i => i);
      for (const spec of GPU_METRICS) {
        const chart = new TelemetryChart({
          ...common,
          metric: spec.id,
          title: spec.title,
          unit: spec.unit,
          range: spec.range,
          seriesLabels: labels,
          seriesColors: colors
        });
        this._gpuCharts.push([spec, chart]);
        this._charts.appendChild(chart.node);
      }
    }
    for (const spec of HOST_METRICS) {
      const chart = new TelemetryChart({
        ...common,
        metric: spec.id,
        title: spec.title,
        unit: spec.unit,
        range: spec.range,
        seriesLabels: ['Host']
      });
      this._hostCharts.push([spec, chart]);
      this._charts.appendChild(chart.node);
    }
  }

  private _disposeCharts(): void {
    for (const [, chart] of [...this._gpuCharts, ...this._hostCharts]) {
      chart.dispose();
    }
    this._gpuCharts = [];
    this._hostCharts = [];
  }

  /** Columns and the width of one chart for the space available (px). */
  private _chartLayout(): { columns: number; width: number } {
    const available = Math.max(200, this._charts.clientWidth || this.node.clientWidth || 600);
    const columns = available >= TWO_COLUMNS_MIN_WIDTH ? 2 : 1;
    const width = Math.floor((available - (columns - 1) * CHART_GAP) / columns) - CHART_PADDING;
    return { columns, width };
  }

  private _chartWidth(): number {
    return this._chartLayout().width;
  }

  private _layoutCharts(): void {
    const { columns, width } = this._chartLayout();
    this._charts.classList.toggle('gpudojo-mod-two-columns', columns === 2);
    if (width === this._lastWidth) {
      return;
    }
    this._lastWidth = width;
    for (const [, chart] of [...this._gpuCharts, ...this._hostCharts]) {
      chart.setSize(width, CHART_HEIGHT);
    }
  }

  private _client: GpudojoClient;
  private _banner: HTMLElement;
  private _error: HTMLElement;
  private _selector: HTMLElement;
  private _gpus: number[] = [];
  private _shown: Set<number> | null = null;
  private _names = new Map<number, string>();
  private _deviceRecording: RecordingInfo | null = null;
  private _charts: HTMLElement;
  private _gpuCharts: Array<[(typeof GPU_METRICS)[number], TelemetryChart]> = [];
  private _hostCharts: Array<[(typeof HOST_METRICS)[number], TelemetryChart]> = [];
  private _chartKey = '';
  private _lastWidth = 0;
  private _frame = new NextFrame(() => this._render());
  private _reason: string | null = null;
  private _deviceMode: 'gpu' | 'replay' | 'cpu' | null = null;
  private _resizeObserver: ResizeObserver;
}

/** The toolbar's status text: connection state and the rate in force. */
export function statusText(status: ConnectionStatus, model: TelemetryModel): string {
  switch (status.state) {
    case 'connecting':
      return 'Connecting…';
    case 'reconnecting':
      return status.retryInMs !== undefined
        ? `Disconnected: retrying in ${Math.ceil(status.retryInMs / 1000)} s (attempt ${status.attempt})`
        : `Reconnecting (attempt ${status.attempt})…`;
    case 'closed':
      return 'Closed';
    case 'open': {
      const rate = model.rateHz !== null ? ` · ${formatRate(model.rateHz)}` : '';
      const max = model.maxHz !== null ? ` (max ${formatRate(model.maxHz)})` : '';
      return `${streamLabel(model.paused, model.mode)}${rate}${max}`;
    }
  }
}

/** The monitor in a main-area widget with its toolbar: Pause/Resume, window, status. */
export function createMonitorWidget(options: {
  client: GpudojoClient;
  settings: MonitorSettings;
}): MainAreaWidget<GpuMonitor> {
  const content = new GpuMonitor(options);
  const widget = new MainAreaWidget({ content });
  widget.id = 'gpudojo-gpu-monitor';
  widget.title.label = 'GPU Monitor';
  widget.title.caption = 'GPU and host telemetry';
  widget.title.icon = gpudojoIcon;
  widget.title.closable = true;
  widget.addClass('gpudojo-monitor-panel');

  const pause = h('button', {
    className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-pause',
    text: 'Pause',
    title: 'Stop or restart the stream; the charts keep what they have'
  });
  pause.addEventListener('click', () => content.togglePaused());

  const select = h('select', {
    className: 'jp-mod-styled gpudojo-window',
    title: 'Time window of the charts'
  });
  const fillWindows = (current: number) => {
    select.textContent = '';
    const choices = WINDOW_CHOICES.includes(current)
      ? WINDOW_CHOICES
      : [...WINDOW_CHOICES, current].sort((a, b) => a - b);
    for (const seconds of choices) {
      const option = h('option', { text: formatWindow(seconds), attrs: { value: String(seconds) } });
      option.selected = seconds === current;
      select.appendChild(option);
    }
  };
  fillWindows(content.model.windowSeconds);
  select.addEventListener('change', () => content.setWindow(Number(select.value)));

  const status = h('span', { className: 'gpudojo-status', attrs: { 'aria-live': 'polite' } });
  const update = () => {
    pause.textContent = content.model.paused ? 'Resume' : 'Pause';
    pause.classList.toggle('gpudojo-mod-paused', content.model.paused);
    status.textContent = statusText(content.socket.status, content.model);
    status.setAttribute('data-state', content.socket.status.state);
    if (Number(select.value) !== content.model.windowSeconds) {
      fillWindows(content.model.windowSeconds);
    }
  };
  content.model.changed.connect((_, change) => {
    if (change !== 'sample') {
      update();
    }
  });
  content.socket.statusChanged.connect(update);
  update();

  widget.toolbar.addItem('pause', new Widget({ node: pause }));
  widget.toolbar.addItem('window', new Widget({ node: h('label', { className: 'gpudojo-window-label' }, 'Window ', select) }));
  widget.toolbar.addItem('spacer', Toolbar.createSpacerItem());
  widget.toolbar.addItem('status', new Widget({ node: status }));
  return widget;
}
