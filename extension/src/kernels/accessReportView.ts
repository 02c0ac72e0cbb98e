/**
 * The memory-access report of a CPU-emulated run, drawn under the run's
 * checks: where the counts come from, which blocks were recorded, one row per
 * source line (worst first, a click shows the line in the editor) and the
 * kernel's totals.
 */

import type { MemoryReport } from '../api/types';
import { h } from '../dom';
import {
  ACCESS_REPORT_SOURCE,
  accessHeadline,
  accessLineLabel,
  accessTotalText,
  accessWritersText,
  formatCount,
  rankAccessRows
} from './accessReport';

/** The report as an element; `goToLine` puts the editor on a clicked row's line (1-based). */
export function renderAccessReport(report: MemoryReport, goToLine: (line: number) => void): HTMLElement {
  const head = h(
    'tr',
    {},
    ...['Line', 'Memory', 'Ops', 'Requests', 'Per request', 'Against ideal'].map(text => h('th', { text }))
  );
  const rows = rankAccessRows(report.lines).map(row => {
    const line = row.line;
    const lineCell = line
      ? h('button', {
          className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-access-goto',
          text: accessLineLabel(line),
          title: 'Show the line in the editor',
          attrs: { type: 'button' }
        })
      : accessLineLabel(line);
    if (typeof lineCell !== 'string') {
      lineCell.addEventListener('click', () => goToLine(line!));
    }
    return h(
      'tr',
      {
        className: row.wasteful ? 'gpudojo-access-row gpudojo-mod-wasteful' : 'gpudojo-access-row',
        attrs: {
          'data-line': line ? String(line) : '',
          'data-space': row.space,
          'data-wasteful': String(row.wasteful),
          'data-ratio': formatCount(row.ratio)
        }
      },
      h('td', {}, lineCell),
      h('td', { text: row.space }),
      h('td', { text: row.ops }),
      h('td', { text: String(row.requests) }),
      h('td', { className: 'gpudojo-access-figure', text: row.figure }),
      h('td', { className: 'gpudojo-access-verdict', text: row.verdict })
    );
  });
  const table = rows.length
    ? h('table', { className: 'gpudojo-access-lines' }, h('thead', {}, head), h('tbody', {}, ...rows))
    : null;
  const totals = report.totals.length
    ? h(
        'ul',
        { className: 'gpudojo-access-totals', attrs: { 'aria-label': 'Kernel totals' } },
        ...report.totals.map(total =>
          h('li', { text: accessTotalText(total), attrs: { 'data-space': total.space } })
        )
      )
    : null;
  const writers = report.writers?.length
    ? h(
        'ul',
        { className: 'gpudojo-access-writers', attrs: { 'aria-label': 'Threads that stored to each array' } },
        ...report.writers.map(w => h('li', { text: accessWritersText(w), attrs: { 'data-array': w.array } }))
      )
    : null;
  return h(
    'section',
    {
      className: 'gpudojo-access-report',
      attrs: { 'data-sampled': String(report.sampled), 'aria-label': 'Memory accesses per source line' }
    },
    h('div', { className: 'gpudojo-access-title', text: 'Memory accesses per source line (CPU emulation)' }),
    h('div', { className: 'gpudojo-access-source', text: ACCESS_REPORT_SOURCE }),
    h('div', { className: 'gpudojo-access-note', text: `${report.note}; ${report.sampling}.` }),
    h('div', { className: 'gpudojo-access-headline', text: accessHeadline(report) }),
    table,
    totals,
    writers
  );
}
