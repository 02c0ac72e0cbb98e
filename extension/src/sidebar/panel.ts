/**
 * The gpudojo sidebar: one panel in the left area whose sections (Course,
 * GPU, ...) stack in an accordion, ordered by rank. The header links to the
 * course's home and holds lines features add (the course's progress); which
 * sections are collapsed is remembered across reloads (JupyterLab's state
 * database), and the Course gets most of the height.
 *
 * The sections are laid out by Lumino from the content's measured height, which the header
 * changes when its lines arrive (the progress line comes after the catalog): the content is
 * watched so that the sections are laid out again then, and the last one (the GPU section
 * and its "Open GPU monitor" button) never runs on under the status bar.
 */

import type { IStateDB } from '@jupyterlab/statedb';
import { SidePanel } from '@jupyterlab/ui-components';
import type { CommandRegistry } from '@lumino/commands';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Message, MessageLoop } from '@lumino/messaging';
import { AccordionPanel, Widget } from '@lumino/widgets';
import { h } from '../dom';
import { gpudojoIcon } from '../icons';
import type { IGpudojoSidebar } from '../tokens';

/** Where the sidebar keeps its state in JupyterLab's state database. */
const STATE_KEY = 'gpudojo-sidebar:layout';

/** The command the header's title runs: the course's home (CourseCommandIds.openWelcome). */
export const HOME_COMMAND = 'gpudojo:open-welcome';

/** How much of the height each section gets while expanded (by section id; others get 1). */
const SECTION_WEIGHTS: Record<string, number> = {
  'gpudojo-course-section': 6,
  'gpudojo-runs-list': 0.7,
  'gpudojo-gpu-section': 1.4
};

export class GpudojoSidebar extends SidePanel implements IGpudojoSidebar {
  constructor(options: { commands?: CommandRegistry } = {}) {
    super();
    this.id = 'gpudojo-sidebar';
    this.addClass('gpudojo-sidebar');
    this.title.icon = gpudojoIcon;
    this.title.label = 'gpudojo';
    this.title.caption = 'gpudojo: the course, runs and GPUs';
    const home = h('button', {
      className: 'gpudojo-sidebar-home',
      text: 'gpudojo',
      title: 'Open the course’s home: your progress, the next step, this machine, the map of the course',
      attrs: { type: 'button' }
    });
    home.addEventListener('click', () => {
      if (options.commands?.hasCommand(HOME_COMMAND)) {
        void options.commands.execute(HOME_COMMAND);
      }
    });
    const heading = new Widget({ node: h('h2', { className: 'gpudojo-sidebar-heading' }, home) });
    this.header.addWidget(heading);
    if (this.content instanceof AccordionPanel) {
      this.content.expansionToggled.connect(this._onToggled, this);
    }
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
    this._applyState();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (typeof ResizeObserver !== 'undefined' && !this._contentObserver) {
      this._contentObserver = new ResizeObserver(() => {
        MessageLoop.sendMessage(this.content, Widget.ResizeMessage.UnknownSize);
      });
    }
    this._contentObserver?.observe(this.content.node);
  }

  protected onBeforeDetach(msg: Message): void {
    this._contentObserver?.disconnect();
    super.onBeforeDetach(msg);
  }

  addHeaderWidget(widget: Widget): void {
    this.header.addWidget(widget);
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

  /** Remember which sections are collapsed in `state`, and collapse those that were before a reload. */
  async restoreState(state: IStateDB): Promise<void> {
    this._state = state;
    try {
      const saved = (await state.fetch(STATE_KEY)) as ReadonlyPartialJSONObject | undefined;
      const collapsed = saved?.['collapsed'];
      this._collapsed = new Set(Array.isArray(collapsed) ? collapsed.filter((c): c is string => typeof c === 'string') : []);
    } catch (reason) {
      console.warn('gpudojo: the sidebar’s layout could not be restored.', reason);
    }
    this._restored = true;
    this._applyState();
  }

  /** The ids of the sections collapsed now. */
  get collapsedSections(): string[] {
    const accordion = this.content as AccordionPanel;
    return this.widgets.filter((_, i) => accordion.titles[i]?.getAttribute('aria-expanded') === 'false').map(w => w.id);
  }

  /** Collapse the sections remembered as collapsed, then share the height among the others. */
  private _applyState(): void {
    if (!(this.content instanceof AccordionPanel)) {
      return;
    }
    const accordion = this.content;
    this._applying = true;
    try {
      this.widgets.forEach((widget, i) => {
        const shouldCollapse = this._restored && this._collapsed.has(widget.id);
        const expanded = accordion.titles[i]?.getAttribute('aria-expanded') !== 'false';
        if (shouldCollapse && expanded) {
          accordion.collapse(i);
        }
      });
    } finally {
      this._applying = false;
    }
    this._shareHeight();
  }

  /** The Course gets most of the height; the Runs list and the GPU section what they need. */
  private _shareHeight(): void {
    const accordion = this.content as AccordionPanel;
    const expanded = this.widgets.map((_, i) => accordion.titles[i]?.getAttribute('aria-expanded') !== 'false');
    const sizes = this.widgets.map((w, i) => (expanded[i] ? (SECTION_WEIGHTS[w.id] ?? 1) : 0));
    if (sizes.some(s => s > 0)) {
      accordion.setRelativeSizes(sizes);
    }
  }

  private _onToggled(): void {
    if (this._applying) {
      return;
    }
    const collapsed = new Set(this.collapsedSections);
    // Sections not added yet keep what was remembered for them.
    for (const id of this._collapsed) {
      if (!this.widgets.some(w => w.id === id)) {
        collapsed.add(id);
      }
    }
    this._collapsed = collapsed;
    if (this._state && this._restored) {
      void this._state.save(STATE_KEY, { collapsed: [...collapsed] }).catch(reason => {
        console.warn('gpudojo: the sidebar’s layout could not be saved.', reason);
      });
    }
  }

  private _ranks = new WeakMap<Widget, number>();
  private _state: IStateDB | null = null;
  private _collapsed = new Set<string>();
  private _restored = false;
  private _applying = false;
  private _contentObserver: ResizeObserver | null = null;
}
