/** TelemetryChart: one uPlot time chart of one metric, coloured from the JupyterLab theme. */

import uPlot from 'uplot';
import { h } from '../dom';
import { readCategoryColors } from '../palette';
import type { AlignedSeries } from './series';

/** Colours of the chart read from the current theme's CSS variables. */
export interface ChartTheme {
  /** The categorical palette: series i of GPU g takes colour g. */
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
    series: readCategoryColors(element),
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
  /** Palette slot of each y series (default: its position), so GPU g keeps colour g. */
  seriesColors?: number[];
  /** The x axis: wall-clock time, or time into a replayed recording of `cycleSeconds`. */
  timeAxis?: TimeAxis;
  /** Fixed y range, e.g. [0, 100] for percentages. */
  range?: [number, number];
  /** Width of the x axis (s). */
  windowSeconds: number;
  theme: ChartTheme;
  width: number;
  height: number;
}

/** What the x values are: Unix seconds, or recording time of a replay (s). */
export type TimeAxis = { kind: 'clock' } | { kind: 'recording'; cycleSeconds: number | null };

export class TelemetryChart {
  constructor(options: TelemetryChartOptions) {
    this._windowSeconds = options.windowSeconds;
    const timeAxis: TimeAxis = options.timeAxis ?? { kind: 'clock' };
    const formatX = (x: number) => formatAxisTime(x, timeAxis);
    this.timeAxis = timeAxis;
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
          time: timeAxis.kind === 'clock',
          // Always show the whole window so the chart fills from the right.
          range: (_u, _min, max) => {
            const fallback = timeAxis.kind === 'clock' ? Date.now() / 1000 : this._windowSeconds;
            const end = Number.isFinite(max) && max !== null ? max : fallback;
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
          // Clock time of day, or time into the recording: the window is minutes long.
          space: 70,
          values: (_u: uPlot, splits: number[]) => splits.map(formatX)
        },
        axis(unit)
      ],
      series: [
        // The hover legend says the time as the axis does.
        {
          label: timeAxis.kind === 'clock' ? 'Time' : 'Recording',
          value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? '--' : formatX(v))
        },
        ...options.seriesLabels.map((label, i) => ({
          label,
          stroke: theme.series[(options.seriesColors?.[i] ?? i) % theme.series.length],
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
  readonly timeAxis: TimeAxis;

  /** Show or hide y series `i` (0-based, in seriesLabels order). */
  setSeriesShown(i: number, show: boolean): void {
    const series = this._plot.series[i + 1];
    if (series && series.show !== show) {
      this._plot.setSeries(i + 1, { show });
    }
  }

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

/**
 * An x value as its axis and hover say it: clock time, or m:ss into the recording. A
 * replay loops, so recording time is taken modulo one pass; from the second pass on the
 * pass is named ("0:12.5 · pass 2"), and nothing is said before the replay began.
 */
export function formatAxisTime(x: number, axis: TimeAxis): string {
  if (axis.kind === 'clock') {
    return formatClock(x);
  }
  if (x < 0) {
    return '';
  }
  const cycle = axis.cycleSeconds;
  if (!cycle || cycle <= 0) {
    return formatRecordingTime(x);
  }
  // Rounded to the tenth first, so 49.99 s of a 50 s pass reads as the next pass's 0:00.
  const tenths = Math.round(x * 10);
  const cycleTenths = Math.round(cycle * 10);
  const pass = Math.floor(tenths / cycleTenths);
  const into = formatRecordingTime((tenths - pass * cycleTenths) / 10);
  return pass > 0 ? `${into} · pass ${pass + 1}` : into;
}

/** Seconds into a recording as m:ss, with tenths when not whole: "0:05", "1:02.5". */
export function formatRecordingTime(seconds: number): string {
  const tenths = Math.round(Math.max(0, seconds) * 10);
  const whole = Math.floor(tenths / 10);
  const minutes = Math.floor(whole / 60);
  const secs = String(whole % 60).padStart(2, '0');
  const frac = tenths % 10 ? `.${tenths % 10}` : '';
  return `${minutes}:${secs}${frac}`;
}

/** hh:mm:ss of a time given in seconds since the epoch (local time). */
export function formatClock(seconds: number): string {
  const d = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
