/**
 * MemoryView: one capture, as a main-area panel or inside a run's Memory
 * section. It opens with the analysis (kind, notes, peak, OOMs) and the
 * timeline; diff and estimator work from the same capture.
 */

import type { GpudojoClient } from '../api/client';
import type { Analysis, Capture } from '../api/types';
import { AnalysedView } from '../analysed/analysedView';
import { h } from '../dom';
import { DiffView } from './diffView';
import { EstimatorView } from './estimatorView';
import { LegendView } from './legendView';
import { categoryColor, readMemoryPalette } from './palette';
import { captureModeLabel, renderDownload, renderNotes, renderOom, renderPeak } from './panels';
import { LayoutMode } from './stackLayout';
import { MEMORY_PROGRESS } from './progress';
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

export class MemoryView extends AnalysedView<Analysis, MemoryTimeline> {
  constructor(options: MemoryViewOptions) {
    super({
      id: options.capture,
      feature: 'memory',
      idAttribute: 'capture',
      label: 'Memory',
      words: MEMORY_PROGRESS,
      fetch: () => options.client.getMemoryAnalysis(options.capture),
      progress: () => options.client.getMemoryProgress(options.capture)
    });
    this.capture = options.capture;
    this._options = options;
    this.start(options.analysis);
  }

  readonly capture: string;

  /** The estimator panel, once the analysis is drawn. */
  get estimator(): EstimatorView | null {
    return this._estimator;
  }

  /** The analysis, once loaded. */
  get analysis(): Analysis | null {
    return this._analysis;
  }

  protected draw(analysis: Analysis): void {
    this._analysis = analysis;
    const client = this._options.client;
    const palette = readMemoryPalette(this.node);
    const colorOf = (c: number) => categoryColor(palette, c);
    const colorOfName = (name: string) => colorOf(analysis.categories.indexOf(name));
    this.title.label = `Memory: ${analysis.capture.label}`;
    this.title.caption = `${captureModeLabel(analysis)}: ${analysis.capture.source}`;
    const defaultMode: LayoutMode = analysis.capture.kind === 'cuda-snapshot' ? 'bands' : 'categories';
    this.timeline = new MemoryTimeline({
      analysis,
      mode: defaultMode,
      fetch: (request, signal) =>
        client.getMemoryWindow({ capture: this.capture, t0: request.t0, t1: request.t1, px: request.px, top: TOP_BANDS }, signal),
      failed: message => this.showError(message)
    });
    const timeline = this.timeline;
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
    this.node.append(
      header,
      renderNotes(analysis) ?? '',
      renderDownload(analysis, client.memoryRawUrl(this.capture)),
      h('div', { className: 'gpudojo-memory-legend-row' }, this._modeToggle(defaultMode), legend.node),
      timeline.node,
      h('div', { className: 'gpudojo-memory-panels' }, side, h('div', { className: 'gpudojo-memory-side' }, diff.node, estimator.node))
    );
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
        this.timeline?.setMode(mode);
      });
      buttons.push(button);
      group.appendChild(button);
    }
    return group;
  }

  private _options: MemoryViewOptions;
  private _analysis: Analysis | null = null;
  private _estimator: EstimatorView | null = null;
}
