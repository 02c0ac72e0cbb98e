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
import { NextFrame, h } from '../dom';
import { gpudojoIcon } from '../icons';
import { TelemetryChart, readChartTheme } from './chart';
import { formatRate, formatWindow, modeLabel } from './format';
import { TelemetryChange, TelemetryModel } from './model';
import { renderNoGpu } from './cards';
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
    this._charts = h('div', { className: 'gpudojo-charts' });
    this.node.append(this._banner, this._error, this._charts);
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
      this._renderBanner();
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
  }

  /** Build the charts when the set of GPUs changed, then feed every chart its series. */
  private _render(): void {
    const gpus = this.model.mode === 'cpu' ? [] : this.model.gpuIndices();
    const key = gpus.join(',');
    if (key !== this._chartKey || !this._hostCharts.length) {
      this._buildCharts(gpus);
      this._chartKey = key;
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

  private _buildCharts(gpus: number[]): void {
    this._disposeCharts();
    this._charts.classList.toggle('gpudojo-mod-two-columns', this._chartLayout().columns === 2);
    const theme = readChartTheme(this.node.isConnected ? this.node : document.body);
    const width = this._chartWidth();
    this._lastWidth = width;
    const common = { windowSeconds: this.model.windowSeconds, theme, width, height: CHART_HEIGHT };
    if (gpus.length) {
      const labels = gpus.map(i => `GPU ${i}`);
      for (const spec of GPU_METRICS) {
        const chart = new TelemetryChart({
          ...common,
          metric: spec.id,
          title: spec.title,
          unit: spec.unit,
          range: spec.range,
          seriesLabels: labels
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
      return `${model.paused ? 'Paused' : 'Live'}${rate}${max}`;
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
  widget.title.caption = 'Live GPU and host telemetry';
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
