/** Placing gpudojo's widgets in JupyterLab's shell. */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { Widget } from '@lumino/widgets';

/** Add `widget` to the main area unless it is there already, then bring it to the front. */
export function showInMainArea(app: JupyterFrontEnd, widget: Widget): void {
  if (!widget.isAttached) {
    app.shell.add(widget, 'main');
  }
  app.shell.activateById(widget.id);
}
