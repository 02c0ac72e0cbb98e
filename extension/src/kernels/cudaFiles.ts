/**
 * CUDA files in JupyterLab: .cu and .cuh open in JupyterLab's editor highlighted as CUDA
 * C++ (C++'s grammar under a CUDA file type), a .cu file gets the playground's compile
 * feedback above its editor (FileCompileBar), and "Open in Kernel Playground" in the file
 * browser's context menu opens a playground linked to the file (its Save writes back).
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, showErrorMessage } from '@jupyterlab/apputils';
import type { CodeEditor } from '@jupyterlab/codeeditor';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { IDocumentManager } from '@jupyterlab/docmanager';
import type { DocumentRegistry, IDocumentWidget } from '@jupyterlab/docregistry';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import type { ArchList } from '../api/types';
import type { GpudojoClient } from '../api/client';
import { gpudojoIcon } from '../icons';
import { IGpudojoClient } from '../tokens';
import { addOpenFileCommand, readAsSeen } from '../shell';
import { KernelCommandIds } from './commands';
import { FileCompileBar } from './fileCompileBar';
import { CUDA_EXTENSIONS, CUDA_MIME, compilesAsItIsEdited, fileRunPreset, isCudaPath } from './fileFeedback';

/** The file type's name: the file browser lists .cu files with data-file-type="cuda". */
const FILE_TYPE = 'cuda';

export const cudaFilesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudojo:cuda-files',
  description: 'CUDA C++ files: highlighting, compile feedback while editing, and "Open in Kernel Playground".',
  autoStart: true,
  requires: [IGpudojoClient, IDocumentManager],
  optional: [IEditorLanguageRegistry, IFileBrowserFactory, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    client: GpudojoClient,
    docManager: IDocumentManager,
    languages: IEditorLanguageRegistry | null,
    browsers: IFileBrowserFactory | null,
    palette: ICommandPalette | null
  ) => {
    if (languages && !languages.findByMIME(CUDA_MIME)) {
      languages.addLanguage({
        name: 'CUDA',
        displayName: 'CUDA C++',
        mime: CUDA_MIME,
        extensions: CUDA_EXTENSIONS.map(ext => ext.slice(1)),
        // CUDA C++ is C++ with a few keywords more: C++'s grammar highlights it.
        load: async () => (await languages.getLanguage('text/x-c++src'))!.support!
      });
    }
    app.docRegistry.addFileType({
      name: FILE_TYPE,
      displayName: 'CUDA C++',
      extensions: [...CUDA_EXTENSIONS],
      mimeTypes: [CUDA_MIME],
      contentType: 'file',
      fileFormat: 'text',
      icon: gpudojoIcon
    });

    // Fetched once for every file; a failure is forgotten so the next compile asks again.
    let archs: Promise<ArchList> | null = null;
    const getArchs = (): Promise<ArchList> => {
      archs ??= client.getKernelArchs().catch(error => {
        archs = null;
        throw error;
      });
      return archs;
    };

    const openInPlayground = async (path: string): Promise<void> => {
      let source: string;
      try {
        source = (await readAsSeen(app, docManager, path)).text;
      } catch (error) {
        void showErrorMessage('The file could not be opened in the Kernel Playground', (error as Error).message ?? error);
        return;
      }
      const run = fileRunPreset(source);
      await app.commands.execute(KernelCommandIds.openPlayground, {
        source,
        language: 'cuda',
        file: path,
        ...(run ? { run } : {})
      });
    };

    addOpenFileCommand(app, browsers, palette, {
      id: KernelCommandIds.openFileInPlayground,
      label: 'Open in Kernel Playground',
      caption: 'Open this CUDA C file in the Kernel Playground (PTX, SASS, occupancy, runs); its Save writes back to the file',
      icon: gpudojoIcon,
      accept: isCudaPath,
      open: openInPlayground,
      selector: `.jp-DirListing-item[data-file-type="${FILE_TYPE}"]`,
      rank: 59
    });

    app.docRegistry.addWidgetExtension('Editor', {
      createNew: (widget: IDocumentWidget, context: DocumentRegistry.Context) => {
        if (!isCudaPath(context.path) || !compilesAsItIsEdited(context.path)) {
          return;
        }
        const editor = (widget.content as unknown as { editor?: CodeEditor.IEditor }).editor;
        if (!editor || !(widget instanceof MainAreaWidget)) {
          return;
        }
        const bar = new FileCompileBar({
          editor,
          text: () => context.model.toString(),
          archs: getArchs,
          client,
          openInPlayground: () => void openInPlayground(context.path)
        });
        widget.addClass('gpudojo-cuda-file');
        widget.contentHeader.addWidget(bar);
        context.model.contentChanged.connect(() => bar.schedule());
        void context.ready.then(() => {
          if (!bar.isDisposed) {
            void bar.compile();
          }
        });
        widget.disposed.connect(() => bar.dispose());
        return bar;
      }
    });
  }
};
