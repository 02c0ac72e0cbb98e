/**
 * The Memory section of a run view: the run's captures (one per rank), the
 * first shown inline, each openable in its own tab. A run that did not record
 * memory says how to turn it on, instead of an empty list.
 */

import { Widget } from '@lumino/widgets';
import type { GpudojoClient } from '../api/client';
import { FINAL_STATUSES } from '../api/types';
import type { Capture, Run } from '../api/types';
import { h } from '../dom';
import { RunArtifactSection } from '../runs/artifactSection';
import { formatBytes } from './format';
import { MemoryView } from './memoryView';

export interface RunMemorySectionOptions {
  client: GpudojoClient;
  /** Open a capture in its own main-area panel. */
  openCapture: (capture: string) => void;
  /** Captures to offer for a diff besides this run's. */
  openCaptures: () => Capture[];
}

export class RunMemorySection extends RunArtifactSection<Capture> {
  constructor(options: RunMemorySectionOptions) {
    const host = h('div', { className: 'gpudojo-run-memory-host' });
    super({
      title: 'Memory',
      sectionClass: 'gpudojo-run-memory-section',
      listClass: 'gpudojo-memory-captures',
      messageClass: 'gpudojo-memory-muted gpudojo-memory-captures-message',
      below: host,
      what: 'memory captures'
    });
    this._options = options;
    this._host = host;
  }

  protected async fetch(run: Run): Promise<Capture[]> {
    return (await this._options.client.listCaptures(run.id)).captures;
  }

  protected show(run: Run, captures: Capture[]): void {
    this._captures = captures;
    this._renderList(run);
  }

  dispose(): void {
    if (this._view && !this._view.isDisposed) {
      if (this._view.isAttached) {
        Widget.detach(this._view);
      }
      this._view.dispose();
    }
  }

  private _renderList(run: Run): void {
    const captures = this._captures;
    this.startList(captures.length, emptyMessage(run));
    for (const capture of captures) {
      const show = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-memory-capture-show',
        text: capture.label,
        title: `${capture.source} (${formatBytes(capture.size_bytes)})`,
        attrs: { type: 'button' }
      });
      show.addEventListener('click', () => this._showInline(capture.id));
      const tab = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-memory-capture-open',
        text: 'Open in a tab',
        attrs: { type: 'button' }
      });
      tab.addEventListener('click', () => this._options.openCapture(capture.id));
      this.list.appendChild(
        h(
          'li',
          { attrs: { 'data-capture': capture.id, 'data-kind': capture.kind } },
          show,
          h('span', { className: 'gpudojo-memory-muted', text: formatBytes(capture.size_bytes) }),
          tab
        )
      );
    }
    if (captures.length && !this._view && this.node.isConnected) {
      this._showInline(captures[0].id);
    }
  }

  /** Show capture `id` below the list (one at a time: each holds a timeline). */
  private _showInline(id: string): void {
    if (this._view?.capture === id || !this.node.isConnected) {
      return;
    }
    this.dispose();
    const view = new MemoryView({
      capture: id,
      client: this._options.client,
      candidates: async () => {
        const seen = new Map(this._captures.map(c => [c.id, c]));
        this._options.openCaptures().forEach(c => seen.set(c.id, seen.get(c.id) ?? c));
        return [...seen.values()];
      }
    });
    this._view = view;
    Widget.attach(view, this._host);
    for (const item of Array.from(this.list.children)) {
      item.toggleAttribute('data-shown', item.getAttribute('data-capture') === id);
    }
  }

  private _options: RunMemorySectionOptions;
  private _host: HTMLElement;
  private _captures: Capture[] = [];
  private _view: MemoryView | null = null;
}

/** What an empty list means for this run, and what to do about it. */
export function emptyMessage(run: Pick<Run, 'record_memory' | 'status'>): string {
  if (!run.record_memory) {
    return 'This run did not record memory. Tick “Record memory” in the run form (or send record_memory: true) and run it again to see its allocations over time.';
  }
  if (!FINAL_STATUSES.has(run.status)) {
    return 'Recording memory: each rank writes its capture when the run ends.';
  }
  return 'The run was asked to record memory but wrote no capture (it may have ended before labkit could save one: see the logs).';
}
