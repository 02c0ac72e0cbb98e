/**
 * The runs plugin: one-click labs. Run forms, run views, sweep views, the
 * Runs section of the sidebar, "Run with torchrun…" on .py files, their
 * commands, palette entries, and reopening run views after a reload.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IThemeManager, MainAreaWidget, WidgetTracker, showErrorMessage } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import type { GpudojoClient } from '../api/client';
import type { LabRunRequest, Run, StartRunRequest } from '../api/types';
import { followTheme, showInMainArea } from '../shell';
import { IGpudojoClient, IGpudojoSidebar, IMemoryViewer, IProfileViewer } from '../tokens';
import {
  RunCommandIds,
  readGroupId,
  readLabId,
  readParams,
  readRunId,
  readSweep,
  readTabLabel,
  runFormId,
  runViewId,
  sweepViewId
} from './commands';
import { LabCatalog } from './labCatalog';
import { MachineFacts, machineFacts } from './machineFit';
import { rerunRequest } from './requests';
import { RunForm } from './runForm';
import { RunView, createRunWidget } from './runView';
import { RunsList } from './runsList';
import { RunsListModel } from './runsListModel';
import { askScriptRun } from './scriptDialog';
import { SweepModel } from './sweepModel';
import { SweepView, createSweepWidget } from './sweepView';

const PALETTE_CATEGORY = 'gpudojo';

/** Rank of the Runs section in the sidebar: below Course (100), above GPU (500). */
const RUNS_SECTION_RANK = 300;

export const runsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudojo:runs',
  description: 'One-click labs: parameter forms, live run views with logs, metrics and checks, sweeps and scaling.',
  autoStart: true,
  requires: [IGpudojoSidebar, IGpudojoClient],
  optional: [ICommandPalette, ILayoutRestorer, IFileBrowserFactory, IThemeManager, IMemoryViewer, IProfileViewer],
  activate: (
    app: JupyterFrontEnd,
    sidebar: IGpudojoSidebar,
    client: GpudojoClient,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browsers: IFileBrowserFactory | null,
    themeManager: IThemeManager | null,
    memory: IMemoryViewer | null,
    profile: IProfileViewer | null
  ) => {
    const labs = new LabCatalog(client);
    const listModel = new RunsListModel(client);
    const list = new RunsList({
      model: listModel,
      labs,
      openRun: id => void app.commands.execute(RunCommandIds.openRun, { id }),
      runLab: lab => void app.commands.execute(RunCommandIds.runLab, { lab })
    });
    sidebar.addSection(list, { rank: RUNS_SECTION_RANK });

    const runs = new WidgetTracker<MainAreaWidget<RunView>>({ namespace: 'gpudojo-run' });
    const sweeps = new WidgetTracker<MainAreaWidget<SweepView>>({ namespace: 'gpudojo-sweep' });
    const forms = new Map<string, MainAreaWidget<RunForm>>();
    // Cores and GPUs do not change while the page is open: asked once, when first needed.
    let machineRequest: Promise<MachineFacts> | null = null;
    const machine = (): Promise<MachineFacts> => {
      machineRequest ??= client.getDevices().then(machineFacts);
      machineRequest.catch(() => (machineRequest = null));
      return machineRequest;
    };

    /** Send a request; open the new run's view (a sweep's scaling view); refresh the list. */
    const start = async (request: StartRunRequest): Promise<Run[]> => {
      const created = (await client.startRun(request)).runs;
      void listModel.refresh();
      const group = created[0]?.group;
      // Resolves once the view is shown, so the form that started it can close behind it.
      if (group && created.length > 1) {
        await app.commands.execute(RunCommandIds.openSweep, { group }).catch(showFailure);
      } else if (created[0]) {
        await app.commands.execute(RunCommandIds.openRun, { id: created[0].id }).catch(showFailure);
      }
      return created;
    };

    app.commands.addCommand(RunCommandIds.runLab, {
      label: args => {
        const title = labs.get(readLabId(args))?.title;
        return title ? `Run Lab: ${title}` : 'Run Lab…';
      },
      caption: 'Choose the parameters of a lab and start it',
      isVisible: args => {
        const lab = readLabId(args);
        return lab === null || labs.get(lab) !== null;
      },
      execute: async args => {
        const id = readLabId(args);
        if (!id) {
          return;
        }
        await labs.ensure();
        const lab = labs.get(id);
        if (!lab) {
          const why = labs.problem(id) ?? labs.error ?? 'it has no runnable manifest';
          void showErrorMessage('This lab cannot run', `${id}: ${why}`);
          return;
        }
        const params = readParams(args);
        const sweep = readSweep(args);
        let widget = forms.get(id);
        if (widget && !widget.isDisposed && (sweep || Object.keys(params).length)) {
          widget.close(); // asked with other presets (a lesson's link): a fresh form shows them
        }
        if (!widget || widget.isDisposed) {
          const content = new RunForm({
            lab,
            params,
            sweep,
            engines: () => client.getEngines().then(list => list.engines),
            machine,
            start: async (request: LabRunRequest) => {
              const created = await start(request);
              // The run's (or sweep's) view is open now: the form does not stay behind as a second tab.
              forms.get(id)?.close();
              return created;
            }
          });
          widget = new MainAreaWidget({ content });
          widget.id = runFormId(id);
          widget.title.label = `Run: ${lab.title}`;
          widget.title.closable = true;
          widget.addClass('gpudojo-run-form-panel');
          forms.set(id, widget);
        }
        showInMainArea(app, widget);
        widget.content.focusFirst();
        return widget;
      }
    });

    app.commands.addCommand(RunCommandIds.openRun, {
      label: args => {
        const id = readRunId(args);
        return id ? `Open Run ${id}` : 'Open Run';
      },
      caption: "A run's status, logs per rank, metrics and checks",
      execute: args => {
        const id = readRunId(args);
        if (!id) {
          return;
        }
        let widget = runs.find(w => w.id === runViewId(id)) ?? null;
        if (!widget || widget.isDisposed) {
          widget = createRunWidget({
            runId: id,
            client,
            labs,
            memory,
            profile,
            rerun: run => {
              start(rerunRequest(run)).catch(error =>
                showErrorMessage('The run could not start again', (error as Error).message)
              );
            },
            openSweep: group => void app.commands.execute(RunCommandIds.openSweep, { group }),
            label: readTabLabel(args)
          });
          const opened = widget;
          // The list's statuses change when a run ends: ask again then, not 30 s later.
          opened.content.model.changed.connect((model, change) => {
            if (change.run && model.isFinal) {
              void listModel.refresh();
            }
          });
          void runs.add(opened);
        }
        showInMainArea(app, widget);
        return widget;
      }
    });

    app.commands.addCommand(RunCommandIds.openSweep, {
      label: args => {
        const group = readGroupId(args);
        return group ? `Open Sweep ${group}` : 'Open Sweep';
      },
      caption: "A sweep's scaling: time per epoch, speedup against the ideal, efficiency",
      execute: args => {
        const group = readGroupId(args);
        if (!group) {
          return;
        }
        let widget = sweeps.find(w => w.id === sweepViewId(group)) ?? null;
        if (!widget || widget.isDisposed) {
          widget = createSweepWidget({
            model: new SweepModel(group, client),
            labs,
            openRun: id => void app.commands.execute(RunCommandIds.openRun, { id }),
            machine
          });
          void sweeps.add(widget);
        }
        showInMainArea(app, widget);
        return widget;
      }
    });

    app.commands.addCommand(RunCommandIds.openRuns, {
      label: 'Show Runs',
      caption: 'The history of lab and script runs, newest first',
      execute: () => {
        app.shell.activateById('gpudojo-sidebar');
        sidebar.revealSection(list);
        void listModel.refresh();
      }
    });

    app.commands.addCommand(RunCommandIds.runScript, {
      label: 'Run with torchrun…',
      caption: 'Start this Python file with torchrun, one process per rank, and follow its logs',
      isVisible: args => typeof args.path === 'string' || selectedPythonFile(browsers) !== null,
      execute: async args => {
        const raw = typeof args.path === 'string' ? args.path : selectedPythonFile(browsers);
        if (!raw) {
          return;
        }
        // The server takes paths relative to its root; a drive prefix ("RTC:") is the browser's own.
        const path = app.serviceManager.contents.localPath(raw);
        // Where the script may go: this machine at least, whatever the server says.
        const engines = await client.getEngines().then(
          list => list.engines,
          () => null
        );
        const request = await askScriptRun(path, engines, await machine().catch(() => null));
        if (!request) {
          return;
        }
        try {
          await start(request);
        } catch (error) {
          void showErrorMessage('The script could not start', (error as Error).message);
        }
      }
    });

    app.contextMenu.addItem({
      command: RunCommandIds.runScript,
      selector: '.jp-DirListing-item[data-file-type="python"]',
      rank: 60
    });

    const inPalette = new Set<string>();
    labs.changed.connect(() => {
      // The course section shows a Run button on the labs this makes visible.
      app.commands.notifyCommandChanged(RunCommandIds.runLab);
      for (const lab of labs.labs) {
        if (palette && !inPalette.has(lab.id)) {
          inPalette.add(lab.id);
          palette.addItem({ command: RunCommandIds.runLab, args: { lab: lab.id }, category: PALETTE_CATEGORY });
        }
      }
    });
    void labs.ensure();

    app.commands.addCommand(RunCommandIds.closeFinishedRuns, {
      label: 'Close finished run tabs',
      caption: 'Close the tabs of runs that have ended; running ones stay open',
      execute: () => {
        const finished = runs.filter(w => w.content.model.isFinal);
        finished.forEach(w => w.close());
        return finished.length;
      }
    });

    if (palette) {
      palette.addItem({ command: RunCommandIds.closeFinishedRuns, category: PALETTE_CATEGORY });
      palette.addItem({ command: RunCommandIds.openRuns, category: PALETTE_CATEGORY });
      palette.addItem({ command: RunCommandIds.runScript, category: PALETTE_CATEGORY });
    }
    followTheme(themeManager, () => {
      runs.forEach(w => w.content.refreshTheme());
      sweeps.forEach(w => w.content.refreshTheme());
    });
    if (restorer) {
      void restorer.restore(runs, {
        command: RunCommandIds.openRun,
        // The label goes with it, so a reloaded tab is named before its run is fetched.
        args: widget => ({ id: widget.content.runId, label: widget.content.title.label }),
        name: widget => widget.content.runId
      });
      void restorer.restore(sweeps, {
        command: RunCommandIds.openSweep,
        args: widget => ({ group: widget.content.model.group }),
        name: widget => widget.content.model.group
      });
    }
  }
};

/** The runs were created but their view did not open: they are in the Runs list all the same. */
function showFailure(error: unknown): void {
  console.warn('gpudojo: the new run’s view could not be opened.', error);
}

/** The path of the .py file selected in the file browser, or null. */
function selectedPythonFile(browsers: IFileBrowserFactory | null): string | null {
  const browser = browsers?.tracker.currentWidget;
  if (!browser) {
    return null;
  }
  for (const item of browser.selectedItems()) {
    // Not item.type: with jupytext a .py file lists as a notebook.
    if (item.type !== 'directory' && item.path.endsWith('.py')) {
      return item.path;
    }
  }
  return null;
}
