/**
 * LogView: a run's logs with a tab per rank, one for the launcher and one
 * with all of them merged. Virtualised: rows have one fixed height and only
 * the rows in sight (plus a few) are in the DOM, reused as the view scrolls,
 * so a log of 100k lines scrolls as smoothly as one of ten. It follows the
 * tail until the learner scrolls up, and again once they scroll back down.
 */

import { NextFrame, h } from '../dom';
import { ALL_TAB, LAUNCHER_TAB, LogBuffer, LogTab, tabOf } from './logBuffer';
import { isAtTail, logWindow, tailScrollTop } from './logWindow';
import { harmlessStderr } from './stderrNotes';

/** Height of one log row; the CSS gives .gpudojo-log-line the same (px). */
export const ROW_PX = 18;

/** Rank colours the CSS defines (gpudojo-rank-c0 … c7). */
const RANK_COLORS = 8;

function tabLabel(tab: LogTab): string {
  if (tab === ALL_TAB) {
    return 'All';
  }
  return tab === LAUNCHER_TAB ? 'Launcher' : `Rank ${tab}`;
}

/** The short prefix of a line in the merged tab: its rank, L for the launcher, ! for a notice. */
function prefixOf(rank: number | null, kind: string): string {
  if (kind === 'marker') {
    return '!';
  }
  return rank === null ? 'L' : String(rank);
}

export class LogView {
  constructor(buffer: LogBuffer) {
    this._buffer = buffer;
    this._tabBar = h('div', { className: 'gpudojo-log-tabs', attrs: { role: 'tablist', 'aria-label': 'Log of' } });
    this._rows = h('div', { className: 'gpudojo-log-rows' });
    this._spacer = h('div', { className: 'gpudojo-log-spacer' }, this._rows);
    this._viewport = h(
      'div',
      { className: 'gpudojo-log-view', attrs: { role: 'log', tabindex: '0', 'aria-label': 'Run log' } },
      this._spacer
    );
    this._empty = h('div', { className: 'gpudojo-log-empty', text: 'No output yet.' });
    this._follow = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-log-follow',
      text: 'Follow the end ↓',
      title: 'Scroll to the newest line and keep following it',
      attrs: { type: 'button' }
    });
    this._follow.hidden = true;
    this._follow.addEventListener('click', () => {
      this._following = true;
      this.update();
    });
    this.node = h(
      'div',
      { className: 'gpudojo-run-logs' },
      this._tabBar,
      h('div', { className: 'gpudojo-log-frame' }, this._viewport, this._empty, this._follow)
    );
    this._viewport.addEventListener('scroll', () => this._onScroll());
  }

  readonly node: HTMLElement;

  /** The tab shown. */
  get tab(): LogTab {
    return this._tab;
  }

  /** Show `tab`, at its end. */
  setTab(tab: LogTab): void {
    this._tab = tab;
    this._following = true;
    this._tabKey = '';
    this.update();
  }

  /**
   * Label each rank's tab with the node that runs it (a run on several nodes);
   * an empty map labels none. Returns whether the labels changed.
   */
  setRankNodes(names: ReadonlyMap<number, string>): boolean {
    const key = [...names].map(([rank, node]) => `${rank}=${node}`).join(',');
    if (key === this._nodesKey) {
      return false;
    }
    this._nodesKey = key;
    this._rankNodes = new Map(names);
    this._tabKey = '';
    return true;
  }

  /** Bring the view up to date with the buffer: tabs, scroll position, visible rows. */
  update(): void {
    this._renderTabs();
    const total = this._buffer.count(this._tab);
    this._empty.hidden = total > 0;
    const viewportPx = this._viewport.clientHeight;
    if (this._following) {
      const top = tailScrollTop(total, ROW_PX, viewportPx);
      this._spacer.style.height = `${logWindow({ scrollTop: 0, viewportPx, rowPx: ROW_PX, total }).scrollPx}px`;
      if (Math.abs(this._viewport.scrollTop - top) > 1) {
        // The scroll event this fires finds the view at the tail, so it keeps following.
        this._viewport.scrollTop = top;
      }
    }
    this._renderRows();
    this._follow.hidden = this._following;
  }

  dispose(): void {
    this._frame.cancel();
    this.node.remove();
  }

  private _onScroll(): void {
    const { scrollTop, clientHeight, scrollHeight } = this._viewport;
    this._following = isAtTail(scrollTop, clientHeight, scrollHeight, ROW_PX);
    this._follow.hidden = this._following;
    this._frame.schedule();
  }

  private _renderTabs(): void {
    const tabs = [ALL_TAB, ...this._buffer.tabs()];
    const key = `${tabs.join(',')}|${this._tab}`;
    if (key !== this._tabKey) {
      this._tabKey = key;
      this._tabBar.textContent = '';
      this._tabButtons.clear();
      for (const tab of tabs) {
        const button = h(
          'button',
          {
            className: 'gpudojo-log-tab',
            attrs: { type: 'button', role: 'tab', 'data-rank': tab, 'aria-selected': String(tab === this._tab) }
          },
          h('span', {
            className: tab === ALL_TAB || tab === LAUNCHER_TAB ? 'gpudojo-log-tab-label' : `gpudojo-log-tab-label gpudojo-rank-c${Number(tab) % RANK_COLORS}`,
            text: tabLabel(tab)
          }),
          h('span', { className: 'gpudojo-log-count' })
        );
        const node = tab === ALL_TAB || tab === LAUNCHER_TAB ? undefined : this._rankNodes.get(Number(tab));
        if (node) {
          button.setAttribute('data-node', node);
          button.title = `Rank ${tab} runs on ${node}`;
          button.insertBefore(h('span', { className: 'gpudojo-log-tab-node', text: node }), button.lastElementChild);
        }
        button.addEventListener('click', () => this.setTab(tab));
        this._tabBar.appendChild(button);
        this._tabButtons.set(tab, button);
      }
    }
    for (const [tab, button] of this._tabButtons) {
      const count = button.lastElementChild as HTMLElement;
      count.textContent = this._buffer.count(tab).toLocaleString();
    }
  }

  /** Draw the rows in sight, reusing the row nodes already there. */
  private _renderRows(): void {
    const total = this._buffer.count(this._tab);
    const window = logWindow({
      scrollTop: this._viewport.scrollTop,
      viewportPx: this._viewport.clientHeight,
      rowPx: ROW_PX,
      total,
      overscan: 10
    });
    this._spacer.style.height = `${window.scrollPx}px`;
    this._rows.style.transform = `translateY(${window.offsetPx}px)`;
    const needed = window.end - window.start;
    while (this._pool.length < needed) {
      const prefix = h('span', { className: 'gpudojo-log-prefix' });
      const text = h('span', { className: 'gpudojo-log-text' });
      const row = h('div', { className: 'gpudojo-log-line' }, prefix, text);
      this._pool.push(row);
      this._rows.appendChild(row);
    }
    const merged = this._tab === ALL_TAB;
    this._rows.classList.toggle('gpudojo-mod-merged', merged);
    for (let k = 0; k < this._pool.length; k++) {
      const row = this._pool[k];
      if (k >= needed) {
        if (!row.hidden) {
          // A spare row keeps nothing a search or a test could mistake for a line.
          row.hidden = true;
          row.removeAttribute('data-rank');
          row.removeAttribute('data-stream');
          row.removeAttribute('title');
          (row.firstElementChild as HTMLElement).textContent = '';
          (row.lastElementChild as HTMLElement).textContent = '';
        }
        continue;
      }
      const line = this._buffer.line(this._tab, window.start + k);
      row.hidden = false;
      row.setAttribute('data-rank', line.kind === 'marker' ? 'server' : tabOf(line.rank));
      // A known banner on stderr (torchrun's OMP_NUM_THREADS, the profiler's stages) is a note, not an error.
      const note = line.kind === 'stderr' ? harmlessStderr(line.text) : null;
      row.setAttribute('data-stream', note ? 'note' : line.kind);
      if (note) {
        row.title = note;
      } else {
        row.removeAttribute('title');
      }
      const prefix = row.firstElementChild as HTMLElement;
      const color = line.rank === null ? 'gpudojo-rank-launcher' : `gpudojo-rank-c${line.rank % RANK_COLORS}`;
      prefix.className = `gpudojo-log-prefix ${color}`;
      prefix.textContent = merged || line.kind === 'marker' ? prefixOf(line.rank, line.kind) : '';
      (row.lastElementChild as HTMLElement).textContent = line.text;
    }
  }

  private _buffer: LogBuffer;
  private _tab: LogTab = ALL_TAB;
  private _tabKey = '';
  private _nodesKey = '';
  private _rankNodes = new Map<number, string>();
  private _tabButtons = new Map<LogTab, HTMLButtonElement>();
  private _tabBar: HTMLElement;
  private _viewport: HTMLElement;
  private _spacer: HTMLElement;
  private _rows: HTMLElement;
  private _empty: HTMLElement;
  private _follow: HTMLButtonElement;
  private _pool: HTMLElement[] = [];
  private _following = true;
  private _frame = new NextFrame(() => this._renderRows());
}
