/** The kernels plugin: the Kernel Playground, its command, palette and launcher entries, and restoring it. */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IThemeManager, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { IEditorServices } from '@jupyterlab/codeeditor';
import { IDocumentManager } from '@jupyterlab/docmanager';
import type { DocumentRegistry } from '@jupyterlab/docregistry';
import { ILauncher } from '@jupyterlab/launcher';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import type { GpudojoClient } from '../api/client';
import { gpudojoIcon } from '../icons';
import { followTheme, readAsSeen, showInMainArea } from '../shell';
import { IGpudojoClient } from '../tokens';
import { KernelCommandIds, playgroundIdOf, readPlaygroundArgs } from './commands';
import { Debouncer } from './latest';
import type { PlaygroundChange } from './model';
import { KernelPlayground, createPlaygroundWidget } from './playground';

const PALETTE_CATEGORY = 'gpudojo';

/** Quiet time before a playground's source is saved for restoring (ms). */
const SAVE_DELAY_MS = 1000;

/** Changes to what a reload restores (the rest is fetched or computed again). */
const SAVED_CHANGES: ReadonlySet<PlaygroundChange> = new Set<PlaygroundChange>(['source', 'language', 'settings', 'form', 'loaded']);

export const kernelsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudojo:kernels',
  description: 'The Kernel Playground: CUDA C and numba kernels with PTX, SASS, resources, occupancy and runs.',
  autoStart: true,
  requires: [IEditorServices, IGpudojoClient],
  optional: [ICommandPalette, ILauncher, ILayoutRestorer, IThemeManager, IDocumentManager],
  activate: (
    app: JupyterFrontEnd,
    editorServices: IEditorServices,
    client: GpudojoClient,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    restorer: ILayoutRestorer | null,
    themeManager: IThemeManager | null,
    docManager: IDocumentManager | null
  ) => {
    const tracker = new WidgetTracker<MainAreaWidget<KernelPlayground>>({
      namespace: 'gpudojo-kernel-playground'
    });

    /**
     * Write a linked playground's source to its file: through the file's editor when it is
     * open (so the editor shows it and saves it without a "changed on disk" conflict), else
     * through the contents API.
     */
    const saveFile = async (path: string, text: string): Promise<void> => {
      const open = docManager?.findWidget(path) ?? null;
      const context = open ? docManager?.contextForWidget(open) : undefined;
      if (context) {
        if (context.model.toString() !== text) {
          context.model.fromString(text);
        }
        await context.save();
        return;
      }
      await app.serviceManager.contents.save(path, { type: 'file', format: 'text', content: text });
    };

    /** Playgrounds linked to `path`. */
    const linkedTo = (path: string): KernelPlayground[] => {
      const found: KernelPlayground[] = [];
      tracker.forEach(widget => {
        if (widget.content.file === path && !widget.isDisposed) {
          found.push(widget.content);
        }
      });
      return found;
    };

    // Editor -> playground: every edit in a file's editor reaches the playgrounds linked to it,
    // as typed (a playground with edits of its own keeps them and says the editor moved on).
    const followed = new WeakSet<DocumentRegistry.Context>();
    app.docRegistry.addWidgetExtension('Editor', {
      createNew: (_widget: unknown, context: DocumentRegistry.Context) => {
        if (followed.has(context)) {
          return; // a second view of the same file shares its context
        }
        followed.add(context);
        const follow = (): void => {
          if (context.isDisposed) {
            return;
          }
          const playgrounds = linkedTo(context.path);
          if (playgrounds.length) {
            const text = context.model.toString();
            playgrounds.forEach(playground => playground.followFile(text, context.model.dirty));
          }
        };
        // After the change is whole: the model marks itself dirty once its content signal is out.
        context.model.contentChanged.connect(() => void Promise.resolve().then(follow));
        context.model.stateChanged.connect((_, change) => {
          if (change.name === 'dirty') {
            follow();
          }
        });
        // The editor closed: what is saved is the file's text again (unsaved edits were discarded).
        context.disposed.connect(() => {
          const path = context.path;
          if (linkedTo(path).length) {
            void readAsSeen(app, docManager, path)
              .then(({ text, dirty }) => linkedTo(path).forEach(playground => playground.followFile(text, dirty)))
              .catch(() => undefined);
          }
        });
      }
    });

    app.commands.addCommand(KernelCommandIds.openPlayground, {
      label: args => {
        const { title } = readPlaygroundArgs(args);
        return title ? `Open Kernel Playground: ${title}` : 'Open Kernel Playground';
      },
      caption: 'Write a CUDA C or numba kernel; see its PTX, SASS, registers and occupancy; run it',
      icon: args => (args['isPalette'] ? undefined : gpudojoIcon),
      execute: args => {
        const parsed = readPlaygroundArgs(args);
        const id = playgroundIdOf(parsed);
        // A playground that is open already keeps the learner's edits: reveal it as it is.
        let widget = tracker.find(w => w.id === id && !w.isDisposed) ?? null;
        if (!widget) {
          widget = createPlaygroundWidget({
            client,
            editorFactory: editorServices.factoryService.newDocumentEditor,
            args: parsed,
            saveFile
          });
          const opened = widget;
          // Save the source now and then, so a reload reopens it as it was.
          const save = new Debouncer(() => void tracker.save(opened), SAVE_DELAY_MS);
          opened.content.model.changed.connect((_, change) => {
            if (SAVED_CHANGES.has(change)) {
              save.schedule();
            }
          });
          opened.disposed.connect(() => save.cancel());
          void tracker.add(opened);
          const file = parsed.file;
          if (file) {
            // What the file holds now: a restored playground's own edits then show as unsaved.
            void readAsSeen(app, docManager, file)
              .then(({ text, dirty }) => opened.content.setFileText(text, dirty))
              .catch(() => undefined);
          }
        }
        showInMainArea(app, widget);
        return widget;
      }
    });

    app.commands.addCommand(KernelCommandIds.savePlaygroundFile, {
      label: 'Save Kernel Playground to Its File',
      caption: 'Write the playground’s CUDA C source to the file it was opened from',
      isEnabled: () => !!tracker.currentWidget?.content.file,
      execute: () => tracker.currentWidget?.content.saveToFile()
    });
    // Ctrl+S in a linked playground saves to its file (JupyterLab's own Save does nothing there).
    app.commands.addKeyBinding({
      command: KernelCommandIds.savePlaygroundFile,
      keys: ['Accel S'],
      selector: '.gpudojo-playground-linked'
    });

    if (palette) {
      palette.addItem({ command: KernelCommandIds.openPlayground, category: PALETTE_CATEGORY });
    }
    if (launcher) {
      launcher.add({ command: KernelCommandIds.openPlayground, category: 'gpudojo', rank: 20 });
    }
    followTheme(themeManager, () => tracker.forEach(widget => widget.content.refreshTheme()));
    if (restorer) {
      void restorer.restore(tracker, {
        command: KernelCommandIds.openPlayground,
        args: widget => {
          const { model, givenTitle, lab, labTitle, file } = widget.content;
          const snapshot = model.snapshot();
          // The source is saved too, so a restored lab playground keeps the learner's code, not the first example.
          const args: ReadonlyPartialJSONObject = {
            ...snapshot,
            run: { ...snapshot.run } as ReadonlyPartialJSONObject,
            ...(givenTitle ? { title: givenTitle } : {}),
            ...(lab ? { lab } : {}),
            ...(labTitle ? { labTitle } : {}),
            ...(file ? { file } : {})
          };
          return args;
        },
        name: widget => widget.id
      });
    }
  }
};
