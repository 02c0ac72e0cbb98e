/** MetricCharts: a run's live charts, one per metric, x = step, one series per rank. */

import type { LabMetricSpec } from '../api/types';
import { h } from '../dom';
import { readChartTheme } from '../gpu/chart';
import { MetricSeries, chartedMetrics } from './metricSeries';
import { StepChart } from './stepChart';

/** Height of one chart's plotting area (px). */
const CHART_HEIGHT = 180;
/** Width above which charts sit two per row, and the gap and padding the CSS gives them (px). */
const TWO_COLUMNS_MIN_WIDTH = 820;
const CHART_GAP = 12;
const CHART_PADDING = 16;

export class MetricCharts {
  constructor() {
    this.node = h('div', { className: 'gpudojo-run-charts' });
    this._empty = h('div', { className: 'gpudojo-run-charts-empty', text: 'No metrics reported yet.' });
    this.node.appendChild(this._empty);
    this._resize = new ResizeObserver(() => this._layout());
    this._resize.observe(this.node);
  }

  readonly node: HTMLElement;

  /** Draw what `series` holds; charts appear as metrics and ranks first report. Returns the charts shown. */
  update(series: MetricSeries, manifest: LabMetricSpec[] | null): number {
    const names = chartedMetrics(series, manifest);
    this._empty.hidden = names.length > 0;
    const units = new Map(manifest?.map(m => [m.name, m.unit]) ?? []);
    for (const name of names) {
      const ranks = series.ranks(name);
      const key = ranks.join(',');
      let entry = this._charts.get(name);
      if (!entry || entry.key !== key) {
        entry?.chart.dispose();
        const unit = units.get(name);
        const chart = new StepChart({
          className: 'gpudojo-run-chart',
          attrs: { 'data-metric': name },
          title: unit ? `${name} (${unit})` : name,
          xLabel: 'step',
          yLabel: unit ?? '',
          series: ranks.map(rank => ({ label: `rank ${rank}`, color: rank })),
          theme: readChartTheme(this.node.isConnected ? this.node : document.body),
          width: this._chartWidth(),
          height: CHART_HEIGHT
        });
        entry = { chart, key };
        this._charts.set(name, entry);
      }
      entry.chart.setData(series.aligned(name, ranks));
    }
    // Keep the manifest's order however the metrics arrived.
    for (const name of names) {
      this.node.appendChild(this._charts.get(name)!.chart.node);
    }
    return names.length;
  }

  /** Rebuild the charts with the theme's colours (after a theme change). */
  refreshTheme(series: MetricSeries, manifest: LabMetricSpec[] | null): void {
    this._disposeCharts();
    this.update(series, manifest);
  }

  dispose(): void {
    this._resize.disconnect();
    this._disposeCharts();
  }

  private _disposeCharts(): void {
    for (const { chart } of this._charts.values()) {
      chart.dispose();
    }
    this._charts.clear();
  }

  private _chartWidth(): number {
    const available = Math.max(240, this.node.clientWidth || 640);
    const columns = available >= TWO_COLUMNS_MIN_WIDTH ? 2 : 1;
    this.node.classList.toggle('gpudojo-mod-two-columns', columns === 2);
    return Math.floor((available - (columns - 1) * CHART_GAP) / columns) - CHART_PADDING;
  }

  /** Size the charts to the space they have now (px), e.g. after the window was resized. */
  relayout(): void {
    this._layout();
  }

  private _layout(): void {
    const width = this._chartWidth();
    if (width === this._width) {
      return;
    }
    this._width = width;
    for (const { chart } of this._charts.values()) {
      chart.setSize(width, CHART_HEIGHT);
    }
  }

  private _charts = new Map<string, { chart: StepChart; key: string }>();
  private _empty: HTMLElement;
  private _resize: ResizeObserver;
  private _width = 0;
}
