/**
 * WindowedTimeline: what the memory and profile timelines are both made of. A
 * canvas with its toolbar (zoom, the whole range, the range shown), zoom and
 * pan (wheel, drag, buttons), and a window of data fetched for exactly the
 * plot's width in pixels on every viewport change (debounced, the stale answer
 * dropped). The window is painted once into an offscreen picture; each frame
 * copies it, stretched to the new range until the newer window arrives. The
 * subclass says what a window looks like: how it is laid out and painted, what
 * each frame draws over it, and what hovering shows.
 */

import { NextFrame, h } from '../dom';
import { TimelineToolsOptions, clearedBase, drawStretched, sizeCanvas, timelineTools } from './canvasFrame';
import type { PlotRect } from './canvasFrame';
import { listenForNavigation } from './navigation';
import { TimeRange, sameRange, zoomAt } from './viewport';
import { FetchWindow, WindowLoader } from './windowLoader';

export interface WindowedTimelineOptions<W> {
  /** The feature's class prefix: 'memory' names gpudojo-memory-canvas, gpudojo-memory-plot, … */
  feature: string;
  /** The canvas's accessible name. */
  ariaLabel: string;
  /** The toolbar's words. */
  tools: Pick<TimelineToolsOptions, 'wheelOver' | 'wholeLabel' | 'wholeTitle' | 'hint'>;
  /** The range the view may not leave. */
  bounds: TimeRange;
  fetch: FetchWindow<W>;
  /** A window failed to load: the message to show. */
  failed: (message: string) => void;
  /** Quiet time after the last viewport change before the window is asked for (ms). */
  debounceMs?: number;
}

export abstract class WindowedTimeline<W> {
  protected constructor(options: WindowedTimelineOptions<W>) {
    const { feature } = options;
    this.bounds = options.bounds;
    this._view = { ...options.bounds };
    this.canvas = h('canvas', {
      className: `gpudojo-${feature}-canvas`,
      attrs: { 'data-state': 'loading', role: 'img', 'aria-label': options.ariaLabel }
    });
    this.tooltip = h('div', { className: `gpudojo-${feature}-tooltip`, attrs: { role: 'status' } });
    this.tooltip.hidden = true;
    const tools = timelineTools({
      feature,
      ...options.tools,
      zoom: factor => this.zoom(factor),
      reset: () => this.reset()
    });
    this._rangeLabel = tools.range;
    this._plot = h('div', { className: `gpudojo-${feature}-plot` }, this.canvas, this.tooltip);
    this.node = h('div', { className: `gpudojo-${feature}-timeline` }, tools.node, this._plot);
    this._loader = new WindowLoader<W>({
      fetch: options.fetch,
      loaded: (window, request) => this._onWindow(window, request),
      failed: error => {
        this.canvas.setAttribute('data-state', 'error');
        options.failed(`The timeline could not be loaded: ${error.message}`);
      },
      debounceMs: options.debounceMs
    });
    listenForNavigation(this.canvas, {
      plot: () => {
        const box = this.plotBox();
        return { x: box.x, width: box.width };
      },
      view: () => ({ ...this._view }),
      bounds: () => this.bounds,
      setView: view => this.setView(view),
      reset: () => this.reset(),
      hover: (x, y) => this.hover(x, y),
      leave: () => this.leave(),
      dragStarted: () => this.hideTooltip(),
      click: event => this.click(event)
    });
    this._resizeObserver = new ResizeObserver(() => this._resize());
    this._resizeObserver.observe(this._plot);
  }

  readonly node: HTMLElement;
  readonly canvas: HTMLCanvasElement;

  /** The time range shown now. */
  get view(): TimeRange {
    return { ...this._view };
  }

  /** Zoom about the middle of the view by `factor` (> 1: in). */
  zoom(factor: number): void {
    this.setView(zoomAt(this._view, this.bounds, 0.5, factor));
  }

  /** The whole range again. */
  reset(): void {
    this.setView({ ...this.bounds });
  }

  /** Re-read theme colours and draw with them. */
  refreshTheme(): void {
    this.readTheme();
    this.paintBase();
    this.scheduleDraw();
  }

  dispose(): void {
    this._loader.dispose();
    this._resizeObserver.disconnect();
    this._frame.cancel();
  }

  // --- what the subclass says -------------------------------------------------------------------

  /** The plot inside the canvas, CSS px (where the window's picture goes). */
  protected abstract plotBox(): PlotRect;

  /** The canvas's height, CSS px. */
  protected abstract cssHeight(): number;

  /** Read the theme's colours (the canvas draws with them). */
  protected abstract readTheme(): void;

  /** A window arrived (it is `this.window` now): index or lay it out, set the canvas's data attributes. */
  protected abstract windowLoaded(window: W): void;

  /** Paint `window` (asked for `range`) into the offscreen picture, `width` × `height` CSS px. */
  protected abstract paintWindow(
    ctx: CanvasRenderingContext2D,
    window: W,
    range: TimeRange,
    width: number,
    height: number
  ): void;

  /** Draw one frame over the stretched picture (axes, highlights, markers); `current`: the picture is of this view. */
  protected abstract drawFrame(ctx: CanvasRenderingContext2D, current: boolean): void;

  /** The text the toolbar shows for the view. */
  protected abstract rangeText(view: TimeRange): string;

  /** The pointer is at (x, y) CSS px of the canvas, no drag on. */
  protected abstract hover(x: number, y: number): void;

  /** Hide what follows the pointer. */
  protected abstract hideTooltip(): void;

  /** The pointer left the canvas. */
  protected leave(): void {
    this.hideTooltip();
  }

  /** A press released without moving. */
  protected click(_event: MouseEvent): void {
    // Nothing by default.
  }

  /** The view moved (by the user, or by `byUser` false: the caller). */
  protected viewMoved(_byUser: boolean): void {
    // Nothing by default.
  }

  /** Before the canvas takes a new width (the first one comes once it is in the page). */
  protected resized(): void {
    // Nothing by default.
  }

  // --- for the subclass ---------------------------------------------------------------------------

  /** The range the view may not leave. */
  protected readonly bounds: TimeRange;

  protected readonly tooltip: HTMLElement;

  /** The latest window and the range it was asked for (null until the first arrives). */
  protected window: W | null = null;
  protected windowRange: TimeRange | null = null;

  /** The canvas's width (0 until it is in the page). */
  protected cssWidth = 0;

  /** The picture on screen is of the view shown (not a stretched older one). */
  protected get current(): boolean {
    return this._baseRange !== null && sameRange(this._baseRange, this._view);
  }

  protected setView(view: TimeRange, byUser = true): void {
    if (sameRange(view, this._view)) {
      return;
    }
    this._view = view;
    this.viewMoved(byUser);
    this.scheduleDraw();
    this._request(false);
  }

  protected scheduleDraw(): void {
    this._frame.schedule();
  }

  /** Paint the latest window once into the offscreen picture: frames copy it, stretched while a newer one loads. */
  protected paintBase(): void {
    const window = this.window;
    const range = this.windowRange;
    if (!window || !range || this.cssWidth <= 0) {
      return;
    }
    const box = this.plotBox();
    const ctx = clearedBase((this._base ??= document.createElement('canvas')), box.width, box.height, this._dpr);
    if (!ctx) {
      return;
    }
    this.paintWindow(ctx, window, range, box.width, box.height);
    this._baseRange = range;
  }

  // --- the machinery ------------------------------------------------------------------------------

  private _resize(): void {
    const width = Math.floor(this._plot.clientWidth);
    if (width <= 0 || width === this.cssWidth) {
      return;
    }
    this.cssWidth = width;
    this.resized();
    this._dpr = sizeCanvas(this.canvas, width, this.cssHeight());
    this.paintBase();
    this.scheduleDraw();
    this._request(this.window === null);
  }

  private _request(immediately: boolean): void {
    if (this.cssWidth <= 0) {
      return;
    }
    this.canvas.setAttribute('data-state', 'loading');
    this.canvas.setAttribute('data-view-t0', String(this._view.t0));
    this.canvas.setAttribute('data-view-t1', String(this._view.t1));
    this._loader.request({ ...this._view, px: Math.round(this.plotBox().width) }, immediately);
  }

  private _onWindow(window: W, request: TimeRange): void {
    this.window = window;
    this.windowRange = { t0: request.t0, t1: request.t1 };
    this.windowLoaded(window);
    this.paintBase();
    this.scheduleDraw();
    this.canvas.setAttribute('data-state', this._loader.busy ? 'loading' : 'ready');
  }

  private _draw(): void {
    const ctx = this.canvas.getContext('2d');
    if (!ctx || this.cssWidth <= 0) {
      return;
    }
    ctx.setTransform(this._dpr, 0, 0, this._dpr, 0, 0);
    ctx.clearRect(0, 0, this.cssWidth, this.cssHeight());
    this.drawUnder(ctx);
    if (this._base && this._baseRange) {
      drawStretched(ctx, this._base, this._baseRange, this._view, this.plotBox());
    }
    this.drawFrame(ctx, this.current);
    this._rangeLabel.textContent = this.rangeText(this._view);
  }

  /** Draw under the picture (the profile's lane bands). */
  protected drawUnder(_ctx: CanvasRenderingContext2D): void {
    // Nothing by default.
  }

  private _view: TimeRange;
  private _base: HTMLCanvasElement | null = null;
  private _baseRange: TimeRange | null = null;
  private _dpr = 1;
  private _frame = new NextFrame(() => this._draw());
  private _rangeLabel: HTMLElement;
  private _plot: HTMLElement;
  private _loader: WindowLoader<W>;
  private _resizeObserver: ResizeObserver;
}
