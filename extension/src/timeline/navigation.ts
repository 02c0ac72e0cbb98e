/**
 * Zoom and pan by pointer for every windowed canvas timeline (memory captures,
 * profile traces): the wheel or a pinch over the plot zooms about the pointer, a
 * sideways (or shift-) wheel and a drag pan, a double-click shows the whole range.
 * A press that does not move is a click; hover is reported while no drag is on.
 * The timeline owns its view, drawing and tooltip; this only turns pointer events
 * into views.
 */

import { TimeRange, panBy, wheelFactor, zoomAt } from './viewport';

/** A press that moves less than this (px) is a click, not a drag. */
export const CLICK_SLOP = 3;

export interface NavigationHooks {
  /** The plot's left edge and width, in CSS px of the canvas. */
  plot(): { x: number; width: number };
  /** The view now and the range it may not leave (µs, or the timeline's own axis). */
  view(): TimeRange;
  bounds(): TimeRange;
  /** Show `view` (the user moved it). */
  setView(view: TimeRange): void;
  /** The whole range again (double-click). */
  reset(): void;
  /** The pointer is at (x, y) CSS px of the canvas, no drag on. */
  hover(x: number, y: number): void;
  /** The pointer left the canvas. */
  leave(): void;
  /** A drag began moving the view: hide what follows the pointer. */
  dragStarted?(): void;
  /** A press released without moving. */
  click?(event: MouseEvent): void;
}

/** Wire `canvas`'s pointer events to `hooks`; returns whether a drag is on now. */
export function listenForNavigation(canvas: HTMLCanvasElement, hooks: NavigationHooks): () => boolean {
  let drag: { x: number; view: TimeRange; moved: boolean; pans: boolean } | null = null;
  canvas.addEventListener(
    'wheel',
    event => {
      const { x: left, width } = hooks.plot();
      const x = event.offsetX - left;
      if (x < 0 || x > width) {
        return; // over the labels: let the page scroll
      }
      event.preventDefault();
      const view = hooks.view();
      if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
        const delta = Math.abs(event.deltaX) > Math.abs(event.deltaY) ? event.deltaX : event.deltaY;
        hooks.setView(panBy(view, hooks.bounds(), delta / width));
      } else {
        // Pinch on a touchpad arrives as a wheel with ctrlKey and small deltas: the same zoom, finer.
        hooks.setView(zoomAt(view, hooks.bounds(), x / width, wheelFactor(event.deltaY)));
      }
    },
    { passive: false }
  );
  canvas.addEventListener('mousedown', event => {
    if (event.button !== 0) {
      return;
    }
    // A press on the labels is a click at most: only the plot pans.
    drag = { x: event.clientX, view: hooks.view(), moved: false, pans: event.offsetX >= hooks.plot().x };
    const move = (e: MouseEvent) => {
      if (!drag) {
        return;
      }
      const dx = e.clientX - drag.x;
      if (!drag.moved && Math.abs(dx) >= CLICK_SLOP) {
        drag.moved = true;
        if (drag.pans) {
          hooks.dragStarted?.();
        }
      }
      if (drag.moved && drag.pans) {
        hooks.setView(panBy(drag.view, hooks.bounds(), -dx / hooks.plot().width));
      }
    };
    const up = (e: MouseEvent) => {
      document.removeEventListener('mousemove', move);
      document.removeEventListener('mouseup', up);
      const clicked = drag !== null && !drag.moved;
      drag = null;
      if (clicked) {
        hooks.click?.(e);
      }
    };
    document.addEventListener('mousemove', move);
    document.addEventListener('mouseup', up);
  });
  canvas.addEventListener('dblclick', () => hooks.reset());
  canvas.addEventListener('mousemove', event => {
    if (!drag) {
      hooks.hover(event.offsetX, event.offsetY);
    }
  });
  canvas.addEventListener('mouseleave', () => hooks.leave());
  return () => drag !== null;
}
