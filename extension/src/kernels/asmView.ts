/**
 * AsmListView: a PTX or SASS listing as lines, only the visible ones in the
 * DOM (listings run to tens of thousands of lines), with the lines of the
 * editor's current source line highlighted and clicks reported as source lines.
 */

import { ISignal, Signal } from '@lumino/signaling';
import { NextFrame, h } from '../dom';
import { SourceAsmMap } from './asmMap';

/** Height of one listing line, as .gpudojo-asm-line sets it in kernels.css (px). */
export const ASM_LINE_HEIGHT = 18;

/** Lines rendered above and below the visible ones, so scrolling does not flash. */
const OVERSCAN = 30;

/** Lines rendered while the list has no height yet (a hidden tab). */
const UNMEASURED_LINES = 120;

export interface AsmListing {
  lines: ReadonlyArray<string>;
  /** Left column of each line, e.g. the PTX line number or the SASS offset. */
  gutter: (index: number) => string;
  map: SourceAsmMap;
}

export class AsmListView {
  constructor(className: string) {
    this.node = h('div', {
      className: `gpudojo-asm ${className}`,
      attrs: { tabindex: '0', role: 'list' }
    });
    this._spacer = h('div', { className: 'gpudojo-asm-spacer' });
    this._window = h('div', { className: 'gpudojo-asm-window' });
    this._spacer.appendChild(this._window);
    this.node.appendChild(this._spacer);
    this.node.addEventListener('scroll', () => this._scheduleRender());
    this._window.addEventListener('click', event => this._onClick(event));
    this._resizeObserver = new ResizeObserver(() => this._scheduleRender());
    this._resizeObserver.observe(this.node);
  }

  readonly node: HTMLElement;

  /** Emitted with the source line (1-based) of a clicked listing line that has one. */
  get sourceLineClicked(): ISignal<this, number> {
    return this._sourceLineClicked;
  }

  /** Show a listing (or none), keeping the highlighted source line. */
  setListing(listing: AsmListing | null): void {
    this._listing = listing;
    this.node.setAttribute('data-lines', String(listing?.lines.length ?? 0));
    this._spacer.style.height = `${(listing?.lines.length ?? 0) * ASM_LINE_HEIGHT}px`;
    this._rendered = null;
    this._render();
  }

  /** Highlight the listing lines of `sourceLine` (1-based); bring the first into view when asked. */
  highlightSource(sourceLine: number | null, reveal: boolean): void {
    this._current = sourceLine;
    const indexes = sourceLine && this._listing ? this._listing.map.asmLinesOf(sourceLine) : [];
    this.node.setAttribute('data-current-lines', String(indexes.length));
    if (reveal && indexes.length) {
      this._reveal(indexes[0]);
    }
    this._rendered = null;
    this._render();
  }

  dispose(): void {
    this._resizeObserver.disconnect();
    this._frame.cancel();
    Signal.clearData(this);
  }

  /** Scroll so listing line `index` sits a third of the way down, unless it is visible already. */
  private _reveal(index: number): void {
    const height = this.node.clientHeight;
    const top = index * ASM_LINE_HEIGHT;
    if (height > 0 && top >= this.node.scrollTop && top + ASM_LINE_HEIGHT <= this.node.scrollTop + height) {
      return;
    }
    this.node.scrollTop = Math.max(0, top - Math.floor(height / 3));
  }

  private _scheduleRender(): void {
    this._frame.schedule();
  }

  private _render(): void {
    const listing = this._listing;
    if (!listing) {
      this._window.textContent = '';
      return;
    }
    const height = this.node.clientHeight;
    const visible = height > 0 ? Math.ceil(height / ASM_LINE_HEIGHT) : UNMEASURED_LINES;
    const first = Math.max(0, Math.floor(this.node.scrollTop / ASM_LINE_HEIGHT) - OVERSCAN);
    const last = Math.min(listing.lines.length, first + visible + 2 * OVERSCAN);
    if (this._rendered && this._rendered[0] === first && this._rendered[1] === last) {
      return;
    }
    this._rendered = [first, last];
    const current = this._current;
    const fragment = document.createDocumentFragment();
    for (let i = first; i < last; i++) {
      const source = listing.map.sourceLineOf(i);
      const line = h(
        'div',
        {
          className: source !== null && source === current ? 'gpudojo-asm-line gpudojo-asm-current' : 'gpudojo-asm-line',
          attrs: { 'data-index': String(i), role: 'listitem' }
        },
        h('span', { className: 'gpudojo-asm-gutter', text: listing.gutter(i) }),
        h('span', { className: 'gpudojo-asm-text', text: listing.lines[i] })
      );
      if (source !== null) {
        line.setAttribute('data-src-line', String(source));
        line.title = `Source line ${source}: click to go there`;
        line.classList.add('gpudojo-mod-linked');
      }
      fragment.appendChild(line);
    }
    this._window.style.transform = `translateY(${first * ASM_LINE_HEIGHT}px)`;
    this._window.replaceChildren(fragment);
  }

  private _onClick(event: MouseEvent): void {
    const line = (event.target as Element | null)?.closest('.gpudojo-asm-line');
    const source = Number(line?.getAttribute('data-src-line'));
    if (source > 0) {
      this._sourceLineClicked.emit(source);
    }
  }

  private _listing: AsmListing | null = null;
  private _current: number | null = null;
  private _rendered: [number, number] | null = null;
  private _frame = new NextFrame(() => this._render());
  private _spacer: HTMLElement;
  private _window: HTMLElement;
  private _resizeObserver: ResizeObserver;
  private _sourceLineClicked = new Signal<this, number>(this);
}
