/**
 * The gpudojo sidebar: one panel in the left area whose sections (Course,
 * GPU, ...) stack in an accordion, ordered by rank.
 */

import { SidePanel } from '@jupyterlab/ui-components';
import { Token } from '@lumino/coreutils';
import { AccordionPanel, Widget } from '@lumino/widgets';
import { gpudojoIcon } from '../icons';

/** The sidebar, for plugins that add a section to it. */
export interface IGpudojoSidebar {
  /**
   * Add a section; its `title.label` is the section header. Lower ranks sit
   * higher (the Course section uses 100, GPU 500).
   */
  addSection(widget: Widget, options?: { rank?: number }): void;
  /** Expand `widget`'s section (added before) and scroll it into view; the caller shows the sidebar. */
  revealSection(widget: Widget): void;
}

export const IGpudojoSidebar = new Token<IGpudojoSidebar>(
  'gpudojo:IGpudojoSidebar',
  'The gpudojo sidebar panel, to which features add sections.'
);

export class GpudojoSidebar extends SidePanel implements IGpudojoSidebar {
  constructor() {
    super();
    this.id = 'gpudojo-sidebar';
    this.addClass('gpudojo-sidebar');
    this.title.icon = gpudojoIcon;
    this.title.caption = 'gpudojo';
    const heading = new Widget({ node: document.createElement('h2') });
    heading.node.textContent = 'gpudojo';
    this.header.addWidget(heading);
  }

  addSection(widget: Widget, options: { rank?: number } = {}): void {
    const rank = options.rank ?? 1000;
    this._ranks.set(widget, rank);
    widget.addClass('gpudojo-section');
    const existing = this.widgets;
    let index = existing.length;
    for (let i = 0; i < existing.length; i++) {
      if ((this._ranks.get(existing[i]) ?? 1000) > rank) {
        index = i;
        break;
      }
    }
    this.insertWidget(index, widget);
  }

  revealSection(widget: Widget): void {
    const index = this.widgets.indexOf(widget);
    if (index < 0) {
      return;
    }
    if (this.content instanceof AccordionPanel) {
      this.content.expand(index);
    }
    widget.node.scrollIntoView({ block: 'nearest' });
  }

  private _ranks = new WeakMap<Widget, number>();
}
