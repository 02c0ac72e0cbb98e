/**
 * Window maths of the virtualised log view: which rows are in the DOM for a
 * scroll position, where they sit, and whether the view is at the tail.
 *
 * Rows have one fixed height. Browsers cap how tall an element may be (about
 * 16 million px in Firefox), so past MAX_SCROLL_PX the scrollbar is scaled:
 * its position maps proportionally onto the rows.
 */

/** Tallest scroll area the view makes (px); longer logs scale the scrollbar. */
export const MAX_SCROLL_PX = 8_000_000;

export interface WindowInput {
  /** The viewport's scrollTop (px). */
  scrollTop: number;
  /** The viewport's height (px). */
  viewportPx: number;
  /** Height of one row (px). */
  rowPx: number;
  /** Rows in the log. */
  total: number;
  /** Rows drawn beyond each edge, so a small scroll shows no gap (rows). */
  overscan?: number;
}

export interface LogWindow {
  /** First row in the DOM (inclusive). */
  start: number;
  /** Row after the last one in the DOM (exclusive). */
  end: number;
  /** Top of row `start` inside the scroll area (px). */
  offsetPx: number;
  /** Height of the scroll area (px). */
  scrollPx: number;
}

/** Height of the scroll area for `total` rows (px). */
export function scrollHeight(total: number, rowPx: number): number {
  return Math.min(Math.max(0, total) * rowPx, MAX_SCROLL_PX);
}

/** The rows to draw at a scroll position, and where the first one goes. */
export function logWindow(input: WindowInput): LogWindow {
  const { viewportPx, rowPx } = input;
  const total = Math.max(0, Math.floor(input.total));
  const overscan = input.overscan ?? 10;
  const scrollPx = scrollHeight(total, rowPx);
  const contentPx = total * rowPx;
  const scrollRange = Math.max(0, scrollPx - viewportPx);
  const contentRange = Math.max(0, contentPx - viewportPx);
  const scrollTop = Math.min(Math.max(0, input.scrollTop), scrollRange);
  // Where the viewport's top is in the whole log (px): the same as scrollTop unless scaled.
  const realTop = scrollRange > 0 ? (scrollTop / scrollRange) * contentRange : 0;
  const first = Math.floor(realTop / rowPx);
  const visible = Math.ceil(viewportPx / rowPx) + 1;
  const start = Math.max(0, Math.min(first - overscan, total));
  const end = Math.min(total, first + visible + overscan);
  return { start, end, offsetPx: scrollTop + start * rowPx - realTop, scrollPx };
}

/** Whether a viewport scrolled to `scrollTop` shows the last row, within `slackPx`. */
export function isAtTail(scrollTop: number, viewportPx: number, scrollPx: number, slackPx: number): boolean {
  return scrollTop + viewportPx >= scrollPx - slackPx;
}

/** The scrollTop that shows the last row at the bottom (px). */
export function tailScrollTop(total: number, rowPx: number, viewportPx: number): number {
  return Math.max(0, scrollHeight(total, rowPx) - viewportPx);
}
