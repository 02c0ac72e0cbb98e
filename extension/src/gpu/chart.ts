/** TelemetryChart: one uPlot time chart of one metric, coloured from the JupyterLab theme. */

import uPlot from 'uplot';
import { h } from '../dom';
import type { AlignedSeries } from './series';

/** Theme variables the series cycle through, with fallbacks for a missing theme. */
const SERIES_COLOR_VARS: ReadonlyArray<[string, string]> = [
  ['--jp-brand-color1', '#1976d2'],
  ['--jp-warn-color1', '#f57c00'],
  ['--jp-success-color1', '#388e3c'],
  ['--jp-error-color1', '#d32f2f'],
  ['--jp-accent-color1', '#00897b'],
  ['--jp-brand-color3', '#bbdefb'],
  ['--jp-warn-color3', '#ffe0b2'],
  ['--jp-success-color3', '#c8e6c9']
];

/** Colours of the chart read from the current theme's CSS variables. */
export interface ChartTheme {
  series: string[];
  axis: string;
  grid: string;
  font: string;
}

function cssVar(style: CSSStyleDeclaration, name: string, fallback: string): string {
  const value = style.getPropertyValue(name).trim();
  return value || fallback;
}

/** Read the chart colours from the document's computed style (call again after a theme change). */
export function readChartTheme(element: Element = document.body): ChartTheme {
  const style = getComputedStyle(element);
  const family = cssVar(style, '--jp-ui-font-family', 'sans-serif');
  // uPlot lays out axis values from a font size in px; JupyterLab's size0 is in em.
  const size1 = cssVar(style, '--jp-ui-font-size1', '13px');
  const size = size1.endsWith('px') ? `${Math.max(9, parseFloat(size1) - 2)}px` : '11px';
  return {
    series: SERIES_COLOR_VARS.map(([name, fallback]) => cssVar(style, name, fallback)),
    axis: cssVar(style, '--jp-ui-font-color1', '#616161'),
    grid: cssVar(style, '--jp-border-color2', '#e0e0e0'),
    font: `${size} ${family}`
  };
}

export interface TelemetryChartOptions {
  /** The metric id, written to data-metric. */
  metric: string;
  title: string;
  unit: string;
  /** One label per y series. */
  seriesLabels: string[];
  /** Fixed y range, e.g. [0, 100] for percentages. */
  range?: [number, number];
  /** Width of the x axis (s). */
  windowSeconds: number;
  theme: ChartTheme;
  width: number;
  height: number;
}

export class TelemetryChart {
  constructor(options: TelemetryChartOptions) {
    this._windowSeconds = options.windowSeconds;
    this.node = h('div', {
      className: 'gpudojo-chart',
      attrs: { 'data-metric': options.metric }
    });
    const { theme, unit } = options;
    const axis = (label?: string): uPlot.Axis => {
      const spec: uPlot.Axis = {
        stroke: theme.axis,
        font: theme.font,
        grid: { stroke: theme.grid, width: 1 },
        ticks: { stroke: theme.grid, width: 1 }
      };
      // Only the y axis gets a label and number formatting; the x axis keeps uPlot's time ticks.
      if (label) {
        spec.label = label;
        spec.labelFont = theme.font;
        spec.values = (_u: uPlot, splits: number[]) => splits.map(v => formatTick(v));
      }
      return spec;
    };
    const yRange = options.range;
    const plotOptions: uPlot.Options = {
      title: options.title,
      width: Math.max(100, options.width),
      height: Math.max(80, options.height),
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: {
          time: true,
          // Always show the whole window so the chart fills from the right.
          range: (_u, _min, max) => {
            const end = Number.isFinite(max) && max !== null ? max : Date.now() / 1000;
            return [end - this._windowSeconds, end];
          }
        },
        y: yRange
          ? { range: [yRange[0], yRange[1]] }
          : {
              range: (_u, min, max) => {
                if (min === null || max === null || !Number.isFinite(min)) {
                  return [0, 1];
                }
                const top = max > 0 ? max * 1.1 : 1;
                return [Math.min(0, min), top];
              }
            }
      },
      axes: [
        {
          ...axis(),
          // Clock time of day only: the window is minutes long, the date adds nothing.
          space: 70,
          values: (_u: uPlot, splits: number[]) => splits.map(formatClock)
        },
        axis(unit)
      ],
      series: [
        {},
        ...options.seriesLabels.map((label, i) => ({
          label,
          stroke: theme.series[i % theme.series.length],
          width: 1.5,
          spanGaps: false,
          points: { show: false },
          value: (_u: uPlot, v: number | null) =>
            v === null || v === undefined ? '—' : `${formatTick(v)} ${unit}`
        }))
      ],
      legend: { show: true, live: true }
    };
    const empty: uPlot.AlignedData = [[], ...options.seriesLabels.map(() => [])];
    this._plot = new uPlot(plotOptions, empty, this.node);
  }

  readonly node: HTMLElement;

  /** Replace the chart's data with aligned series `[xs (s), ...ys]`. */
  setData(data: AlignedSeries): void {
    this._plot.setData(data as uPlot.AlignedData);
  }

  /** Width of the x axis (s). */
  set windowSeconds(seconds: number) {
    this._windowSeconds = seconds;
  }

  /** Size the plotting area to `width` x `height` CSS pixels. */
  setSize(width: number, height: number): void {
    this._plot.setSize({ width: Math.max(100, width), height: Math.max(80, height) });
  }

  dispose(): void {
    this._plot.destroy();
    this.node.remove();
  }

  private _plot: uPlot;
  private _windowSeconds: number;
}

function formatTick(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 100 || value === 0) {
    return value.toFixed(0);
  }
  if (abs >= 10) {
    return value.toFixed(1);
  }
  return value.toFixed(2);
}

/** hh:mm:ss of a time given in seconds since the epoch (local time). */
export function formatClock(seconds: number): string {
  const d = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
