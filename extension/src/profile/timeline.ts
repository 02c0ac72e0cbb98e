/**
 * ProfileTimeline: the canvas of a trace's spans, a row per lane (thread, CUDA
 * stream, rank): a windowed timeline (zoom by wheel, pinch or buttons, pan by
 * drag or a sideways wheel, double-click for the whole trace; GET
 * profile/window for exactly the plot's width on each viewport change). Hover
 * reads the window in memory at once and the event's detail lazily.
 */

import type { EventDetail, ProfileSummary, ProfileWindow, Span } from '../api/types';
import { h } from '../dom';
import { PlotRect, placeTooltip } from '../timeline/canvasFrame';
import { TimeRange } from '../timeline/viewport';
import { WindowedTimeline } from '../timeline/windowedTimeline';
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
import { FetchWindow } from '../timeline/windowLoader';

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

export class ProfileTimeline extends WindowedTimeline<ProfileWindow> {
  constructor(options: ProfileTimelineOptions) {
    super({
      feature: 'profile',
      ariaLabel: 'Profile timeline: one row per thread, stream or rank',
      tools: {
        wheelOver: 'the timeline',
        wholeLabel: 'Whole trace',
        wholeTitle: 'Show the whole trace again (or double-click)',
        hint: 'Wheel or pinch to zoom, drag to pan, double-click for the whole trace; hover a span for its shapes and stack.'
      },
      bounds: { t0: options.summary.t_start_us, t1: Math.max(options.summary.t_end_us, options.summary.t_start_us + 1) },
      fetch: options.fetch,
      failed: options.failed
    });
    this._summary = options.summary;
    this._options = options;
    this._layout = layoutLanes(options.summary.lanes);
    this._events = new EventCache(options.detail);
    this._palette = readProfilePalette(this.node);
  }

  /** Show `range` (a step, from the step chart). */
  showRange(range: TimeRange): void {
    this.setView(range, false);
  }

  protected plotBox(): PlotRect {
    return {
      x: TIMELINE_MARGIN.left,
      y: TIMELINE_MARGIN.top,
      width: Math.max(10, this.cssWidth - TIMELINE_MARGIN.left - TIMELINE_MARGIN.right),
      height: this._layout.height
    };
  }

  protected cssHeight(): number {
    return TIMELINE_MARGIN.top + this._layout.height + TIMELINE_MARGIN.bottom;
  }

  protected readTheme(): void {
    this._palette = readProfilePalette(this.node);
    this._hatch = null;
  }

  protected resized(): void {
    // The first resize comes once the timeline is in the page: its theme colours can be read now.
    this.readTheme();
  }

  protected viewMoved(byUser: boolean): void {
    if (byUser) {
      this._options.moved?.();
    }
    this.hideTooltip();
  }

  protected windowLoaded(window: ProfileWindow): void {
    this._index = indexWindow(window, this._layout);
    const spans = window.lanes.reduce((n, lane) => n + lane.spans.length, 0);
    this.canvas.setAttribute('data-t0', String(window.t0_us));
    this.canvas.setAttribute('data-t1', String(window.t1_us));
    this.canvas.setAttribute('data-spans', String(spans));
  }

  protected paintWindow(ctx: CanvasRenderingContext2D, window: ProfileWindow, range: TimeRange, width: number): void {
    this._hatch ??= makeHatch(ctx, this._palette.axis);
    drawSpans(ctx, window, this._layout, range, width, this._palette, this._hatch);
  }

  protected drawUnder(ctx: CanvasRenderingContext2D): void {
    drawLaneBands(ctx, this._layout, TIMELINE_MARGIN.top, this.cssWidth, this._palette);
  }

  protected drawFrame(ctx: CanvasRenderingContext2D, current: boolean): void {
    const { x: left, y: top, width } = this.plotBox();
    const view = this.view;
    const hovered = this._hovered;
    if (hovered && current) {
      const box = this._layout.boxes.find(b => b.lane === hovered.lane);
      if (box) {
        drawOutline(ctx, spanRect(hovered.span, view, width, box), left, top, this._palette);
      }
    }
    drawLaneLabels(ctx, this._layout, top, this._palette);
    const ticks = drawTimeAxis(ctx, left, width, top, view, this._summary.t_start_us, this._palette);
    this.canvas.setAttribute('data-ticks', JSON.stringify(ticks));
  }

  protected rangeText(view: TimeRange): string {
    const origin = this._summary.t_start_us;
    const span = view.t1 - view.t0;
    // The range at a tenth of the span's precision, so a deep zoom's ends do not read alike.
    const [from, to] = timeTickLabels([view.t0 - origin, view.t1 - origin], span / 10);
    return `${from} – ${to} (${formatUs(span)} shown)`;
  }

  /** The span under (x, y) CSS px of the canvas, when the drawing matches the view. */
  private _hit(x: number, y: number): { lane: number; span: Span } | null {
    if (!this._index || !this.current) {
      return null;
    }
    const box = this.plotBox();
    return hitSpan(this._index, this._layout, this.view, box.width, x - box.x, y - box.y);
  }

  protected hover(x: number, y: number): void {
    const hit = this._hit(x, y);
    const same = hit && this._hovered && hit.span === this._hovered.span;
    if (!same) {
      this._hovered = hit;
      this.scheduleDraw();
    }
    if (!hit) {
      this.hideTooltip();
      return;
    }
    if (!same) {
      this._fillTooltip(hit.span);
    }
    placeTooltip(this.tooltip, x, y + 12, this.cssWidth, 360);
  }

  private _fillTooltip(span: Span): void {
    const tip = this.tooltip;
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
      this.tooltip.appendChild(
        h('div', { className: `gpudojo-profile-tooltip-${line.kind}`, text: line.text, attrs: { 'data-line': line.kind } })
      );
    }
  }

  protected hideTooltip(): void {
    this.tooltip.hidden = true;
    if (this._hovered) {
      this._hovered = null;
      this.scheduleDraw();
    }
  }

  private _summary: ProfileSummary;
  private _options: ProfileTimelineOptions;
  private _palette: ProfilePalette;
  private _hatch: CanvasPattern | null = null;
  private _layout: LanesLayout;
  private _events: EventCache;
  private _index: SpanIndex | null = null;
  private _hovered: { lane: number; span: Span } | null = null;
}
