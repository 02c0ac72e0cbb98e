/**
 * Geometry of the timeline: where each lane sits (tall enough for its nesting,
 * capped so a deep Python stack does not push the other lanes off screen), the
 * rectangle of each span, and which span is under the cursor. A window's spans
 * are indexed per lane and depth, sorted by start, so a hover is a binary search.
 */

import type { Lane, ProfileWindow, Span } from '../api/types';
import type { TimeRange } from '../timeline/viewport';

/** Height of one nesting level (CSS px). */
export const LEVEL_PX = 16;
/**
 * Levels drawn per lane at most (20 × 16 px); deeper spans are drawn on the last level.
 * A CPU trace recorded with with_stack nests aten ops under a dozen Python frames, so
 * the cap leaves room for those and only cuts unusually deep stacks.
 */
export const MAX_LEVELS = 20;
/** Space between two lanes (CSS px). */
export const LANE_GAP = 6;

export interface LaneBox {
  lane: number;
  label: string;
  /** Top edge (CSS px, from the top of the lanes area) and height. */
  y: number;
  height: number;
  levels: number;
  /** Nesting levels deeper than the cap (their spans share the last level). */
  hiddenLevels: number;
}

export interface LanesLayout {
  boxes: LaneBox[];
  /** Total height of the lanes area (CSS px). */
  height: number;
}

/** Lanes stacked top-down in the summary's order, each max_depth + 1 levels tall (capped). */
export function layoutLanes(lanes: readonly Lane[], levelPx = LEVEL_PX, maxLevels = MAX_LEVELS): LanesLayout {
  const boxes: LaneBox[] = [];
  let y = 0;
  for (const lane of lanes) {
    const wanted = Math.max(1, Math.floor(lane.max_depth) + 1);
    const levels = Math.min(maxLevels, wanted);
    const height = levels * levelPx;
    boxes.push({ lane: lane.id, label: lane.label, y, height, levels, hiddenLevels: wanted - levels });
    y += height + LANE_GAP;
  }
  return { boxes, height: Math.max(levelPx, y - (boxes.length ? LANE_GAP : 0)) };
}

/** The lane whose box holds y (CSS px in the lanes area), or null in a gap or outside. */
export function laneAt(layout: LanesLayout, y: number): LaneBox | null {
  return layout.boxes.find(b => y >= b.y && y < b.y + b.height) ?? null;
}

/** The level a span is drawn on in its lane (depth, capped to the lane's last level). */
export function levelOf(depth: number, box: Pick<LaneBox, 'levels'>): number {
  return Math.max(0, Math.min(box.levels - 1, Math.floor(depth)));
}

export interface SpanRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * Where `span` is drawn: x from its time in `view` over a plot `width` px wide
 * (at least 1 px wide so that nothing visible vanishes), y from its level.
 */
export function spanRect(span: Span, view: TimeRange, width: number, box: LaneBox, levelPx = LEVEL_PX): SpanRect {
  const scale = width / (view.t1 - view.t0);
  const x0 = (span.t_us - view.t0) * scale;
  const x1 = (span.t_us + span.dur_us - view.t0) * scale;
  return {
    x: x0,
    y: box.y + levelOf(span.depth, box) * levelPx,
    width: Math.max(1, x1 - x0),
    height: levelPx - 1
  };
}

/** A window's spans per lane and drawn level, each list sorted by start. */
export type SpanIndex = Map<number, Span[][]>;

/** Index `window` for hovering with `layout`'s levels. */
export function indexWindow(window: ProfileWindow, layout: LanesLayout): SpanIndex {
  const levelsOf = new Map(layout.boxes.map(b => [b.lane, b]));
  const index: SpanIndex = new Map();
  for (const laneWindow of window.lanes) {
    const box = levelsOf.get(laneWindow.lane);
    if (!box) {
      continue;
    }
    const levels: Span[][] = Array.from({ length: box.levels }, () => []);
    for (const span of laneWindow.spans) {
      levels[levelOf(span.depth, box)].push(span);
    }
    levels.forEach(list => list.sort((a, b) => a.t_us - b.t_us));
    index.set(laneWindow.lane, levels);
  }
  return index;
}

/**
 * The span of `spans` (sorted by start) that covers time t, or whose edge is
 * within `slackUs` of it (a one-pixel span is hard to hit exactly); the
 * innermost, latest-starting one when several do.
 */
export function spanAt(spans: readonly Span[], t: number, slackUs: number): Span | null {
  // Last span starting at or before t + slack.
  let lo = 0;
  let hi = spans.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (spans[mid].t_us <= t + slackUs) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  // Spans of one level rarely overlap; look back a few in case a long one started earlier.
  for (let i = found; i >= 0 && i > found - 8; i--) {
    const span = spans[i];
    if (span.t_us + span.dur_us >= t - slackUs) {
      return span;
    }
  }
  return null;
}

/** The span under (x, y) CSS px of the plot (x from the plot's left, y from the lanes' top), or null. */
export function hitSpan(
  index: SpanIndex,
  layout: LanesLayout,
  view: TimeRange,
  width: number,
  x: number,
  y: number,
  levelPx = LEVEL_PX
): { lane: number; span: Span } | null {
  const box = laneAt(layout, y);
  if (!box || x < 0 || x > width) {
    return null;
  }
  const level = Math.floor((y - box.y) / levelPx);
  const spans = index.get(box.lane)?.[level];
  if (!spans?.length) {
    return null;
  }
  const usPerPx = (view.t1 - view.t0) / width;
  const span = spanAt(spans, view.t0 + x * usPerPx, usPerPx);
  return span ? { lane: box.lane, span } : null;
}
