/**
 * MemoryView: one capture, as a main-area panel or inside a run's Memory
 * section. It opens with the analysis (kind, notes, peak, OOMs) and the
 * timeline; diff and estimator work from the same capture.
 */

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import type { GpudojoClient } from '../api/client';
import type { Analysis, Capture } from '../api/types';
import { h } from '../dom';
import { gpudojoIcon } from '../icons';
import { DiffView } from './diffView';
import { EstimatorView } from './estimatorView';
import { LegendView } from './legendView';
import { categoryColor, readMemoryPalette } from './palette';
import { captureModeLabel, renderDownload, renderNotes, renderOom, renderPeak } from './panels';
import { LayoutMode } from './stackLayout';
import { PROGRESS_POLL_MS, progressText, progressValue } from './progress';
import { MemoryTimeline } from './timeline';

/** Allocations listed one by one per window; the rest is the remainder. */
export const TOP_BANDS = 500;

export interface MemoryViewOptions {
  capture: string;
  client: GpudojoClient;
  /** The analysis when the caller has it already (POST analyze answers with it). */
  analysis?: Analysis;
  /** Captures to offer for a diff: the run's others and those open in this page. */
  candidates: () => Promise<Capture[]>;
}

export class MemoryView extends Widget {
  constructor(options: MemoryViewOptions) {
    super();
    this.capture = options.capture;
    this._options = options;
    this.addClass('gpudojo-memory-view');
    this.node.setAttribute('data-capture', this.capture);
    this.node.setAttribute('data-state', 'loading');
    this.title.label = `Memory: ${this.capture.replace(/^(file|run):/, '')}`;
    this.title.icon = gpudojoIcon;
    this.title.closable = true;
    this._status = h('p', { className: 'gpudojo-memory-status', text: 'Analysing the capture…', attrs: { role: 'status' } });
    this._error = h('div', { className: 'gpudojo-error', attrs: { role: 'alert' } });
    this._error.hidden = true;
    this.node.append(this._status, this._error);
    if (options.analysis) {
      this._show(options.analysis);
    } else {
      void this._load();
    }
  }

  readonly capture: string;

  /** The analysis, once loaded. */
  /** The estimator panel, once the analysis is drawn. */
  get estimator(): EstimatorView | null {
    return this._estimator;
  }

  get analysis(): Analysis | null {
    return this._analysis;
  }

  refreshTheme(): void {
    this._timeline?.refreshTheme();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._timeline?.dispose();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._timeline?.refreshTheme();
  }

  private async _load(): Promise<void> {
    // A capture never opened before is analysed now (seconds for a large snapshot): say how
    // far it is, from the server's progress, until the analysis arrives.
    const bar = h('progress', { className: 'gpudojo-memory-progress', attrs: { max: '1' } }) as HTMLProgressElement;
    this._status.after(bar);
    let waiting = true;
    const poll = async (): Promise<void> => {
      while (waiting && !this.isDisposed) {
        await new Promise(resolve => setTimeout(resolve, PROGRESS_POLL_MS));
        const progress = waiting ? await this._options.client.getMemoryProgress(this.capture).catch(() => null) : null;
        if (progress && waiting) {
          this._status.textContent = progressText(progress);
          const value = progressValue(progress);
          if (value === null) {
            bar.removeAttribute('value');
          } else {
            bar.value = value;
          }
        }
      }
    };
    void poll();
    try {
      this._show(await this._options.client.getMemoryAnalysis(this.capture));
    } catch (error) {
      this._status.hidden = true;
      this.node.setAttribute('data-state', 'error');
      this._showError(`The capture could not be analysed: ${(error as Error).message}`);
    } finally {
      waiting = false;
      bar.remove();
    }
  }

  private _show(analysis: Analysis): void {
    this._analysis = analysis;
    const client = this._options.client;
    const palette = readMemoryPalette(this.node);
    const colorOf = (c: number) => categoryColor(palette, c);
    const colorOfName = (name: string) => colorOf(analysis.categories.indexOf(name));
    this.title.label = `Memory: ${analysis.capture.label}`;
    this.title.caption = `${captureModeLabel(analysis)}: ${analysis.capture.source}`;
    const defaultMode: LayoutMode = analysis.capture.kind === 'cuda-snapshot' ? 'bands' : 'categories';
    this._timeline = new MemoryTimeline({
      analysis,
      mode: defaultMode,
      fetch: (request, signal) =>
        client.getMemoryWindow({ capture: this.capture, t0: request.t0, t1: request.t1, px: request.px, top: TOP_BANDS }, signal),
      failed: message => this._showError(message)
    });
    const timeline = this._timeline;
    const legend = new LegendView({
      categories: analysis.categories,
      colorOf,
      changed: mask => timeline.setVisible(mask)
    });
    const header = h(
      'div',
      { className: 'gpudojo-memory-header' },
      h('h2', { className: 'gpudojo-memory-title', text: analysis.capture.label }),
      h('span', {
        className: 'gpudojo-memory-mode-label',
        text: captureModeLabel(analysis),
        attrs: { 'data-kind': analysis.capture.kind }
      }),
      h('span', {
        className: 'gpudojo-memory-stats',
        text: `${analysis.allocations.toLocaleString()} allocations from ${analysis.entries.toLocaleString()} events · analysed in ${Math.round(
          analysis.analysis_ms
        )} ms${analysis.cached ? ' (cached)' : ''}`
      })
    );
    const side = h('div', { className: 'gpudojo-memory-side' }, renderPeak(analysis, colorOfName));
    analysis.ooms.forEach(oom => side.appendChild(renderOom(oom, analysis, colorOfName)));
    const diff = new DiffView({
      capture: analysis.capture,
      candidates: this._options.candidates,
      diff: (a, b) => client.diffMemory(a, b)
    });
    const estimator = new EstimatorView({
      context: analysis.context ?? null,
      measuredPeakBytes: analysis.peak.total_bytes,
      estimate: request => client.estimateMemory(request),
      estimateTransformer: request => client.estimateTransformer(request),
      colorOf
    });
    this._estimator = estimator;
    this._status.hidden = true;
    this.node.append(
      header,
      renderNotes(analysis) ?? '',
      renderDownload(analysis, client.memoryRawUrl(this.capture)),
      h('div', { className: 'gpudojo-memory-legend-row' }, this._modeToggle(defaultMode), legend.node),
      timeline.node,
      h('div', { className: 'gpudojo-memory-panels' }, side, h('div', { className: 'gpudojo-memory-side' }, diff.node, estimator.node))
    );
    this.node.setAttribute('data-state', 'ready');
    this.node.setAttribute('data-kind', analysis.capture.kind);
  }

  /** "By allocation" (bands over the remainder) or "By category" (areas). */
  private _modeToggle(initial: LayoutMode): HTMLElement {
    const group = h('div', { className: 'gpudojo-memory-layout', attrs: { role: 'group', 'aria-label': 'Draw' } });
    const buttons: HTMLButtonElement[] = [];
    const choices: Array<[LayoutMode, string]> = [
      ['bands', 'By allocation'],
      ['categories', 'By category']
    ];
    for (const [mode, label] of choices) {
      const button = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-minimal',
        text: label,
        attrs: { type: 'button', 'data-mode': mode, 'aria-pressed': String(mode === initial) }
      });
      button.addEventListener('click', () => {
        buttons.forEach(b => b.setAttribute('aria-pressed', String(b === button)));
        this._timeline?.setMode(mode);
      });
      buttons.push(button);
      group.appendChild(button);
    }
    return group;
  }

  private _showError(message: string): void {
    this._error.textContent = message;
    this._error.hidden = false;
  }

  private _options: MemoryViewOptions;
  private _analysis: Analysis | null = null;
  private _estimator: EstimatorView | null = null;
  private _timeline: MemoryTimeline | null = null;
  private _status: HTMLElement;
  private _error: HTMLElement;
}
