/**
 * @jest-environment jsdom
 */
import { listenForNavigation } from '../../extension/src/timeline/navigation';
import type { TimeRange } from '../../extension/src/timeline/viewport';

/** A pointer event at offsetX (jsdom does not compute offsets from layout). */
function at<T extends MouseEvent>(event: T, offsetX: number, offsetY = 50): T {
  Object.defineProperty(event, 'offsetX', { value: offsetX });
  Object.defineProperty(event, 'offsetY', { value: offsetY });
  return event;
}

function timeline() {
  const canvas = document.createElement('canvas');
  document.body.appendChild(canvas);
  const bounds = { t0: 0, t1: 1000 };
  let view: TimeRange = { ...bounds };
  const seen = { hovers: 0, clicks: 0, leaves: 0, drags: 0 };
  const dragging = listenForNavigation(canvas, {
    plot: () => ({ x: 100, width: 400 }),
    view: () => view,
    bounds: () => bounds,
    setView: v => (view = v),
    reset: () => (view = { ...bounds }),
    hover: () => seen.hovers++,
    leave: () => seen.leaves++,
    dragStarted: () => seen.drags++,
    click: () => seen.clicks++
  });
  return { canvas, view: () => view, seen, dragging };
}

describe('pointer navigation of a windowed timeline', () => {
  it('zooms about the pointer with the wheel over the plot, and lets the page scroll over the labels', () => {
    const t = timeline();
    const over = at(new WheelEvent('wheel', { deltaY: -100, cancelable: true }), 300);
    t.canvas.dispatchEvent(over);
    expect(over.defaultPrevented).toBe(true);
    const zoomed = t.view();
    expect(zoomed.t1 - zoomed.t0).toBeLessThan(1000);
    expect(zoomed.t0).toBeLessThan(500);
    expect(zoomed.t1).toBeGreaterThan(500);
    const labels = at(new WheelEvent('wheel', { deltaY: -100, cancelable: true }), 50);
    t.canvas.dispatchEvent(labels);
    expect(labels.defaultPrevented).toBe(false);
    expect(t.view()).toEqual(zoomed);
    // A sideways (or shift-) wheel pans.
    t.canvas.dispatchEvent(at(new WheelEvent('wheel', { deltaY: 100, shiftKey: true, cancelable: true }), 300));
    expect(t.view().t0).toBeGreaterThan(zoomed.t0);
    expect(t.view().t1 - t.view().t0).toBeCloseTo(zoomed.t1 - zoomed.t0);
  });

  it('pans by drag, counts a still press as a click, and shows everything on a double-click', () => {
    const t = timeline();
    t.canvas.dispatchEvent(at(new WheelEvent('wheel', { deltaY: -300, cancelable: true }), 300));
    const zoomed = t.view();
    t.canvas.dispatchEvent(at(new MouseEvent('mousedown', { button: 0, clientX: 300 }), 300));
    expect(t.dragging()).toBe(true);
    document.dispatchEvent(new MouseEvent('mousemove', { clientX: 260 }));
    document.dispatchEvent(new MouseEvent('mouseup', { clientX: 260 }));
    expect(t.dragging()).toBe(false);
    expect(t.seen.drags).toBe(1);
    expect(t.seen.clicks).toBe(0);
    expect(t.view().t0).toBeGreaterThan(zoomed.t0);

    t.canvas.dispatchEvent(at(new MouseEvent('mousedown', { button: 0, clientX: 300 }), 300));
    document.dispatchEvent(new MouseEvent('mousemove', { clientX: 301 }));
    document.dispatchEvent(new MouseEvent('mouseup', { clientX: 301 }));
    expect(t.seen.clicks).toBe(1);

    t.canvas.dispatchEvent(at(new MouseEvent('mousemove'), 300));
    t.canvas.dispatchEvent(new MouseEvent('mouseleave'));
    expect([t.seen.hovers, t.seen.leaves]).toEqual([1, 1]);

    t.canvas.dispatchEvent(new MouseEvent('dblclick'));
    expect(t.view()).toEqual({ t0: 0, t1: 1000 });
  });
});
