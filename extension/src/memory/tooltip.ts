/**
 * What the timeline's tooltip says about the segment under the cursor: for an
 * allocation its size, category, address, live interval and the user frame that
 * made it; for the remainder or a category area, the bytes at that moment.
 */

import type { Analysis, MemoryWindow } from '../api/types';
import { h } from '../dom';
import { formatAddress, formatAxisTime, formatBytes, formatFrame, formatInterval } from './format';
import { OTHER, StackLayout, categoryOfKey } from './stackLayout';

export interface TooltipContent {
  kind: 'band' | 'other' | 'category';
  lines: HTMLElement[];
}

/** Bytes of segment `key` in column i (its top less the one below). */
export function segmentBytes(layout: StackLayout, i: number, key: number): number {
  for (let s = layout.offsets[i]; s < layout.offsets[i + 1]; s++) {
    if (layout.keys[s] === key) {
      return layout.tops[s] - (s === layout.offsets[i] ? 0 : layout.tops[s - 1]);
    }
  }
  return 0;
}

export function tooltipContent(
  analysis: Analysis,
  window: MemoryWindow,
  layout: StackLayout,
  key: number,
  column: number
): TooltipContent {
  const category = (c: number) => (c >= 0 ? analysis.categories[c] ?? `category ${c}` : 'no category');
  if (key >= 0) {
    const band = window.bands[key];
    const frame = window.frames[String(band.frame)] ?? analysis.frames[band.frame] ?? null;
    const noFrame = analysis.capture.kind === 'cpu-profiler' ? 'no stack (CPU profiler)' : 'no user frame';
    return {
      kind: 'band',
      lines: [
        h('div', { className: 'gpudojo-memory-tooltip-size', text: `${formatBytes(band.size_bytes)} · ${category(band.category)}` }),
        h('div', { text: `address ${formatAddress(band.addr)}` }),
        h('div', { text: `live ${formatInterval(band.start_us, band.end_us, analysis.axis, analysis.t_start_us)}` }),
        h('div', {
          className: 'gpudojo-memory-tooltip-frame',
          text: formatFrame(frame, noFrame),
          title: frame ? `${frame.filename}:${frame.line} ${frame.name}` : ''
        })
      ]
    };
  }
  const c = categoryOfKey(key);
  const t = window.times_us[column] ?? window.t0_us;
  const what = key === OTHER ? 'smaller allocations (not listed one by one)' : category(c ?? -1);
  return {
    kind: key === OTHER ? 'other' : 'category',
    lines: [
      h('div', { className: 'gpudojo-memory-tooltip-size', text: `${formatBytes(segmentBytes(layout, column, key))} · ${what}` }),
      h('div', { text: `at ${formatAxisTime(t, analysis.axis, analysis.t_start_us)}` })
    ]
  };
}
