/**
 * KernelPlayground: write a kernel, see its PTX, SASS, resources and
 * occupancy as you type, and run it. The layout is the toolbar on top, the
 * editor and the run panel on the left, the compile outputs in tabs on the right.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { CodeEditor } from '@jupyterlab/codeeditor';
import { MessageLoop } from '@lumino/messaging';
import { Panel, SplitPanel, TabPanel, Widget } from '@lumino/widgets';
import type { GpudojoClient } from '../api/client';
import { accessMarks } from './accessReport';
import { gpudojoIcon } from '../icons';
import type { PlaygroundArgs } from './commands';
import { playgroundIdOf } from './commands';
import { ExamplesMenu } from './examplesMenu';
import { PlaygroundChange, PlaygroundModel } from './model';
import { OccupancyPanel } from './occupancyView';
import { LogPanel, PtxPanel, ResourcesPanel, SassPanel } from './outputs';
import { RunPanel } from './runPanel';
import { SourceEditor } from './sourceEditor';
import { PlaygroundToolbar } from './toolbar';
import { h } from '../dom';

export interface KernelPlaygroundOptions {
  client: GpudojoClient;
  editorFactory: CodeEditor.Factory;
  args: PlaygroundArgs;
  /** Write `text` to the linked file (`args.file`, relative to the server's root). */
  saveFile?: (path: string, text: string) => Promise<void>;
}

export class KernelPlayground extends Panel {
  constructor(options: KernelPlaygroundOptions) {
    super();
    this.addClass('gpudojo-playground');
    const { args } = options;
    this.givenTitle = args.title;
    this.lab = args.lab;
    this.labTitle = args.labTitle;
    this.file = args.file;
    this._saveFile = options.saveFile ?? null;
    this._fileText = args.file ? (args.source ?? null) : null;
    const model = (this.model = new PlaygroundModel({
      source: options.client,
      language: args.language,
      text: args.source,
      arch: args.arch,
      run: args.run
    }));

    this._toolbar = new PlaygroundToolbar(model);
    this._examples = args.lab
      ? new ExamplesMenu({ lab: args.lab, labTitle: args.labTitle, source: options.client, model })
      : null;
    if (this._examples) {
      this._toolbar.addLeadingControl(this._examples.node);
    }
    this._fileBar = args.file ? this._buildFileBar(args.file) : null;
    if (this._fileBar) {
      this.addClass('gpudojo-playground-linked');
      this._toolbar.addLeadingControl(this._fileBar);
    }
    this._editor = new SourceEditor({
      factory: options.editorFactory,
      text: model.source,
      language: model.language,
      onText: text => model.setSource(text),
      onCursorLine: line => this._onCursorLine(line)
    });
    this._run = new RunPanel({ model, goToLine: line => this._editor.goToLine(line) });

    this._ptx = new PtxPanel(model);
    this._sass = new SassPanel(model);
    this._resources = new ResourcesPanel(model);
    this._occupancy = new OccupancyPanel(model);
    this._log = new LogPanel(model);
    this._tabs = new TabPanel();
    this._tabs.addClass('gpudojo-playground-outputs');
    for (const widget of [this._ptx, this._sass, this._resources, this._occupancy, this._log]) {
      this._tabs.addWidget(widget);
    }
    for (const listing of [this._ptx, this._sass]) {
      listing.sourceLineClicked.connect((_, line) => {
        // The listing the learner clicked in stays where it is; only the editor moves.
        this._revealListings = false;
        try {
          this._editor.goToLine(line);
        } finally {
          this._revealListings = true;
        }
        this._editor.setLinkedLine(line);
      });
    }

    const left = new SplitPanel({ orientation: 'vertical', spacing: 4 });
    left.addClass('gpudojo-playground-left');
    left.addWidget(this._editor);
    left.addWidget(this._run);
    left.setRelativeSizes([3, 2]);
    const main = new SplitPanel({ orientation: 'horizontal', spacing: 4 });
    main.addClass('gpudojo-playground-main');
    main.addWidget(left);
    main.addWidget(this._tabs);
    // The source is what the learner works on: it gets the larger share.
    main.setRelativeSizes([3, 2]);

    // The toolbar takes its natural height (it wraps on narrow screens); the split takes the rest.
    this.addWidget(this._toolbar);
    this.addWidget(main);
    this._resizeObserver = new ResizeObserver(() => {
      if (main.isAttached) {
        MessageLoop.sendMessage(main, Widget.ResizeMessage.UnknownSize);
      }
    });
    this._resizeObserver.observe(main.node);

    model.changed.connect(this._onModelChanged, this);
    this._refreshOutputs();
    this._drawFileState();
    void this._start(args.source === undefined);
  }

  readonly model: PlaygroundModel;

  /** The title the command gave (playgrounds are found again by it); undefined for the plain one. */
  readonly givenTitle: string | undefined;

  /** The lab whose kernel examples the toolbar offers, if any. */
  readonly lab: string | undefined;

  /** That lab's title, as the command gave it. */
  readonly labTitle: string | undefined;

  /** The file this playground is linked to (Save writes its CUDA C source there), if any. */
  readonly file: string | undefined;

  /** Whether the CUDA C source has edits of its own: it differs from the linked file's text. */
  get unsaved(): boolean {
    return this.file !== undefined && this._fileText !== this.model.sourceOf('cuda');
  }

  /**
   * The linked file's text as its editor holds it now (or as saved, with no editor open), and
   * whether that editor has unsaved changes. With no edits of its own, the playground follows
   * it: the learner types in kernel.cu and the playground compiles what they typed. With edits
   * of its own, it keeps them and offers the editor's text instead of overwriting either.
   */
  followFile(text: string, dirty: boolean): void {
    if (!this.file || this.isDisposed) {
      return;
    }
    const source = this.model.sourceOf('cuda');
    const ownEdits = this._fileText !== null && source !== this._fileText;
    this._fileDirty = dirty;
    if (text !== this._fileText) {
      this._fileText = text;
      if (!ownEdits || source === text) {
        this._takeFileText();
      } else {
        this._editorMovedOn = true;
      }
    }
    this._drawFileState();
  }

  /** The file's text as the playground last saw it, without following it (a restored playground). */
  setFileText(text: string, dirty: boolean): void {
    if (!this.file || this.isDisposed) {
      return;
    }
    this._fileText = text;
    this._fileDirty = dirty;
    this._drawFileState();
  }

  /** Replace the playground's CUDA C source with the file's text (its own edits are dropped). */
  private _takeFileText(): void {
    const text = this._fileText;
    this._editorMovedOn = false;
    if (text === null) {
      return;
    }
    this.model.setSourceOf('cuda', text);
    if (this.model.language === 'cuda') {
      this._editor.setText(text);
    }
    this._drawFileState();
  }

  /** Write the CUDA C source to the linked file; resolves true once it is saved. */
  async saveToFile(): Promise<boolean> {
    if (!this.file || !this._saveFile) {
      return false;
    }
    const text = this.model.sourceOf('cuda');
    // Until the server has the file, nothing says "Saved" (writing through the editor makes it
    // follow its own new text on the way).
    this._saving = true;
    this._drawFileState();
    try {
      await this._saveFile(this.file, text);
    } catch (error) {
      this._saving = false;
      this._drawFileState(`Not saved: ${(error as Error).message ?? error}`, 'error');
      return false;
    } finally {
      this._saving = false;
    }
    this._fileText = text;
    this._fileDirty = false;
    this._editorMovedOn = false;
    this._drawFileState();
    return true;
  }

  /** "Linked to <file> · Saved / Unsaved changes" and its Save button. */
  private _buildFileBar(file: string): HTMLElement {
    this._fileState = h('span', { className: 'gpudojo-playground-file-state', attrs: { 'aria-live': 'polite' } });
    const save = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-playground-save',
      text: 'Save to file',
      title: `Write this CUDA C source to ${file} (Ctrl+S)`,
      attrs: { type: 'button' }
    });
    save.addEventListener('click', () => void this.saveToFile());
    this._saveButton = save;
    const take = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-reject gpudojo-playground-take',
      text: 'Use the editor’s text',
      title: `Replace this playground's CUDA C source with ${file} as its editor holds it (the playground's edits are dropped)`,
      attrs: { type: 'button', hidden: '' }
    });
    take.addEventListener('click', () => this._takeFileText());
    this._takeButton = take;
    const bar = h(
      'span',
      {
        className: 'gpudojo-playground-file',
        title: `This playground edits ${file}: Save writes the CUDA C source back to it`,
        attrs: { 'data-file': file }
      },
      'Linked to ',
      h('code', { text: file }),
      ' ',
      this._fileState,
      save,
      take
    );
    return bar;
  }

  private _drawFileState(text?: string, kind: 'error' | 'info' = 'info'): void {
    if (!this._fileState) {
      return;
    }
    const unsaved = this.unsaved;
    const conflict = unsaved && this._editorMovedOn;
    const [label, state] = text
      ? [text, kind]
      : this._saving
        ? ['Saving…', 'info']
      : conflict
        ? ['Unsaved changes; its editor changed too', 'conflict']
        : unsaved
          ? ['Unsaved changes', 'unsaved']
          : this._fileDirty
            ? ['Follows its editor (not saved there)', 'following']
            : ['Saved', 'saved'];
    this._fileState.textContent = label;
    this._fileState.dataset.state = state;
    if (this._saveButton) {
      this._saveButton.disabled = !this._saveFile;
    }
    if (this._takeButton) {
      this._takeButton.hidden = !conflict;
    }
    // The tab shows JupyterLab's unsaved dot (MainAreaWidget copies the content's title).
    this.title.className = unsaved ? 'jp-mod-dirty' : '';
  }

  /** Re-read theme colours (the occupancy chart draws with them). */
  refreshTheme(): void {
    this._occupancy.refreshTheme();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._resizeObserver.disconnect();
    this.model.dispose();
    super.dispose();
  }

  /**
   * Fetch the lab's examples and the architectures. A lab's playground opened
   * without a source waits for its examples and loads the first, so the
   * starter is never compiled only to be replaced.
   */
  private async _start(loadFirstExample: boolean): Promise<void> {
    const examples = this._examples?.fetch();
    if (examples && loadFirstExample) {
      await examples;
      if (this.isDisposed) {
        return;
      }
      this._examples?.loadFirst();
    }
    await this.model.loadArchs();
  }

  private _onModelChanged(_: PlaygroundModel, change: PlaygroundChange): void {
    switch (change) {
      case 'archs':
      case 'settings':
        this._toolbar.refresh();
        this._run.refresh();
        break;
      case 'language':
      case 'loaded':
        this._drawFileState();
        this._editor.setLanguage(this.model.language);
        this._editor.setText(this.model.source);
        this._toolbar.refresh();
        this._run.refreshForm();
        this._run.refresh();
        break;
      case 'form':
        this._run.refreshForm();
        break;
      case 'compile':
        this._toolbar.refreshStatus();
        this._refreshOutputs();
        this._editor.setDiagnostics(this.model.marks);
        break;
      case 'kernel':
        this._sass.refresh();
        this._sass.highlightSource(this._cursorLine, false);
        this._occupancy.refresh();
        break;
      case 'occupancy':
        this._occupancy.refresh();
        break;
      case 'run': {
        this._run.refresh();
        this._editor.setDiagnostics(this.model.marks);
        const runs = this.model.runs;
        this._editor.setAccessMarks(runs.stale ? [] : accessMarks(runs.result?.memory));
        break;
      }
      case 'source':
        if (!this.unsaved) {
          // Typed back to the file's text: nothing is left to reconcile.
          this._editorMovedOn = false;
        }
        this._drawFileState();
        break;
    }
  }

  private _refreshOutputs(): void {
    for (const panel of [this._ptx, this._sass, this._resources, this._occupancy, this._log]) {
      panel.refresh();
    }
    this._ptx.highlightSource(this._cursorLine, false);
    this._sass.highlightSource(this._cursorLine, false);
  }

  private _onCursorLine(line: number): void {
    this._cursorLine = line;
    this._editor.setLinkedLine(null);
    this._ptx.highlightSource(line, this._revealListings);
    this._sass.highlightSource(line, this._revealListings);
  }

  private _toolbar: PlaygroundToolbar;
  private _examples: ExamplesMenu | null;
  private _fileBar: HTMLElement | null;
  private _fileState: HTMLElement | null = null;
  private _saveButton: HTMLButtonElement | null = null;
  private _takeButton: HTMLButtonElement | null = null;
  private _saveFile: ((path: string, text: string) => Promise<void>) | null;
  /** The linked file's text as its editor (or, with none open, the disk) last held it. */
  private _fileText: string | null;
  /** Whether the file's editor has changes it has not saved. */
  private _fileDirty = false;
  /** The file's editor changed while the playground had edits of its own. */
  private _editorMovedOn = false;
  /** A save to the file is on its way. */
  private _saving = false;
  private _editor: SourceEditor;
  private _run: RunPanel;
  private _ptx: PtxPanel;
  private _sass: SassPanel;
  private _resources: ResourcesPanel;
  private _occupancy: OccupancyPanel;
  private _log: LogPanel;
  private _tabs: TabPanel;
  private _cursorLine: number | null = null;
  private _revealListings = true;
  private _resizeObserver: ResizeObserver;
}

/** The playground in a main-area tab, with its id, title and icon. */
export function createPlaygroundWidget(options: KernelPlaygroundOptions): MainAreaWidget<KernelPlayground> {
  const content = new KernelPlayground(options);
  const widget = new MainAreaWidget({ content });
  widget.id = playgroundIdOf(options.args);
  widget.title.label = options.args.title ?? 'Kernel Playground';
  widget.title.caption = 'Write a GPU kernel; see its PTX, SASS, registers and occupancy; run it';
  widget.title.icon = gpudojoIcon;
  widget.title.closable = true;
  widget.addClass('gpudojo-playground-panel');
  return widget;
}
