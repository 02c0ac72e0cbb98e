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
import { addOpenFileCommand, followTheme, showInMainArea, showTracked } from '../shell';
import { Widget } from '@lumino/widgets';
import { h } from '../dom';
import { gpudojoIcon } from '../icons';
import { IGpudojoClient, IMemoryViewer } from '../tokens';
import {
  MemoryCommandIds,
  isSnapshotFile,
  memoryViewId,
  newestCapture,
  readCaptureId,
  readEstimator,
  readEstimatorMode
} from './commands';
import { EstimatorMode, EstimatorView } from './estimatorView';
import { MemoryView } from './memoryView';
import { categoryColor, readMemoryPalette } from './palette';
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

    const open = (capture: string, analysis?: Analysis): MainAreaWidget<MemoryView> =>
      showTracked(
        app,
        tracker,
        view => view.capture === capture,
        () => {
          const content = new MemoryView({ capture, client, analysis, candidates: candidatesFor(capture) });
          const widget = new MainAreaWidget({ content });
          widget.id = memoryViewId(capture);
          widget.addClass('gpudojo-memory-panel-widget');
          return widget;
        }
      );

    app.commands.addCommand(MemoryCommandIds.openMemory, {
      label: args => {
        const capture = readCaptureId(args);
        return capture ? `Open Memory Timeline of ${capture.replace(/^(file|run):/, '')}` : 'Open Memory Timeline';
      },
      caption: "A capture's memory over time: allocations, peak, OOMs, diffs and the estimator",
      execute: async args => {
        const estimator = readEstimator(args);
        const mode = readEstimatorMode(args);
        let capture = readCaptureId(args);
        if (!capture) {
          // A lesson's link names no capture: the newest one the user recorded.
          capture = (await newestCapture(client).catch(() => null))?.id ?? null;
        }
        if (capture) {
          const widget = open(capture);
          if (estimator) {
            revealEstimator(widget.content, mode);
          }
          return widget;
        }
        if (estimator) {
          return openEstimator(mode);
        }
        void showErrorMessage(
          'No memory capture yet',
          'Your runs have not recorded memory. Run a lab with "Record memory" ticked (lab-06-memory is made for it), then follow this link again.'
        );
      }
    });

    /** The estimator on its own, for a learner with no capture yet. */
    const openEstimator = (mode: EstimatorMode): MainAreaWidget<Widget> => {
      const existing = Array.from(app.shell.widgets('main')).find(w => w.id === ESTIMATOR_ID);
      if (existing instanceof MainAreaWidget && !existing.isDisposed) {
        estimatorViews.get(existing)?.setMode(mode);
        showInMainArea(app, existing);
        return existing;
      }
      const content = new Widget();
      content.addClass('gpudojo-memory-view');
      content.addClass('gpudojo-estimator-only');
      const palette = readMemoryPalette(document.body);
      const view = new EstimatorView({
        context: null,
        measuredPeakBytes: null,
        estimate: request => client.estimateMemory(request),
        estimateTransformer: request => client.estimateTransformer(request),
        mode,
        colorOf: c => categoryColor(palette, c)
      });
      content.node.append(
        h('p', {
          className: 'gpudojo-memory-muted',
          text: 'No memory capture of yours yet, so there is no measured peak to set the estimate against. Record one by running a lab with "Record memory" ticked.'
        }),
        view.node
      );
      const widget = new MainAreaWidget({ content });
      widget.id = ESTIMATOR_ID;
      estimatorViews.set(widget, view);
      widget.title.label = 'Memory estimator';
      widget.title.icon = gpudojoIcon;
      widget.title.closable = true;
      showInMainArea(app, widget);
      return widget;
    };

    addOpenFileCommand(app, browsers, palette, {
      id: MemoryCommandIds.openMemoryFile,
      label: 'Open memory timeline',
      caption: 'Analyse this snapshot (torch.cuda.memory._dump_snapshot) and show its memory over time',
      accept: isSnapshotFile,
      // The view opens at once and shows the analysis's progress (a large snapshot never
      // opened before takes seconds); a file that is no snapshot says so inside it.
      open: path => open(`file:${path}`),
      rank: 61
    });
    followTheme(themeManager, () => tracker.forEach(w => w.content.refreshTheme()));
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

/** The DOM id of the estimator opened without a capture. */
const ESTIMATOR_ID = 'gpudojo-memory-estimator';

/** The estimator opened on its own, by its widget (to switch its mode when a link asks again). */
const estimatorViews = new WeakMap<Widget, EstimatorView>();

/** Scroll a memory view's estimator into view once the view has drawn it (given up after a minute). */
function revealEstimator(view: MemoryView, mode: EstimatorMode): void {
  const find = () => view.node.querySelector<HTMLElement>('.gpudojo-estimator');
  const reveal = (node: HTMLElement) =>
    requestAnimationFrame(() => {
      view.estimator?.setMode(mode);
      node.scrollIntoView({ block: 'start' });
    });
  const now = find();
  if (now) {
    reveal(now);
    return;
  }
  const observer = new MutationObserver(() => {
    const node = find();
    if (node) {
      observer.disconnect();
      reveal(node);
    }
  });
  observer.observe(view.node, { childList: true, subtree: true });
  setTimeout(() => observer.disconnect(), 60_000);
}
