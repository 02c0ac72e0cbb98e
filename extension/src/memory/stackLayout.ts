/**
 * The stacked timeline's geometry, computed once per window response (not per
 * frame): for each pixel column, the segments bottom-up with their cumulative
 * tops in bytes. Drawing and hit testing then only read these arrays.
 *
 * By category: one segment per visible category. By band: first what the listed
 * bands leave out of the visible categories ("other"), then each visible band
 * live at that column's sample time, in start order, so an allocation keeps its
 * place in the stack while it lives. Work: px × bands.
 */

import type { MemoryWindow } from '../api/types';

/** Key of the remainder segment ("other" allocations, too small to be listed). */
export const OTHER = -1;

/** Key of category c's segment: negative, below OTHER, so band indexes keep >= 0. */
export function categoryKey(c: number): number {
  return -2 - c;
}

/** The category of a category key, or null for a band or OTHER. */
export function categoryOfKey(key: number): number | null {
  return key <= -2 ? -2 - key : null;
}

export type LayoutMode = 'categories' | 'bands';

export interface StackLayout {
  mode: LayoutMode;
  columns: number;
  /** Column i's segments are [offsets[i], offsets[i + 1]) of keys and tops. */
  offsets: Int32Array;
  /** A band index into window.bands (>= 0), OTHER, or categoryKey(c). */
  keys: Int32Array;
  /** Top of each segment (bytes, cumulative from 0); its bottom is the previous top in the column, or 0. */
  tops: Float64Array;
  /** The highest column total (bytes), for the y scale. */
  maxBytes: number;
}

/** Whether band b is live at time t (µs): allocated at or before t, freed after. */
export function liveAt(start: number, end: number, t: number): boolean {
  return start <= t && t < end;
}

/**
 * The layout of `window` with `visible[c]` saying which categories to draw
 * (missing: drawn). In 'bands' mode with every category visible, the remainder
 * is the server's other_bytes; otherwise it is the visible categories' bytes
 * less their listed bands, clamped at 0.
 */
export function layoutWindow(window: MemoryWindow, mode: LayoutMode, visible: boolean[] = []): StackLayout {
  const columns = window.times_us.length;
  const categories = window.by_category.length;
  const shown = (c: number) => c < 0 || visible[c] !== false;
  const allShown = Array.from({ length: categories }, (_, c) => shown(c)).every(Boolean);
  const bands = mode === 'bands' ? window.bands : [];
  const perColumn = mode === 'bands' ? bands.length + 1 : categories;
  // Upper bound; the typed arrays are cut to size at the end.
  let keys = new Int32Array(Math.max(1, columns * perColumn));
  let tops = new Float64Array(keys.length);
  const offsets = new Int32Array(columns + 1);
  let n = 0;
  let maxBytes = 0;
  // Bands sorted by start: the ones starting after t end the scan for that column.
  for (let i = 0; i < columns; i++) {
    offsets[i] = n;
    const t = window.times_us[i];
    let top = 0;
    if (mode === 'categories') {
      for (let c = 0; c < categories; c++) {
        const bytes = window.by_category[c][i] ?? 0;
        if (shown(c) && bytes > 0) {
          top += bytes;
          keys[n] = categoryKey(c);
          tops[n++] = top;
        }
      }
    } else {
      let other: number;
      if (allShown) {
        other = window.other_bytes[i] ?? 0;
      } else {
        other = 0;
        for (let c = 0; c < categories; c++) {
          if (shown(c)) {
            other += window.by_category[c][i] ?? 0;
          }
        }
        for (const band of bands) {
          if (band.start_us > t) {
            break;
          }
          if (shown(band.category) && band.category >= 0 && liveAt(band.start_us, band.end_us, t)) {
            other -= band.size_bytes;
          }
        }
        other = Math.max(0, other);
      }
      if (other > 0) {
        top += other;
        keys[n] = OTHER;
        tops[n++] = top;
      }
      for (let b = 0; b < bands.length; b++) {
        const band = bands[b];
        if (band.start_us > t) {
          break;
        }
        if (shown(band.category) && liveAt(band.start_us, band.end_us, t)) {
          top += band.size_bytes;
          keys[n] = b;
          tops[n++] = top;
        }
      }
    }
    maxBytes = Math.max(maxBytes, top);
  }
  offsets[columns] = n;
  keys = keys.slice(0, n);
  tops = tops.slice(0, n);
  return { mode, columns, offsets, keys, tops, maxBytes };
}

/** Total bytes stacked in column i. */
export function columnTotal(layout: StackLayout, i: number): number {
  const end = layout.offsets[i + 1];
  return end > layout.offsets[i] ? layout.tops[end - 1] : 0;
}

/**
 * The segment of column i that holds `bytes` (height from the bottom), or null
 * above the stack: a binary search over the column's tops, so a hover costs
 * log(segments), not a request.
 */
export function hitTest(layout: StackLayout, i: number, bytes: number): number | null {
  if (i < 0 || i >= layout.columns || bytes < 0) {
    return null;
  }
  let lo = layout.offsets[i];
  let hi = layout.offsets[i + 1];
  if (hi === lo || bytes >= layout.tops[hi - 1]) {
    return null;
  }
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (layout.tops[mid] <= bytes) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return layout.keys[lo];
}

/** The bottom (bytes) of segment `key` in column i, or null when it is not there. */
export function segmentBottom(layout: StackLayout, i: number, key: number): number | null {
  for (let s = layout.offsets[i]; s < layout.offsets[i + 1]; s++) {
    if (layout.keys[s] === key) {
      return s === layout.offsets[i] ? 0 : layout.tops[s - 1];
    }
  }
  return null;
}

/** The column a pixel x (CSS px in a plot `width` wide) falls in. */
export function columnAt(x: number, width: number, columns: number): number {
  if (width <= 0 || columns <= 0) {
    return -1;
  }
  return Math.min(columns - 1, Math.max(0, Math.floor((x / width) * columns)));
}
