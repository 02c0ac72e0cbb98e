/**
 * The gpudojo sidebar: one panel in the left area whose sections (Course,
 * GPU, ...) stack in an accordion, ordered by rank.
 */

import { SidePanel } from '@jupyterlab/ui-components';
import { AccordionPanel, Widget } from '@lumino/widgets';
import { gpudojoIcon } from '../icons';
import type { IGpudojoSidebar } from '../tokens';

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
