/**
 * The run panel: launch fields (kernel, grid, block, shared memory, arguments,
 * expected outputs), the Run button, and the result, always labelled with the
 * mode that produced it (a GPU, numba's simulator, the CPU emulator, or
 * compiled only); a CPU-emulated run adds its memory-access report.
 */

import { Widget } from '@lumino/widgets';
import type { OutputCheck, RunResult, RunTiming } from '../api/types';
import { h } from '../dom';
import { renderAccessReport } from './accessReportView';
import { failingThread, formatMaxError, formatMs, formatValue, runModeLabel, runVerdict } from './format';
import type { PlaygroundModel } from './model';
import type { RunForm } from './runSpec';

export interface RunPanelOptions {
  model: PlaygroundModel;
  /** Put the editor's cursor on `line` (1-based). */
  goToLine: (line: number) => void;
}

type FieldElement = HTMLInputElement | HTMLTextAreaElement;

/** Where a run will happen, said before running so nobody mistakes one mode for another. */
function whereItRuns(model: PlaygroundModel): string {
  const archs = model.archs;
  if (!archs) {
    return '';
  }
  if (archs.gpu_arch) {
    const name = archs.gpu_name ? `${archs.gpu_name}, ${archs.gpu_arch}` : archs.gpu_arch;
    return `Runs on this machine's GPU (${name}), timed with CUDA events.`;
  }
  return model.language === 'numba'
    ? `No GPU here: numba kernels run in numba's CUDA simulator on the CPU (at most ${archs.simulator_max_threads} threads; results are checked, timing means nothing).`
    : "No GPU here: CUDA C kernels run in gpudojo's CPU emulator (each thread a fiber: barriers and shuffles exact, out-of-bounds accesses named by thread and line; results are exact, times are not a GPU's).";
}

export class RunPanel extends Widget {
  constructor(options: RunPanelOptions) {
    super();
    this._model = options.model;
    this._goToLine = options.goToLine;
    this.addClass('gpudojo-run-panel');

    const field = (key: keyof RunForm, element: FieldElement, label: string, title: string) => {
      element.title = title;
      element.setAttribute('aria-label', label);
      element.spellcheck = false;
      element.addEventListener('input', () => this._model.setForm({ [key]: element.value }));
      this._fields.set(key, element);
      return h('label', { className: 'gpudojo-run-field' }, h('span', { text: label }), element);
    };
    const input = (className: string) => h('input', { className: `jp-mod-styled ${className}`, attrs: { type: 'text' } });
    const textarea = (className: string, rows: number) =>
      h('textarea', { className: `jp-mod-styled ${className}`, attrs: { rows: String(rows), wrap: 'off' } });

    this._run = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-run',
      text: 'Run',
      title: 'Launch the kernel with these arguments and check the outputs'
    });
    this._run.addEventListener('click', () => void this._model.run());
    this._where = h('div', { className: 'gpudojo-run-where' });
    this._problem = h('div', { className: 'gpudojo-error gpudojo-run-problem', attrs: { role: 'alert' } });
    this._result = h('div', { className: 'gpudojo-run-result', attrs: { 'data-status': 'none', 'aria-live': 'polite' } });

    this.node.append(
      h(
        'div',
        { className: 'gpudojo-run-launch' },
        field('kernel', input('gpudojo-run-kernel'), 'Kernel', 'The kernel to launch: its extern "C" name, or the Python function'),
        field('grid', input('gpudojo-run-grid'), 'Grid', 'Blocks per grid: 1 to 3 sizes, e.g. "16" or "8, 8"'),
        field('block', input('gpudojo-run-block'), 'Block', 'Threads per block: 1 to 3 sizes, e.g. "256" or "16, 16"'),
        field('sharedBytes', input('gpudojo-run-shared'), 'Dynamic shared (bytes)', 'Dynamic shared memory per block, in bytes')
      ),
      h(
        'div',
        { className: 'gpudojo-run-specs' },
        field(
          'args',
          textarea('gpudojo-run-args', 6),
          'Arguments (JSON list, in kernel order)',
          'Arrays: {"kind": "array", "name", "dtype", "shape", "init": zeros|ones|arange|random|full, "value", "seed", "output"}. ' +
            'Scalars: {"kind": "scalar", "name", "dtype", "value"}'
        ),
        field(
          'expected',
          textarea('gpudojo-run-expected', 6),
          'Expected outputs (JSON: name → NumPy expression)',
          'For each output array, a NumPy expression over the inputs as they were before the launch, e.g. {"y": "a * x + y"}'
        )
      ),
      h('div', { className: 'gpudojo-run-actions' }, this._run, this._where),
      this._problem,
      this._result
    );
    this.refreshForm();
    this.refresh();
  }

  /** Show the model's run fields (after a language switch or a preset), except the one being typed in. */
  refreshForm(): void {
    const form = this._model.form;
    for (const [key, element] of this._fields) {
      if (element.value !== form[key] && document.activeElement !== element) {
        element.value = form[key];
        element.scrollLeft = 0;
        element.scrollTop = 0;
      }
    }
  }

  /** Redraw the button, the problem line and the result. */
  refresh(): void {
    const model = this._model;
    const runs = model.runs;
    this._run.disabled = runs.running;
    this._run.textContent = runs.running ? 'Running…' : 'Run';
    this._where.textContent = whereItRuns(model);
    this._problem.textContent = runs.error ?? '';
    this._problem.hidden = !runs.error;
    const result = runs.result;
    this._result.textContent = '';
    this._result.setAttribute('data-status', result ? result.status : 'none');
    this._result.classList.toggle('gpudojo-mod-stale', !!result && runs.stale);
    if (result) {
      this._renderResult(result, runs.stale);
    }
  }

  private _renderResult(result: RunResult, stale: boolean): void {
    const mode = h('div', {
      className: 'gpudojo-run-mode',
      text: runModeLabel(result.mode, result.device),
      attrs: { 'data-mode': result.mode }
    });
    const verdict = h('div', { className: 'gpudojo-run-verdict', text: runVerdict(result) });
    this._result.append(mode, verdict);
    if (stale) {
      this._result.appendChild(
        h('div', { className: 'gpudojo-run-stale', text: 'The source or settings changed since this run: run again to see the current kernel.' })
      );
    }
    if (result.mode_note) {
      this._result.appendChild(h('div', { className: 'gpudojo-run-mode-note', text: result.mode_note }));
    }
    if (result.error) {
      this._result.appendChild(this._renderError(result));
    }
    if (result.checks.length) {
      this._result.appendChild(renderChecks(result.checks));
    }
    if (result.memory) {
      this._result.appendChild(renderAccessReport(result.memory, this._goToLine));
    }
    if (result.timing) {
      this._result.appendChild(
        h('div', { className: 'gpudojo-run-timing', text: timingText(result.timing, result.mode) })
      );
    }
    if (result.stdout) {
      this._result.appendChild(h('pre', { className: 'gpudojo-run-stdout', text: result.stdout }));
    }
    this._result.appendChild(
      h('div', { className: 'gpudojo-run-wall', text: `Request took ${formatMs(result.wall_ms)} on the server.` })
    );
  }

  private _renderError(result: RunResult): HTMLElement {
    const error = result.error!;
    const node = h(
      'div',
      { className: 'gpudojo-run-error', attrs: { 'data-kind': error.kind, role: 'alert' } },
      h('span', { className: 'gpudojo-run-error-kind', text: error.kind.replace(/_/g, ' ') }),
      h('pre', { className: 'gpudojo-run-error-message', text: error.message })
    );
    const who = failingThread(error.thread, error.block);
    if (who) {
      node.appendChild(
        h('div', {
          className: 'gpudojo-run-error-thread',
          text: `In ${who}`,
          attrs: {
            'data-thread': (error.thread ?? []).join(','),
            'data-block': (error.block ?? []).join(',')
          }
        })
      );
    }
    if (error.line) {
      const line = error.line;
      const link = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-minimal gpudojo-run-error-line',
        text: `Source line ${line}`,
        title: 'Show the line in the editor',
        attrs: { 'data-line': String(line) }
      });
      link.addEventListener('click', () => this._goToLine(line));
      node.appendChild(link);
    }
    return node;
  }

  private _model: PlaygroundModel;
  private _goToLine: (line: number) => void;
  private _fields = new Map<keyof RunForm, FieldElement>();
  private _run: HTMLButtonElement;
  private _where: HTMLElement;
  private _problem: HTMLElement;
  private _result: HTMLElement;
}

/** "mean 0.012 ms (min …, max …) over 20 launches after 3 warm-up, CUDA events". */
export function timingText(timing: RunTiming, mode: RunResult['mode']): string {
  const spread = timing.repeats > 1 ? ` (min ${formatMs(timing.min_ms)}, max ${formatMs(timing.max_ms)})` : '';
  const count = `${timing.repeats} launch${timing.repeats === 1 ? '' : 'es'}`;
  const text = `Mean ${formatMs(timing.mean_ms)}${spread} over ${count}, ${timing.method}`;
  return mode === 'simulator' ? `${text}. Simulator time says nothing about GPU speed.` : `${text}.`;
}

function renderChecks(checks: ReadonlyArray<OutputCheck>): HTMLElement {
  const head = h(
    'tr',
    {},
    ...['Output', 'Result', 'Max error', 'Mismatches', 'First mismatch', 'First values'].map(text => h('th', { text }))
  );
  const rows = checks.map(check => {
    const first = check.first_mismatch;
    const firstText = first
      ? `[${first.index.join(', ')}]: got ${formatValue(first.got)}, expected ${formatValue(first.expected)}`
      : '';
    const outcome = !check.checked ? 'not checked' : check.ok ? 'ok' : 'mismatch';
    return h(
      'tr',
      { attrs: { 'data-name': check.name, 'data-ok': String(check.ok), 'data-checked': String(check.checked) } },
      h('td', { text: check.name }),
      h('td', { className: `gpudojo-check-outcome gpudojo-check-${outcome.replace(' ', '-')}`, text: outcome }),
      h('td', { text: formatMaxError(check) }),
      h('td', { text: check.checked ? String(check.mismatches) : '' }),
      h('td', { text: firstText }),
      h('td', { className: 'gpudojo-check-preview', text: check.preview.map(formatValue).join(', ') })
    );
  });
  return h('table', { className: 'gpudojo-run-checks' }, h('thead', {}, head), h('tbody', {}, ...rows));
}
