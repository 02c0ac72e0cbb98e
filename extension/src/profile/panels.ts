/**
 * The parts of the profile view rendered from the summary alone: the mode
 * banner (what this trace can and cannot show), the findings with their
 * evidence, the GPU tables (kernels, launch statistics), host syncs, overlap,
 * notes, and the raw trace's download. Each figure carries its mode tag.
 */

import type { Finding, KernelRow, LaunchStats, Overlap, ProfileSummary, SyncSite, Trace, TraceMode } from '../api/types';
import { Child, h } from '../dom';
import { formatBytes } from '../memory/format';
import { baseName, breakdownLine, formatCount, formatPerStep, formatShare, formatUs, modeTag } from './format';

/** The mode tag beside a figure's title: "GPU trace" or "CPU-only trace". */
export function modeBadge(kind: TraceMode): HTMLElement {
  return h('span', {
    className: 'gpudojo-profile-mode-badge',
    text: modeTag(kind),
    attrs: { 'data-mode': kind }
  });
}

/** A titled section of the view, its mode tag beside the title. */
export function profileSection(className: string, title: string, kind: TraceMode, ...children: Child[]): HTMLElement {
  return h(
    'section',
    { className: `gpudojo-profile-section ${className}`, attrs: { 'data-mode': kind } },
    h('h3', { className: 'gpudojo-profile-section-title' }, title, ' ', modeBadge(kind)),
    ...children
  );
}

/** The banner: the mode, what a CPU-only trace cannot show and what it still shows, and the trace's size. */
export function renderModeBanner(summary: ProfileSummary): HTMLElement {
  const { mode } = summary;
  const steps =
    summary.step_source === 'profiler-steps'
      ? `${summary.steps.length} step${summary.steps.length === 1 ? '' : 's'}`
      : 'no ProfilerStep spans: the whole trace taken as one step';
  const ranks = summary.ranks.length ? `${summary.ranks.length} rank${summary.ranks.length === 1 ? '' : 's'}` : '';
  const facts = [
    `${formatCount(summary.events)} events`,
    ranks,
    steps,
    `mean step ${formatUs(summary.mean_step_us)}`
  ].filter(Boolean);
  const banner = h(
    'div',
    { className: 'gpudojo-profile-banner', attrs: { 'data-mode': mode.kind, role: 'note' } },
    h('div', { className: 'gpudojo-profile-banner-head' }, h('strong', { className: 'gpudojo-profile-mode-label', text: mode.label }), modeBadge(mode.kind)),
    h('div', { className: 'gpudojo-profile-facts', text: facts.join(' · ') })
  );
  if (mode.cannot_show.length) {
    banner.appendChild(
      h('p', { className: 'gpudojo-profile-cannot-show', text: `A CPU-only trace cannot show: ${mode.cannot_show.join('; ')}.` })
    );
  }
  if (mode.shows.length) {
    banner.appendChild(h('p', { className: 'gpudojo-profile-shows', text: `It shows: ${mode.shows.join('; ')}.` }));
  }
  const line = breakdownLine(summary.breakdown);
  if (line) {
    banner.appendChild(h('p', { className: 'gpudojo-profile-breakdown-line', text: `Mean step: ${line}` }));
  }
  return banner;
}

const SEVERITY_MARK: Record<Finding['severity'], string> = { high: '▲', medium: '●', info: 'ℹ' };
const SEVERITY_WORD: Record<Finding['severity'], string> = { high: 'High', medium: 'Medium', info: 'Info' };

/** The findings, most important first: severity, title, the measured evidence, what to try. */
export function renderFindings(findings: readonly Finding[], kind: TraceMode): HTMLElement {
  const list = h('ol', { className: 'gpudojo-profile-findings' });
  for (const finding of findings) {
    list.appendChild(
      h(
        'li',
        {
          className: 'gpudojo-profile-finding',
          attrs: { 'data-finding': finding.id, 'data-severity': finding.severity }
        },
        h('span', {
          className: 'gpudojo-profile-severity',
          text: SEVERITY_MARK[finding.severity] ?? '•',
          title: SEVERITY_WORD[finding.severity] ?? finding.severity,
          attrs: { 'aria-label': SEVERITY_WORD[finding.severity] ?? finding.severity }
        }),
        h(
          'div',
          { className: 'gpudojo-profile-finding-body' },
          h('div', { className: 'gpudojo-profile-finding-title', text: finding.title }),
          h('div', { className: 'gpudojo-profile-finding-evidence', text: finding.evidence }),
          h('div', { className: 'gpudojo-profile-finding-suggestion' }, h('strong', { text: 'Try: ' }), finding.suggestion)
        )
      )
    );
  }
  const empty = findings.length
    ? null
    : h('p', { className: 'gpudojo-profile-muted', text: 'Nothing stands out in this profile: no finding passed its threshold.' });
  return profileSection('gpudojo-profile-findings-section', 'Findings', kind, empty, findings.length ? list : null);
}

/** A plain table: a header row and text cells, each row with its data attributes. */
export function simpleTable(
  className: string,
  headers: string[],
  rows: Array<{ attrs: Record<string, string>; cells: string[]; titles?: string[] }>
): HTMLElement {
  const body = h('tbody');
  for (const row of rows) {
    body.appendChild(
      h('tr', { attrs: row.attrs }, ...row.cells.map((text, i) => h('td', { text, title: row.titles?.[i] ?? '' })))
    );
  }
  return h(
    'table',
    { className: `gpudojo-profile-table ${className}` },
    h('thead', {}, h('tr', {}, ...headers.map(text => h('th', { text })))),
    body
  );
}

/** GPU kernels by total time. */
export function renderKernels(kernels: readonly KernelRow[]): HTMLElement {
  return simpleTable(
    'gpudojo-profile-kernels',
    ['Kernel', 'Calls', 'Total', 'Mean', 'Share'],
    kernels.map(k => ({
      attrs: { 'data-kernel': k.name },
      cells: [k.name, formatCount(k.calls), formatUs(k.total_us), formatUs(k.mean_us), formatShare(k.share)],
      titles: [k.name]
    }))
  );
}

/** How the host feeds the GPU: kernels and short kernels per step, launch delay, gaps. */
export function renderLaunch(launch: LaunchStats): HTMLElement {
  const item = (label: string, value: string, key: string) =>
    h('div', { attrs: { 'data-stat': key } }, h('dt', { text: label }), h('dd', { text: value }));
  return h(
    'dl',
    { className: 'gpudojo-profile-launch', attrs: { 'data-source': launch.source } },
    item('Kernels per step', formatPerStep(launch.kernels_per_step), 'kernels_per_step'),
    item('Under 10 µs per step', formatPerStep(launch.short_kernels_per_step), 'short_kernels_per_step'),
    item('Median launch delay', formatUs(launch.median_launch_delay_us), 'median_launch_delay_us'),
    item('Median gap between kernels', formatUs(launch.median_gap_us), 'median_gap_us'),
    item('Computed by', launch.source === 'hta' ? 'Holistic Trace Analysis' : 'gpudojo', 'source')
  );
}

/** Where the host waited (.item(), .cpu(), synchronize), per step and in total. */
export function renderSyncs(syncs: readonly SyncSite[]): HTMLElement {
  return simpleTable(
    'gpudojo-profile-syncs',
    ['Op', 'Location', 'Per step', 'Total'],
    syncs.map(s => ({
      attrs: { 'data-op': s.op },
      cells: [s.op, s.location || '(no stack: record with with_stack)', formatPerStep(s.per_step), formatUs(s.total_us)]
    }))
  );
}

/** Communication hidden behind computation, per rank. */
export function renderOverlap(rows: readonly Overlap[]): HTMLElement {
  return simpleTable(
    'gpudojo-profile-overlap',
    ['Rank', 'Communication', 'Overlapped', 'Share', 'Computed by'],
    rows.map(o => ({
      attrs: { 'data-rank': String(o.rank) },
      cells: [
        String(o.rank),
        formatUs(o.communication_us),
        formatUs(o.overlapped_us),
        formatShare(o.share),
        o.source === 'hta' ? 'Holistic Trace Analysis' : 'gpudojo'
      ]
    }))
  );
}

/** The analysis's notes, and which Holistic Trace Analysis results it used; null when there is neither. */
export function renderNotes(summary: ProfileSummary): HTMLElement | null {
  const items = [...summary.notes];
  if (summary.hta.length) {
    items.push(`Holistic Trace Analysis computed: ${summary.hta.join(', ')}.`);
  }
  if (!items.length) {
    return null;
  }
  return h('ul', { className: 'gpudojo-profile-notes' }, ...items.map(text => h('li', { text })));
}

/** Where a downloaded trace opens: the title of every download link. */
export const DOWNLOAD_HINT =
  'Download the Chrome trace: open it in ui.perfetto.dev (Open trace file; it stays in your browser) or in TensorBoard’s profiler plugin.';

/** "Download trace" links: one for a single trace, one per rank for an all-ranks view. */
export function renderDownloads(trace: Trace, perRank: readonly Trace[], urlOf: (trace: string) => string): HTMLElement {
  const link = (t: Trace, text: string) =>
    h('a', {
      className: 'gpudojo-profile-download',
      text,
      title: DOWNLOAD_HINT,
      attrs: { href: urlOf(t.id), download: baseName(t.source) || 'trace.json', 'data-trace': t.id }
    });
  const row = h('span', { className: 'gpudojo-profile-downloads' });
  if (trace.id.endsWith(':*')) {
    row.append('Download trace: ');
    perRank.forEach((t, i) => row.append(i ? ', ' : '', link(t, `${t.label} (${formatBytes(t.size_bytes)})`)));
    if (!perRank.length) {
      row.append('open one rank to download its file');
    }
  } else {
    row.appendChild(link(trace, `Download trace (${formatBytes(trace.size_bytes)})`));
  }
  row.appendChild(h('span', { className: 'gpudojo-profile-muted', text: ' for ui.perfetto.dev or TensorBoard' }));
  return row;
}
