/** Command ids of the kernel playground and the arguments other features may pass. */

import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import type { KernelLanguage } from '../api/types';
import type { RunPreset } from './runSpec';

export namespace KernelCommandIds {
  /** Open the kernel playground; args: PlaygroundArgs (all optional). */
  export const openPlayground = 'gpudojo:open-kernel-playground';
  /** Open a .cu file in the playground, linked to it (Save writes back); args `{path}` or the file browser's selection. */
  export const openFileInPlayground = 'gpudojo:open-file-in-kernel-playground';
  /** Save a file-linked playground's source to its file. */
  export const savePlaygroundFile = 'gpudojo:save-kernel-playground-file';
}

/** What a lesson or lab may open the playground with. */
export interface PlaygroundArgs {
  source?: string;
  language?: KernelLanguage;
  /** e.g. 'sm_90'; the machine's GPU (or the server's default) when absent. */
  arch?: string;
  /** Preset run panel fields. */
  run?: RunPreset;
  /** The tab's title; playgrounds are found again by it. */
  title?: string;
  /**
   * A lab's id: its kernel examples are offered in the toolbar, and the first
   * is loaded when no `source` is given. The title defaults to "Kernels: <lab>".
   */
  lab?: string;
  /** The lab's title, for the examples menu (the id is shown when absent). */
  labTitle?: string;
  /**
   * A file the playground is linked to (relative to the server's root): Save writes the
   * source back to it. One playground per file, found again by it.
   */
  file?: string;
}

/** Lab ids as the server's lab folders have them ("lab-01-cuda-hello"). */
const LAB_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** The tab title of a lab's playground: one tab per lab, found again by it. */
export function labPlaygroundTitle(lab: string): string {
  return `Kernels: ${lab}`;
}

function isLanguage(value: unknown): value is KernelLanguage {
  return value === 'cuda' || value === 'numba';
}

function dims(value: unknown): number[] | undefined {
  return Array.isArray(value) && value.length >= 1 && value.length <= 3 && value.every(n => Number.isInteger(n) && n >= 1)
    ? (value as number[])
    : undefined;
}

/**
 * The command's arguments, keeping only well-typed fields (command args come
 * from other extensions and from saved layouts, so nothing is taken on trust).
 */
export function readPlaygroundArgs(args: ReadonlyPartialJSONObject): PlaygroundArgs {
  const out: PlaygroundArgs = {};
  if (typeof args.source === 'string') {
    out.source = args.source;
  }
  if (isLanguage(args.language)) {
    out.language = args.language;
  }
  if (typeof args.arch === 'string' && /^sm_[0-9]{2,3}[af]?$/.test(args.arch)) {
    out.arch = args.arch;
  }
  if (typeof args.title === 'string' && args.title.trim()) {
    out.title = args.title.trim();
  }
  if (typeof args.lab === 'string' && LAB_ID.test(args.lab)) {
    out.lab = args.lab;
    out.title ??= labPlaygroundTitle(args.lab);
    if (typeof args.labTitle === 'string' && args.labTitle.trim()) {
      out.labTitle = args.labTitle.trim();
    }
  }
  if (typeof args.file === 'string' && args.file.trim() && !args.file.split('/').includes('..')) {
    out.file = args.file.trim();
    out.title ??= filePlaygroundTitle(out.file);
  }
  const run = args.run;
  if (run && typeof run === 'object' && !Array.isArray(run)) {
    const raw = run as Record<string, unknown>;
    const preset: RunPreset = {};
    if (typeof raw.kernel === 'string') {
      preset.kernel = raw.kernel;
    }
    preset.grid = dims(raw.grid);
    preset.block = dims(raw.block);
    if (Number.isInteger(raw.shared_bytes) && (raw.shared_bytes as number) >= 0) {
      preset.shared_bytes = raw.shared_bytes as number;
    }
    // Arguments are checked when the learner runs, with messages saying what is wrong.
    if (Array.isArray(raw.args)) {
      preset.args = raw.args as RunPreset['args'];
    }
    if (raw.expected && typeof raw.expected === 'object' && !Array.isArray(raw.expected)) {
      preset.expected = Object.fromEntries(
        Object.entries(raw.expected as Record<string, unknown>).filter(
          (entry): entry is [string, string] => typeof entry[1] === 'string'
        )
      );
    }
    for (const key of Object.keys(preset) as Array<keyof RunPreset>) {
      if (preset[key] === undefined) {
        delete preset[key];
      }
    }
    out.run = preset;
  }
  return out;
}

/** The tab title of a file's playground: "kernel.cu · Playground". */
export function filePlaygroundTitle(file: string): string {
  return `${file.split('/').pop() || file} · Playground`;
}

/** The DOM id of a playground of these args: one per linked file, else one per title. */
export function playgroundIdOf(args: Pick<PlaygroundArgs, 'title' | 'file'>): string {
  return args.file ? playgroundId(`file ${args.file}`) : playgroundId(args.title);
}

/** The DOM id of a playground: the plain one, or one per title. */
export function playgroundId(title: string | undefined): string {
  if (!title) {
    return 'gpudojo-kernel-playground';
  }
  const slug = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return `gpudojo-kernel-playground-${slug || 'untitled'}`;
}
