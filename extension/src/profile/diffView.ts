/**
 * The "Profile diff" panel: trace a (before) against b (after). The two runs by
 * name and start time, what differs between them (parameters, lab, mode,
 * machine), then step time and the speed-up, the breakdown side by side, the
 * operators whose time changed most, and the findings the change resolved or brought.
 */

import { Widget } from '@lumino/widgets';
import type { ProfileDiff, RunFacts } from '../api/types';
import { h } from '../dom';
import { gpudojoIcon } from '../icons';
import { beforeIsNewer, runName } from './compareOrder';
import { breakdownRows, differenceLine, differencesSummary, modeWarning, opRowsByChange, stepHeadline } from './diffRows';
import { formatCount, formatDeltaUs, formatUs, modeTag, signOf } from './format';
import { modeBadge } from './panels';

export interface ProfileDiffViewOptions {
  a: string;
  b: string;
  diff: (a: string, b: string) => Promise<ProfileDiff>;
  /** Open one side in its own profile panel. */
  open: (trace: string) => void;
  /** Open the same comparison the other way round (b before, a after). */
  swap?: () => void;
}

/** A trace id as the panel names it: the run and file, or the path. */
export function traceName(id: string): string {
  return id.replace(/^file:/, '').replace(/^run:([^:]+):\*$/, '$1 (all ranks)').replace(/^run:([^:]+):/, '$1 · ');
}

/** Which of a run's traces an id names: "rank 0", "all ranks"; null for a trace file. */
export function rankOf(id: string): string | null {
  if (!id.startsWith('run:')) {
    return null;
  }
  if (id.endsWith(':*')) {
    return 'all ranks';
  }
  const rank = /:rank(\d+)\.trace\.json$/.exec(id);
  return rank ? `rank ${rank[1]}` : null;
}

/** A side as the panel names it once its run is known: "PyTorch on the GPU, started 14:05:09 (GPU) · rank 0". */
export function sideName(id: string, run: RunFacts | null | undefined): string {
  if (!run) {
    return traceName(id);
  }
  const rank = rankOf(id);
  return rank ? `${runName(run)} · ${rank}` : runName(run);
}

export class ProfileDiffView extends Widget {
  constructor(options: ProfileDiffViewOptions) {
    super();
    this.a = options.a;
    this.b = options.b;
    this._options = options;
    this.addClass('gpudojo-profile-diff-view');
    this.node.setAttribute('data-a', this.a);
    this.node.setAttribute('data-b', this.b);
    this.node.setAttribute('data-state', 'loading');
    this.title.label = 'Profile diff';
    this.title.caption = `${traceName(this.a)} → ${traceName(this.b)}`;
    this.title.icon = gpudojoIcon;
    this.title.closable = true;
    const side = (label: string, id: string) => {
      const button = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-profile-diff-open',
        text: traceName(id),
        title: `Open ${id} in its own profile panel`,
        attrs: { type: 'button', 'data-trace': id }
      });
      button.addEventListener('click', () => options.open(id));
      this._sideButtons.push(button);
      return h('div', { className: 'gpudojo-profile-diff-side' }, h('strong', { text: `${label}: ` }), button);
    };
    const swap = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-profile-diff-swap',
      text: '⇄ Swap before and after',
      title: 'Open this comparison the other way round',
      attrs: { type: 'button' }
    });
    swap.addEventListener('click', () => options.swap?.());
    swap.hidden = !options.swap;
    this._status = h('p', {
      className: 'gpudojo-profile-status',
      text: 'Comparing… (a trace never opened before is analysed first)',
      attrs: { role: 'status' }
    });
    this.node.append(
      h('h2', { className: 'gpudojo-profile-title', text: 'Profile diff' }),
      side('Before (a)', this.a),
      side('After (b)', this.b),
      swap,
      this._status
    );
    void this._load();
  }

  readonly a: string;
  readonly b: string;

  private async _load(): Promise<void> {
    try {
      const diff = await this._options.diff(this.a, this.b);
      if (!this.isDisposed) {
        this._status.remove();
        const [a, b] = this._sideButtons;
        a.textContent = sideName(this.a, diff.a_run);
        b.textContent = sideName(this.b, diff.b_run);
        this.title.caption = `${a.textContent} → ${b.textContent}`;
        this.node.append(...renderProfileDiff(diff));
        this.node.setAttribute('data-state', 'ready');
      }
    } catch (error) {
      this._status.textContent = `The traces could not be compared: ${(error as Error).message}`;
      this._status.setAttribute('role', 'alert');
      this.node.setAttribute('data-state', 'error');
    }
  }

  private _options: ProfileDiffViewOptions;
  private _status: HTMLElement;
  private _sideButtons: HTMLButtonElement[] = [];
}

/** What differs between the two runs: one line, then each difference as a row of its own. */
export function renderRunDifferences(diff: ProfileDiff): HTMLElement {
  const section = h(
    'section',
    { className: 'gpudojo-profile-diff-runs', attrs: { 'data-changes': String(diff.changes?.length ?? 0) } },
    h('p', { className: 'gpudojo-profile-diff-runs-summary', text: differencesSummary(diff) })
  );
  if (diff.changes?.length) {
    section.append(
      h(
        'ul',
        { className: 'gpudojo-profile-diff-changes' },
        ...diff.changes.map(d => h('li', { text: differenceLine(d), attrs: { 'data-key': d.key } }))
      )
    );
  }
  if (beforeIsNewer(diff)) {
    section.append(
      h('p', {
        className: 'gpudojo-profile-diff-warning gpudojo-profile-diff-newer-first',
        text: 'Before is the newer run, so the change reads backwards in time: swap before and after to read it forward.',
        attrs: { role: 'note' }
      })
    );
  }
  return section;
}

/** What differs between the runs, the headline, the breakdown and operator tables, and the findings' changes. */
export function renderProfileDiff(diff: ProfileDiff): HTMLElement[] {
  const headline = h(
    'p',
    { className: 'gpudojo-profile-diff-headline', attrs: { 'data-speedup': String(diff.speedup) } },
    stepHeadline(diff),
    ' ',
    modeBadge(diff.a_mode),
    diff.b_mode !== diff.a_mode ? modeBadge(diff.b_mode) : ''
  );
  const warning = modeWarning(diff);
  const parts: HTMLElement[] = [renderRunDifferences(diff), headline];
  if (warning) {
    parts.push(h('p', { className: 'gpudojo-profile-diff-warning', text: warning, attrs: { role: 'note' } }));
  }
  parts.push(
    h('h3', { text: 'Where the step time went (mean per step)' }),
    diffTable(
      'gpudojo-profile-diff-breakdown',
      ['Category', 'Before', 'After', 'Change'],
      breakdownRows(diff.breakdown).map(row => ({
        key: row.key,
        cells: [row.label, formatUs(row.a_us), formatUs(row.b_us)],
        delta: row.delta_us
      }))
    ),
    h('h3', { text: 'Operators, biggest change first (self time per step)' }),
    diffTable(
      'gpudojo-profile-diff-ops',
      ['Operator', 'Before', 'After', 'Calls (all steps)', 'Change'],
      opRowsByChange(diff.ops).map(row => ({
        key: row.name,
        cells: [row.name, formatUs(row.a_self_us), formatUs(row.b_self_us), `${formatCount(row.a_calls)} → ${formatCount(row.b_calls)}`],
        delta: row.delta_us
      }))
    ),
    findingsList('Resolved', 'gpudojo-profile-diff-resolved', diff.findings_resolved, 'No finding of before is gone.'),
    findingsList('New', 'gpudojo-profile-diff-new', diff.findings_new, 'No new finding.'),
    h('p', {
      className: 'gpudojo-profile-muted',
      text: `Before: ${modeTag(diff.a_mode)}; after: ${modeTag(diff.b_mode)}. Operator times are per step, so profiles of different lengths compare.`
    })
  );
  return parts;
}

function diffTable(
  className: string,
  headers: string[],
  rows: Array<{ key: string; cells: string[]; delta: number }>
): HTMLElement {
  const body = h('tbody');
  for (const row of rows) {
    const delta = h('td', {
      className: 'gpudojo-profile-delta',
      text: formatDeltaUs(row.delta),
      attrs: { 'data-sign': signOf(row.delta) }
    });
    body.appendChild(
      h('tr', { attrs: { 'data-key': row.key } }, ...row.cells.map(text => h('td', { text, title: text })), delta)
    );
  }
  return h(
    'table',
    { className: `gpudojo-profile-table ${className}` },
    h('thead', {}, h('tr', {}, ...headers.map(text => h('th', { text })))),
    body
  );
}

function findingsList(title: string, className: string, ids: readonly string[], empty: string): HTMLElement {
  return h(
    'section',
    { className: `gpudojo-profile-diff-findings ${className}` },
    h('h4', { text: `${title} findings` }),
    ids.length
      ? h('ul', {}, ...ids.map(id => h('li', { text: id, attrs: { 'data-finding': id } })))
      : h('p', { className: 'gpudojo-profile-muted', text: empty })
  );
}
