/**
 * The Occupancy tab: occupancy (%) over block sizes as a uPlot line with the
 * chosen block size marked, a block-size input, and the figure in words.
 */

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import uPlot from 'uplot';
import type { OccupancyReport } from '../api/types';
import { h } from '../dom';
import { ChartTheme, readChartTheme } from '../gpu/chart';
import { limiterLabel, occupancyDetail, occupancySummary } from './format';
import type { PlaygroundModel } from './model';
import { kernelPicker } from './outputs';

/** Height of the chart's plotting area (px). */
const CHART_HEIGHT = 220;

/** The curve as uPlot's aligned data: block sizes (threads) and occupancy (%). */
export function curveData(report: OccupancyReport): uPlot.AlignedData {
  return [report.curve.map(p => p.block_size), report.curve.map(p => p.occupancy * 100)];
}

export class OccupancyPanel extends Widget {
  constructor(model: PlaygroundModel) {
    super();
    this._model = model;
    this.addClass('gpudojo-output');
    this.addClass('gpudojo-occupancy');
    this.title.label = 'Occupancy';

    this._picker = kernelPicker(model);
    this._input = h('input', {
      className: 'jp-mod-styled gpudojo-block-size',
      title: 'Threads per block (1-1024)',
      attrs: { type: 'number', min: '1', max: '1024', step: '32' }
    });
    this._input.addEventListener('change', () => this._model.setBlockSize(Number(this._input.value)));
    this._summary = h('div', { className: 'gpudojo-occupancy-summary', attrs: { 'aria-live': 'polite' } });
    this._detail = h('div', { className: 'gpudojo-occupancy-detail' });
    this._limits = h('div', { className: 'gpudojo-occupancy-limits' });
    this._chart = h('div', { className: 'gpudojo-chart gpudojo-occupancy-chart' });
    this._note = h('div', { className: 'gpudojo-output-note' });
    this.node.append(
      h(
        'div',
        { className: 'gpudojo-output-header' },
        this._picker.node,
        h('label', { className: 'gpudojo-block-size-label' }, 'Threads per block ', this._input)
      ),
      this._summary,
      this._detail,
      this._chart,
      this._limits,
      this._note
    );
  }

  refresh(): void {
    this._picker.refresh();
    const model = this._model;
    const report = model.occupancy;
    const kernel = model.kernel;
    if (document.activeElement !== this._input) {
      this._input.value = String(model.blockSize);
    }
    if (!report || !kernel) {
      this._summary.textContent = model.compileResult?.ok === false
        ? 'No occupancy: the code did not compile.'
        : 'No occupancy yet: the kernel has not compiled.';
      this.node.setAttribute('data-limited-by', '');
      this._detail.textContent = '';
      this._limits.textContent = '';
      this._note.textContent = '';
      this._destroyChart();
      return;
    }
    const occupancy = report.occupancy;
    this.node.setAttribute('data-limited-by', occupancy.error ? '' : occupancy.limited_by);
    this._summary.textContent = occupancySummary(occupancy);
    this._summary.classList.toggle('gpudojo-mod-error', !!occupancy.error);
    this._detail.textContent = occupancy.error ? '' : occupancyDetail(occupancy);
    this._limits.textContent = '';
    const entries = Object.entries(occupancy.blocks_limit);
    if (entries.length) {
      this._limits.append(
        h('span', { className: 'gpudojo-occupancy-limits-label', text: 'Blocks per SM each resource allows: ' }),
        ...entries.map(([resource, blocks]) =>
          h('span', {
            className: resource === occupancy.limited_by ? 'gpudojo-occupancy-limit gpudojo-mod-limiting' : 'gpudojo-occupancy-limit',
            text: `${limiterLabel(resource)} ${blocks}`
          })
        )
      );
    }
    this._note.textContent = model.occupancyError
      ? `Occupancy at ${model.blockSize} threads could not be computed: ${model.occupancyError}`
      : `Theoretical occupancy on ${model.compileResult?.arch}: what the resources allow, not what a run achieves.`;
    this._drawChart(report);
  }

  /** Re-read the chart colours (after a theme change). */
  refreshTheme(): void {
    this._destroyChart();
    this.refresh();
  }

  dispose(): void {
    this._destroyChart();
    this._resizeObserver?.disconnect();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._resizeObserver = new ResizeObserver(() => {
      const width = this._chartWidth();
      if (this._plot && width > 0 && Math.abs(width - this._plot.width) > 2) {
        this._plot.setSize({ width, height: CHART_HEIGHT });
      }
    });
    this._resizeObserver.observe(this.node);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    // A chart built while the tab was hidden had no width: build it again at the real size.
    if (this._plot && this._plot.width !== this._chartWidth()) {
      this._destroyChart();
      this.refresh();
    }
  }

  private _chartWidth(): number {
    return Math.max(200, Math.floor(this._chart.clientWidth || this.node.clientWidth - 24));
  }

  private _drawChart(report: OccupancyReport): void {
    this._markBlockSize = report.occupancy.block_size;
    this._markOccupancy = report.occupancy.error ? null : report.occupancy.occupancy * 100;
    const data = curveData(report);
    if (this._plot) {
      this._plot.setData(data);
      return;
    }
    this._theme = readChartTheme(this.node);
    const theme = this._theme;
    const axis: uPlot.Axis = {
      stroke: theme.axis,
      font: theme.font,
      labelFont: theme.font,
      grid: { stroke: theme.grid, width: 1 },
      ticks: { stroke: theme.grid, width: 1 }
    };
    const options: uPlot.Options = {
      width: this._chartWidth(),
      height: CHART_HEIGHT,
      cursor: { drag: { x: false, y: false } },
      legend: { show: true, live: true },
      scales: {
        x: { time: false, range: [0, 1024] },
        y: { range: [0, 100] }
      },
      axes: [
        { ...axis, label: 'threads per block', values: (_u, splits) => splits.map(v => String(v)) },
        { ...axis, label: 'occupancy %', values: (_u, splits) => splits.map(v => `${v}`) }
      ],
      series: [
        { label: 'threads', value: (_u, v) => (v === null || v === undefined ? '—' : String(v)) },
        {
          label: 'occupancy',
          stroke: theme.series[0],
          width: 2,
          points: { show: false },
          value: (_u, v) => (v === null || v === undefined ? '—' : `${v.toFixed(0)}%`)
        }
      ],
      hooks: { draw: [u => this._drawMarker(u)] }
    };
    this._plot = new uPlot(options, data, this._chart);
  }

  /** A vertical line and a dot at the chosen block size. */
  private _drawMarker(u: uPlot): void {
    const theme = this._theme;
    if (!theme) {
      return;
    }
    const ctx = u.ctx;
    const x = u.valToPos(this._markBlockSize, 'x', true);
    ctx.save();
    ctx.strokeStyle = theme.series[1];
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    ctx.beginPath();
    ctx.moveTo(x, u.bbox.top);
    ctx.lineTo(x, u.bbox.top + u.bbox.height);
    ctx.stroke();
    if (this._markOccupancy !== null) {
      const y = u.valToPos(this._markOccupancy, 'y', true);
      ctx.setLineDash([]);
      ctx.fillStyle = theme.series[1];
      ctx.beginPath();
      ctx.arc(x, y, 4 * devicePixelRatio, 0, 2 * Math.PI);
      ctx.fill();
    }
    ctx.restore();
  }

  private _destroyChart(): void {
    this._plot?.destroy();
    this._plot = null;
    this._chart.textContent = '';
  }

  private _model: PlaygroundModel;
  private _picker: { node: HTMLElement; refresh(): void };
  private _input: HTMLInputElement;
  private _summary: HTMLElement;
  private _detail: HTMLElement;
  private _limits: HTMLElement;
  private _chart: HTMLElement;
  private _note: HTMLElement;
  private _plot: uPlot | null = null;
  private _theme: ChartTheme | null = null;
  private _markBlockSize = 0;
  private _markOccupancy: number | null = null;
  private _resizeObserver: ResizeObserver | null = null;
}
