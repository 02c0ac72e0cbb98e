/**
 * SweepView: how a lab scales over the swept parameter: time per epoch,
 * speedup over the first point against the ideal, and efficiency, as a chart
 * and a table whose rows open each run.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { NextFrame, h } from '../dom';
import { readChartTheme } from '../gpu/chart';
import { gpudojoIcon } from '../icons';
import { sweepViewId } from './commands';
import { formatNumber, formatPercent, modeLabel, statusLabel } from './format';
import type { LabCatalog } from './labCatalog';
import { MachineFacts, cpuScalingExplanation } from './machineFit';
import { ScalingPoint, basePointIndex, scalingSeries } from './scaling';
import { StepChart } from './stepChart';
import { SweepModel } from './sweepModel';

const CHART_HEIGHT = 260;

export interface SweepViewOptions {
  model: SweepModel;
  labs: LabCatalog;
  openRun: (id: string) => void;
  /** This machine's cores and usable GPUs, to explain a CPU sweep's figures (absent: no sentence). */
  machine?: () => Promise<MachineFacts>;
}

export class SweepView extends Widget {
  constructor(options: SweepViewOptions) {
    super();
    this.model = options.model;
    this._labs = options.labs;
    this._openRun = options.openRun;
    this.addClass('gpudojo-sweep-view');
    this.node.setAttribute('data-group', this.model.group);
    this.title.label = `Sweep ${this.model.group}`;
    this.title.icon = gpudojoIcon;
    this.title.closable = true;
    this._heading = h('h2', { className: 'gpudojo-sweep-title' });
    this._mode = h('p', { className: 'gpudojo-sweep-mode' });
    this._explanation = h('p', { className: 'gpudojo-sweep-machine', attrs: { role: 'note' } });
    this._explanation.hidden = true;
    this._error = h('div', { className: 'gpudojo-error', attrs: { role: 'alert' } });
    this._chartSlot = h('div', { className: 'gpudojo-scaling-chart-slot' });
    this._table = h('table', { className: 'gpudojo-scaling-table' });
    this._note = h('p', { className: 'gpudojo-sweep-note' });
    this.node.append(this._heading, this._mode, this._explanation, this._error, this._chartSlot, this._table, this._note);
    this.model.changed.connect(this._schedule, this);
    this._labs.changed.connect(this._schedule, this);
    this.model.start();
    void this._labs.ensure();
    options.machine?.().then(
      machine => {
        this._machine = machine;
        this._schedule();
      },
      () => undefined
    );
  }

  readonly model: SweepModel;

  refreshTheme(): void {
    this._chart?.dispose();
    this._chart = null;
    this._schedule();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._frame.cancel();
    this._chart?.dispose();
    this.model.dispose();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._schedule();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._chart?.setSize(this._chartWidth(), CHART_HEIGHT);
  }

  private _schedule(): void {
    if (this.isVisible) {
      this._frame.schedule();
    }
  }

  private _render(): void {
    const sweep = this.model.sweep;
    this._error.textContent = this.model.error ?? '';
    this._error.hidden = !this.model.error;
    if (!sweep) {
      this._heading.textContent = 'Loading the sweep…';
      return;
    }
    const lab = this._labs.get(sweep.lab);
    const first = sweep.runs[0];
    this.title.label = `Sweep of ${sweep.param}: ${lab?.title ?? sweep.lab}`;
    this._heading.textContent = `Scaling over ${sweep.param}: ${lab?.title ?? sweep.lab}`;
    if (first) {
      this.node.setAttribute('data-mode', first.device_mode);
      this._mode.textContent =
        first.device_mode === 'cpu'
          ? `${modeLabel(first)}: measured on this machine's CPU, processes talking through gloo over loopback. ` +
            'The shape of the curve teaches; the numbers are not GPU numbers.'
          : `${modeLabel(first)}: measured on this machine's GPUs.`;
    }
    const points = this.model.points();
    const explanation =
      first && this._machine ? cpuScalingExplanation(points, this._machine, first.device_mode) : null;
    this._explanation.textContent = explanation ?? '';
    this._explanation.hidden = !explanation;
    this._renderChart(points, sweep.param, first ? modeLabel(first) : '');
    this._renderTable(points, sweep.param);
    const base = basePointIndex(points);
    this._note.textContent =
      base >= 0
        ? `Time per epoch: mean of rank 0's epoch_time_s. Speedup: the time per epoch at ${sweep.param} = ` +
          `${String(points[base].value)} over each point's. Ideal: processes over ${points[base].nproc}. ` +
          'Efficiency: speedup over ideal.'
        : 'The chart fills in as each run reports its epoch times.';
  }

  private _renderChart(points: ScalingPoint[], param: string, mode: string): void {
    const series = scalingSeries(points);
    if (!this._chart) {
      const labels = series.labels;
      const numeric = points.every(p => typeof p.value === 'number');
      this._chart = new StepChart({
        className: 'gpudojo-scaling-chart',
        attrs: {},
        title: `Scaling over ${param}${mode ? ` (${mode})` : ''}`,
        xLabel: param,
        yLabel: 'time per epoch (s)',
        yFromZero: true,
        y2Label: 'speedup (×)',
        series: [
          { label: 'time per epoch (s)', color: 0 },
          { label: 'speedup', color: 2, scale: 'y2' },
          { label: 'ideal speedup', color: 1, scale: 'y2', dash: [6, 4] }
        ],
        theme: readChartTheme(this.node.isConnected ? this.node : document.body),
        width: this._chartWidth(),
        height: CHART_HEIGHT,
        xTickText: numeric ? undefined : v => labels[Math.round(v)] ?? '',
        xTicksAtData: true
      });
      this._chartSlot.appendChild(this._chart.node);
    }
    this._chart.setData([series.xs, series.epochTimeS, series.speedup, series.ideal]);
    this._chart.node.setAttribute('data-measured', String(points.filter(p => p.epochTimeS !== null).length));
  }

  private _renderTable(points: ScalingPoint[], param: string): void {
    this._table.textContent = '';
    const head = h('tr', {});
    for (const title of [param, 'Status', 'Processes', 'Time per epoch (s)', 'Speedup', 'Ideal', 'Efficiency', '']) {
      head.appendChild(h('th', { text: title }));
    }
    this._table.appendChild(h('thead', {}, head));
    const body = h('tbody', {});
    for (const point of points) {
      const open = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-sweep-open-run',
        text: 'Open run',
        attrs: { type: 'button', 'data-run': point.runId }
      });
      open.addEventListener('click', () => this._openRun(point.runId));
      body.appendChild(
        h(
          'tr',
          { attrs: { 'data-value': String(point.value), 'data-run': point.runId, 'data-status': point.status } },
          h('td', { text: String(point.value) }),
          h('td', {}, h('span', { className: 'gpudojo-run-status', text: statusLabel(point.status), attrs: { 'data-status': point.status } })),
          h('td', { text: String(point.nproc) }),
          h('td', { text: formatNumber(point.epochTimeS) }),
          h('td', { text: point.speedup === null ? '—' : `${formatNumber(point.speedup)}×` }),
          h('td', { text: point.ideal === null ? '—' : `${formatNumber(point.ideal)}×` }),
          h('td', { className: 'gpudojo-scaling-efficiency', text: formatPercent(point.efficiency) }),
          h('td', {}, open)
        )
      );
    }
    this._table.appendChild(body);
  }

  private _chartWidth(): number {
    return Math.max(320, Math.min(900, (this.node.clientWidth || 720) - 32));
  }

  private _labs: LabCatalog;
  private _openRun: (id: string) => void;
  private _heading: HTMLElement;
  private _mode: HTMLElement;
  private _explanation: HTMLElement;
  private _machine: MachineFacts | null = null;
  private _error: HTMLElement;
  private _chartSlot: HTMLElement;
  private _table: HTMLElement;
  private _note: HTMLElement;
  private _chart: StepChart | null = null;
  private _frame = new NextFrame(() => this._render());
}

/** A sweep's view in a main-area widget, found again by its id. */
export function createSweepWidget(options: SweepViewOptions): MainAreaWidget<SweepView> {
  const content = new SweepView(options);
  const widget = new MainAreaWidget({ content });
  widget.id = sweepViewId(options.model.group);
  widget.addClass('gpudojo-sweep-panel');
  return widget;
}
