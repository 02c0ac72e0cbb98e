/**
 * The panels beside the timeline, rendered from the analysis alone: what kind
 * of capture it is, what it cannot show, the peak breakdown, each OOM with the
 * ways out of it, and the raw file for pytorch.org/memory_viz.
 */

import type { Analysis, Breakdown, MemoryFrame, Oom } from '../api/types';
import { h } from '../dom';
import { formatAxisTime, formatBytes, formatFrame } from './format';

/** "CUDA snapshot" or "CPU profiler (categories, no stacks)". */
export function captureModeLabel(analysis: Analysis): string {
  return analysis.capture.kind === 'cuda-snapshot' ? 'CUDA snapshot' : 'CPU profiler (categories, no stacks)';
}

/** Bars of a breakdown's categories, widths relative to its largest. */
export function renderCategoryBars(breakdown: Breakdown, colorOf: (category: string) => string): HTMLElement {
  const list = h('ul', { className: 'gpudojo-memory-bars' });
  const max = Math.max(1, ...breakdown.by_category.map(c => c.bytes));
  for (const row of breakdown.by_category) {
    const bar = h('span', { className: 'gpudojo-memory-bar' });
    bar.style.width = `${Math.max(1, (row.bytes / max) * 100)}%`;
    bar.style.background = colorOf(row.category);
    list.appendChild(
      h(
        'li',
        { attrs: { 'data-category': row.category } },
        h('span', { className: 'gpudojo-memory-bar-label', text: row.category }),
        h('span', { className: 'gpudojo-memory-bar-track' }, bar),
        h('span', { className: 'gpudojo-memory-bar-value', text: formatBytes(row.bytes) })
      )
    );
  }
  return list;
}

/** The top user frames of a breakdown: where in the learner's code the bytes were allocated. */
export function renderTopFrames(breakdown: Breakdown, frames: MemoryFrame[], limit = 8): HTMLElement {
  const table = h(
    'table',
    { className: 'gpudojo-memory-frames' },
    h('thead', {}, h('tr', {}, h('th', { text: 'Allocated at' }), h('th', { text: 'Bytes' }), h('th', { text: 'Blocks' })))
  );
  const body = h('tbody');
  for (const row of breakdown.by_frame.slice(0, limit)) {
    const frame = frames[row.frame] ?? null;
    body.appendChild(
      h(
        'tr',
        { attrs: { 'data-frame': String(row.frame) } },
        h('td', { text: formatFrame(frame), title: frame ? `${frame.filename}:${frame.line}` : '' }),
        h('td', { text: formatBytes(row.bytes) }),
        h('td', { text: String(row.count) })
      )
    );
  }
  table.appendChild(body);
  return table;
}

/** The peak: when, how much, by category and by frame. */
export function renderPeak(analysis: Analysis, colorOf: (category: string) => string): HTMLElement {
  const peak = analysis.peak;
  const at = formatAxisTime(peak.t_us, analysis.axis, analysis.t_start_us);
  const panel = h(
    'section',
    { className: 'gpudojo-memory-panel gpudojo-memory-peak' },
    h('h3', { text: 'Peak' }),
    h('p', {
      className: 'gpudojo-memory-peak-total',
      text: `${formatBytes(peak.total_bytes)} live at ${at}`
    }),
    renderCategoryBars(peak, colorOf)
  );
  if (peak.by_frame.length) {
    panel.appendChild(renderTopFrames(peak, analysis.frames));
  } else if (analysis.capture.kind === 'cpu-profiler') {
    panel.appendChild(h('p', { className: 'gpudojo-memory-muted', text: 'No stacks: the CPU profiler records categories only.' }));
  }
  return panel;
}

/** One OOM: what was asked, what was free, what was live, and the fixes with their savings. */
export function renderOom(oom: Oom, analysis: Analysis, colorOf: (category: string) => string): HTMLElement {
  const at = formatAxisTime(oom.t_us, analysis.axis, analysis.t_start_us);
  const free =
    oom.device_free_bytes !== null && oom.device_free_bytes !== undefined
      ? ` with ${formatBytes(oom.device_free_bytes)} free${
          oom.device_total_bytes ? ` of ${formatBytes(oom.device_total_bytes)}` : ''
        } on the device`
      : '';
  const panel = h(
    'section',
    { className: 'gpudojo-memory-panel gpudojo-memory-oom', attrs: { role: 'alert' } },
    h('h3', { text: oom.simulated ? 'Over the memory budget (simulated on the CPU)' : 'Out of memory' }),
    h('p', {
      className: 'gpudojo-memory-oom-asked',
      attrs: { 'data-simulated': String(Boolean(oom.simulated)) },
      text: oom.simulated
        ? `At ${at} an allocation of ${formatBytes(oom.requested_bytes)} took the run past its budget` +
          `${free.replace(' on the device', ' under the budget')}. Nothing failed: the CPU run checked its ` +
          'profiler timeline against the budget, to show where a GPU with that much memory would run out.'
        : `At ${at} an allocation of ${formatBytes(oom.requested_bytes)} failed${free}.`
    }),
    h('p', { text: `${formatBytes(oom.live.total_bytes)} was live then:` }),
    renderCategoryBars(oom.live, colorOf)
  );
  if (oom.live.by_frame.length) {
    panel.appendChild(renderTopFrames(oom.live, analysis.frames, 5));
  }
  if (oom.fixes.length) {
    const fixes = h('ol', { className: 'gpudojo-memory-fixes' });
    for (const fix of oom.fixes) {
      fixes.appendChild(
        h(
          'li',
          { attrs: { 'data-action': fix.action } },
          h('strong', { text: fix.action }),
          ` saves ${formatBytes(fix.saving_bytes)}: `,
          h('span', { text: fix.detail })
        )
      );
    }
    panel.append(h('h4', { text: 'Ways out, cheapest to try first' }), fixes);
  } else {
    panel.appendChild(
      h('p', {
        className: 'gpudojo-memory-muted',
        text: 'No fixes to suggest: the capture has no model context (record with labkit to get them).'
      })
    );
  }
  return panel;
}

/** What this capture cannot show, and why. */
export function renderNotes(analysis: Analysis): HTMLElement | null {
  if (!analysis.notes.length) {
    return null;
  }
  const list = h('ul', { className: 'gpudojo-memory-notes' });
  for (const note of analysis.notes) {
    list.appendChild(h('li', { text: note }));
  }
  return list;
}

/** The raw file's download link, and where to open it. */
export function renderDownload(analysis: Analysis, href: string): HTMLElement {
  const name = analysis.capture.source.split('/').pop() || 'capture';
  const link = h('a', {
    className: 'gpudojo-memory-download',
    text: `Download ${name} (${formatBytes(analysis.capture.size_bytes)})`,
    attrs: { href, download: name }
  });
  const hint =
    analysis.capture.kind === 'cuda-snapshot'
      ? ': drop it on pytorch.org/memory_viz to open it in PyTorch’s own viewer (it stays in your browser).'
      : ': gpudojo’s CPU capture (JSON); pytorch.org/memory_viz opens CUDA snapshots only.';
  return h('p', { className: 'gpudojo-memory-download-row' }, link, hint);
}
