/**
 * The memory plugin: capture views in the main area (restored after a
 * reload), "Open memory timeline" on .pickle files, and the Memory section the
 * run view embeds (through IMemoryViewer, so the runs plugin needs no memory code).
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IThemeManager, MainAreaWidget, WidgetTracker, showErrorMessage } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import type { GpudojoClient } from '../api/client';
import type { Analysis, Capture } from '../api/types';
import { showInMainArea } from '../shell';
import { IGpudojoClient, IMemoryViewer } from '../tokens';
import { MemoryCommandIds, isSnapshotFile, memoryViewId, readCaptureId } from './commands';
import { MemoryView } from './memoryView';
import { RunMemorySection } from './runMemory';

export const memoryPlugin: JupyterFrontEndPlugin<IMemoryViewer> = {
  id: 'gpudojo:memory',
  description: 'Memory timelines of CUDA snapshots and CPU profiler captures: peak, OOMs, diffs and the estimator.',
  autoStart: true,
  provides: IMemoryViewer,
  requires: [IGpudojoClient],
  optional: [ICommandPalette, ILayoutRestorer, IFileBrowserFactory, IThemeManager],
  activate: (
    app: JupyterFrontEnd,
    client: GpudojoClient,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browsers: IFileBrowserFactory | null,
    themeManager: IThemeManager | null
  ): IMemoryViewer => {
    const tracker = new WidgetTracker<MainAreaWidget<MemoryView>>({ namespace: 'gpudojo-memory' });

    /** The captures of the open panels: any of them can be the other side of a diff. */
    const openCaptures = (): Capture[] => {
      const found: Capture[] = [];
      tracker.forEach(w => {
        const capture = w.content.analysis?.capture;
        if (capture) {
          found.push(capture);
        }
      });
      return found;
    };

    /** The run's captures (when it is a run's), then the open ones. */
    const candidatesFor = (capture: string) => async (): Promise<Capture[]> => {
      const seen = new Map<string, Capture>();
      const run = tracker.find(w => w.content.capture === capture)?.content.analysis?.capture.run;
      if (run) {
        (await client.listCaptures(run)).captures.forEach(c => seen.set(c.id, c));
      }
      openCaptures().forEach(c => seen.set(c.id, seen.get(c.id) ?? c));
      return [...seen.values()];
    };

    const open = (capture: string, analysis?: Analysis): MainAreaWidget<MemoryView> => {
      let widget = tracker.find(w => w.content.capture === capture) ?? null;
      if (!widget || widget.isDisposed) {
        const content = new MemoryView({ capture, client, analysis, candidates: candidatesFor(capture) });
        widget = new MainAreaWidget({ content });
        widget.id = memoryViewId(capture);
        widget.addClass('gpudojo-memory-panel-widget');
        widget.title.closable = true;
        void tracker.add(widget);
      }
      showInMainArea(app, widget);
      return widget;
    };

    app.commands.addCommand(MemoryCommandIds.openMemory, {
      label: args => {
        const capture = readCaptureId(args);
        return capture ? `Open Memory Timeline of ${capture.replace(/^(file|run):/, '')}` : 'Open Memory Timeline';
      },
      caption: "A capture's memory over time: allocations, peak, OOMs, diffs and the estimator",
      execute: args => {
        const capture = readCaptureId(args);
        return capture ? open(capture) : undefined;
      }
    });

    app.commands.addCommand(MemoryCommandIds.openMemoryFile, {
      label: 'Open memory timeline',
      caption: 'Analyse this snapshot (torch.cuda.memory._dump_snapshot) and show its memory over time',
      isVisible: args => typeof args.path === 'string' || selectedSnapshot(browsers) !== null,
      execute: async args => {
        const raw = typeof args.path === 'string' ? args.path : selectedSnapshot(browsers);
        if (!raw) {
          return;
        }
        // The server takes paths relative to its root; a drive prefix ("RTC:") is the browser's own.
        const path = app.serviceManager.contents.localPath(raw);
        try {
          const analysis = await client.analyzeMemoryFile(path);
          return open(analysis.capture.id, analysis);
        } catch (error) {
          void showErrorMessage('This file could not be opened as a memory snapshot', (error as Error).message);
        }
      }
    });

    app.contextMenu.addItem({
      command: MemoryCommandIds.openMemoryFile,
      selector: '.jp-DirListing-item[data-isdir="false"]',
      rank: 61
    });

    if (palette) {
      palette.addItem({ command: MemoryCommandIds.openMemoryFile, category: 'gpudojo' });
    }
    if (themeManager) {
      themeManager.themeChanged.connect(() => {
        // Let the new theme's stylesheet apply before reading its colours.
        requestAnimationFrame(() => tracker.forEach(w => w.content.refreshTheme()));
      });
    }
    if (restorer) {
      void restorer.restore(tracker, {
        command: MemoryCommandIds.openMemory,
        args: widget => ({ capture: widget.content.capture }),
        name: widget => widget.content.capture
      });
    }

    return {
      createRunSection: () =>
        new RunMemorySection({
          client,
          openCapture: capture => void app.commands.execute(MemoryCommandIds.openMemory, { capture }),
          openCaptures
        })
    };
  }
};

/** The path of the snapshot file selected in the file browser, or null. */
function selectedSnapshot(browsers: IFileBrowserFactory | null): string | null {
  const browser = browsers?.tracker.currentWidget;
  if (!browser) {
    return null;
  }
  for (const item of browser.selectedItems()) {
    if (item.type !== 'directory' && isSnapshotFile(item.path)) {
      return item.path;
    }
  }
  return null;
}
