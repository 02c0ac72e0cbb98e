/**
 * StepChart: one uPlot line chart over training steps (or any numeric x),
 * one series per rank (or per quantity), coloured from the JupyterLab theme.
 */

import uPlot from 'uplot';
import { h } from '../dom';
import type { ChartTheme } from '../gpu/chart';
import { formatNumber } from './format';

export interface ChartSeriesSpec {
  label: string;
  /** Index into the theme's series colours. */
  color: number;
  /** The y scale: 'y' (left axis) or 'y2' (right axis). */
  scale?: 'y' | 'y2';
  dash?: number[];
}

export interface StepChartOptions {
  /** Extra class and data attributes of the chart's node. */
  className: string;
  attrs: Record<string, string>;
  title: string;
  xLabel: string;
  yLabel: string;
  /** Start the left axis at zero (times, counts) instead of hugging the data (losses). */
  yFromZero?: boolean;
  /** Label of the right axis (which always starts at zero); it exists only when given. */
  y2Label?: string;
  series: ChartSeriesSpec[];
  theme: ChartTheme;
  width: number;
  height: number;
  /** Text of the x ticks (e.g. sweep values that are not numbers). */
  xTickText?: (value: number) => string;
  /** Put x ticks only at the data's x values, with room at both ends (a few discrete points, e.g. nproc). */
  xTicksAtData?: boolean;
}

export type ChartData = [number[], ...Array<Array<number | null>>];

export class StepChart {
  constructor(options: StepChartOptions) {
    this.node = h('div', { className: options.className, attrs: options.attrs });
    const { theme } = options;
    // uPlot picks each axis's side by its position; an explicit undefined would override that.
    const axis = (label: string, scale: string, side?: uPlot.Axis.Side): uPlot.Axis => ({
      scale,
      ...(side === undefined ? {} : { side }),
      label,
      labelFont: theme.font,
      stroke: theme.axis,
      font: theme.font,
      grid: { stroke: theme.grid, width: 1, show: scale !== 'y2' },
      ticks: { stroke: theme.grid, width: 1 },
      values: (_u: uPlot, splits: number[]) => splits.map(v => formatNumber(v))
    });
    const xAxis = axis(options.xLabel, 'x');
    const tickText = options.xTickText;
    if (tickText) {
      xAxis.values = (_u: uPlot, splits: number[]) => splits.map(v => tickText(v));
    }
    if (options.xTicksAtData) {
      xAxis.splits = (u: uPlot) => (u.data[0] as number[]).slice();
    }
    const axes = [xAxis, axis(options.yLabel, 'y')];
    const scales: uPlot.Scales = {
      x: options.xTicksAtData
        ? { time: false, range: (_u, min, max) => padRange(min, max) }
        : { time: false },
      y: { range: (_u, min, max) => padRange(min, max, options.yFromZero ?? false) }
    };
    if (options.y2Label) {
      axes.push(axis(options.y2Label, 'y2', 1));
      scales.y2 = { range: (_u, min, max) => padRange(min, max, true) };
    }
    const plotOptions: uPlot.Options = {
      title: options.title,
      width: Math.max(160, options.width),
      height: Math.max(100, options.height),
      cursor: { drag: { x: true, y: false } },
      scales,
      axes,
      series: [
        { label: options.xLabel, value: (_u: uPlot, v: number | null) => (v === null ? '—' : tickText ? tickText(v) : String(v)) },
        ...options.series.map(s => ({
          label: s.label,
          scale: s.scale ?? 'y',
          stroke: theme.series[s.color % theme.series.length],
          width: 1.5,
          dash: s.dash,
          spanGaps: true,
          value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? '—' : formatNumber(v, 4))
        }))
      ],
      legend: { show: true, live: true }
    };
    const empty: uPlot.AlignedData = [[], ...options.series.map(() => [])];
    this._plot = new uPlot(plotOptions, empty, this.node);
  }

  readonly node: HTMLElement;

  /** Points drawn, all series together (non-null values). */
  get pointCount(): number {
    return this._points;
  }

  setData(data: ChartData): void {
    let points = 0;
    for (let i = 1; i < data.length; i++) {
      for (const v of data[i]) {
        if (v !== null) {
          points++;
        }
      }
    }
    this._points = points;
    this.node.setAttribute('data-points', String(points));
    this._plot.setData(data as uPlot.AlignedData);
  }

  setSize(width: number, height: number): void {
    this._plot.setSize({ width: Math.max(160, width), height: Math.max(100, height) });
  }

  dispose(): void {
    this._plot.destroy();
    this.node.remove();
  }

  private _plot: uPlot;
  private _points = 0;
}

/** A y range around the data with a little room; from zero when `fromZero` (speedups). */
function padRange(min: number | null, max: number | null, fromZero = false): uPlot.Range.MinMax {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) {
    return [0, 1];
  }
  if (min === max) {
    const pad = Math.abs(min) * 0.1 || 1;
    return [fromZero ? Math.min(0, min - pad) : min - pad, max + pad];
  }
  const pad = (max - min) * 0.08;
  return [fromZero ? Math.min(0, min) : min - pad, max + pad];
}
