import { MAX_SCROLL_PX, isAtTail, logWindow, scrollHeight, tailScrollTop } from '../../extension/src/runs/logWindow';

describe('log window maths', () => {
  const rowPx = 18;

  it('draws only the rows in sight plus the overscan', () => {
    const w = logWindow({ scrollTop: 1800, viewportPx: 360, rowPx, total: 100_000, overscan: 10 });
    // Row 100 is at the top; 20 rows fit, one more for a partial row.
    expect(w.start).toBe(90);
    expect(w.end).toBe(100 + 21 + 10);
    expect(w.offsetPx).toBe(90 * rowPx);
    expect(w.scrollPx).toBe(100_000 * rowPx);
  });

  it('clamps at both ends of the log', () => {
    const top = logWindow({ scrollTop: 0, viewportPx: 360, rowPx, total: 5, overscan: 10 });
    expect(top).toEqual({ start: 0, end: 5, offsetPx: 0, scrollPx: 90 });
    const empty = logWindow({ scrollTop: 50, viewportPx: 360, rowPx, total: 0 });
    expect(empty.end - empty.start).toBe(0);
    const past = logWindow({ scrollTop: 1e9, viewportPx: 360, rowPx, total: 1000, overscan: 0 });
    expect(past.end).toBe(1000);
    expect(past.start).toBe(1000 - 20);
  });

  it('scales the scrollbar past the tallest element a browser allows, still reaching the last row', () => {
    const total = 2_000_000;
    expect(scrollHeight(total, rowPx)).toBe(MAX_SCROLL_PX);
    const viewportPx = 360;
    const bottom = tailScrollTop(total, rowPx, viewportPx);
    const w = logWindow({ scrollTop: bottom, viewportPx, rowPx, total, overscan: 0 });
    expect(w.end).toBe(total);
    // The last row's bottom lands on the viewport's bottom.
    const lastRowBottom = w.offsetPx + (total - w.start) * rowPx;
    expect(lastRowBottom).toBeCloseTo(bottom + viewportPx, 6);
    const middle = logWindow({ scrollTop: bottom / 2, viewportPx, rowPx, total, overscan: 0 });
    expect(middle.start).toBeGreaterThan(total / 2 - 20);
    expect(middle.start).toBeLessThan(total / 2 + 20);
  });

  it('is at the tail within one row, not when scrolled up', () => {
    expect(isAtTail(1000, 400, 1410, rowPx)).toBe(true);
    expect(isAtTail(900, 400, 1410, rowPx)).toBe(false);
    expect(tailScrollTop(10, rowPx, 400)).toBe(0);
  });
});
