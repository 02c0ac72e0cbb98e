/**
 * MemoryTimeline: the canvas of one capture's memory over time (a windowed
 * timeline: zoom, pan, a window per viewport for exactly the plot's width),
 * stacked by allocation or by category, with the peak and OOMs marked. Hover
 * reads the layout already in memory (no request), so the tooltip follows the
 * cursor within a frame; a click pins an allocation's tooltip.
 */

import type { Analysis, Band, MemoryWindow } from '../api/types';
import { formatAxisTime, formatBytes } from './format';
import { MemoryPalette, readMemoryPalette } from './palette';
import { LayoutMode, StackLayout, columnAt, hitTest, layoutWindow } from './stackLayout';
import { AxesSpec, PLOT_MARGIN, PlotBox, drawAxes, drawHighlight, drawMarker, drawStack } from './timelineDraw';
import { tooltipContent } from './tooltip';
import { placeTooltip } from '../timeline/canvasFrame';
import { TimeRange } from '../timeline/viewport';
import { FetchWindow } from '../timeline/windowLoader';
import { WindowedTimeline } from '../timeline/windowedTimeline';

/** The memory timeline waits a little longer than the profile's after the last viewport change (ms). */
const MEMORY_WINDOW_DEBOUNCE_MS = 80;

/** Height of the canvas (CSS px). */
const CANVAS_HEIGHT = 280;

export interface MemoryTimelineOptions {
  analysis: Analysis;
  fetch: FetchWindow<MemoryWindow>;
  mode: LayoutMode;
  /** Called when a window fails to load, with the message to show. */
  failed: (message: string) => void;
}

export class MemoryTimeline extends WindowedTimeline<MemoryWindow> {
  constructor(options: MemoryTimelineOptions) {
    super({
      feature: 'memory',
      ariaLabel: 'Memory timeline',
      tools: {
        wheelOver: 'the chart',
        wholeLabel: 'Whole capture',
        wholeTitle: 'Show the whole capture again',
        hint: 'Drag to pan, wheel to zoom, click an allocation to pin it.'
      },
      bounds: { t0: options.analysis.t_start_us, t1: options.analysis.t_end_us },
      fetch: options.fetch,
      failed: options.failed,
      debounceMs: MEMORY_WINDOW_DEBOUNCE_MS
    });
    this._analysis = options.analysis;
    this._mode = options.mode;
    this._palette = readMemoryPalette(this.node);
  }

  /** Draw allocations as bands (with the remainder) or as category areas. */
  setMode(mode: LayoutMode): void {
    this._mode = mode;
    this._relayout();
  }

  /** Which categories to draw (index: category); recomputed from the window in memory. */
  setVisible(mask: boolean[]): void {
    this._visible = mask;
    this._relayout();
  }

  protected plotBox(): PlotBox {
    return {
      x: PLOT_MARGIN.left,
      y: PLOT_MARGIN.top,
      width: Math.max(10, this.cssWidth - PLOT_MARGIN.left - PLOT_MARGIN.right),
      height: CANVAS_HEIGHT - PLOT_MARGIN.top - PLOT_MARGIN.bottom
    };
  }

  protected cssHeight(): number {
    return CANVAS_HEIGHT;
  }

  protected readTheme(): void {
    this._palette = readMemoryPalette(this.node);
  }

  protected windowLoaded(window: MemoryWindow): void {
    this.canvas.setAttribute('data-t0', String(window.t0_us));
    this.canvas.setAttribute('data-t1', String(window.t1_us));
    this.canvas.setAttribute('data-bands', String(window.bands.length));
    this._layOut(window);
  }

  protected paintWindow(
    ctx: CanvasRenderingContext2D,
    window: MemoryWindow,
    _range: TimeRange,
    width: number,
    height: number
  ): void {
    if (this._layout) {
      drawStack(ctx, this._layout, window, { x: 0, y: 0, width, height }, this._yMax, this._palette);
    }
  }

  protected drawFrame(ctx: CanvasRenderingContext2D, current: boolean): void {
    const box = this.plotBox();
    if (current && this._layout && this._hoverKey !== null) {
      drawHighlight(ctx, this._layout, this._hoverKey, box, this._yMax, this._palette);
    }
    const analysis = this._analysis;
    const view = this.view;
    const spec: AxesSpec = { view, axis: analysis.axis, originUs: analysis.t_start_us, yMax: this._yMax };
    drawAxes(ctx, box, spec, this._palette);
    drawMarker(ctx, box, view, analysis.peak.t_us, this._palette.peak, `peak ${formatBytes(analysis.peak.total_bytes)}`);
    for (const oom of analysis.ooms) {
      drawMarker(ctx, box, view, oom.t_us, this._palette.oom, 'OOM');
    }
  }

  protected rangeText(view: TimeRange): string {
    const { axis, t_start_us: origin } = this._analysis;
    return `${formatAxisTime(view.t0, axis, origin)} – ${formatAxisTime(view.t1, axis, origin)}`;
  }

  protected leave(): void {
    if (!this._pinned) {
      this._hoverKey = null;
      this.hideTooltip();
      this.scheduleDraw();
    }
  }

  protected click(event: MouseEvent): void {
    this._togglePin(event);
  }

  /** Lay the window out again (mode or categories changed) and repaint. */
  private _relayout(): void {
    if (this.window) {
      this._layOut(this.window);
      this.paintBase();
      this.scheduleDraw();
    }
  }

  private _layOut(window: MemoryWindow): void {
    this._layout = layoutWindow(window, this._mode, this._visible);
    // Headroom above the highest column; the scale holds while zooming on the old picture.
    this._yMax = Math.max(1, this._layout.maxBytes * 1.08);
    this._hoverKey = this._pinned ? this._keyOfBand(this._pinned.id) : null;
    if (this._pinned && this._hoverKey === null) {
      // The pinned allocation is outside the new window: let it go rather than describe what is not drawn.
      this._pinned = null;
      this.tooltip.classList.remove('gpudojo-memory-pinned');
      this.tooltip.hidden = true;
    }
  }

  /** The segment under (x, y) CSS px, or null: column from x, bytes from y, then the layout's binary search. */
  private _hit(x: number, y: number): number | null {
    const layout = this._layout;
    if (!layout || !this.current) {
      return null;
    }
    const box = this.plotBox();
    if (x < box.x || x > box.x + box.width || y < box.y || y > box.y + box.height) {
      return null;
    }
    const bytes = ((box.y + box.height - y) / box.height) * this._yMax;
    return hitTest(layout, columnAt(x - box.x, box.width, layout.columns), bytes);
  }

  protected hover(x: number, y: number): void {
    if (this._pinned) {
      return;
    }
    const key = this._hit(x, y);
    if (key !== this._hoverKey) {
      this._hoverKey = key;
      this.scheduleDraw();
    }
    if (key === null) {
      this.hideTooltip();
      return;
    }
    this._showTooltip(key, x, y);
  }

  private _togglePin(event: MouseEvent): void {
    const rect = this.canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const key = this._hit(x, y);
    const band = key !== null && key >= 0 && this.window ? this.window.bands[key] : null;
    if (!band || (this._pinned && this._pinned.id === band.id)) {
      this._pinned = null;
      this.tooltip.classList.remove('gpudojo-memory-pinned');
      this.hover(x, y);
      return;
    }
    this._pinned = band;
    this._hoverKey = key;
    this._showTooltip(key as number, x, y);
    this.tooltip.classList.add('gpudojo-memory-pinned');
    this.scheduleDraw();
  }

  private _keyOfBand(id: number): number | null {
    const index = this.window?.bands.findIndex(b => b.id === id) ?? -1;
    return index >= 0 ? index : null;
  }

  private _showTooltip(key: number, x: number, y: number): void {
    const window = this.window;
    const layout = this._layout;
    if (!window || !layout) {
      return;
    }
    const box = this.plotBox();
    const content = tooltipContent(this._analysis, window, layout, key, columnAt(x - box.x, box.width, layout.columns));
    const tip = this.tooltip;
    tip.textContent = '';
    tip.setAttribute('data-kind', content.kind);
    tip.append(...content.lines);
    tip.hidden = false;
    placeTooltip(tip, x, y - 10, this.cssWidth, 280);
  }

  protected hideTooltip(): void {
    if (!this._pinned) {
      this.tooltip.hidden = true;
    }
  }

  private _analysis: Analysis;
  private _palette: MemoryPalette;
  private _mode: LayoutMode;
  private _visible: boolean[] = [];
  private _layout: StackLayout | null = null;
  private _yMax = 1;
  private _hoverKey: number | null = null;
  private _pinned: Band | null = null;
}
