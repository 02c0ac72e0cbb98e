/**
 * GPU cells in notebooks: a cell tagged `needs-gpu` (a lesson's notebook copy tags its GPU
 * cells so) shows "Needs a GPU" ("Needs 2 GPUs" with `needs-2-gpus`) above its editor, as the
 * lesson view does. Notebooks are found through the Notebook widget factory's
 * `widgetCreated` signal, so gpudojo needs no build-time dependency on @jupyterlab/notebook;
 * the shapes it reads are declared below.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { ISignal } from '@lumino/signaling';
import type { Widget } from '@lumino/widgets';

export const GPU_TAG = 'needs-gpu';
const NEEDS_CLASS = 'gpudojo-mod-needs-gpu';
const BADGE_CLASS = 'gpudojo-notebook-gpu-tag';

/** What this module reads of a cell (a JupyterLab Cell widget). */
interface CellLike {
  node: HTMLElement;
  model: { getMetadata(key: string): unknown; metadataChanged?: ISignal<unknown, unknown> };
}

/** What this module reads of a notebook panel (NotebookPanel: `content` is the Notebook). */
interface NotebookPanelLike extends Widget {
  content: Widget & {
    widgets: readonly CellLike[];
    model: { cells: { changed: ISignal<unknown, unknown> } } | null;
  };
}

/** The badge's text for a cell's tags: "Needs a GPU", "Needs 2 GPUs", or null for a CPU cell. */
export function gpuCellLabel(tags: unknown): string | null {
  if (!Array.isArray(tags) || !tags.includes(GPU_TAG)) {
    return null;
  }
  const counts = tags
    .map(t => (typeof t === 'string' ? /^needs-(\d+)-gpus$/.exec(t)?.[1] : undefined))
    .filter((n): n is string => n !== undefined)
    .map(Number);
  const gpus = Math.max(1, ...counts);
  return gpus > 1 ? `Needs ${gpus} GPUs` : 'Needs a GPU';
}

/** Give `cell` its badge (or take it away) from its tags now. */
export function markGpuCell(cell: CellLike): void {
  const label = gpuCellLabel(cell.model.getMetadata('tags'));
  const node = cell.node;
  let badge = node.querySelector<HTMLElement>(`:scope > .${BADGE_CLASS}`);
  node.classList.toggle(NEEDS_CLASS, label !== null);
  if (label === null) {
    badge?.remove();
    return;
  }
  if (!badge) {
    badge = document.createElement('div');
    badge.className = `gpudojo-needs gpudojo-needs-gpu ${BADGE_CLASS}`;
    badge.title = 'This cell needs a GPU: without one it prints a note, and its expected output is the note under it';
    node.insertBefore(badge, node.firstChild);
  }
  badge.textContent = label;
}

function watchNotebook(panel: NotebookPanelLike): void {
  const notebook = panel.content;
  const seen = new WeakSet<CellLike>();
  const update = () => {
    for (const cell of notebook.widgets) {
      markGpuCell(cell);
      if (!seen.has(cell)) {
        seen.add(cell);
        cell.model.metadataChanged?.connect(() => markGpuCell(cell));
      }
    }
  };
  // After the notebook's own handler has made the cells' widgets.
  const later = () => void Promise.resolve().then(update);
  notebook.model?.cells.changed.connect(later);
  later();
}

function isNotebookPanel(widget: Widget): widget is NotebookPanelLike {
  const content = (widget as unknown as Partial<NotebookPanelLike>).content;
  return !!content && Array.isArray((content as { widgets?: unknown }).widgets) && 'model' in content;
}

export const notebookGpuCellsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudojo:notebook-gpu-cells',
  description: 'Marks notebook cells tagged needs-gpu with a "Needs a GPU" badge.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    void app.started.then(() => {
      const factory = app.docRegistry.getWidgetFactory('Notebook');
      factory?.widgetCreated.connect((_, widget) => {
        if (isNotebookPanel(widget)) {
          void (widget as unknown as { context?: { ready?: Promise<void> } }).context?.ready?.then(() =>
            watchNotebook(widget)
          );
        }
      });
      for (const widget of app.shell.widgets('main')) {
        if (isNotebookPanel(widget)) {
          watchNotebook(widget);
        }
      }
    });
  }
};
