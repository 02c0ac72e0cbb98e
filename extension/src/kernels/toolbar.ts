/**
 * The playground's toolbar: language, architecture, compiler options, the
 * Compile button and the compile status (with the compiler that answered).
 */

import { Widget } from '@lumino/widgets';
import type { KernelLanguage } from '../api/types';
import { h } from '../dom';
import { archLabel, compileSummary } from './format';
import type { PlaygroundModel } from './model';

const LANGUAGES: ReadonlyArray<[KernelLanguage, string]> = [
  ['cuda', 'CUDA C++'],
  ['numba', 'Python (numba)']
];

export class PlaygroundToolbar extends Widget {
  constructor(model: PlaygroundModel) {
    super();
    this._model = model;
    this.addClass('gpudojo-playground-toolbar');

    this._language = h('select', { className: 'jp-mod-styled gpudojo-language', title: 'Kernel language' });
    for (const [value, label] of LANGUAGES) {
      this._language.appendChild(h('option', { text: label, attrs: { value } }));
    }
    this._language.addEventListener('change', () => model.setLanguage(this._language.value as KernelLanguage));

    this._arch = h('select', { className: 'jp-mod-styled gpudojo-arch', title: 'GPU architecture to compile for' });
    this._arch.addEventListener('change', () => model.setSettings({ arch: this._arch.value }));

    this._opt = h('select', { className: 'jp-mod-styled gpudojo-opt-level', title: 'ptxas optimisation level' });
    for (const level of [3, 2, 1, 0]) {
      this._opt.appendChild(h('option', { text: `-O${level}`, attrs: { value: String(level) } }));
    }
    this._opt.addEventListener('change', () => model.setSettings({ optLevel: Number(this._opt.value) }));

    this._maxRegs = h('input', {
      className: 'jp-mod-styled gpudojo-maxrregcount',
      title: '-maxrregcount: cap registers per thread (16-255); empty for the compiler’s choice',
      attrs: { type: 'number', min: '16', max: '255', placeholder: 'auto' }
    });
    this._maxRegs.addEventListener('change', () => {
      const value = this._maxRegs.value.trim();
      const n = Number(value);
      if (value === '') {
        model.setSettings({ maxRegisters: null });
      } else if (Number.isInteger(n) && n >= 16 && n <= 255) {
        model.setSettings({ maxRegisters: n });
      } else {
        this._maxRegs.value = model.settings.maxRegisters === null ? '' : String(model.settings.maxRegisters);
      }
    });

    this._fastMath = h('input', { className: 'gpudojo-fast-math', attrs: { type: 'checkbox' } });
    this._fastMath.addEventListener('change', () => model.setSettings({ fastMath: this._fastMath.checked }));

    this._defines = h('input', {
      className: 'jp-mod-styled gpudojo-defines',
      title: '-D defines, e.g. "N=1024 TILE=16" (CUDA C only)',
      attrs: { type: 'text', placeholder: 'A=1 B=2', spellcheck: 'false' }
    });
    this._defines.addEventListener('change', () => model.setSettings({ defines: this._defines.value }));

    this._compile = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-compile',
      text: 'Compile',
      title: 'Compile now (it also compiles by itself after a pause in typing)'
    });
    this._compile.addEventListener('click', () => void model.compile());

    this._status = h('span', {
      className: 'gpudojo-compile-status',
      attrs: { 'data-state': 'idle', 'aria-live': 'polite' }
    });
    this._compiler = h('span', { className: 'gpudojo-compiler' });
    this._definesLabel = h('label', { className: 'gpudojo-toolbar-field' }, 'Defines ', this._defines);

    this._controls = h(
      'div',
      { className: 'gpudojo-toolbar-row' },
      this._language,
      this._arch,
      h('label', { className: 'gpudojo-toolbar-field' }, this._opt),
      h('label', { className: 'gpudojo-toolbar-field' }, 'maxrregcount ', this._maxRegs),
      h('label', { className: 'gpudojo-toolbar-field', title: '--use_fast_math (CUDA C) / fastmath (numba)' }, this._fastMath, ' fast math'),
      this._definesLabel,
      this._compile
    );
    this.node.append(
      this._controls,
      h('div', { className: 'gpudojo-toolbar-row gpudojo-toolbar-status' }, this._status, this._compiler)
    );
    this.refresh();
  }

  /** Put `node` first in the controls row (a lab's examples menu: what to start from comes first). */
  addLeadingControl(node: HTMLElement): void {
    this._controls.prepend(node);
  }

  /** Redraw every control from the model. */
  refresh(): void {
    const model = this._model;
    const settings = model.settings;
    this._language.value = model.language;
    this._fillArchs();
    this._opt.value = String(settings.optLevel);
    if (document.activeElement !== this._maxRegs) {
      this._maxRegs.value = settings.maxRegisters === null ? '' : String(settings.maxRegisters);
    }
    this._fastMath.checked = settings.fastMath;
    if (document.activeElement !== this._defines) {
      this._defines.value = settings.defines;
    }
    this._definesLabel.hidden = model.language !== 'cuda';
    const numbaMissing = model.language === 'numba' && model.archs !== null && !model.archs.numba_available;
    this._language.title = numbaMissing ? 'numba is not installed on the server: numba kernels cannot compile here' : 'Kernel language';
    this.refreshStatus();
  }

  /** Redraw the status line and the compiler name. */
  refreshStatus(): void {
    const model = this._model;
    const result = model.compileResult;
    const state = model.compileState;
    let text: string;
    if (model.archsError) {
      text = `Cannot load the architectures: ${model.archsError}`;
    } else if (model.archs?.compiler_problem) {
      text = `No compiler on the server: ${model.archs.compiler_problem}`;
    } else if (state === 'compiling') {
      text = 'Compiling…';
    } else if (model.compileError) {
      text = `Compile failed: ${model.compileError}`;
    } else if (result) {
      text = compileSummary(result);
    } else {
      text = model.archs ? 'Not compiled yet' : 'Loading architectures…';
    }
    const shownState = model.archsError || model.archs?.compiler_problem ? 'error' : state;
    this._status.setAttribute('data-state', shownState);
    this._status.textContent = text;
    this._status.title = result?.log ? result.log.slice(0, 2000) : text;
    const nvrtc = model.archs?.nvrtc_version;
    this._compiler.textContent = result?.compiler ?? (nvrtc ? `NVRTC ${nvrtc}` : '');
    this._compile.disabled = !model.settings.arch;
  }

  private _fillArchs(): void {
    const archs = this._model.archs?.archs ?? [];
    const current = this._model.settings.arch;
    const key = archs.map(a => a.arch).join(',');
    if (key !== this._archKey) {
      this._archKey = key;
      this._arch.textContent = '';
      for (const arch of archs) {
        const gpu = arch.arch === this._model.archs?.gpu_arch ? ' — this GPU' : '';
        this._arch.appendChild(h('option', { text: `${archLabel(arch)}${gpu}`, attrs: { value: arch.arch } }));
      }
    }
    this._arch.value = current;
    this._arch.disabled = archs.length === 0;
  }

  private _model: PlaygroundModel;
  private _controls: HTMLElement;
  private _language: HTMLSelectElement;
  private _arch: HTMLSelectElement;
  private _opt: HTMLSelectElement;
  private _maxRegs: HTMLInputElement;
  private _fastMath: HTMLInputElement;
  private _defines: HTMLInputElement;
  private _definesLabel: HTMLElement;
  private _compile: HTMLButtonElement;
  private _status: HTMLElement;
  private _compiler: HTMLElement;
  private _archKey = '';
}
