/**
 * What gpudojo's plugins provide to each other. A feature asks for these
 * tokens (requires/optional) instead of importing another feature's plugin, so
 * the features stay apart: one API client, one devices model, one sidebar, and
 * the memory and profile features' sections for run views.
 */

import { Token } from '@lumino/coreutils';
import type { Widget } from '@lumino/widgets';
import type { GpudojoClient } from './api/client';
import type { Run } from './api/types';
import type { DevicesModel } from './gpu/devicesModel';

/** The typed client of the gpudojo server API (REST and websockets), one per page. */
export const IGpudojoClient = new Token<GpudojoClient>(
  'gpudojo:IGpudojoClient',
  'The client of the gpudojo server API, shared by every gpudojo feature.'
);

/** The latest GET gpu/devices answer, polled while someone shows it. */
export const IDevicesModel = new Token<DevicesModel>(
  'gpudojo:IDevicesModel',
  'GPUs and host of the server, as the GPU section shows them; other features read the mode from it.'
);

/** The sidebar, for plugins that add a section to it. */
export interface IGpudojoSidebar {
  /**
   * Add a section; its `title.label` is the section header. Lower ranks sit
   * higher (the Course section uses 100, GPU 500).
   */
  addSection(widget: Widget, options?: { rank?: number }): void;
  /** Add a line to the sidebar's header, under its title (the course's progress). */
  addHeaderWidget(widget: Widget): void;
  /** Expand `widget`'s section (added before) and scroll it into view; the caller shows the sidebar. */
  revealSection(widget: Widget): void;
}

export const IGpudojoSidebar = new Token<IGpudojoSidebar>(
  'gpudojo:IGpudojoSidebar',
  'The gpudojo sidebar panel, to which features add sections.'
);

/** A run view's Memory section, as the memory feature builds it. */
export interface IRunMemorySection {
  readonly node: HTMLElement;
  /** Show the captures of this state of the run (call on every change of it). */
  update(run: Run): void;
  dispose(): void;
}

/** What the run view asks of the memory feature. */
export interface IMemoryViewer {
  /** A run's Memory section (call update(run) on each change of the run). */
  createRunSection(): IRunMemorySection;
}

export const IMemoryViewer = new Token<IMemoryViewer>(
  'gpudojo:IMemoryViewer',
  'Memory timelines of captures: their own panels, and the Memory section of run views.'
);

/** A run view's Profile section, as the profile feature builds it. */
export interface IRunProfileSection {
  readonly node: HTMLElement;
  /** Show the traces of this state of the run (call on every change of it). */
  update(run: Run): void;
  dispose(): void;
}

/** What the run view asks of the profile feature. */
export interface IProfileViewer {
  /** A run's Profile section (call update(run) on each change of the run). */
  createRunSection(): IRunProfileSection;
}

export const IProfileViewer = new Token<IProfileViewer>(
  'gpudojo:IProfileViewer',
  'Profiles of torch.profiler traces: their own panels, comparisons, and the Profile section of run views.'
);
