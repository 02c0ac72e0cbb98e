/**
 * What the memory and profile timelines share around their pictures: the
 * toolbar (zoom in, zoom out, the whole range, the range shown, a hint), the
 * canvas sized to the device's pixels, the offscreen picture copied stretched
 * while a newer window loads, and the tooltip kept inside the plot.
 */

import { h } from '../dom';
import { TimeRange, ZOOM_STEP, stretchImage } from './viewport';

export interface TimelineToolsOptions {
  /** The feature's class prefix: 'memory' names gpudojo-memory-zoom-in, gpudojo-memory-range, … */
  feature: string;
  /** Where the wheel zooms, e.g. 'the chart'. */
  wheelOver: string;
  /** The whole-range button's label and title, e.g. 'Whole capture'. */
  wholeLabel: string;
  wholeTitle: string;
  /** How to navigate, in one line. */
  hint: string;
  zoom: (factor: number) => void;
  reset: () => void;
}

/** The toolbar, and its element that says the range shown (the timeline writes it on every frame). */
export function timelineTools(options: TimelineToolsOptions): { node: HTMLElement; range: HTMLElement } {
  const prefix = `gpudojo-${options.feature}`;
  const button = (name: string, text: string, title: string, act: () => void) => {
    const b = h('button', { className: `jp-Button jp-mod-styled jp-mod-minimal ${prefix}-${name}`, text, title });
    b.type = 'button';
    b.addEventListener('click', act);
    return b;
  };
  const range = h('span', { className: `${prefix}-range` });
  const node = h(
    'div',
    { className: `${prefix}-tools` },
    button('zoom-in', '+', `Zoom in (or the mouse wheel over ${options.wheelOver})`, () => options.zoom(ZOOM_STEP)),
    button('zoom-out', '−', 'Zoom out', () => options.zoom(1 / ZOOM_STEP)),
    button('zoom-reset', options.wholeLabel, options.wholeTitle, () => options.reset()),
    range,
    h('span', { className: `${prefix}-hint`, text: options.hint })
  );
  return { node, range };
}

/** Size `canvas` to `width` × `height` CSS px, backed at the device's pixel ratio; returns that ratio. */
export function sizeCanvas(canvas: HTMLCanvasElement, width: number, height: number): number {
  const dpr = window.devicePixelRatio || 1;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  return dpr;
}

/** The offscreen canvas cleared at `width` × `height` CSS px (scaled by `dpr`), ready to paint; null without a 2D context. */
export function clearedBase(
  base: HTMLCanvasElement,
  width: number,
  height: number,
  dpr: number
): CanvasRenderingContext2D | null {
  base.width = Math.round(width * dpr);
  base.height = Math.round(height * dpr);
  const ctx = base.getContext('2d');
  if (!ctx) {
    return null;
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  return ctx;
}

/** A rectangle of the canvas, CSS px. */
export interface PlotRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Copy `base` (the picture of `drawn`) into `box`, stretched to where `drawn` falls in `view`, clipped to the box. */
export function drawStretched(
  ctx: CanvasRenderingContext2D,
  base: HTMLCanvasElement,
  drawn: TimeRange,
  view: TimeRange,
  box: PlotRect
): void {
  const place = stretchImage(drawn, view, box.width);
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y, box.width, box.height);
  ctx.clip();
  ctx.drawImage(base, box.x + place.x, box.y, place.width, box.height);
  ctx.restore();
}

/**
 * Put `tip` beside the cursor at (x, top) in a plot `plotWidth` px wide: right
 * of it, or left of it within `flipWithin` px of the right edge, so it stays inside.
 */
export function placeTooltip(tip: HTMLElement, x: number, top: number, plotWidth: number, flipWithin: number): void {
  const flip = x > plotWidth - flipWithin;
  tip.style.left = flip ? '' : `${x + 14}px`;
  tip.style.right = flip ? `${plotWidth - x + 14}px` : '';
  tip.style.top = `${Math.max(0, top)}px`;
}
