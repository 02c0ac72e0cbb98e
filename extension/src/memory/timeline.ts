/**
 * MemoryTimeline: the canvas of one capture's memory over time, with zoom
 * (wheel, buttons), pan (drag) and hover. Each viewport change re-queries the
 * window for exactly the plot's width in samples; until it answers, the last
 * picture is stretched to the new range. Hover reads the layout already in
 * memory (no request), so the tooltip follows the cursor within a frame.
 */

import type { Analysis, Band, MemoryWindow } from '../api/types';
import { NextFrame, h } from '../dom';
import { formatAxisTime, formatBytes } from './format';
import { MemoryPalette, readMemoryPalette } from './palette';
import { LayoutMode, StackLayout, columnAt, hitTest, layoutWindow } from './stackLayout';
import { AxesSpec, PLOT_MARGIN, PlotBox, drawAxes, drawHighlight, drawMarker, drawStack } from './timelineDraw';
import { tooltipContent } from './tooltip';
import { listenForNavigation } from '../timeline/navigation';
import { clearedBase, drawStretched, placeTooltip, sizeCanvas, timelineTools } from '../timeline/canvasFrame';
import { TimeRange, sameRange, zoomAt } from '../timeline/viewport';
import { FetchWindow, WindowLoader } from '../timeline/windowLoader';

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

export class MemoryTimeline {
  constructor(options: MemoryTimelineOptions) {
    this._analysis = options.analysis;
    this._mode = options.mode;
    this._failed = options.failed;
    this._bounds = { t0: options.analysis.t_start_us, t1: options.analysis.t_end_us };
    this._view = { ...this._bounds };
    this.canvas = h('canvas', {
      className: 'gpudojo-memory-canvas',
      attrs: { 'data-state': 'loading', role: 'img', 'aria-label': 'Memory timeline' }
    });
    this._tooltip = h('div', { className: 'gpudojo-memory-tooltip', attrs: { role: 'status' } });
    this._tooltip.hidden = true;
    const tools = timelineTools({
      feature: 'memory',
      wheelOver: 'the chart',
      wholeLabel: 'Whole capture',
      wholeTitle: 'Show the whole capture again',
      hint: 'Drag to pan, wheel to zoom, click an allocation to pin it.',
      zoom: factor => this.zoom(factor),
      reset: () => this.reset()
    });
    this._range = tools.range;
    this._plot = h('div', { className: 'gpudojo-memory-plot' }, this.canvas, this._tooltip);
    this.node = h('div', { className: 'gpudojo-memory-timeline' }, tools.node, this._plot);
    this._palette = readMemoryPalette(this.node);
    this._loader = new WindowLoader({
      fetch: options.fetch,
      loaded: (window, request) => this._onWindow(window, request),
      failed: error => {
        this.canvas.setAttribute('data-state', 'error');
        this._failed(`The timeline could not be loaded: ${error.message}`);
      },
      debounceMs: MEMORY_WINDOW_DEBOUNCE_MS
    });
    this._listen();
    this._resizeObserver = new ResizeObserver(() => this._resize());
    this._resizeObserver.observe(this._plot);
  }

  readonly node: HTMLElement;
  readonly canvas: HTMLCanvasElement;

  /** Zoom about the middle of the view by `factor` (> 1: in). */
  zoom(factor: number): void {
    this._setView(zoomAt(this._view, this._bounds, 0.5, factor));
  }

  /** The whole capture again. */
  reset(): void {
    this._setView({ ...this._bounds });
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

  refreshTheme(): void {
    this._palette = readMemoryPalette(this.node);
    this._paintBase();
    this._scheduleDraw();
  }

  dispose(): void {
    this._loader.dispose();
    this._resizeObserver.disconnect();
    this._frame.cancel();
  }

  private _listen(): void {
    listenForNavigation(this.canvas, {
      plot: () => {
        const box = this._box();
        return { x: box.x, width: box.width };
      },
      view: () => ({ ...this._view }),
      bounds: () => this._bounds,
      setView: view => this._setView(view),
      reset: () => this.reset(),
      hover: (x, y) => this._hover(x, y),
      leave: () => {
        if (!this._pinned) {
          this._hoverKey = null;
          this._hideTooltip();
          this._scheduleDraw();
        }
      },
      dragStarted: () => this._hideTooltip(),
      click: event => this._togglePin(event)
    });
  }

  private _box(): PlotBox {
    return {
      x: PLOT_MARGIN.left,
      y: PLOT_MARGIN.top,
      width: Math.max(10, this._cssWidth - PLOT_MARGIN.left - PLOT_MARGIN.right),
      height: CANVAS_HEIGHT - PLOT_MARGIN.top - PLOT_MARGIN.bottom
    };
  }

  private _resize(): void {
    const width = Math.floor(this._plot.clientWidth);
    if (width <= 0 || width === this._cssWidth) {
      return;
    }
    this._cssWidth = width;
    this._dpr = sizeCanvas(this.canvas, width, CANVAS_HEIGHT);
    this._paintBase();
    this._request(this._layout === null);
  }

  private _setView(view: TimeRange): void {
    if (sameRange(view, this._view)) {
      return;
    }
    this._view = view;
    this._scheduleDraw();
    this._request(false);
  }

  private _request(immediately: boolean): void {
    if (this._cssWidth <= 0) {
      return;
    }
    this.canvas.setAttribute('data-state', 'loading');
    this._loader.request({ ...this._view, px: Math.round(this._box().width) }, immediately);
  }

  private _onWindow(window: MemoryWindow, request: TimeRange): void {
    this._window = window;
    this._windowRange = { t0: request.t0, t1: request.t1 };
    this.canvas.setAttribute('data-t0', String(window.t0_us));
    this.canvas.setAttribute('data-t1', String(window.t1_us));
    this.canvas.setAttribute('data-bands', String(window.bands.length));
    this._relayout();
    this.canvas.setAttribute('data-state', this._loader.busy ? 'loading' : 'ready');
  }

  private _relayout(): void {
    const window = this._window;
    if (!window) {
      return;
    }
    this._layout = layoutWindow(window, this._mode, this._visible);
    // Headroom above the highest column; the scale holds while zooming on the old picture.
    this._yMax = Math.max(1, this._layout.maxBytes * 1.08);
    this._hoverKey = this._pinned ? this._keyOfBand(this._pinned.id) : null;
    if (this._pinned && this._hoverKey === null) {
      // The pinned allocation is outside the new window: let it go rather than describe what is not drawn.
      this._pinned = null;
      this._tooltip.classList.remove('gpudojo-memory-pinned');
      this._tooltip.hidden = true;
    }
    this._paintBase();
    this._scheduleDraw();
  }

  /** Paint the stack once into an offscreen canvas: later frames copy it, stretched while a new window loads. */
  private _paintBase(): void {
    const layout = this._layout;
    const window = this._window;
    if (!layout || !window || this._cssWidth <= 0) {
      return;
    }
    const box = this._box();
    const ctx = clearedBase((this._base ??= document.createElement('canvas')), box.width, box.height, this._dpr);
    if (!ctx) {
      return;
    }
    drawStack(ctx, layout, window, { x: 0, y: 0, width: box.width, height: box.height }, this._yMax, this._palette);
    this._baseRange = this._windowRange;
  }

  private _scheduleDraw(): void {
    this._frame.schedule();
  }

  private _draw(): void {
    const ctx = this.canvas.getContext('2d');
    if (!ctx || this._cssWidth <= 0) {
      return;
    }
    const box = this._box();
    ctx.setTransform(this._dpr, 0, 0, this._dpr, 0, 0);
    ctx.clearRect(0, 0, this._cssWidth, CANVAS_HEIGHT);
    const base = this._base;
    const drawn = this._baseRange;
    const current = drawn !== null && sameRange(drawn, this._view);
    if (base && drawn) {
      drawStretched(ctx, base, drawn, this._view, box);
    }
    if (current && this._layout && this._hoverKey !== null) {
      drawHighlight(ctx, this._layout, this._hoverKey, box, this._yMax, this._palette);
    }
    const analysis = this._analysis;
    const spec: AxesSpec = { view: this._view, axis: analysis.axis, originUs: analysis.t_start_us, yMax: this._yMax };
    drawAxes(ctx, box, spec, this._palette);
    drawMarker(ctx, box, this._view, analysis.peak.t_us, this._palette.peak, `peak ${formatBytes(analysis.peak.total_bytes)}`);
    for (const oom of analysis.ooms) {
      drawMarker(ctx, box, this._view, oom.t_us, this._palette.oom, 'OOM');
    }
    const { axis, t_start_us: origin } = analysis;
    this._range.textContent = `${formatAxisTime(this._view.t0, axis, origin)} – ${formatAxisTime(this._view.t1, axis, origin)}`;
  }

  /** The segment under (x, y) CSS px, or null: column from x, bytes from y, then the layout's binary search. */
  private _hit(x: number, y: number): number | null {
    const layout = this._layout;
    const drawn = this._baseRange;
    if (!layout || !drawn || !sameRange(drawn, this._view)) {
      return null;
    }
    const box = this._box();
    if (x < box.x || x > box.x + box.width || y < box.y || y > box.y + box.height) {
      return null;
    }
    const bytes = ((box.y + box.height - y) / box.height) * this._yMax;
    return hitTest(layout, columnAt(x - box.x, box.width, layout.columns), bytes);
  }

  private _hover(x: number, y: number): void {
    if (this._pinned) {
      return;
    }
    const key = this._hit(x, y);
    if (key !== this._hoverKey) {
      this._hoverKey = key;
      this._scheduleDraw();
    }
    if (key === null) {
      this._hideTooltip();
      return;
    }
    this._showTooltip(key, x, y);
  }

  private _togglePin(event: MouseEvent): void {
    const rect = this.canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const key = this._hit(x, y);
    const band = key !== null && key >= 0 && this._window ? this._window.bands[key] : null;
    if (!band || (this._pinned && this._pinned.id === band.id)) {
      this._pinned = null;
      this._tooltip.classList.remove('gpudojo-memory-pinned');
      this._hover(x, y);
      return;
    }
    this._pinned = band;
    this._hoverKey = key;
    this._showTooltip(key as number, x, y);
    this._tooltip.classList.add('gpudojo-memory-pinned');
    this._scheduleDraw();
  }

  private _keyOfBand(id: number): number | null {
    const index = this._window?.bands.findIndex(b => b.id === id) ?? -1;
    return index >= 0 ? index : null;
  }

  private _showTooltip(key: number, x: number, y: number): void {
    const window = this._window;
    const layout = this._layout;
    if (!window || !layout) {
      return;
    }
    const box = this._box();
    const content = tooltipContent(this._analysis, window, layout, key, columnAt(x - box.x, box.width, layout.columns));
    const tip = this._tooltip;
    tip.textContent = '';
    tip.setAttribute('data-kind', content.kind);
    tip.append(...content.lines);
    tip.hidden = false;
    placeTooltip(tip, x, y - 10, this._cssWidth, 280);
  }

  private _hideTooltip(): void {
    if (!this._pinned) {
      this._tooltip.hidden = true;
    }
  }

  private _analysis: Analysis;
  private _palette: MemoryPalette;
  private _mode: LayoutMode;
  private _failed: (message: string) => void;
  private _bounds: TimeRange;
  private _view: TimeRange;
  private _visible: boolean[] = [];
  private _window: MemoryWindow | null = null;
  private _windowRange: TimeRange | null = null;
  private _layout: StackLayout | null = null;
  private _yMax = 1;
  private _base: HTMLCanvasElement | null = null;
  private _baseRange: TimeRange | null = null;
  private _hoverKey: number | null = null;
  private _pinned: Band | null = null;
  private _cssWidth = 0;
  private _dpr = 1;
  private _frame = new NextFrame(() => this._draw());
  private _tooltip: HTMLElement;
  private _range: HTMLElement;
  private _plot: HTMLElement;
  private _loader: WindowLoader<MemoryWindow>;
  private _resizeObserver: ResizeObserver;
}
