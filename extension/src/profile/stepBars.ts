/**
 * Geometry of the step-time chart: one stacked bar per step, its categories
 * bottom-up in chart order, heights as fractions of a rounded top so the
 * gridlines fall on readable times; and the time range a clicked step zooms to.
 */

import type { ProfileCategory, ProfileStep } from '../api/types';
import type { TimeRange } from '../timeline/viewport';
import { PROFILE_CATEGORIES } from './format';

export interface BarSegment {
  category: ProfileCategory;
  us: number;
  /** Bottom edge and height, as fractions (0-1) of the chart's top. */
  bottom: number;
  height: number;
}

export interface StepBar {
  step: number;
  /** The bar's index among the steps (left to right). */
  index: number;
  startUs: number;
  durUs: number;
  segments: BarSegment[];
}

export interface StepBarsLayout {
  bars: StepBar[];
  /** The time at the chart's top (µs), a round figure at or above the longest step. */
  topUs: number;
  /** Gridline times (µs), 0 to topUs. */
  ticks: number[];
}

/**
 * A round top at or above `maxUs` and its gridlines: the smallest step of 1, 2,
 * 2.5 or 5 × 10^k that reaches the top in at most `count` gridlines, so the
 * longest bar fills most of the chart.
 */
export function roundTop(maxUs: number, count = 5): { topUs: number; ticks: number[] } {
  if (!(maxUs > 0)) {
    return { topUs: 1, ticks: [0, 1] };
  }
  const power = Math.pow(10, Math.floor(Math.log10(maxUs / count)));
  const step =
    [1, 2, 2.5, 5, 10].map(m => m * power).find(s => Math.ceil(maxUs / s - 1e-9) <= count) ?? 10 * power;
  const n = Math.max(1, Math.ceil(maxUs / step - 1e-9));
  return { topUs: n * step, ticks: Array.from({ length: n + 1 }, (_, i) => i * step) };
}

/**
 * Bars of `steps`: each category's time stacked in chart order (empty ones left
 * out), scaled to a shared round top so bars compare by height.
 */
export function stepBars(steps: readonly ProfileStep[]): StepBarsLayout {
  const longest = Math.max(0, ...steps.map(s => stepTotal(s)));
  const { topUs, ticks } = roundTop(longest);
  const bars = steps.map((step, index) => {
    const byCategory = new Map(step.breakdown.map(c => [c.category, c.us]));
    let below = 0;
    const segments: BarSegment[] = [];
    for (const category of PROFILE_CATEGORIES) {
      const us = Math.max(0, byCategory.get(category) ?? 0);
      if (us <= 0) {
        continue;
      }
      segments.push({ category, us, bottom: below / topUs, height: us / topUs });
      below += us;
    }
    return { step: step.step, index, startUs: step.start_us, durUs: step.dur_us, segments };
  });
  return { bars, topUs, ticks };
}

/** A step's height: its duration, or its breakdown's sum when that is larger (rounding). */
function stepTotal(step: ProfileStep): number {
  const sum = step.breakdown.reduce((total, c) => total + Math.max(0, c.us), 0);
  return Math.max(step.dur_us, sum);
}

/** Margin around a step the timeline zooms to, as a share of the step's duration on each side. */
export const STEP_MARGIN = 0.03;

/** The time range that shows step `step` whole, with a small margin, inside `bounds`. */
export function stepRange(step: Pick<ProfileStep, 'start_us' | 'dur_us'>, bounds: TimeRange): TimeRange {
  const margin = Math.max(1, step.dur_us * STEP_MARGIN);
  const t0 = Math.max(bounds.t0, step.start_us - margin);
  const t1 = Math.min(bounds.t1, step.start_us + step.dur_us + margin);
  return t1 > t0 ? { t0, t1 } : { ...bounds };
}
