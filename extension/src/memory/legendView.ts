/** The timeline's legend: a swatch per category; its name isolates it, its checkbox hides it. */

import { h } from '../dom';
import { LegendState } from './legendState';

export interface LegendViewOptions {
  categories: string[];
  colorOf: (c: number) => string;
  /** The visibility mask changed. */
  changed: (mask: boolean[]) => void;
}

export class LegendView {
  constructor(options: LegendViewOptions) {
    this._options = options;
    this.state = new LegendState(options.categories.length);
    this.node = h('ul', { className: 'gpudojo-memory-legend', attrs: { 'aria-label': 'Categories' } });
    options.categories.forEach((name, c) => {
      const swatch = h('span', { className: 'gpudojo-memory-swatch' });
      swatch.style.background = options.colorOf(c);
      const isolate = h('button', {
        className: 'gpudojo-memory-legend-name',
        text: name,
        title: `Show ${name} alone (click again to show the others)`,
        attrs: { type: 'button' }
      });
      isolate.addEventListener('click', () => {
        this.state.isolate(c);
        this._update();
      });
      const shown = h('input', {
        className: 'gpudojo-memory-legend-hide',
        attrs: { type: 'checkbox', 'aria-label': `Draw ${name}` }
      });
      shown.checked = true;
      shown.addEventListener('change', () => {
        this.state.toggleHidden(c);
        this._update();
      });
      this._boxes.push(shown);
      this.node.appendChild(h('li', { attrs: { 'data-category': name } }, shown, swatch, isolate));
    });
  }

  readonly node: HTMLElement;
  readonly state: LegendState;

  private _update(): void {
    const items = Array.from(this.node.children) as HTMLElement[];
    items.forEach((item, c) => {
      item.setAttribute('data-visible', String(this.state.visible(c)));
      item.toggleAttribute('data-isolated', this.state.isolated === c);
      this._boxes[c].checked = !this.state.hidden(c);
    });
    this._options.changed(this.state.mask());
  }

  private _options: LegendViewOptions;
  private _boxes: HTMLInputElement[] = [];
}
