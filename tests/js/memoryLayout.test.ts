import type { MemoryWindow } from '../../extension/src/api/types';
import {
  OTHER,
  categoryKey,
  columnAt,
  columnTotal,
  hitTest,
  layoutWindow,
  segmentBottom
} from '../../extension/src/memory/stackLayout';

/**
 * Three samples at t = 10, 20, 30 µs; two categories. Band 0 (cat 0, 100 B) lives
 * [5, 25); band 1 (cat 1, 50 B) lives [15, 40). The server's remainder keeps
 * other + listed bands == sum of categories at every sample.
 */
function window3(): MemoryWindow {
  return {
    t0_us: 0,
    t1_us: 40,
    times_us: [10, 20, 30],
    by_category: [
      [110, 120, 5],
      [0, 50, 60]
    ],
    other_bytes: [10, 20, 15],
    bands: [
      { id: 7, start_us: 5, end_us: 25, size_bytes: 100, category: 0, frame: 0, addr: 4096 },
      { id: 9, start_us: 15, end_us: 40, size_bytes: 50, category: 1, frame: -1, addr: 8192 }
    ],
    frames: { '0': { filename: '/home/me/train.py', line: 42, name: 'forward' } }
  };
}

function sumCategories(w: MemoryWindow, i: number): number {
  return w.by_category.reduce((total, row) => total + row[i], 0);
}

describe('layoutWindow by band', () => {
  it('stacks the remainder, then each live band in start order, and each column totals the categories (the invariant)', () => {
    const w = window3();
    const layout = layoutWindow(w, 'bands');
    for (let i = 0; i < 3; i++) {
      expect(columnTotal(layout, i)).toBe(sumCategories(w, i));
    }
    // t=20: other 20 at the bottom, band 0 on it, band 1 on top.
    const seg = (i: number) => Array.from(layout.keys.slice(layout.offsets[i], layout.offsets[i + 1]));
    expect(seg(0)).toEqual([OTHER, 0]);
    expect(seg(1)).toEqual([OTHER, 0, 1]);
    expect(seg(2)).toEqual([OTHER, 1]);
    expect(Array.from(layout.tops.slice(layout.offsets[1], layout.offsets[2]))).toEqual([20, 120, 170]);
    expect(layout.maxBytes).toBe(170);
  });

  it('leaves hidden categories out, remainder included, computed from the categories less their bands', () => {
    const w = window3();
    const layout = layoutWindow(w, 'bands', [true, false]);
    // Category 0 only: by_category[0] less band 0 where live.
    expect(columnTotal(layout, 0)).toBe(110);
    expect(columnTotal(layout, 1)).toBe(120);
    expect(columnTotal(layout, 2)).toBe(5);
    expect(segmentBottom(layout, 1, 0)).toBe(20);
    expect(segmentBottom(layout, 1, 1)).toBeNull();
  });
});

describe('layoutWindow by category', () => {
  it('stacks one area per category with bytes, skipping empty ones', () => {
    const layout = layoutWindow(window3(), 'categories');
    expect(Array.from(layout.keys.slice(layout.offsets[0], layout.offsets[1]))).toEqual([categoryKey(0)]);
    expect(Array.from(layout.tops.slice(layout.offsets[1], layout.offsets[2]))).toEqual([120, 170]);
  });
});

describe('hitTest', () => {
  const layout = layoutWindow(window3(), 'bands');
  it('finds the segment holding a height, bottom inclusive, top exclusive', () => {
    expect(hitTest(layout, 1, 0)).toBe(OTHER);
    expect(hitTest(layout, 1, 19.9)).toBe(OTHER);
    expect(hitTest(layout, 1, 20)).toBe(0);
    expect(hitTest(layout, 1, 150)).toBe(1);
  });
  it('finds nothing above the stack or outside the columns', () => {
    expect(hitTest(layout, 1, 170)).toBeNull();
    expect(hitTest(layout, 3, 10)).toBeNull();
    expect(hitTest(layout, -1, 10)).toBeNull();
  });
  it('maps pixels to columns, clamped', () => {
    expect(columnAt(0, 300, 3)).toBe(0);
    expect(columnAt(150, 300, 3)).toBe(1);
    expect(columnAt(299.9, 300, 3)).toBe(2);
    expect(columnAt(400, 300, 3)).toBe(2);
  });
});

describe('a 1M-entry capture window', () => {
  it('lays out 1600 columns × 500 bands in well under a frame budget', () => {
    const px = 1600;
    const bands = Array.from({ length: 500 }, (_, b) => ({
      id: b,
      start_us: b * 1000,
      end_us: b * 1000 + 200_000,
      size_bytes: 1 << 20,
      category: b % 3,
      frame: -1,
      addr: b
    }));
    const times = Array.from({ length: px }, (_, i) => (i / px) * 1_000_000);
    const live = times.map(t => bands.filter(b => b.start_us <= t && t < b.end_us).length * (1 << 20));
    const w: MemoryWindow = {
      t0_us: 0,
      t1_us: 1_000_000,
      times_us: times,
      by_category: [live.map(v => v + 100), live.map(() => 0), live.map(() => 0)],
      other_bytes: live.map(() => 100),
      bands,
      frames: {}
    };
    const started = Date.now();
    const layout = layoutWindow(w, 'bands');
    expect(Date.now() - started).toBeLessThan(200);
    expect(columnTotal(layout, 800)).toBe(sumCategories(w, 800));
  });
});
