/**
 * Drawing the stacked timeline on a 2D canvas. The stack is filled with one
 * Path2D per colour (so a frame costs one fill per colour, however many
 * columns × bands there are); adjacent bands of one category alternate in
 * opacity so they can be told apart.
 */

import type { MemoryAxis, MemoryWindow } from '../api/types';
import { byteTicks, formatAxisTime, formatBytes, niceTicks } from './format';
import { MemoryPalette, categoryColor } from './palette';
import { OTHER, StackLayout, categoryOfKey } from './stackLayout';
import { TimeRange, xOf } from '../timeline/viewport';

/** Room for the axes' labels (CSS px). */
export const PLOT_MARGIN = { left: 64, right: 12, top: 10, bottom: 24 };

export interface PlotBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The colour of segment `key`: 2 entries per category (full, lighter), then the remainder. */
function styleIndex(window: MemoryWindow, key: number, categories: number): number {
  if (key === OTHER) {
    return categories * 2;
  }
  const c = categoryOfKey(key);
  if (c !== null) {
    return c * 2;
  }
  const band = window.bands[key];
  return band.category < 0 ? categories * 2 : band.category * 2 + (key % 2);
}

/**
 * Fill the stack of `layout` into `ctx` over `box`, bytes 0..yMax bottom-up,
 * one column per layout column spread over the box's width.
 */
export function drawStack(
  ctx: CanvasRenderingContext2D,
  layout: StackLayout,
  window: MemoryWindow,
  box: PlotBox,
  yMax: number,
  palette: MemoryPalette
): void {
  const categories = Math.max(1, window.by_category.length);
  const paths = Array.from({ length: categories * 2 + 1 }, () => new Path2D());
  const colWidth = box.width / Math.max(1, layout.columns);
  const scale = box.height / Math.max(1, yMax);
  const bottom = box.y + box.height;
  for (let i = 0; i < layout.columns; i++) {
    const x = box.x + i * colWidth;
    let below = 0;
    for (let s = layout.offsets[i]; s < layout.offsets[i + 1]; s++) {
      const top = layout.tops[s];
      const y0 = bottom - below * scale;
      const y1 = bottom - top * scale;
      // Overlap by a hair so no background seams show between columns.
      paths[styleIndex(window, layout.keys[s], categories)].rect(x, y1, colWidth + 0.5, y0 - y1);
      below = top;
    }
  }
  paths.forEach((path, index) => {
    const isOther = index === categories * 2;
    ctx.globalAlpha = isOther ? 0.7 : index % 2 ? 0.6 : 0.9;
    ctx.fillStyle = isOther ? palette.other : categoryColor(palette, Math.floor(index / 2));
    ctx.fill(path);
  });
  ctx.globalAlpha = 1;
}

/** Outline segment `key` wherever it is in the stack (the hovered or pinned allocation). */
export function drawHighlight(
  ctx: CanvasRenderingContext2D,
  layout: StackLayout,
  key: number,
  box: PlotBox,
  yMax: number,
  palette: MemoryPalette
): void {
  const colWidth = box.width / Math.max(1, layout.columns);
  const scale = box.height / Math.max(1, yMax);
  const bottom = box.y + box.height;
  const path = new Path2D();
  for (let i = 0; i < layout.columns; i++) {
    for (let s = layout.offsets[i]; s < layout.offsets[i + 1]; s++) {
      if (layout.keys[s] === key) {
        const below = s === layout.offsets[i] ? 0 : layout.tops[s - 1];
        const y1 = bottom - layout.tops[s] * scale;
        path.rect(box.x + i * colWidth, y1, colWidth + 0.5, Math.max(1, (layout.tops[s] - below) * scale));
      }
    }
  }
  ctx.globalAlpha = 0.45;
  ctx.fillStyle = palette.highlight;
  ctx.fill(path);
  ctx.globalAlpha = 1;
}

export interface AxesSpec {
  view: TimeRange;
  axis: MemoryAxis;
  /** The capture's start: x labels count from it. */
  originUs: number;
  yMax: number;
}

/** Grid, y labels in bytes and x labels in ms/s (or events) from the capture's start. */
export function drawAxes(ctx: CanvasRenderingContext2D, box: PlotBox, spec: AxesSpec, palette: MemoryPalette): void {
  ctx.font = palette.font;
  ctx.strokeStyle = palette.grid;
  ctx.fillStyle = palette.axis;
  ctx.lineWidth = 1;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  const bottom = box.y + box.height;
  for (const v of byteTicks(spec.yMax, 4)) {
    const y = Math.round(bottom - (v / spec.yMax) * box.height) + 0.5;
    ctx.beginPath();
    ctx.moveTo(box.x, y);
    ctx.lineTo(box.x + box.width, y);
    ctx.stroke();
    ctx.fillText(formatBytes(v), box.x - 6, y);
  }
  ctx.textBaseline = 'top';
  ctx.textAlign = 'center';
  const { view } = spec;
  const count = Math.max(2, Math.floor(box.width / 110));
  for (const t of niceTicks(view.t0 - spec.originUs, view.t1 - spec.originUs, count)) {
    const x = Math.round(box.x + xOf(t + spec.originUs, view, box.width)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, bottom);
    ctx.lineTo(x, bottom + 4);
    ctx.stroke();
    ctx.fillText(formatAxisTime(t + spec.originUs, spec.axis, spec.originUs), x, bottom + 6);
  }
}

/** A dashed vertical line at time t (the peak, an OOM) with a short label, when t is in view. */
export function drawMarker(
  ctx: CanvasRenderingContext2D,
  box: PlotBox,
  view: TimeRange,
  t: number,
  color: string,
  label: string
): void {
  if (t < view.t0 || t > view.t1) {
    return;
  }
  const x = Math.round(box.x + xOf(t, view, box.width)) + 0.5;
  ctx.save();
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.setLineDash([4, 3]);
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.moveTo(x, box.y);
  ctx.lineTo(x, box.y + box.height);
  ctx.stroke();
  ctx.font = 'bold ' + ctx.font;
  ctx.textBaseline = 'top';
  ctx.textAlign = x > box.x + box.width - 60 ? 'right' : 'left';
  ctx.fillText(label, x + (ctx.textAlign === 'right' ? -4 : 4), box.y + 2);
  ctx.restore();
}
