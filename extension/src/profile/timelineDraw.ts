/**
 * Drawing the profile timeline on a 2D canvas: spans filled with one Path2D per
 * kind (a frame costs one fill per colour however many spans there are),
 * merged spans greyed and hatched so they do not pass for one long op, names
 * on spans wide enough to hold them, lane bands and labels, the time axis.
 */

import type { ProfileWindow } from '../api/types';
import { niceTicks } from '../memory/format';
import { TimeRange, xOf } from '../timeline/viewport';
import { timeTickLabels } from './format';
import { LEVEL_PX, LanesLayout, SpanRect, spanRect } from './laneLayout';
import { ProfilePalette, SpanKind, readableOn, spanKind } from './palette';

/** The label column at the left and the time axis on top (CSS px). */
export const TIMELINE_MARGIN = { left: 180, right: 10, top: 24, bottom: 6 };

/** Spans narrower than this (px) carry no name. */
const MIN_LABEL_PX = 36;

/** A small diagonal hatch for merged spans (null where the canvas cannot make patterns). */
export function makeHatch(ctx: CanvasRenderingContext2D, color: string): CanvasPattern | null {
  const tile = document.createElement('canvas');
  tile.width = 6;
  tile.height = 6;
  const t = tile.getContext('2d');
  if (!t) {
    return null;
  }
  t.strokeStyle = color;
  t.lineWidth = 1;
  t.beginPath();
  t.moveTo(0, 6);
  t.lineTo(6, 0);
  t.stroke();
  return ctx.createPattern(tile, 'repeat');
}

/**
 * Fill `window`'s spans into `ctx` (origin: the plot's top-left corner, lanes
 * from y 0), `view` over `width` px.
 */
export function drawSpans(
  ctx: CanvasRenderingContext2D,
  window: ProfileWindow,
  layout: LanesLayout,
  view: TimeRange,
  width: number,
  palette: ProfilePalette,
  hatch: CanvasPattern | null
): void {
  const boxes = new Map(layout.boxes.map(b => [b.lane, b]));
  const paths = new Map<SpanKind, Path2D>();
  const merged = new Path2D();
  const labels: SpanLabel[] = [];
  for (const laneWindow of window.lanes) {
    const box = boxes.get(laneWindow.lane);
    if (!box) {
      continue;
    }
    for (const span of laneWindow.spans) {
      const rect = spanRect(span, view, width, box);
      if (rect.x + rect.width < 0 || rect.x > width) {
        continue;
      }
      const kind = spanKind(span);
      let path = paths.get(kind);
      if (!path) {
        path = new Path2D();
        paths.set(kind, path);
      }
      // A hair narrower than the span so neighbours stay apart when wide enough to see it.
      const w = rect.width > 3 ? rect.width - 0.5 : rect.width;
      path.rect(rect.x, rect.y, w, rect.height);
      if (span.count > 1) {
        merged.rect(rect.x, rect.y, w, rect.height);
      } else if (rect.width >= MIN_LABEL_PX) {
        labels.push({ rect, name: span.name, kind });
      }
    }
  }
  for (const [kind, path] of paths) {
    ctx.fillStyle = palette.kinds[kind];
    ctx.fill(path);
  }
  // Merged spans: greyed towards the background, then hatched.
  ctx.globalAlpha = 0.55;
  ctx.fillStyle = palette.merged;
  ctx.fill(merged);
  ctx.globalAlpha = 1;
  if (hatch) {
    ctx.fillStyle = hatch;
    ctx.fill(merged);
  }
  drawSpanLabels(ctx, labels, width, palette);
}

interface SpanLabel {
  rect: SpanRect;
  name: string;
  kind: SpanKind;
}

function drawSpanLabels(ctx: CanvasRenderingContext2D, labels: SpanLabel[], width: number, palette: ProfilePalette): void {
  ctx.font = palette.font;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  const textOn = new Map<SpanKind, string>();
  // Spans of one level can overlap (a ProfilerStep annotation crossing Python frames): a
  // name is written only where the previous name on its row has ended, never over it.
  const ends = new Map<number, number>();
  labels.sort((a, b) => a.rect.y - b.rect.y || a.rect.x - b.rect.x);
  for (const { rect, name, kind } of labels) {
    const x0 = Math.max(0, rect.x, ends.get(rect.y) ?? 0) + 3;
    const room = Math.min(width, rect.x + rect.width) - x0 - 3;
    if (room < MIN_LABEL_PX - 6) {
      continue;
    }
    const text = fitText(ctx, name, room);
    if (!textOn.has(kind)) {
      textOn.set(kind, readableOn(palette.kinds[kind], palette.spanTexts));
    }
    ctx.fillStyle = textOn.get(kind) as string;
    ctx.fillText(text, x0, rect.y + (LEVEL_PX - 1) / 2);
    ends.set(rect.y, x0 + ctx.measureText(text).width + 3);
  }
}

/** `text` cut with an ellipsis to fit `room` px. */
export function fitText(ctx: CanvasRenderingContext2D, text: string, room: number): string {
  if (ctx.measureText(text).width <= room) {
    return text;
  }
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= room) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo > 0 ? `${text.slice(0, lo)}…` : '';
}

/** Alternate lane bands across the whole canvas width, under the spans (y from the lanes' top at `top`). */
export function drawLaneBands(
  ctx: CanvasRenderingContext2D,
  layout: LanesLayout,
  top: number,
  fullWidth: number,
  palette: ProfilePalette
): void {
  ctx.fillStyle = palette.laneBand;
  layout.boxes.forEach((box, i) => {
    if (i % 2 === 0) {
      ctx.fillRect(0, top + box.y, fullWidth, box.height);
    }
  });
}

/** Lane labels in the left column, cut to fit; a lane with hidden levels says how many. */
export function drawLaneLabels(ctx: CanvasRenderingContext2D, layout: LanesLayout, top: number, palette: ProfilePalette): void {
  ctx.font = palette.font;
  ctx.fillStyle = palette.text;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  const room = TIMELINE_MARGIN.left - 12;
  for (const box of layout.boxes) {
    const label = box.hiddenLevels > 0 ? `${box.label} (+${box.hiddenLevels} levels)` : box.label;
    ctx.fillText(fitText(ctx, label, room), 6, top + box.y + Math.min(box.height, LEVEL_PX) / 2);
  }
}

/** Ticks and labels of the time axis along the top, counted from the trace's start (`originUs`); returns the labels drawn. */
export function drawTimeAxis(
  ctx: CanvasRenderingContext2D,
  x: number,
  width: number,
  bottom: number,
  view: TimeRange,
  originUs: number,
  palette: ProfilePalette
): string[] {
  ctx.font = palette.font;
  ctx.strokeStyle = palette.grid;
  ctx.fillStyle = palette.axis;
  ctx.lineWidth = 1;
  ctx.textBaseline = 'bottom';
  ctx.textAlign = 'center';
  const count = Math.max(2, Math.floor(width / 110));
  const ticks = niceTicks(view.t0 - originUs, view.t1 - originUs, count);
  const labels = timeTickLabels(ticks, ticks.length > 1 ? ticks[1] - ticks[0] : view.t1 - view.t0);
  ticks.forEach((t, i) => {
    const px = Math.round(x + xOf(t + originUs, view, width)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(px, bottom - 4);
    ctx.lineTo(px, bottom);
    ctx.stroke();
    ctx.fillText(labels[i], px, bottom - 5);
  });
  return labels;
}

/** Outline `rect` (the hovered span), offset by the plot's origin. */
export function drawOutline(ctx: CanvasRenderingContext2D, rect: SpanRect, x: number, y: number, palette: ProfilePalette): void {
  ctx.save();
  ctx.strokeStyle = palette.highlight;
  ctx.lineWidth = 1.5;
  ctx.strokeRect(x + rect.x + 0.5, y + rect.y + 0.5, Math.max(1, rect.width - 1), rect.height - 1);
  ctx.restore();
}
