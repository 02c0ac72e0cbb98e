/**
 * ProfileTimeline: the canvas of a trace's spans, a row per lane (thread, CUDA
 * stream, rank), with zoom (wheel or pinch over the plot, buttons), pan (drag,
 * or a sideways wheel), double-click to see the whole trace, and hover. Each
 * viewport change asks GET profile/window for exactly the plot's width in
 * pixels; until it answers, the last picture is stretched to the new range.
 * Hover reads the window in memory at once and the event's detail lazily.
 */

import type { EventDetail, ProfileSummary, ProfileWindow, Span } from '../api/types';
import { NextFrame, h } from '../dom';
import { listenForNavigation } from '../timeline/navigation';
import { clearedBase, drawStretched, placeTooltip, sizeCanvas, timelineTools } from '../timeline/canvasFrame';
import { TimeRange, sameRange, zoomAt } from '../timeline/viewport';
import { EventCache } from './eventCache';
import { formatUs, timeTickLabels } from './format';
import { LanesLayout, SpanIndex, hitSpan, indexWindow, layoutLanes, spanRect } from './laneLayout';
import { ProfilePalette, readProfilePalette } from './palette';
import {
  TIMELINE_MARGIN,
  drawLaneBands,
  drawLaneLabels,
  drawOutline,
  drawSpans,
  drawTimeAxis,
  makeHatch
} from './timelineDraw';
import { TooltipLine, detailLines, spanLines } from './tooltip';
import { FetchWindow, WindowLoader } from '../timeline/windowLoader';

export interface ProfileTimelineOptions {
  summary: ProfileSummary;
  fetch: FetchWindow<ProfileWindow>;
  /** GET profile/event for a span's ref. */
  detail: (ref: number) => Promise<EventDetail>;
  /** A window failed to load: the message to show. */
  failed: (message: string) => void;
  /** The user moved the view (zoom, pan, reset), not showRange. */
  moved?: () => void;
}

export class ProfileTimeline {
  constructor(options: ProfileTimelineOptions) {
    this._summary = options.summary;
    this._options = options;
    this._bounds = { t0: options.summary.t_start_us, t1: Math.max(options.summary.t_end_us, options.summary.t_start_us + 1) };
    this._view = { ...this._bounds };
    this._layout = layoutLanes(options.summary.lanes);
    this._events = new EventCache(options.detail);
    this.canvas = h('canvas', {
      className: 'gpudojo-profile-canvas',
      attrs: { 'data-state': 'loading', role: 'img', 'aria-label': 'Profile timeline: one row per thread, stream or rank' }
    });
    this._tooltip = h('div', { className: 'gpudojo-profile-tooltip', attrs: { role: 'status' } });
    this._tooltip.hidden = true;
    const tools = timelineTools({
      feature: 'profile',
      wheelOver: 'the timeline',
      wholeLabel: 'Whole trace',
      wholeTitle: 'Show the whole trace again (or double-click)',
      hint: 'Wheel or pinch to zoom, drag to pan, double-click for the whole trace; hover a span for its shapes and stack.',
      zoom: factor => this.zoom(factor),
      reset: () => this.reset()
    });
    this._range = tools.range;
    this._plot = h('div', { className: 'gpudojo-profile-plot' }, this.canvas, this._tooltip);
    this.node = h('div', { className: 'gpudojo-profile-timeline' }, tools.node, this._plot);
    this._palette = readProfilePalette(this.node);
    this._loader = new WindowLoader<ProfileWindow>({
      fetch: options.fetch,
      loaded: (window, request) => this._onWindow(window, request),
      failed: error => {
        this.canvas.setAttribute('data-state', 'error');
        this._options.failed(`The timeline could not be loaded: ${error.message}`);
      }
    });
    this._listen();
    this._resizeObserver = new ResizeObserver(() => this._resize());
    this._resizeObserver.observe(this._plot);
  }

  readonly node: HTMLElement;
  readonly canvas: HTMLCanvasElement;

  /** The time range shown now (µs on the trace's clock). */
  get view(): TimeRange {
    return { ...this._view };
  }

  /** Show `range` (a step, from the step chart). */
  showRange(range: TimeRange): void {
    this._setView(range, false);
  }

  /** Zoom about the middle of the view by `factor` (> 1: in). */
  zoom(factor: number): void {
    this._setView(zoomAt(this._view, this._bounds, 0.5, factor));
  }

  /** The whole trace again. */
  reset(): void {
    this._setView({ ...this._bounds });
  }

  refreshTheme(): void {
    this._palette = readProfilePalette(this.node);
    this._hatch = null;
    this._paintBase();
    this._frame.schedule();
  }

  dispose(): void {
    this._loader.dispose();
    this._resizeObserver.disconnect();
    this._frame.cancel();
  }

  private _listen(): void {
    listenForNavigation(this.canvas, {
      plot: () => ({ x: TIMELINE_MARGIN.left, width: this._plotWidth() }),
      view: () => ({ ...this._view }),
      bounds: () => this._bounds,
      setView: view => this._setView(view),
      reset: () => this.reset(),
      hover: (x, y) => this._hover(x, y),
      leave: () => this._hideTooltip(),
      dragStarted: () => this._hideTooltip()
    });
  }

  private _plotWidth(): number {
    return Math.max(10, this._cssWidth - TIMELINE_MARGIN.left - TIMELINE_MARGIN.right);
  }

  private _cssHeight(): number {
    return TIMELINE_MARGIN.top + this._layout.height + TIMELINE_MARGIN.bottom;
  }

  private _resize(): void {
    const width = Math.floor(this._plot.clientWidth);
    if (width <= 0 || width === this._cssWidth) {
      return;
    }
    this._cssWidth = width;
    // The first resize comes once the timeline is in the page: its theme colours can be read now.
    this._palette = readProfilePalette(this.node);
    this._hatch = null;
    this._dpr = sizeCanvas(this.canvas, width, this._cssHeight());
    this._paintBase();
    this._frame.schedule();
    this._request(this._window === null);
  }

  private _setView(view: TimeRange, byUser = true): void {
    if (sameRange(view, this._view)) {
      return;
    }
    this._view = view;
    if (byUser) {
      this._options.moved?.();
    }
    this._hideTooltip();
    this._frame.schedule();
    this._request(false);
  }

  private _request(immediately: boolean): void {
    if (this._cssWidth <= 0) {
      return;
    }
    this.canvas.setAttribute('data-state', 'loading');
    this.canvas.setAttribute('data-view-t0', String(this._view.t0));
    this.canvas.setAttribute('data-view-t1', String(this._view.t1));
    this._loader.request({ ...this._view, px: Math.round(this._plotWidth()) }, immediately);
  }

  private _onWindow(window: ProfileWindow, request: TimeRange): void {
    this._window = window;
    this._windowRange = { t0: request.t0, t1: request.t1 };
    this._index = indexWindow(window, this._layout);
    const spans = window.lanes.reduce((n, lane) => n + lane.spans.length, 0);
    this.canvas.setAttribute('data-t0', String(window.t0_us));
    this.canvas.setAttribute('data-t1', String(window.t1_us));
    this.canvas.setAttribute('data-spans', String(spans));
    this._paintBase();
    this._frame.schedule();
    this.canvas.setAttribute('data-state', this._loader.busy ? 'loading' : 'ready');
  }

  /** Paint the spans once into an offscreen canvas: frames copy it, stretched while a newer window loads. */
  private _paintBase(): void {
    const window = this._window;
    const range = this._windowRange;
    if (!window || !range || this._cssWidth <= 0) {
      return;
    }
    const width = this._plotWidth();
    const ctx = clearedBase((this._base ??= document.createElement('canvas')), width, this._layout.height, this._dpr);
    if (!ctx) {
      return;
    }
    this._hatch ??= makeHatch(ctx, this._palette.axis);
    drawSpans(ctx, window, this._layout, range, width, this._palette, this._hatch);
    this._baseRange = range;
  }

  private _draw(): void {
    const ctx = this.canvas.getContext('2d');
    if (!ctx || this._cssWidth <= 0) {
      return;
    }
    const { left, top } = TIMELINE_MARGIN;
    const width = this._plotWidth();
    ctx.setTransform(this._dpr, 0, 0, this._dpr, 0, 0);
    ctx.clearRect(0, 0, this._cssWidth, this._cssHeight());
    drawLaneBands(ctx, this._layout, top, this._cssWidth, this._palette);
    const base = this._base;
    const drawn = this._baseRange;
    if (base && drawn) {
      drawStretched(ctx, base, drawn, this._view, { x: left, y: top, width, height: this._layout.height });
    }
    const hovered = this._hovered;
    if (hovered && drawn && sameRange(drawn, this._view)) {
      const box = this._layout.boxes.find(b => b.lane === hovered.lane);
      if (box) {
        drawOutline(ctx, spanRect(hovered.span, this._view, width, box), left, top, this._palette);
      }
    }
    drawLaneLabels(ctx, this._layout, top, this._palette);
    const ticks = drawTimeAxis(ctx, left, width, top, this._view, this._summary.t_start_us, this._palette);
    this.canvas.setAttribute('data-ticks', JSON.stringify(ticks));
    const origin = this._summary.t_start_us;
    const span = this._view.t1 - this._view.t0;
    // The range at a tenth of the span's precision, so a deep zoom's ends do not read alike.
    const [from, to] = timeTickLabels([this._view.t0 - origin, this._view.t1 - origin], span / 10);
    this._range.textContent = `${from} – ${to} (${formatUs(span)} shown)`;
  }

  /** The span under (x, y) CSS px of the canvas, when the drawing matches the view. */
  private _hit(x: number, y: number): { lane: number; span: Span } | null {
    const drawn = this._baseRange;
    if (!this._index || !drawn || !sameRange(drawn, this._view)) {
      return null;
    }
    return hitSpan(this._index, this._layout, this._view, this._plotWidth(), x - TIMELINE_MARGIN.left, y - TIMELINE_MARGIN.top);
  }

  private _hover(x: number, y: number): void {
    const hit = this._hit(x, y);
    const same = hit && this._hovered && hit.span === this._hovered.span;
    if (!same) {
      this._hovered = hit;
      this._frame.schedule();
    }
    if (!hit) {
      this._hideTooltip();
      return;
    }
    if (!same) {
      this._fillTooltip(hit.span);
    }
    this._placeTooltip(x, y);
  }

  private _fillTooltip(span: Span): void {
    const tip = this._tooltip;
    tip.textContent = '';
    tip.setAttribute('data-merged', String(span.count > 1));
    tip.setAttribute('data-ref', String(span.ref));
    this._appendLines(spanLines(span, this._summary.t_start_us));
    tip.hidden = false;
    if (span.ref < 0 || span.count > 1) {
      return;
    }
    const ref = span.ref;
    const loading = h('div', { className: 'gpudojo-profile-tooltip-loading', text: 'shapes and stack…' });
    tip.appendChild(loading);
    this._events
      .get(ref)
      .then(detail => {
        if (this._hovered?.span.ref === ref && !tip.hidden) {
          loading.remove();
          this._appendLines(detailLines(detail));
        }
      })
      .catch(error => {
        loading.textContent = `no detail: ${(error as Error).message}`;
      });
  }

  private _appendLines(lines: TooltipLine[]): void {
    for (const line of lines) {
      this._tooltip.appendChild(
        h('div', { className: `gpudojo-profile-tooltip-${line.kind}`, text: line.text, attrs: { 'data-line': line.kind } })
      );
    }
  }

  private _placeTooltip(x: number, y: number): void {
    placeTooltip(this._tooltip, x, y + 12, this._cssWidth, 360);
  }

  private _hideTooltip(): void {
    this._tooltip.hidden = true;
    if (this._hovered) {
      this._hovered = null;
      this._frame.schedule();
    }
  }

  private _summary: ProfileSummary;
  private _options: ProfileTimelineOptions;
  private _palette: ProfilePalette;
  private _hatch: CanvasPattern | null = null;
  private _bounds: TimeRange;
  private _view: TimeRange;
  private _layout: LanesLayout;
  private _events: EventCache;
  private _window: ProfileWindow | null = null;
  private _windowRange: TimeRange | null = null;
  private _index: SpanIndex | null = null;
  private _base: HTMLCanvasElement | null = null;
  private _baseRange: TimeRange | null = null;
  private _hovered: { lane: number; span: Span } | null = null;
  private _cssWidth = 0;
  private _dpr = 1;
  private _frame = new NextFrame(() => this._draw());
  private _tooltip: HTMLElement;
  private _range: HTMLElement;
  private _plot: HTMLElement;
  private _loader: WindowLoader<ProfileWindow>;
  private _resizeObserver: ResizeObserver;
}
