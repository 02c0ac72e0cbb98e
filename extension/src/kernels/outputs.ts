/**
 * The compile output tabs: PTX, SASS (per kernel), Resources and the compiler
 * log. Each renders the playground model's latest compile and nothing else.
 */

import type { ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { CompileResult, KernelReport } from '../api/types';
import { h } from '../dom';
import { SourceAsmMap, splitListing } from './asmMap';
import { AsmListView } from './asmView';
import { formatBytes } from './format';
import type { PlaygroundModel } from './model';

/** What the empty tabs say, depending on why there is nothing to show. */
function emptyText(result: CompileResult | null, what: string): string {
  if (!result) {
    return `No ${what} yet: the kernel has not compiled.`;
  }
  if (!result.ok) {
    return `No ${what}: the code did not compile (see the diagnostics under the editor).`;
  }
  return `No ${what} in this compile.`;
}

/** A tab holding one listing, with a note above it (empty, truncated, no line info). */
abstract class ListingPanel extends Widget {
  constructor(model: PlaygroundModel, className: string, label: string) {
    super();
    this.model = model;
    this.addClass('gpudojo-output');
    this.title.label = label;
    this.header = h('div', { className: 'gpudojo-output-header' });
    this.note = h('div', { className: 'gpudojo-output-note' });
    this.list = new AsmListView(className);
    this.node.append(this.header, this.note, this.list.node);
  }

  readonly model: PlaygroundModel;
  readonly list: AsmListView;

  /** Emitted with the source line (1-based) of a clicked listing line. */
  get sourceLineClicked(): ISignal<AsmListView, number> {
    return this.list.sourceLineClicked;
  }

  /** Redraw from the model's latest compile. */
  abstract refresh(): void;

  /** Highlight the listing lines of the editor's line (1-based). */
  highlightSource(line: number | null, reveal: boolean): void {
    this._sourceLine = line;
    this.list.highlightSource(line, reveal && this.isVisible);
  }

  dispose(): void {
    this.list.dispose();
    super.dispose();
  }

  protected setNote(text: string): void {
    this.note.textContent = text;
    this.note.hidden = !text;
  }

  protected onAfterShow(): void {
    // A tab shown after the cursor moved: bring the cursor's lines into view now.
    this.list.highlightSource(this._sourceLine, true);
  }

  protected header: HTMLElement;
  protected note: HTMLElement;
  private _sourceLine: number | null = null;
}

/** The PTX of the whole module, line-linked to the source through its .loc directives. */
export class PtxPanel extends ListingPanel {
  constructor(model: PlaygroundModel) {
    super(model, 'gpudojo-ptx', 'PTX');
    this.header.hidden = true;
  }

  refresh(): void {
    const result = this.model.compileResult;
    const lines = result?.ok ? splitListing(result.ptx) : [];
    if (!lines.length) {
      this.list.setListing(null);
      this.setNote(emptyText(result, 'PTX'));
      return;
    }
    const map = SourceAsmMap.fromPtx(result!.ptx_lines);
    const notes: string[] = [];
    if (result!.truncated.includes('ptx')) {
      notes.push('PTX cut at the server’s size cap.');
    }
    if (!map.hasLineInfo) {
      notes.push('No source line information in this PTX: lines are not linked.');
    }
    this.setNote(notes.join(' '));
    this.list.setListing({ lines, gutter: i => String(i + 1), map });
  }
}

/** A select of the compiled kernels, shown when there is more than one. */
export function kernelPicker(model: PlaygroundModel): { node: HTMLElement; refresh(): void } {
  const select = h('select', { className: 'jp-mod-styled gpudojo-kernel-picker', title: 'Which kernel to show' });
  const node = h('label', { className: 'gpudojo-kernel-picker-label' }, 'Kernel ', select);
  select.addEventListener('change', () => model.selectKernel(Number(select.value)));
  const refresh = () => {
    const kernels = model.compileResult?.kernels ?? [];
    node.hidden = kernels.length < 2;
    select.textContent = '';
    kernels.forEach((kernel, i) => {
      const option = h('option', { text: kernel.name, attrs: { value: String(i) } });
      option.selected = i === model.kernelIndex;
      select.appendChild(option);
    });
  };
  return { node, refresh };
}

/** Offset as SASS listings print it: /*0040*\/ (hex, 4 digits at least). */
function sassOffset(offset: number): string {
  return `/*${offset.toString(16).padStart(4, '0')}*/`;
}

/** The SASS of the chosen kernel, with each instruction's source line from -lineinfo. */
export class SassPanel extends ListingPanel {
  constructor(model: PlaygroundModel) {
    super(model, 'gpudojo-sass', 'SASS');
    this._picker = kernelPicker(model);
    this.header.appendChild(this._picker.node);
  }

  refresh(): void {
    this._picker.refresh();
    this.header.hidden = this._picker.node.hidden;
    const result = this.model.compileResult;
    const kernel: KernelReport | null = result?.ok ? this.model.kernel : null;
    if (!kernel || !kernel.sass.length) {
      this.list.setListing(null);
      this.setNote(kernel ? `No SASS for ${kernel.name}: the server could not disassemble it.` : emptyText(result, 'SASS'));
      return;
    }
    const map = SourceAsmMap.fromSass(kernel.sass);
    const notes: string[] = [];
    if (result!.truncated.includes('sass')) {
      notes.push('SASS cut at the server’s size cap.');
    }
    if (!map.hasLineInfo) {
      notes.push('No source lines in this SASS: instructions are not linked.');
    }
    this.setNote(notes.join(' '));
    this.list.setListing({
      lines: kernel.sass.map(instruction => instruction.text),
      gutter: i => sassOffset(kernel.sass[i].offset),
      map
    });
  }

  private _picker: { node: HTMLElement; refresh(): void };
}

/** The columns of the resources table: heading, why it matters, and the cell. */
const RESOURCE_COLUMNS: ReadonlyArray<[string, string, (k: KernelReport) => string, (k: KernelReport) => boolean]> = [
  ['Registers', 'Per thread; more registers, fewer resident warps', k => String(k.registers), () => false],
  ['Shared', 'Static shared memory per block', k => formatBytes(k.shared_bytes), () => false],
  ['Constant', 'Constant memory (bank 0 holds the kernel parameters)', k => formatBytes(k.constant_bytes), () => false],
  ['Stack', 'Stack frame per thread (local memory)', k => formatBytes(k.stack_bytes), k => k.stack_bytes > 0],
  ['Spill stores', 'Registers spilled to local memory: slow', k => formatBytes(k.spill_stores_bytes), k => k.spill_stores_bytes > 0],
  ['Spill loads', 'Spilled registers read back from local memory', k => formatBytes(k.spill_loads_bytes), k => k.spill_loads_bytes > 0],
  ['Barriers', 'Named barriers (__syncthreads uses one)', k => String(k.barriers), () => false]
];

/** One row per kernel: registers, shared, constant, stack, spills, barriers. */
export class ResourcesPanel extends Widget {
  constructor(model: PlaygroundModel) {
    super();
    this._model = model;
    this.addClass('gpudojo-output');
    this.addClass('gpudojo-resources');
    this.title.label = 'Resources';
  }

  refresh(): void {
    const result = this._model.compileResult;
    this.node.textContent = '';
    if (!result?.ok || !result.kernels.length) {
      this.node.appendChild(h('div', { className: 'gpudojo-output-note', text: emptyText(result, 'kernels') }));
      return;
    }
    const head = h(
      'tr',
      {},
      h('th', { text: 'Kernel' }),
      ...RESOURCE_COLUMNS.map(([label, why]) => h('th', { text: label, title: why }))
    );
    const rows = result.kernels.map(kernel =>
      h(
        'tr',
        { attrs: { 'data-kernel': kernel.name } },
        h('td', { className: 'gpudojo-resources-name', text: kernel.name, title: kernel.symbol }),
        ...RESOURCE_COLUMNS.map(([label, , cell, warn]) =>
          h('td', {
            className: warn(kernel) ? 'gpudojo-mod-warn' : '',
            text: cell(kernel),
            attrs: { 'data-column': label.toLowerCase().replace(/\s+/g, '-') }
          })
        )
      )
    );
    this.node.append(
      // Scrolls sideways in a narrow panel instead of cutting the last columns.
      h(
        'div',
        { className: 'gpudojo-resources-scroll', attrs: { tabindex: '0', role: 'region', 'aria-label': 'Kernel resources' } },
        h('table', { className: 'gpudojo-resources-table' }, h('thead', {}, head), h('tbody', {}, ...rows))
      ),
      h('div', {
        className: 'gpudojo-output-note',
        text: `${result.arch}, ${result.compiler}. Spills and stack live in local memory, which is as slow as global memory.`
      })
    );
  }

  private _model: PlaygroundModel;
}

/** The compiler's own log, as it printed it. */
export class LogPanel extends Widget {
  constructor(model: PlaygroundModel) {
    super();
    this._model = model;
    this.addClass('gpudojo-output');
    this.addClass('gpudojo-compile-log');
    this.title.label = 'Log';
    this._pre = h('pre', { className: 'gpudojo-log-text' });
    this.node.appendChild(this._pre);
  }

  refresh(): void {
    const result = this._model.compileResult;
    this._pre.textContent = result ? result.log.trim() || `${result.compiler}: no messages.` : 'Nothing compiled yet.';
  }

  private _model: PlaygroundModel;
  private _pre: HTMLElement;
}
