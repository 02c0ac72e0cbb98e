/**
 * Placing gpudojo's widgets in JupyterLab's shell: panels in the main area, found again when
 * open; "Open …" on files in the file browser (the command, its context-menu item and palette
 * entry); a file's text as its editor shows it; colours redrawn after a theme change.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { ICommandPalette, IThemeManager, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import type { IDocumentManager } from '@jupyterlab/docmanager';
import type { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import type { LabIcon } from '@jupyterlab/ui-components';
import type { Widget } from '@lumino/widgets';

/** Add `widget` to the main area unless it is there already, then bring it to the front. */
export function showInMainArea(app: JupyterFrontEnd, widget: Widget): void {
  if (!widget.isAttached) {
    app.shell.add(widget, 'main');
  }
  app.shell.activateById(widget.id);
}

/** The path of the first file selected in the file browser that `accept` takes, or null. */
export function selectedFile(browsers: IFileBrowserFactory | null, accept: (path: string) => boolean): string | null {
  const browser = browsers?.tracker.currentWidget;
  if (!browser) {
    return null;
  }
  for (const item of browser.selectedItems()) {
    if (item.type !== 'directory' && accept(item.path)) {
      return item.path;
    }
  }
  return null;
}

export interface OpenFileCommand {
  id: string;
  label: string;
  caption: string;
  /** Whether the command applies to a file (shown in the context menu of the files it takes). */
  accept: (path: string) => boolean;
  /** Open the file at `path`, relative to the server's root. */
  open: (path: string) => unknown;
  /** Which file-browser items list it (default: every file). */
  selector?: string;
  /** Its place in the file browser's context menu. */
  rank: number;
  icon?: LabIcon;
}

/** "Open …" on a file: the command (by `args.path` or the browser's selection), its context-menu item and palette entry. */
export function addOpenFileCommand(
  app: JupyterFrontEnd,
  browsers: IFileBrowserFactory | null,
  palette: ICommandPalette | null,
  command: OpenFileCommand
): void {
  const { icon } = command;
  app.commands.addCommand(command.id, {
    label: command.label,
    caption: command.caption,
    ...(icon ? { icon: (args: { isPalette?: unknown }) => (args['isPalette'] ? undefined : icon) } : {}),
    isVisible: args => typeof args.path === 'string' || selectedFile(browsers, command.accept) !== null,
    execute: args => {
      const raw = typeof args.path === 'string' ? args.path : selectedFile(browsers, command.accept);
      if (raw) {
        // The server takes paths relative to its root; a drive prefix ("RTC:") is the browser's own.
        return command.open(app.serviceManager.contents.localPath(raw));
      }
    }
  });
  app.contextMenu.addItem({
    command: command.id,
    selector: command.selector ?? '.jp-DirListing-item[data-isdir="false"]',
    rank: command.rank
  });
  palette?.addItem({ command: command.id, category: 'gpudojo' });
}

/** The tracked panel whose content `match` picks, else a new one from `create` (tracked); shown either way. */
export function showTracked<T extends Widget>(
  app: JupyterFrontEnd,
  tracker: WidgetTracker<MainAreaWidget<T>>,
  match: (content: T) => boolean,
  create: () => MainAreaWidget<T>
): MainAreaWidget<T> {
  let widget = tracker.find(w => !w.isDisposed && match(w.content)) ?? null;
  if (!widget) {
    widget = create();
    widget.title.closable = true;
    void tracker.add(widget);
  }
  showInMainArea(app, widget);
  return widget;
}

/** Redraw what draws with theme colours after a theme change, once the new stylesheet applies. */
export function followTheme(themeManager: IThemeManager | null, refresh: () => void): void {
  themeManager?.themeChanged.connect(() => requestAnimationFrame(refresh));
}

/**
 * A file's text as the learner sees it: its open editor's (unsaved edits too, and whether
 * there are any), else the saved file's.
 */
export async function readAsSeen(
  app: JupyterFrontEnd,
  docManager: IDocumentManager | null,
  path: string
): Promise<{ text: string; dirty: boolean }> {
  const open = docManager?.findWidget(path) ?? null;
  const context = open ? docManager?.contextForWidget(open) : undefined;
  if (context) {
    return { text: context.model.toString(), dirty: context.model.dirty };
  }
  const model = await app.serviceManager.contents.get(path, { content: true, format: 'text', type: 'file' });
  return { text: String(model.content ?? ''), dirty: false };
}
