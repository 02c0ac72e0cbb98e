/**
 * LogBuffer: every log line of a run, in arrival order, in parallel arrays of
 * plain values (a run may print hundreds of thousands of lines; no object or
 * DOM node per line). Each tab (a rank, or the launcher) keeps an index of its
 * lines into the merged list, so switching tabs costs nothing.
 */

/** A log tab: 'all', 'launcher' (torchrun's own output) or a rank's number as text. */
export type LogTab = string;

export const ALL_TAB: LogTab = 'all';
export const LAUNCHER_TAB: LogTab = 'launcher';

/** How a line is drawn: the process's stdout or stderr, or the server's truncation notice. */
export type LineKind = 'stdout' | 'stderr' | 'marker';

const KINDS: ReadonlyArray<LineKind> = ['stdout', 'stderr', 'marker'];

/** Rank value stored for the launcher's lines (and markers). */
const LAUNCHER_RANK = -1;

export interface LogLine {
  /** The rank, or null for the launcher's own output and markers. */
  rank: number | null;
  kind: LineKind;
  text: string;
}

/** The tab a line of `rank` belongs to. */
export function tabOf(rank: number | null): LogTab {
  return rank === null || rank < 0 ? LAUNCHER_TAB : String(rank);
}

export class LogBuffer {
  /** Lines in all tabs together. */
  get length(): number {
    return this._text.length;
  }

  /** Bumped on every append: views compare it to know whether to redraw. */
  get version(): number {
    return this._version;
  }

  /** Append one line; `rank` null for the launcher's output. */
  append(rank: number | null, kind: LineKind, text: string): void {
    const index = this._text.length;
    const stored = rank === null ? LAUNCHER_RANK : rank;
    this._text.push(text);
    this._rank.push(stored);
    this._kind.push(KINDS.indexOf(kind));
    if (kind === 'marker') {
      // A truncation notice concerns every tab.
      for (const list of this._byTab.values()) {
        list.push(index);
      }
      this._markers.push(index);
    } else {
      this._tabIndex(tabOf(rank)).push(index);
    }
    this._version++;
  }

  /** The tabs that have lines: ranks in order, then the launcher (the 'all' tab is implied). */
  tabs(): LogTab[] {
    const ranks = [...this._byTab.keys()].filter(t => t !== LAUNCHER_TAB).map(Number).sort((a, b) => a - b);
    const tabs = ranks.map(String);
    if (this._byTab.has(LAUNCHER_TAB)) {
      tabs.push(LAUNCHER_TAB);
    }
    return tabs;
  }

  /** Lines in `tab`. */
  count(tab: LogTab): number {
    return tab === ALL_TAB ? this._text.length : this._byTab.get(tab)?.length ?? 0;
  }

  /** Line `i` (0-based) of `tab`. */
  line(tab: LogTab, i: number): LogLine {
    const index = tab === ALL_TAB ? i : this._byTab.get(tab)?.[i] ?? -1;
    if (index < 0 || index >= this._text.length) {
      throw new RangeError(`No line ${i} in the ${tab} tab`);
    }
    const rank = this._rank[index];
    return { rank: rank === LAUNCHER_RANK ? null : rank, kind: KINDS[this._kind[index]], text: this._text[index] };
  }

  private _tabIndex(tab: LogTab): number[] {
    let list = this._byTab.get(tab);
    if (!list) {
      // A tab that appears late still shows the truncation notices that came before.
      list = [...this._markers];
      this._byTab.set(tab, list);
    }
    return list;
  }

  private _text: string[] = [];
  private _rank: number[] = [];
  private _kind: number[] = [];
  private _byTab = new Map<LogTab, number[]>();
  private _markers: number[] = [];
  private _version = 0;
}
