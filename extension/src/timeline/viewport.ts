/**
 * Zoom and pan of the timeline's time range, in µs on the capture's axis.
 * The view stays inside the capture and never narrower than MIN_SPAN_US, so a
 * learner cannot zoom into an empty or inverted range.
 */

export interface TimeRange {
  t0: number;
  t1: number;
}

/** Narrowest view (µs, or events on the event-index axis). */
export const MIN_SPAN_US = 2;

/** Zoom factor of one button press or one wheel notch. */
export const ZOOM_STEP = 1.6;

/** `view` moved and shrunk to fit inside `bounds`, at least MIN_SPAN_US wide (or the whole capture). */
export function clampRange(view: TimeRange, bounds: TimeRange): TimeRange {
  const full = bounds.t1 - bounds.t0;
  let span = Math.min(full, Math.max(MIN_SPAN_US, view.t1 - view.t0));
  if (!(span > 0)) {
    span = full;
  }
  let t0 = Math.max(bounds.t0, Math.min(view.t0, bounds.t1 - span));
  if (!Number.isFinite(t0)) {
    t0 = bounds.t0;
  }
  return { t0, t1: t0 + span };
}

/**
 * Zoom by `factor` (> 1: in) keeping the time under `anchor` (0..1 across the
 * plot) where it is, as maps do under the cursor.
 */
export function zoomAt(view: TimeRange, bounds: TimeRange, anchor: number, factor: number): TimeRange {
  const a = Math.min(1, Math.max(0, anchor));
  const span = view.t1 - view.t0;
  const pivot = view.t0 + a * span;
  const next = span / factor;
  return clampRange({ t0: pivot - a * next, t1: pivot - a * next + next }, bounds);
}

/** Pan by `dx` of the plot's width (0.5: half a view to the right, the content moving left). */
export function panBy(view: TimeRange, bounds: TimeRange, dx: number): TimeRange {
  const shift = dx * (view.t1 - view.t0);
  return clampRange({ t0: view.t0 + shift, t1: view.t1 + shift }, bounds);
}

/** Zoom factor of a wheel event's deltaY (pixels; negative: away from the user, zoom in). */
export function wheelFactor(deltaY: number): number {
  return Math.pow(ZOOM_STEP, -Math.max(-3, Math.min(3, deltaY / 100)));
}

/** x (px in a plot `width` wide) of time t in `view`. */
export function xOf(t: number, view: TimeRange, width: number): number {
  return ((t - view.t0) / (view.t1 - view.t0)) * width;
}

/** Time (µs) at x px in a plot `width` wide. */
export function timeAt(x: number, view: TimeRange, width: number): number {
  return view.t0 + (x / width) * (view.t1 - view.t0);
}

/**
 * Where the image drawn for `drawn` goes while the window for `view` is loading:
 * its left edge and width in px, so the old picture stretches and slides with
 * the zoom instead of the plot going blank.
 */
export function stretchImage(drawn: TimeRange, view: TimeRange, width: number): { x: number; width: number } {
  const x0 = xOf(drawn.t0, view, width);
  const x1 = xOf(drawn.t1, view, width);
  return { x: x0, width: x1 - x0 };
}

export function sameRange(a: TimeRange, b: TimeRange): boolean {
  return a.t0 === b.t0 && a.t1 === b.t1;
}
