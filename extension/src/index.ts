/**
 * gpudojo's JupyterLab plugins: the sidebar (which features add sections to),
 * the course (sidebar section, lesson views), the GPU feature (sidebar
 * section, monitor, commands, settings), the kernel playground and one-click
 * lab runs (forms, live run views, sweeps, the Runs section), memory
 * timelines of captures (their own panels and the run view's Memory section),
 * and profiles of traces (their own panels, diffs and the run view's Profile section).
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  IThemeManager,
  MainAreaWidget,
  WidgetTracker
} from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStateDB } from '@jupyterlab/statedb';
import { GpudojoClient } from './api/client';
import { notebookGpuCellsPlugin } from './course/notebookGpuCells';
import { coursePlugin } from './course/plugin';
import { CommandIds } from './gpu/commands';
import { DevicesModel } from './gpu/devicesModel';
import { GpuMonitor, MonitorSettings, createMonitorWidget } from './gpu/monitor';
import { GpuSection } from './gpu/section';
import { gpudojoIcon } from './icons';
import { cudaFilesPlugin } from './kernels/cudaFiles';
import { kernelsPlugin } from './kernels/plugin';
import { memoryPlugin } from './memory/plugin';
import { profilePlugin } from './profile/plugin';
import { runsPlugin } from './runs/plugin';
import { GpudojoSidebar } from './sidebar/panel';
import { followTheme, showInMainArea } from './shell';
import { IDevicesModel, IGpudojoClient, IGpudojoSidebar } from './tokens';

export { IDevicesModel, IGpudojoClient, IGpudojoSidebar, IMemoryViewer, IProfileViewer } from './tokens';
export { CommandIds } from './gpu/commands';
export { CourseCommandIds } from './course/commands';
export { KernelCommandIds } from './kernels/commands';
export type { PlaygroundArgs } from './kernels/commands';
export { RunCommandIds } from './runs/commands';
export { MemoryCommandIds } from './memory/commands';
export { ProfileCommandIds } from './profile/commands';

const PALETTE_CATEGORY = 'gpudojo';

/** Rank of the GPU section in the sidebar (the Course section goes above it). */
const GPU_SECTION_RANK = 500;

/** The left sidebar panel that holds gpudojo's sections. */
const sidebarPlugin: JupyterFrontEndPlugin<IGpudojoSidebar> = {
  id: 'gpudojo:sidebar',
  description: 'The gpudojo panel in the left sidebar.',
  autoStart: true,
  provides: IGpudojoSidebar,
  optional: [ILayoutRestorer, IStateDB],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null, state: IStateDB | null) => {
    const sidebar = new GpudojoSidebar({ commands: app.commands });
    app.shell.add(sidebar, 'left', { rank: 800 });
    if (restorer) {
      restorer.add(sidebar, 'gpudojo-sidebar');
    }
    if (state) {
      // Which sections were collapsed, once the app has restored its state.
      void app.restored.then(() => sidebar.restoreState(state));
    }
    return sidebar;
  }
};

/** The one API client every gpudojo feature talks to the server through. */
const clientPlugin: JupyterFrontEndPlugin<GpudojoClient> = {
  id: 'gpudojo:client',
  description: 'The client of the gpudojo server API, shared by every gpudojo feature.',
  autoStart: true,
  provides: IGpudojoClient,
  activate: (app: JupyterFrontEnd) => new GpudojoClient(app.serviceManager.serverSettings)
};

/** The one devices model: the GPU section shows it, other features read the mode from it. */
const devicesPlugin: JupyterFrontEndPlugin<DevicesModel> = {
  id: 'gpudojo:devices',
  description: "The server's GPUs and host (GET gpu/devices), polled while shown.",
  autoStart: true,
  requires: [IGpudojoClient],
  provides: IDevicesModel,
  activate: (app: JupyterFrontEnd, client: GpudojoClient) => new DevicesModel(client)
};

/** Read the plugin's settings, with the schema's defaults as fallback. */
function readSettings(settings: ISettingRegistry.ISettings | null): MonitorSettings {
  const rateHz = settings?.get('rateHz').composite;
  const windowSeconds = settings?.get('windowSeconds').composite;
  return {
    rateHz: typeof rateHz === 'number' && rateHz > 0 ? rateHz : 4,
    windowSeconds:
      typeof windowSeconds === 'number' && windowSeconds > 0 ? windowSeconds : 120
  };
}

/** GPU section, GPU monitor, their commands and settings. */
const gpuPlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudojo:plugin',
  description: 'GPU devices in the sidebar and a live GPU monitor.',
  autoStart: true,
  requires: [IGpudojoSidebar, IGpudojoClient, IDevicesModel],
  optional: [ICommandPalette, ISettingRegistry, ILayoutRestorer, ILauncher, IThemeManager],
  activate: (
    app: JupyterFrontEnd,
    sidebar: IGpudojoSidebar,
    client: GpudojoClient,
    devices: DevicesModel,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null,
    launcher: ILauncher | null,
    themeManager: IThemeManager | null
  ) => {
    const section = new GpuSection({ model: devices, commands: app.commands });
    sidebar.addSection(section, { rank: GPU_SECTION_RANK });

    let current: MonitorSettings = readSettings(null);
    let monitor: MainAreaWidget<GpuMonitor> | null = null;
    const tracker = new WidgetTracker<MainAreaWidget<GpuMonitor>>({
      namespace: 'gpudojo-gpu-monitor'
    });

    if (settingRegistry) {
      settingRegistry
        .load(gpuPlugin.id)
        .then(settings => {
          const apply = () => {
            current = readSettings(settings);
            monitor?.content.applySettings(current);
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason => {
          console.warn('gpudojo: settings could not be loaded, using defaults.', reason);
        });
    }

    app.commands.addCommand(CommandIds.openMonitor, {
      label: 'Open GPU Monitor',
      caption: 'Charts of GPU and host telemetry (args.gpu: show that GPU only)',
      icon: args => (args['isPalette'] ? undefined : gpudojoIcon),
      execute: args => {
        if (!monitor || monitor.isDisposed) {
          monitor = createMonitorWidget({ client, settings: current });
          monitor.disposed.connect(() => {
            monitor = null;
          });
        }
        if (!tracker.has(monitor)) {
          void tracker.add(monitor);
        }
        const gpu = args['gpu'];
        if (typeof gpu === 'number' && Number.isInteger(gpu)) {
          monitor.content.selectGpus([gpu]);
        }
        showInMainArea(app, monitor);
        return monitor;
      }
    });

    app.commands.addCommand(CommandIds.refreshGpus, {
      label: 'Refresh GPUs',
      caption: 'Probe the GPUs and host again',
      execute: () => devices.refresh()
    });

    if (palette) {
      palette.addItem({ command: CommandIds.openMonitor, category: PALETTE_CATEGORY });
      palette.addItem({ command: CommandIds.refreshGpus, category: PALETTE_CATEGORY });
    }
    if (launcher) {
      launcher.add({ command: CommandIds.openMonitor, category: 'gpudojo', rank: 10 });
    }
    followTheme(themeManager, () => monitor?.content.refreshTheme());
    if (restorer) {
      // Reopen the monitor after a reload when it was open.
      void restorer.restore(tracker, {
        command: CommandIds.openMonitor,
        name: () => 'gpu-monitor'
      });
    }
  }
};

export default [
  clientPlugin,
  devicesPlugin,
  sidebarPlugin,
  coursePlugin,
  notebookGpuCellsPlugin,
  gpuPlugin,
  kernelsPlugin,
  cudaFilesPlugin,
  memoryPlugin,
  profilePlugin,
  runsPlugin
];
